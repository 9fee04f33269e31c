---@brief The include/exclude tree of a ContextPlan in a side split: one fold per section
--- (excluded items in a nested fold), token counts and reasons as the server gave them, the
--- plan's task (query cluster), pins the server leased automatically with their reason, and the
--- model's suggestions, dimmed, in a "suggested" group (nothing there is pinned until you pin it).
--- Buffer-local keys: <CR> open the item's code, p pin/unpin (a suggestion: pin it), r restore
--- an excluded item, w what-if (what pinning the item would evict), u undo an automatic pin,
--- d dismiss a suggestion, R re-plan, q close.

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
local meter = require("ctx_lsp.meter")

local M = {}

M.ns = vim.api.nvim_create_namespace("ctx_lsp_tree")

local levels = vim.log.levels
local SECTIONS = { "system", "conversation", "rag" }

---@class ctx_lsp.TreeState
---@field plan table      the ContextPlan shown
---@field params table    the ctx/planContext params that made it (re-plans reuse them)
---@field root? string    workspace root (item paths are relative to it)
---@field buf? integer
---@field items table<integer, table> line -> item
---@field kinds table<integer, string> line -> "top"|"section"|"excluded"|"item"|"excluded_item"|"item_note"|"suggested"|"suggestion"
---@field suggestions table<integer, table> line -> suggestion {item, turn, reason, status}

