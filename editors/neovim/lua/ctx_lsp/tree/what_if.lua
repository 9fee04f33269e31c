---@brief The tree's what-if (`w`): the plan shown, planned again as a dry run with one more pin
--- (ctx/planContext with dryRun and extraPins), compared with the plan shown, in a floating
--- window; `p` there pins it.

local client = require("ctx_lsp.client")
local meter = require("ctx_lsp.meter")
local render = require("ctx_lsp.tree.render")
local present = require("ctx_lsp.util").present

local M = {}

--- Compare a what-if plan with the plan shown: the items it would evict.
---@param before table the plan shown
---@param after table the dry-run plan
---@param symbol string the symbol the what-if pins
---@return table[] evicted { item (as before), reason (after) }
function M.evictions(before, after, symbol)
  local now_in = {}
  for _, item in ipairs(after.included or {}) do
    now_in[item.id] = true
  end
  local out_reason = {}
  for _, item in ipairs(after.excluded or {}) do
    out_reason[item.id] = item.reason
  end
  local evicted = {}
  for _, item in ipairs(before.included or {}) do
    if not now_in[item.id] and item.symbol ~= symbol then
      table.insert(evicted, { item = item, reason = out_reason[item.id] or "dropped" })
    end
  end
  return evicted
end

--- The float's lines: the tokens before and after, the pinned item (or why it would be left
--- out), and what it would evict.
---@param before table the plan shown
---@param after table the dry-run plan
---@param symbol string
---@return string[] lines, table[] evicted
function M.lines(before, after, symbol)
  local evicted = M.evictions(before, after, symbol)
  local pinned, left_out
  for _, it in ipairs(after.included or {}) do
    if it.symbol == symbol and it.reason == "pinned" then
      pinned = it
    end
  end
  for _, it in ipairs(after.excluded or {}) do
    if it.symbol == symbol and present(it.pinId) then
      left_out = it
    end
  end
  local lines = {
    ("What if you pin %s?"):format(symbol),
    ("  ctx %s → %s / %s tok"):format(
      meter.format_tokens(before.totals.tokens),
      meter.format_tokens(after.totals.tokens),
      meter.format_tokens(after.promptBudget)
    ),
  }
  if pinned then
    table.insert(
      lines,
      ("  + %6s  pinned      %s"):format(meter.format_tokens(pinned.tokens), render.one_line(pinned.title))
    )
  elseif left_out then
    table.insert(
      lines,
      ("  ✗ %6s  %-11s %s: the pin would not be included"):format(
        meter.format_tokens(left_out.tokens),
        left_out.reason,
        render.one_line(left_out.title)
      )
    )
  else
    table.insert(lines, "  the plan would not include it")
  end
  if #evicted == 0 then
    table.insert(lines, "Evicts nothing.")
  else
    local tok = 0
    for _, e in ipairs(evicted) do
      tok = tok + (tonumber(e.item.tokens) or 0)
    end
    table.insert(
      lines,
      ("Would evict %d item%s (%s tok):"):format(#evicted, #evicted == 1 and "" or "s", meter.format_tokens(tok))
    )
    for _, e in ipairs(evicted) do
      local loc = render.location(e.item)
      table.insert(
        lines,
        ("  - %6s  %-11s %s%s"):format(
          meter.format_tokens(e.item.tokens),
          e.reason,
          render.one_line(e.item.title or e.item.id),
          loc ~= "" and ("  " .. loc) or ""
        )
      )
    end
  end
  table.insert(lines, "")
  table.insert(lines, "p pin it · q close")
  return lines, evicted
end

--- A centred float with `lines`: q or <Esc> closes it, p closes it and runs `on_commit`.
---@param lines string[]
---@param on_commit? fun()
---@return integer buf, integer win
local function show_float(lines, on_commit)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "ctx_lsp_whatif"
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(3, vim.o.lines - 6))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " ctx what-if ",
    title_pos = "center",
  })
  local function close()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  vim.keymap.set("n", "q", close, { buffer = buf, nowait = true, desc = "ctx: close" })
  vim.keymap.set("n", "<Esc>", close, { buffer = buf, nowait = true, desc = "ctx: close" })
  if on_commit then
    vim.keymap.set("n", "p", function()
      close()
      on_commit()
    end, { buffer = buf, nowait = true, desc = "ctx: pin it" })
  end
  vim.api.nvim_create_autocmd("BufLeave", { buffer = buf, once = true, callback = close })
  return buf, win
end

---@class ctx_lsp.WhatIf
---@field symbol string
---@field plan table the dry-run plan
---@field evicted table[] { item, reason }
---@field lines string[]
---@field buf integer the float's buffer
---@field win integer the float

--- Plan `params` again as a dry run with `symbol` pinned too, and show what it would change
--- against `before` in a float whose `p` runs `pin(symbol)`.
---@param params table the ctx/planContext params of the plan shown
---@param before table the plan shown
---@param symbol string
---@param pin fun(symbol: string)
---@param done fun(what_if: ctx_lsp.WhatIf)
function M.run(params, before, symbol, pin, done)
  params = vim.deepcopy(params)
  params.dryRun = true
  params.extraPins = { { symbol = symbol } }
  client.request("ctx/planContext", params, function(after)
    local lines, evicted = M.lines(before, after, symbol)
    local buf, win = show_float(lines, function()
      pin(symbol)
    end)
    done({ symbol = symbol, plan = after, evicted = evicted, lines = lines, buf = buf, win = win })
  end)
end

return M
