---@brief Pins: :CtxPin / :CtxUnpin at the cursor (the server resolves the symbol), gutter signs
--- on pinned symbols (extmarks in the "ctx_lsp_pins" namespace; pins the server leased
--- automatically get their own sign), kept current from ctx/listPins, and the re-pin-or-drop
--- prompt of ctx/askRepin.

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
local util = require("ctx_lsp.util")
local present = util.present

local M = {}

M.ns = vim.api.nvim_create_namespace("ctx_lsp_pins")

local levels = vim.log.levels

--- The loaded buffer showing a pin's file, if any (never creates one).
---@param pin table
---@return integer?
local function buffer_of(pin)
  local fname
  if present(pin.uri) then
    fname = vim.uri_to_fname(pin.uri)
  else
    return nil
  end
  local bufnr = vim.fn.bufnr(fname)
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
  return nil
end

--- The sign of a pin: ⏳ in its grace turn, `auto_sign_text` when the server leased it
--- automatically (createdBy "auto"), else `sign_text`.
---@param pin table
---@return string text, string hl_group
function M.sign_for(pin)
  if pin.status == "grace" then
    return "⏳", "CtxPinGrace"
  end
  if pin.createdBy == "auto" then
    return config.get().auto_sign_text, "CtxPinAuto"
  end
  return config.get().sign_text, "CtxPinSign"
end

--- Place the signs of the cached pins in one buffer (or in every loaded buffer).
---@param bufnr? integer
function M.place(bufnr)
  local targets = {}
  if bufnr then
    targets[bufnr] = true
  else
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) then
        targets[b] = true
      end
    end
  end
  for b in pairs(targets) do
    if vim.api.nvim_buf_is_valid(b) then
      vim.api.nvim_buf_clear_namespace(b, M.ns, 0, -1)
    end
  end
  for _, pin in ipairs(client.state.pins or {}) do
    local b = buffer_of(pin)
    if b and targets[b] and present(pin.range) then
      local line = pin.range.start.line
      local count = vim.api.nvim_buf_line_count(b)
      if line >= count then
        line = count - 1
      end
      local text, hl = M.sign_for(pin)
      pcall(vim.api.nvim_buf_set_extmark, b, M.ns, line, 0, {
        sign_text = text,
        sign_hl_group = hl,
        priority = 20,
      })
    end
  end
end

--- Fetch ctx/listPins and redraw every buffer's signs (and the tree's pin marks; the reasons
--- of automatic pins come from ctx/listReflections when they are not known yet).
---@param done? fun(pins: table[])
function M.refresh(done)
  client.request("ctx/listPins", nil, function(pins)
    client.state.pins = type(pins) == "table" and pins or {}
    M.place()
    require("ctx_lsp.reflect").ensure_reasons(client.state.pins, function()
      require("ctx_lsp.tree").redraw()
      util.event("CtxPinsChanged")
      if done then
        done(client.state.pins)
      end
    end)
  end, { quiet = true })
end

local timer
--- Debounced refresh (budgetChanged arrives after every plan, pin, unpin, report...).
function M.schedule_refresh()
  if timer then
    timer:stop()
  end
  timer = vim.defer_fn(function()
    timer = nil
    M.refresh()
  end, 30)
end

