---@brief The tree's keys (buffer-local): <CR> open the item's code, p pin/unpin (a suggestion:
--- pin it), r restore an excluded item, w what-if, u undo an automatic pin, d dismiss a
--- suggestion, R re-plan, q close. Each asks the server, then the tree re-plans.

local client = require("ctx_lsp.client")
local render = require("ctx_lsp.tree.render")
local view = require("ctx_lsp.tree.view")
local present = require("ctx_lsp.util").present

local M = {}

local levels = vim.log.levels

local function tree()
  return require("ctx_lsp.tree")
end

---@return table? item
function M.item_under_cursor()
  local st = tree().current
  if not st then
    return nil
  end
  return st.items[vim.api.nvim_win_get_cursor(0)[1]]
end

---@return table? suggestion {item, turn, reason, status}
function M.suggestion_under_cursor()
  local st = tree().current
  if not st or not st.suggestions then
    return nil
  end
  return st.suggestions[vim.api.nvim_win_get_cursor(0)[1]]
end

--- Whether an item can be pinned (it is a symbol); says why not when it cannot.
---@param item table
---@return boolean
local function pinnable(item)
  if present(item.symbol) then
    return true
  end
  client.notify(("%s is not code: only symbols can be pinned"):format(item.title or item.id), levels.WARN)
  return false
end

--- Pin a symbol (ctx/pinSymbol), then the signs and the tree follow.
---@param symbol string
---@param done? fun(plan?: table)
local function pin_symbol(symbol, done)
  client.request("ctx/pinSymbol", { symbol = symbol }, function(pin)
    client.notify(("pinned %s"):format(pin.title or pin.symbol))
    require("ctx_lsp.pins").refresh()
    tree().after_change(done)
  end)
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
  local st = tree().current
  local file = item.path
  if st and st.root and not vim.startswith(file, "/") then
    file = vim.fs.joinpath(st.root, file)
  end
  local win = view.code_window(st and st.buf)
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
  if present(item.pinId) then
    require("ctx_lsp.pins").unpin(item.pinId, done)
    return
  end
  if pinnable(item) then
    pin_symbol(item.symbol, done)
  end
end

--- u: undo the automatic pin behind the item (the promotion that made it).
---@param done? fun(result?: table)
function M.undo_auto(done)
  local item = M.item_under_cursor()
  local pin = item and render.auto_pin_of(item, render.pins_by_id(client.state.pins))
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
  local st = tree().current
  if not item or not st then
    return
  end
  for _, it in ipairs(st.plan.included or {}) do
    if it.id == item.id then
      client.notify(("%s is already in the prompt"):format(item.title or item.id), levels.INFO)
      return
    end
  end
  client.request("ctx/restoreItem", { itemId = item.id, planId = st.plan.planId }, function(pin)
    client.notify(("restored %s (pinned)"):format(pin.title or pin.symbol))
    require("ctx_lsp.pins").refresh()
    tree().after_change(done)
  end)
end

--- w: the what-if plan of pinning the item (or suggestion) under the cursor: what it would
--- evict, before committing (p in the window pins it). Kept as ctx_lsp.tree.last_what_if.
---@param done? fun(result: ctx_lsp.WhatIf)
function M.what_if(done)
  local sug = M.suggestion_under_cursor()
  local item = M.item_under_cursor()
    or (sug and { id = sug.item, title = sug.item, symbol = sug.item, reason = "suggested" })
  local st = tree().current
  if not item or not st then
    return
  end
  if not pinnable(item) then
    return
  end
  if present(item.pinId) then
    client.notify(("%s is pinned already"):format(item.symbol), levels.INFO)
    return
  end
  require("ctx_lsp.tree.what_if").run(st.params, st.plan, item.symbol, function(symbol)
    pin_symbol(symbol)
  end, function(result)
    tree().last_what_if = result
    if done then
      done(result)
    end
  end)
end

--- R: re-plan with the same params (a followed plan: fetch the latest one again).
function M.refresh()
  local st = tree().current
  if st and st.following then
    local latest = client.state.plan_id or st.plan.planId
    tree().follow(latest, nil, { force = true })
    return
  end
  tree().after_change()
end

--- q: close the tree.
function M.close()
  tree().close()
end

--- The keys of the tree's buffer.
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
