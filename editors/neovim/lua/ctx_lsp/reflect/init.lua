---@brief The reflection loop, client side: ctx/reflected notifications (promotions and
--- demotions as an info notification with :CtxUndo, renewals and suggestions quietly), the
--- model's suggestions (ctx/listSuggestions) for the tree's "suggested" group, the reasons of
--- automatic pins (ctx/listReflections) and :CtxUndo. :CtxReflections, the list, is in
--- ctx_lsp.reflect.list.

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
local event = require("ctx_lsp.util").event

local M = {}

local levels = vim.log.levels

local function state()
  local st = client.state
  st.suggestions = st.suggestions or {} ---@type table[] last ctx/listSuggestions
  st.reflections = st.reflections or {} ---@type table<integer, table> id -> Reflection
  st.reflection_log = st.reflection_log or {} ---@type string[] one line per ctx/reflected, oldest first
  return st
end

local LOG_MAX = 200

--- The kinds a person is told about (with an undo); the others are logged quietly.
M.loud = { promote = true, demote = true }

--- The notification text of a promotion or demotion (nil for the quiet kinds).
---@param r table a ctx/reflected payload or a Reflection
---@return string?
function M.message(r)
  if r.kind == "promote" then
    return ("leased %s automatically: %s. Undo: :CtxUndo %d"):format(r.item, r.reason, r.id)
  elseif r.kind == "demote" then
    return ("the lease on %s ended: %s. Undo (restore it): :CtxUndo %d"):format(r.item, r.reason, r.id)
  end
  return nil
end

--- One line of the quiet log: "turn 2 renew shop.x.f: lease renewed for 4 turns: …".
---@param r table
---@return string
function M.log_line(r)
  return ("turn %s %s %s: %s%s"):format(
    tostring(r.turn),
    tostring(r.kind),
    tostring(r.item),
    tostring(r.reason),
    r.undone == true and " (undone)" or ""
  )
end

local function remember(r)
  local st = state()
  if type(r.id) == "number" then
    local known = st.reflections[r.id]
    st.reflections[r.id] = vim.tbl_extend("force", known or {}, r)
  end
end

--- The latest reflection of a kind, not undone, that `match` accepts.
---@param kind string
---@param match fun(r: table): boolean
---@return table?
local function latest(kind, match)
  local best
  for _, r in pairs(state().reflections) do
    if r.kind == kind and r.undone ~= true and match(r) and (not best or r.id > best.id) then
      best = r
    end
  end
  return best
end

--- The promotion that made an automatic pin (the latest one not undone), if known.
---@param pin_id string
---@return table?
function M.promotion_of(pin_id)
  return latest("promote", function(r)
    return r.pinId == pin_id
  end)
end

--- Why the server leased a pin automatically (nil when unknown).
---@param pin_id string
---@return string?
function M.auto_reason(pin_id)
  local r = M.promotion_of(pin_id)
  return r and r.reason or nil
end

--- The suggestion reflection of an item (to dismiss it), the latest not undone.
local function suggestion_reflection(item)
  return latest("suggest", function(r)
    return r.item == item
  end)
end

-- ---- fetching -----------------------------------------------------------------------------------

local function redraw_tree()
  local ok, tree = pcall(require, "ctx_lsp.tree")
  if ok then
    tree.redraw()
  end
end

--- ctx/listSuggestions into the state; the tree's "suggested" group follows.
---@param done? fun(suggestions: table[])
function M.refresh_suggestions(done)
  client.request("ctx/listSuggestions", nil, function(list)
    state().suggestions = type(list) == "table" and list or {}
    redraw_tree()
    if done then
      done(state().suggestions)
    end
  end, {
    quiet = true,
    on_error = function(err) -- a server without reflection (method not found), or not running
      if err.code == client.codes.method_not_found then
        state().suggestions = {}
      end
      if done then
        done(state().suggestions)
      end
      return true
    end,
  })
end

--- ctx/listReflections into the state, then `on_list(list)`.
---@param on_list fun(reflections: table[])
---@param opts? ctx_lsp.RequestOpts
function M.fetch_reflections(on_list, opts)
  client.request("ctx/listReflections", nil, function(list)
    list = type(list) == "table" and list or {}
    for _, r in ipairs(list) do
      remember(r)
    end
    on_list(list)
  end, opts)
end

--- ctx/listReflections into the state (reasons of automatic pins, ids to undo), quietly.
---@param done? fun(reflections: table[])
function M.refresh_reflections(done)
  M.fetch_reflections(function(list)
    if done then
      done(list)
    end
  end, {
    quiet = true,
    on_error = function() -- never leave the caller waiting (pins.refresh goes on without reasons)
      if done then
        done({})
      end
      return true
    end,
  })
end

--- After ctx/listPins: fetch the reflections when an automatic pin's reason is unknown.
---@param pins table[]
---@param done fun()
local looked_up = {} ---@type table<string, true> automatic pins whose reason was asked for once
function M.ensure_reasons(pins, done)
  local missing = false
  for _, pin in ipairs(pins or {}) do
    if pin.createdBy == "auto" and not looked_up[pin.id] and not M.promotion_of(pin.id) then
      looked_up[pin.id] = true
      missing = true
    end
  end
  if not missing then
    return done()
  end
  M.refresh_reflections(function()
    done()
  end)