---@type ctx_lsp.TreeState?
M.current = nil
--- The last what-if shown (tests and users' scripts read it).
M.last_what_if = nil

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

-- ---- rendering ------------------------------------------------------------------------------

--- "shop/billing/invoice.py:47" (1-based line) or "".
---@param item table
---@return string
function M.location(item)
  if not present(item.path) then
    return ""
  end
  if present(item.range) then
    return ("%s:%d"):format(item.path, item.range.start.line + 1)
  end
  return item.path
end

--- One display line: newlines folded, very long text cut.
---@param s any
---@param max? integer
---@return string
function M.one_line(s, max)
  s = tostring(s or ""):gsub("[\r\n]+", " ⏎ ")
  max = max or 120
  if vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. "…"
  end
  return s
end

local function is_stale(item)
  return item.reason == "stale" or (present(item.path) and client.state.stale[item.path] == true)
end

--- The pins of the session by id (from the last ctx/listPins).
---@return table<string, table>
local function pins_by_id()
  local out = {}
  for _, pin in ipairs(client.state.pins or {}) do
    if type(pin) == "table" and pin.id then
      out[pin.id] = pin
    end
  end
  return out
end

--- The automatic pin (createdBy "auto") that put an item in the plan, if any.
---@param item table
---@param pins? table<string, table>
---@return table?
function M.auto_pin_of(item, pins)
  if not present(item.pinId) then
    return nil
  end
  local pin = (pins or pins_by_id())[item.pinId]
  if pin and pin.createdBy == "auto" then
    return pin
  end
  return nil
end

M.AUTO_MARK = "📎auto"

--- One item line: mark, tokens, reason, title, location.
---@param item table
---@param included boolean
---@param auto? table the automatic pin behind the item
---@return string
function M.item_line(item, included, auto)
  local mark = included and "✓" or "✗"
  local reason = item.reason
  if auto then
    reason = reason .. " " .. M.AUTO_MARK
  elseif present(item.pinId) and reason ~= "pinned" then
    reason = reason .. " 📌"
  end
  if is_stale(item) and reason ~= "stale" then
    reason = reason .. " ⚠stale"
  end
  local loc = M.location(item)
  return ("  %s %6s  %-11s %s%s"):format(
    mark,
    meter.format_tokens(item.tokens),
    reason,
    M.one_line(item.title or item.id),
    loc ~= "" and ("  " .. loc) or ""
  )
end

--- Section header: "▾ rag  197/200 tok · 3 in · 14 out".
---@param s table a plan section
---@return string
function M.section_line(s)
  return ("▾ %s  %s/%s tok · %d in · %d out"):format(
    s.name,
    meter.format_tokens(s.used),
    meter.format_tokens(s.budget),
    s.count or 0,
    s.excluded or 0
  )
end

--- The line under an automatically pinned item: why the server leased it.
---@param pin table
---@return string
function M.auto_note(pin)
  local why = require("ctx_lsp.reflect").auto_reason(pin.id)
  local ttl = present(pin.ttlRemaining) and (" (ttl %d)"):format(pin.ttlRemaining) or ""
  return ("      ↳ leased automatically%s: %s · u undo"):format(ttl, why and M.one_line(why, 200) or "by the server")
end

--- The suggested group's line of a suggestion: ☆ (★ when it is pinned already), item, reason.
---@param s table {item, turn, reason, status}
---@param pinned boolean
---@return string
function M.suggestion_line(s, pinned)
  return ("  %s %s  %s%s"):format(pinned and "★" or "☆", s.item, pinned and "pinned · " or "", M.one_line(s.reason))
end

--- The open suggestions (status "open"), in the server's order.
---@param list? table[]
---@return table[]
function M.open_suggestions(list)
  local out = {}
  for _, sug in ipairs(list or {}) do
    if type(sug) == "table" and sug.status == "open" and type(sug.item) == "string" then
      table.insert(out, sug)
    end
  end
  return out
end

--- Lines of a plan, and per line its item and kind.
---@param plan table
---@param extra? { suggestions?: table[], pins?: table<string, table> } default: the client's state
---@return string[] lines, table<integer, table> items, table<integer, string> kinds, table<integer, table> suggestions
function M.render(plan, extra)
  extra = extra or {}
  local pins = extra.pins or pins_by_id()
  local lines, items, kinds, sugs = {}, {}, {}, {}
  local function add(text, kind, item)
    table.insert(lines, text)
    kinds[#lines] = kind
    items[#lines] = item
  end
  local totals = plan.totals or {}
  local task = present(plan.clusterId) and (" · task " .. plan.clusterId) or ""
  add(("ctx plan %s · %s · mode %s%s"):format(plan.planId, tostring(plan.model), tostring(plan.mode), task), "top")
  local percent = (plan.promptBudget or 0) > 0 and 100 * totals.tokens / plan.promptBudget or 0
  add(
    ("%s/%s tok %s %s · %d in · %d out · %s"):format(
      meter.format_tokens(totals.tokens or 0),
      meter.format_tokens(plan.promptBudget or 0),
      meter.bar(totals.tokens or 0, plan.promptBudget or 0, config.get().bar_width),
      meter.format_percent(percent),
      totals.items or 0,
      totals.excluded or 0,
      meter.encoding_label(plan.estimator)
    ),
    "top"
  )
  for _, note in ipairs(plan.notes or {}) do
    add("note: " .. M.one_line(note, 400), "top")
  end
  add("<CR> open · p pin/unpin · r restore · w what-if · u undo auto · d dismiss · R re-plan · q close", "top")

  local by_section = {}
  for _, name in ipairs(SECTIONS) do
    by_section[name] = { included = {}, excluded = {} }
  end
  local order = vim.deepcopy(SECTIONS)
  local function bucket(name)
    if not by_section[name] then
      by_section[name] = { included = {}, excluded = {} }
      table.insert(order, name)
    end
    return by_section[name]
  end
  for _, item in ipairs(plan.included or {}) do
    table.insert(bucket(item.section).included, item)
  end
  for _, item in ipairs(plan.excluded or {}) do
    table.insert(bucket(item.section).excluded, item)
  end
  local sections = {}
  for _, s in ipairs(plan.sections or {}) do
    sections[s.name] = s
  end
  for _, name in ipairs(order) do
    local s = sections[name]
      or { name = name, budget = 0, used = 0, count = #by_section[name].included, excluded = #by_section[name].excluded }
    add("", "top")
    add(M.section_line(s), "section")
    for _, item in ipairs(by_section[name].included) do
      local auto = M.auto_pin_of(item, pins)
      add(M.item_line(item, true, auto), "item", item)
      if auto and item.reason == "pinned" then
        add(M.auto_note(auto), "item_note", item)
      end
    end
    local excluded = by_section[name].excluded
    if #excluded > 0 then
      local tok = 0
      for _, item in ipairs(excluded) do
        tok = tok + (tonumber(item.tokens) or 0)
      end
      add(("  ▸ excluded (%d, %s tok)"):format(#excluded, meter.format_tokens(tok)), "excluded")
      for _, item in ipairs(excluded) do
        add(M.item_line(item, false, M.auto_pin_of(item, pins)), "excluded_item", item)
      end
    end
  end
  local open = M.open_suggestions(extra.suggestions or client.state.suggestions)
  if #open > 0 then
    local pinned_symbols = {}
    for _, pin in pairs(pins) do
      if present(pin.symbol) and pin.status ~= "expired" then
        pinned_symbols[pin.symbol] = true
      end
    end
    add("", "top")
    add(("▾ suggested  %d open · by the model, not pinned until you pin them (p)"):format(#open), "suggested")
    for _, sug in ipairs(open) do
      add(M.suggestion_line(sug, pinned_symbols[sug.item] == true), "suggestion")
      sugs[#lines] = sug
    end
  end
  return lines, items, kinds, sugs
end

--- foldexpr: one fold per section, the excluded items of a section in a nested fold.
---@return string
function M.foldexpr()
  local st = M.current
  local lnum = vim.v.lnum
  if not st or st.buf ~= vim.api.nvim_get_current_buf() then
    return "0"
  end
  local kind = st.kinds[lnum]
  if kind == "section" or kind == "suggested" then
    return ">1"
  elseif kind == "item" or kind == "item_note" or kind == "suggestion" then
    return "1"
  elseif kind == "excluded" then
    return ">2"
  elseif kind == "excluded_item" then
    return "2"
  end
  return "0"
end

local function highlight(buf, lines, items, kinds)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local function hl(row, col, end_col, group)
    pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, row, col, { end_col = end_col, hl_group = group })
  end
  for lnum, text in ipairs(lines) do
    local row = lnum - 1
    local kind = kinds[lnum]
    if kind == "section" or kind == "suggested" then
      hl(row, 0, #text, "CtxTreeSection")
    elseif kind == "suggestion" then
      hl(row, 0, #text, "CtxTreeSuggested")
    elseif kind == "item_note" then
      hl(row, 0, #text, "CtxTreeReason")
      local ls, le = text:find("leased automatically", 1, true)
      if ls then
        hl(row, ls - 1, le, "CtxTreeAuto")
      end
    elseif kind == "excluded" or (kind == "top" and text:match("^<CR>")) or text:match("^note:") then
      hl(row, 0, #text, "Comment")
    elseif kind == "top" and lnum == 1 then
      hl(row, 0, #text, "Title")
    elseif kind == "item" or kind == "excluded_item" then
      local item = items[lnum]
      local group = kind == "item" and "CtxTreeIncluded" or "CtxTreeExcluded"
      hl(row, 2, 2 + #"✓", group)
      local rs, re = text:find(vim.pesc(item.reason), 2 + #"✓" + 8, false)
      if rs then
        hl(row, rs - 1, re, is_stale(item) and "CtxTreeStale" or "CtxTreeReason")
      end
      local as, ae = text:find(M.AUTO_MARK, 1, true)
      if as then
        hl(row, as - 1, ae, "CtxTreeAuto")
      end
      if is_stale(item) then
        local ss, se = text:find("⚠stale", 1, true)
        if ss then
          hl(row, ss - 1, se, "CtxTreeStale")
        end
      end
      local loc = M.location(item)
      if loc ~= "" then
        hl(row, #text - #loc, #text, "CtxTreePath")
      end
    end
  end
end

local function tree_win(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

local function ensure_buf()
  local st = M.current
  if st and st.buf and vim.api.nvim_buf_is_valid(st.buf) then
    return st.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "ctx_lsp_tree"
  pcall(vim.api.nvim_buf_set_name, buf, "ctx://plan")
  M.set_keymaps(buf)
  return buf
end

local function open_win(buf)
  local win = tree_win(buf)
  if win then
    return win
  end
  local t = config.get().tree
  local cur = vim.api.nvim_get_current_win()
  vim.cmd((t.position == "left" and "topleft" or "botright") .. " vertical " .. tonumber(t.width or 64) .. "split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
  wo.wrap, wo.cursorline, wo.spell, wo.list = false, true, false, false
  wo.winfixwidth = true
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'ctx_lsp.tree'.foldexpr()"
  wo.foldtext = ""
  wo.foldlevel = 99
  wo.foldenable = true
  M.prev_win = cur
  return win
end

--- Show a plan in the tree (opening the split if needed).
---@param plan table
---@param params table
---@param root? string
---@param opts? { focus?: boolean, open?: boolean }
function M.show(plan, params, root, opts)
  opts = opts or {}
  local buf = ensure_buf()
  local lines, items, kinds, sugs = M.render(plan)
  local prev = M.current
  M.current = {
    plan = plan,
    params = params,
    root = root,
    buf = buf,
    items = items,
    kinds = kinds,
    suggestions = sugs,
  }
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  highlight(buf, lines, items, kinds)
  local here = vim.api.nvim_get_current_win()
  local win = tree_win(buf)
  if opts.open == false and not win then
    return -- closed by the user: keep the state, do not reopen
  end
  win = win or open_win(buf)
  if prev and prev.buf == buf then
    pcall(vim.api.nvim_win_call, win, function()
      vim.cmd("normal! zx")
    end)
  end
  if opts.focus == false and vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
end

--- Plans asked for, in order: only the answer to the latest one is shown (a re-plan after a
--- reflection may cross a new question).
M.seq = 0
--- The params of the latest plan asked for (re-plans use them).
M.latest_params = nil

--- Run ctx/planContext and show the result (unless a newer plan was asked for meanwhile;
--- `done` gets the plan either way). Then the model's suggestions are fetched again.
---@param params table
---@param done? fun(plan: table)
---@param opts? { focus?: boolean, open?: boolean }
function M.plan(params, done, opts)
  local c = client.get_client()
  local root = c and client.client_root(c) or nil
  M.seq = M.seq + 1
  local seq = M.seq
  M.latest_params = params
  client.request("ctx/planContext", params, function(plan)
    if seq == M.seq then
      client.state.plan_id = plan.planId
      client.state.stale = {} -- a new plan carries the server's own view (reason "stale")
      M.show(plan, params, root, opts)
      require("ctx_lsp.reflect").refresh_suggestions()
    end
    if done then
      done(plan)
    end
  end, { wait_index = true })
end

--- Re-plan with the params of the plan shown (after a pin, unpin, restore, mode change, an
--- automatic pin), so the tree and the meter show the plan the user asked for, not the
--- server's default re-plan.
---@param done? fun(plan?: table)
function M.after_change(done)
  local st = M.current
  if not st then
    if done then
      done(nil)
    end
    return
  end
  local keep = vim.api.nvim_get_current_win()
  M.plan(M.latest_params or st.params, function(plan)
    if vim.api.nvim_win_is_valid(keep) then
      vim.api.nvim_set_current_win(keep)
    end
    if done then
      done(plan)
    end
  end, { open = false })
end

--- Redraw the plan shown (pins, suggestions or staleness changed); never re-plans, never
--- opens a closed tree.
function M.redraw()
  local st = M.current
  if st and st.buf and vim.api.nvim_buf_is_valid(st.buf) then
    local keep = vim.api.nvim_get_current_win()
    M.show(st.plan, st.params, st.root, { open = false })
    if vim.api.nvim_win_is_valid(keep) then
      vim.api.nvim_set_current_win(keep)
    end
  end
end

--- Capsule staleness arrived: redraw the marks.
function M.mark_stale()
  M.redraw()
end

function M.close()
  local st = M.current
  if not st or not st.buf then
    return
  end
  local win = tree_win(st.buf)
  if win and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(win, true)
  end
end

-- ---- actions --------------------------------------------------------------------------------

---@return table? item
function M.item_under_cursor()
  local st = M.current
  if not st then
    return nil
  end
  return st.items[vim.api.nvim_win_get_cursor(0)[1]]
end

---@return table? suggestion {item, turn, reason, status}
function M.suggestion_under_cursor()
  local st = M.current
  if not st or not st.suggestions then
    return nil
  end
  return st.suggestions[vim.api.nvim_win_get_cursor(0)[1]]
end

local function included_ids(plan)
  local ids = {}
  for _, item in ipairs(plan.included or {}) do
    ids[item.id] = item
  end
  return ids
end

local function code_window()
  local st = M.current
  local candidates = {}
  if M.prev_win then
    table.insert(candidates, M.prev_win)
  end
  vim.list_extend(candidates, vim.api.nvim_tabpage_list_wins(0))
  for _, win in ipairs(candidates) do
    if
      vim.api.nvim_win_is_valid(win)
      and vim.api.nvim_win_get_config(win).relative == ""
      and (not st or vim.api.nvim_win_get_buf(win) ~= st.buf)
    then
      return win
    end
  end
  vim.cmd("leftabove vsplit")
  return vim.api.nvim_get_current_win()
end

--- <CR>: open the item's code.
function M.jump()
  local item = M.item_under_cursor()
  if not item then
    return
  end
  if not present(item.path) then
    client.notify(("%s is not code in the workspace (%s)"):format(item.title or item.id, item.kind), levels.INFO)
    return
  end
  local st = M.current
  local file = item.path
  if st and st.root and not vim.startswith(file, "/") then
    file = vim.fs.joinpath(st.root, file)
  end
  local win = code_window()
  vim.api.nvim_set_current_win(win)
  vim.cmd.edit(vim.fn.fnameescape(file))
  if present(item.range) then
    local line = item.range.start.line + 1
    local last = vim.api.nvim_buf_line_count(0)
    vim.api.nvim_win_set_cursor(win, { math.min(line, last), item.range.start.character or 0 })
    vim.cmd("normal! zz")
  end
end

--- p: pin the item's symbol, or unpin it if a pin put it there; on a suggestion, pin it.
---@param done? fun()
function M.toggle_pin(done)
  local sug = M.suggestion_under_cursor()
  if sug then
    require("ctx_lsp.reflect").pin_suggestion(sug.item, done)
    return
  end
  local item = M.item_under_cursor()
  if not item then
    return
  end
  local pins = require("ctx_lsp.pins")
  if present(item.pinId) then
    pins.unpin(item.pinId, done)
    return
  end
  if not present(item.symbol) then
    client.notify(("%s is not code: only symbols can be pinned"):format(item.title or item.id), levels.WARN)
    return
  end
  client.request("ctx/pinSymbol", { symbol = item.symbol }, function(pin)
    client.notify(("pinned %s"):format(pin.title or pin.symbol))
    pins.refresh()
    M.after_change(done)
  end)
end

--- u: undo the automatic pin behind the item (the promotion that made it).
---@param done? fun(result?: table)
function M.undo_auto(done)
  local item = M.item_under_cursor()
  local pin = item and M.auto_pin_of(item)
  if not pin then
    client.notify("not an automatic pin: u undoes what the server pinned by itself", levels.INFO)
    return
  end
  local reflect = require("ctx_lsp.reflect")
  local function go()
    local r = reflect.promotion_of(pin.id)
    if not r then
      client.notify(("no promotion to undo for %s (unpin it with p)"):format(pin.title or pin.id), levels.WARN)
      return
    end
    reflect.undo(r.id, done)
  end
  if reflect.promotion_of(pin.id) then
    go()
  else
    reflect.refresh_reflections(go)
  end
end

--- d: dismiss the suggestion under the cursor.
---@param done? fun(result?: table)
function M.dismiss(done)
  local sug = M.suggestion_under_cursor()
  if not sug then
    client.notify("d dismisses a suggestion (the suggested group)", levels.INFO)
    return
  end
  require("ctx_lsp.reflect").dismiss(sug.item, done)
end

--- r: restore an excluded item by pinning it (ctx/restoreItem).
---@param done? fun()
function M.restore(done)
  local item = M.item_under_cursor()
  local st = M.current
  if not item or not st then
    return
  end
  if included_ids(st.plan)[item.id] then
    client.notify(("%s is already in the prompt"):format(item.title or item.id), levels.INFO)
    return
  end
  client.request("ctx/restoreItem", { itemId = item.id, planId = st.plan.planId }, function(pin)
    client.notify(("restored %s (pinned)"):format(pin.title or pin.symbol))
    require("ctx_lsp.pins").refresh()
    M.after_change(done)
  end)
end

local function close_float(win)
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
end

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
    close_float(win)
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

--- Compare a what-if plan with the plan shown: the items it would evict.
---@param before table the plan shown
---@param after table the dry-run plan
---@param symbol string the symbol the what-if pins
---@return table[] evicted { item (as before), reason (after) }
function M.evictions(before, after, symbol)
  local now_in = included_ids(after)
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

--- w: the what-if plan of pinning the item under the cursor: what it would evict, before
--- committing (p in the window pins it).
---@param done? fun(result: table)
function M.what_if(done)
  local sug = M.suggestion_under_cursor()
  local item = M.item_under_cursor()
    or (sug and { id = sug.item, title = sug.item, symbol = sug.item, reason = "suggested" })
  local st = M.current
  if not item or not st then
    return
  end
  if not present(item.symbol) then
    client.notify(("%s is not code: only symbols can be pinned"):format(item.title or item.id), levels.WARN)
    return
  end
  if present(item.pinId) then
    client.notify(("%s is pinned already"):format(item.symbol), levels.INFO)
    return
  end
  local params = vim.deepcopy(st.params)
  params.dryRun = true
  params.extraPins = { { symbol = item.symbol } }
  local before = st.plan
  client.request("ctx/planContext", params, function(after)
    local evicted = M.evictions(before, after, item.symbol)
    local pinned, left_out
    for _, it in ipairs(after.included or {}) do
      if it.symbol == item.symbol and it.reason == "pinned" then
        pinned = it
      end
    end
    for _, it in ipairs(after.excluded or {}) do
      if it.symbol == item.symbol and present(it.pinId) then
        left_out = it
      end
    end
    local lines = {
      ("What if you pin %s?"):format(item.symbol),
      ("  ctx %s → %s / %s tok"):format(
        meter.format_tokens(before.totals.tokens),
        meter.format_tokens(after.totals.tokens),
        meter.format_tokens(after.promptBudget)
      ),
    }
    if pinned then
      table.insert(
        lines,
        ("  + %6s  pinned      %s"):format(meter.format_tokens(pinned.tokens), M.one_line(pinned.title))
      )
    elseif left_out then
      table.insert(
        lines,
        ("  ✗ %6s  %-11s %s: the pin would not be included"):format(
          meter.format_tokens(left_out.tokens),
          left_out.reason,
          M.one_line(left_out.title)
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
        local loc = M.location(e.item)
        table.insert(
          lines,
          ("  - %6s  %-11s %s%s"):format(
            meter.format_tokens(e.item.tokens),
            e.reason,
            M.one_line(e.item.title or e.item.id),
            loc ~= "" and ("  " .. loc) or ""
          )
        )
      end
    end
    table.insert(lines, "")
    table.insert(lines, "p pin it · q close")
    local symbol = item.symbol
    local fbuf, fwin = show_float(lines, function()
      client.request("ctx/pinSymbol", { symbol = symbol }, function(pin)
        client.notify(("pinned %s"):format(pin.title or pin.symbol))
        require("ctx_lsp.pins").refresh()
        M.after_change()
      end)
    end)
    M.last_what_if = { symbol = symbol, plan = after, evicted = evicted, lines = lines, buf = fbuf, win = fwin }
    if done then
      done(M.last_what_if)
    end
  end)
end

--- R: re-plan with the same params.
function M.refresh()
  M.after_change()
end

---@param buf integer
function M.set_keymaps(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, function()
      fn()
    end, { buffer = buf, nowait = true, silent = true, desc = "ctx: " .. desc })
  end
  map("<CR>", M.jump, "open the item's code")
  map("p", M.toggle_pin, "pin / unpin the item's symbol")
  map("r", M.restore, "restore an excluded item (pin it)")
  map("w", M.what_if, "what-if: what pinning the item would evict")
  map("u", M.undo_auto, "undo the automatic pin of the item")
  map("d", M.dismiss, "dismiss the suggestion")
  map("R", M.refresh, "re-plan")
  map("q", M.close, "close the tree")
end

return M