--- :CtxPin [kind] [ttl]: pin the symbol under the cursor. At a use site, where the buffer's
--- other language servers say the name is defined (ctx_lsp.definition), when that is in the
--- workspace; else the cursor. The server resolves either position to a symbol.
---@param opts? { kind?: string, ttl?: integer, policy?: string, done?: fun(pin: table) }
function M.pin_at_cursor(opts)
  opts = opts or {}
  local win = vim.api.nvim_get_current_win()
  local bufnr = vim.api.nvim_win_get_buf(win)
  local c = client.get_client(bufnr)
  if not c then
    return client.request("ctx/pinSymbol", nil) -- says "not running"
  end
  local pos = vim.lsp.util.make_position_params(win, c.offset_encoding or "utf-16")
  local cursor = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = pos.position }

  local function send(where, target)
    local params = vim.tbl_extend("force", where, { kind = opts.kind, ttl = opts.ttl, policy = opts.policy })
    client.request("ctx/pinSymbol", params, function(pin)
      local tok = present(pin.tokens) and (" (%s tok)"):format(require("ctx_lsp.meter").format_tokens(pin.tokens))
        or ""
      local via = target and (" · %s's definition"):format(target.client) or ""
      client.notify(("pinned %s%s%s"):format(pin.title or pin.symbol or pin.id, tok, via))
      M.refresh(function()
        require("ctx_lsp.tree").after_change()
        if opts.done then
          opts.done(pin)
        end
      end)
    end, {
      bufnr = bufnr,
      -- nothing the server can pin at the definition (vendored code it does not index): the cursor
      on_error = target and function()
        send(cursor, nil)
        return true
      end or nil,
    })
  end

  require("ctx_lsp.definition").find(win, c, client.client_root(c), function(target)
    if target then
      send({ textDocument = { uri = target.uri }, position = target.position }, target)
    else
      send(cursor, nil)
    end
  end)
end

--- The innermost cached pin whose range covers a line of a buffer.
---@param bufnr integer
---@param line integer 0-based
---@return table?
function M.pin_at(bufnr, line)
  local fname = vim.api.nvim_buf_get_name(bufnr)
  local best, best_size
  for _, pin in ipairs(client.state.pins or {}) do
    if present(pin.uri) and present(pin.range) and vim.uri_to_fname(pin.uri) == fname then
      local s, e = pin.range.start.line, pin.range["end"].line
      if line >= s and line <= e and (best_size == nil or e - s < best_size) then
        best, best_size = pin, e - s
      end
    end
  end
  return best
end

---@param pin_id string
---@param done? fun(pin: table)
function M.unpin(pin_id, done)
  client.request("ctx/unpin", { pinId = pin_id }, function(pin)
    client.notify(("unpinned %s"):format(pin.title or pin.symbol or pin.id))
    M.refresh(function()
      require("ctx_lsp.tree").after_change()
      if done then
        done(pin)
      end
    end)
  end)
end

--- :CtxUnpin: remove the pin covering the cursor line.
---@param opts? { done?: fun(pin: table) }
function M.unpin_at_cursor(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local function go()
    local pin = M.pin_at(bufnr, line)
    if not pin then
      client.notify("no pinned symbol at the cursor (:CtxPin pins one)", levels.WARN)
      return
    end
    M.unpin(pin.id, opts.done)
  end
  -- the cache may be behind (pins made elsewhere): refresh first
  if not client.get_client(bufnr) then
    return client.request("ctx/unpin", nil)
  end
  M.refresh(go)
end

--- ctx/askRepin: a pin's TTL ran out under the `ask` policy; re-pin it or drop it, one at a time.
---@param pins table[]
function M.ask_repin(pins)
  local queue = vim.deepcopy(pins)
  local function next_one()
    local pin = table.remove(queue, 1)
    if not pin then
      M.refresh()
      return
    end
    local title = pin.title or pin.symbol or pin.id
    local choices = { "Re-pin (keep it in the context)", "Drop it" }
    vim.ui.select(choices, {
      prompt = ("ctx: the pin on %s ran out of turns. Keep it?"):format(title),
      kind = "ctx_lsp.ask_repin",
    }, function(_, idx)
      if idx == 1 and present(pin.symbol) then
        client.request("ctx/pinSymbol", {
          symbol = pin.symbol,
          kind = pin.kind,
          ttl = present(pin.ttl) and pin.ttl or nil,
          policy = pin.policy,
        }, function()
          client.notify(("re-pinned %s"):format(title))
          next_one()
        end)
      elseif idx == 2 then
        client.request("ctx/unpin", { pinId = pin.id }, function()
          client.notify(("dropped the pin on %s"):format(title))
          next_one()
        end)
      else
        next_one() -- dismissed: the server keeps it for its grace turn
      end
    end)
  end
  vim.schedule(next_one)
end

return M