end

-- ---- ctx/reflected ------------------------------------------------------------------------------

local burst = { timer = nil, loud = false }

--- A burst of reflections (the end of a turn brings several): refresh once.
local function after_burst()
  if burst.timer then
    burst.timer:stop()
  end
  burst.timer = vim.defer_fn(function()
    burst.timer = nil
    local replan = burst.loud
    burst.loud = false
    M.refresh_suggestions()
    require("ctx_lsp.pins").refresh(function()
      if replan then
        require("ctx_lsp.tree").after_change() -- the tree shows the pin the server made or ended
      end
    end)
  end, 50)
end

---@param r table {session, id, turn, kind, item, pinId, reason}
function M.on_reflected(r)
  if type(r) ~= "table" or type(r.kind) ~= "string" then
    return
  end
  local meter = client.state.meter
  if type(meter) == "table" and meter.session and r.session and r.session ~= meter.session then
    return -- another session of the same server
  end
  local st = state()
  remember(r)
  table.insert(st.reflection_log, M.log_line(r))
  while #st.reflection_log > LOG_MAX do
    table.remove(st.reflection_log, 1)
  end
  if M.loud[r.kind] then
    st.last_undoable = r.id
    burst.loud = true
    local opts = config.get().reflections
    if type(opts) ~= "table" or opts.notify ~= false then
      client.notify(M.message(r), levels.INFO)
    end
  end
  event("CtxReflected", r)
  after_burst()
end

-- ---- actions ------------------------------------------------------------------------------------

--- After a change: the pins, then the tree (it re-plans), then `done(value)`.
---@param value any
---@param done? fun(value: any)
local function follow(value, done)
  require("ctx_lsp.pins").refresh(function()
    require("ctx_lsp.tree").after_change(function()
      if done then
        done(value)
      end
    end)
  end)
end

--- Undo a reflection (ctx/undoReflection): a promotion's pin goes, a demoted lease comes back,
--- a suggestion is dismissed. Then the pins, the suggestions and the tree follow.
---@param id integer
---@param done? fun(result: table)
function M.undo(id, done)
  client.request("ctx/undoReflection", { id = id }, function(r)
    remember(r)
    if state().last_undoable == id then
      state().last_undoable = nil
    end
    local what = r.kind == "promote" and "the automatic lease on"
      or r.kind == "demote" and "the end of the lease on"
      or r.kind == "suggest" and "the suggestion of"
      or r.kind
    client.notify(("undone: %s %s"):format(what, r.item))
    M.refresh_suggestions()
    follow(r, done)
  end)
end

--- :CtxUndo [id]: the given reflection, or the last promotion/demotion you were told about.
---@param id? integer|string
---@param done? fun(result: table)
function M.undo_cmd(id, done)
  local n = tonumber(id)
  if id ~= nil and id ~= "" and not n then
    client.notify(("CtxUndo takes a reflection id (a number), not %q"):format(tostring(id)), levels.ERROR)
    return
  end
  n = n or state().last_undoable
  if not n then
    client.notify("nothing to undo: no promotion or demotion since the last undo (:CtxReflections lists them all)", levels.WARN)
    return
  end
  M.undo(n, done)
end

--- Ids for :CtxUndo completion: promotions and demotions not undone, newest first.
---@return string[]
function M.undoable_ids()
  local ids = {}
  for id, r in pairs(state().reflections) do
    if M.loud[r.kind] and r.undone ~= true then
      table.insert(ids, id)
    end
  end
  table.sort(ids, function(a, b)
    return a > b
  end)
  return vim.tbl_map(tostring, ids)
end

--- Pin a suggested item (ctx/pinSymbol {symbol = item}): only ever on the user's request.
---@param item string
---@param done? fun(pin: table)
function M.pin_suggestion(item, done)
  client.request("ctx/pinSymbol", { symbol = item }, function(pin)
    client.notify(("pinned %s (suggested by the model)"):format(pin.title or pin.symbol or item))
    follow(pin, done)
  end)
end

--- Dismiss a suggestion: undo the reflection that recorded it.
---@param item string
---@param done? fun(result: table)
function M.dismiss(item, done)
  local function go()
    local r = suggestion_reflection(item)
    if not r then
      client.notify(("no open suggestion of %s"):format(item), levels.WARN)
      return
    end
    client.request("ctx/undoReflection", { id = r.id }, function(out)
      remember(out)
      client.notify(("dismissed the suggestion of %s"):format(item))
      M.refresh_suggestions(function()
        if done then
          done(out)
        end
      end)
    end)
  end
  if suggestion_reflection(item) then
    go()
  else
    M.refresh_reflections(go)
  end
end

-- ---- :CtxReflections (ctx_lsp.reflect.list) ------------------------------------------------------

---@param done? fun(buf: integer)
function M.open_list(done)
  require("ctx_lsp.reflect.list").open(done)
end

return M
