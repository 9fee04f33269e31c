---@brief The include/exclude tree of a ContextPlan in a side split: one fold per section
--- (excluded items in a nested fold), token counts and reasons as the server gave them, the
--- plan's task (query cluster), pins the server leased automatically with their reason, and the
--- model's suggestions, dimmed, in a "suggested" group (nothing there is pinned until you pin it).
--- With the gateway running it follows the active conversation: the plans the server makes for
--- the assistant's requests (and its re-plans after a pin) replace the plan shown.
---
--- This module keeps the tree's state and asks for plans; the rest is in
--- ctx_lsp.tree.render (the lines, pure), .view (buffer and windows), .actions (the keys) and
--- .what_if (the `w` float).

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
local render = require("ctx_lsp.tree.render")
local view = require("ctx_lsp.tree.view")

local M = {}

M.ns = view.ns

---@class ctx_lsp.TreeState
---@field plan table      the ContextPlan shown
---@field params table    the ctx/planContext params that made it (re-plans reuse them)
---@field root? string    workspace root (item paths are relative to it)
---@field buf? integer
---@field items table<integer, table> line -> item
---@field kinds table<integer, string> line -> "top"|"section"|"excluded"|"item"|"excluded_item"|"item_note"|"suggested"|"suggestion"
---@field suggestions table<integer, table> line -> suggestion {item, turn, reason, status}
---@field following? boolean the plan is the server's (followed), not one asked for here
---@field followed? string the plan id followed (ctx/replayPlan may answer with another)

---@type ctx_lsp.TreeState?
M.current = nil
--- The last what-if shown (tests and users' scripts read it).
---@type ctx_lsp.WhatIf?
M.last_what_if = nil
--- Plans asked for, in order: only the answer to the latest one is shown (a re-plan after a
--- reflection may cross a new question).
M.seq = 0
--- The params of the latest plan asked for (re-plans use them).
M.latest_params = nil
--- A ctx/planContext of the tree is under way (its answer shows it: nothing to follow).
M.asking = false
--- The plan being fetched to follow (ctx/planChanged and ctx/budgetChanged both name it).
M.fetching = nil ---@type string?

--- The open suggestions (status "open"), in the server's order.
M.open_suggestions = render.open_suggestions

--- Lines of a plan, and per line its item and kind (what else it shows: the client's state).
---@param plan table
---@param extra? { suggestions?: table[], pins?: table<string, table> } default: the client's state
---@return string[] lines, table<integer, table> items, table<integer, string> kinds, table<integer, table> suggestions
function M.render(plan, extra)
  extra = extra or {}
  return render.lines(plan, {
    pins = extra.pins or render.pins_by_id(client.state.pins),
    stale = client.state.stale,
    suggestions = extra.suggestions or client.state.suggestions,
    auto_reason = require("ctx_lsp.reflect").auto_reason,
    bar_width = config.get().bar_width,
  })
end

--- foldexpr of the tree's window.
---@return string
function M.foldexpr()
  local st = M.current
  if not st or st.buf ~= vim.api.nvim_get_current_buf() then
    return "0"
  end
  return render.fold_level(st.kinds[vim.v.lnum])
end

--- Show a plan in the tree (opening the split if needed).
---@param plan table
---@param params table
---@param root? string
---@param opts? { focus?: boolean, open?: boolean, following?: boolean }
function M.show(plan, params, root, opts)
  opts = opts or {}
  local prev = M.current
  local buf = view.ensure_buf(prev and prev.buf, require("ctx_lsp.tree.actions").set_keymaps)
  local lines, items, kinds, sugs = M.render(plan)
  M.current = {
    plan = plan,
    params = params,
    root = root,
    buf = buf,
    items = items,
    kinds = kinds,
    suggestions = sugs,
    following = opts.following,
  }
  view.paint(buf, lines, render.highlights(lines, items, kinds, client.state.stale))
  local here = vim.api.nvim_get_current_win()
  local win = view.window(buf)
  if opts.open == false and not win then
    return -- closed by the user: keep the state, do not reopen
  end
  win = win or view.open(buf)
  if prev and prev.buf == buf then
    view.refold(win)
  end
  if opts.focus == false and vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
end

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
  M.asking = true
  client.request("ctx/planContext", params, function(plan)
    M.asking = false
    if seq == M.seq then
      client.state.plan_id = plan.planId
      client.state.stale = {} -- a new plan carries the server's own view (reason "stale")
      M.show(plan, params, root, opts)
      require("ctx_lsp.reflect").refresh_suggestions()
    end
    if done then
      done(plan)
    end
  end, {
    wait_index = true,
    on_error = function()
      M.asking = false
    end,
  })
end

--- Show a plan the server made (the gateway's, for the active conversation), rebuilt from its
--- stored inputs (ctx/replayPlan), with its question (ctx/listExcluded) for the what-if.
--- Only into a tree that exists, unless `opts.open`; never while a plan of the tree's own is
--- under way; a plan already shown is not fetched again (unless `opts.force`).
---@param plan_id string
---@param done? fun(plan?: table)
---@param opts? { open?: boolean, force?: boolean }
function M.follow(plan_id, done, opts)
  opts = opts or {}
  local st = M.current
  local exists = st and st.buf and vim.api.nvim_buf_is_valid(st.buf)
  local function finish(plan)
    if done then
      done(plan)
    end
  end
  if not (opts.open or exists) or (M.asking and not opts.open) then
    return finish(nil)
  end
  if M.fetching == plan_id and not opts.open then
    return finish(nil)
  end
  if exists and (st.plan.planId == plan_id or st.followed == plan_id) and not opts.force then
    if opts.open then
      M.show(st.plan, st.params, st.root, { following = st.following })
    end
    return finish(st.plan)
  end
  local c = client.get_client()
  local root = c and client.client_root(c) or nil
  M.seq = M.seq + 1
  local seq = M.seq
  M.fetching = plan_id
  local function forget()
    if M.fetching == plan_id then
      M.fetching = nil
    end
  end
  client.request("ctx/replayPlan", { planId = plan_id }, function(replay)
    local function show(query)
      forget()
      if seq ~= M.seq then
        return finish(replay.plan)
      end
      local params = require("ctx_lsp").plan_params(query or (M.latest_params or {}).query or "")
      client.state.stale = {}
      local open = opts.open == true
      M.show(replay.plan, params, root, { open = open, focus = open, following = true })
      M.current.followed = plan_id -- (a replay of a plan whose inputs changed has another id)
      require("ctx_lsp.reflect").refresh_suggestions()
      finish(replay.plan)
    end
    client.request("ctx/listExcluded", { planId = plan_id, turns = 1 }, function(ledger)
      local turn = type(ledger) == "table" and type(ledger.turns) == "table" and ledger.turns[1]
      show(turn and turn.query or nil)
    end, {
      quiet = true,
      on_error = function()
        show(nil)
        return true
      end,
    })
  end, {
    quiet = not opts.open,
    on_error = function()
      forget()
    end,
  })
end

--- Re-plan with the params of the plan shown (after a pin, unpin, restore, mode change, an
--- automatic pin), so the tree and the meter show the plan the user asked for, not the
--- server's default re-plan.
---@param done? fun(plan?: table)
function M.after_change(done)
  local st = M.current
  if st and st.following then -- the server re-plans by itself, and the tree follows (ctx/planChanged)
    if done then
      done(st.plan)
    end
    return
  end
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
  if st and st.buf then
    view.close(st.buf)
  end
end

return M
