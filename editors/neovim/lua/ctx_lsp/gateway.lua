---@brief The gateway the editor's server runs (`gateway.listen`): its status (ctx/gatewayStatus,
--- asked once the workspace is indexed, then kept current by ctx/gatewayRequest and
--- ctx/gatewayStatusChanged), the statusline's `ctx ⇄ … · cache warm 4:12 · saved $1.20` (the
--- server's label as it is, the active conversation's prompt cache counted down from the server's
--- timestamp, the server's savings words), :CtxConversations (ctx/listConversations →
--- ctx/setActiveConversation), and the tree following the active conversation's plans.

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
local prompt_cache = require("ctx_lsp.prompt_cache")
local util = require("ctx_lsp.util")
local present = util.present

local M = {}

local levels = vim.log.levels

--- The gateway's base URL when the server runs one ("http://127.0.0.1:8787"), else nil.
---@return string?
function M.listening()
  local st = client.state.gateway
  if type(st) == "table" and present(st.listening) then
    return st.listening
  end
  return nil
end

--- "ctx ⇄ 12 · 41.2k/180k · 83% cached · cache warm 4:12 · saved $1.20": the server's label of
--- the latest request, the active conversation's prompt cache now (counted down from the
--- server's `cacheWarmUntil`: "cache cold" from that time on, nothing before its first request)
--- and what it saved, cache-weighted against sending direct (the server's words); "" when no
--- gateway listens.
---@param now? integer epoch milliseconds (tests)
---@return string
function M.statusline(now)
  if not M.listening() then
    return ""
  end
  local st = client.state.gateway
  local label = st.label
  if type(label) ~= "string" or label == "" then
    label = "⇄"
  end
  local parts = { "ctx " .. label }
  for _, part in ipairs({ prompt_cache.text(st, now), st.saved }) do
    if type(part) == "string" and part ~= "" then
      table.insert(parts, part)
    end
  end
  return table.concat(parts, " · ")
end

local function redraw()
  require("ctx_lsp.client.notifications").redraw()
end

--- A new status: keep the statusline's cache countdown moving while it is warm.
local function follow_cache()
  prompt_cache.follow(function()
    return client.state.gateway
  end, redraw)
end

--- Ask the server for the gateway's status (quietly: an older server has no gateway).
---@param done? fun(status: table)
function M.refresh(done)
  client.request("ctx/gatewayStatus", nil, function(status)
    if type(status) ~= "table" then
      return
    end
    local was = M.listening()
    client.state.gateway = status
    follow_cache()
    if M.listening() ~= was then
      redraw()
      util.event("CtxGatewayStatus", status)
    end
    if done then
      done(status)
    end
  end, { quiet = true })
end

--- The workspace is indexed: the server starts its gateway now (it says nothing when it
--- listens), so ask until it does — a few seconds when `gateway.listen` is set here, a moment
--- otherwise (ctx.toml may set it too).
function M.on_indexed()
  local tries = present(config.get().gateway.listen) and 40 or 4
  local function try()
    M.refresh(function(status)
      tries = tries - 1
      if not present(status.listening) and tries > 0 then
        vim.defer_fn(try, 250)
      end
    end)
  end
  try()
end

--- ctx/gatewayStatusChanged: the gateway started (or could not), or a request's usage was summed:
--- the whole status, with the cache's new time and the savings.
---@param status table a GatewayStatus
function M.on_status(status)
  if type(status) ~= "table" then
    return
  end
  client.state.gateway = status
  follow_cache()
  redraw()
  util.event("CtxGatewayStatus", status)
end

--- ctx/gatewayRequest: an assistant's request went through; its label goes to the statusline.
---@param req table
function M.on_request(req)
  if type(req) ~= "table" then
    return
  end
  client.state.gateway_request = req
  local st = client.state.gateway
  if type(st) == "table" and present(st.listening) then
    st.label, st.requests, st.latest = req.label, req.requests, req
  else
    M.refresh()
  end
  require("ctx_lsp.client.notifications").redraw()
  util.event("CtxGatewayRequest", req)
end

--- With the gateway running the tree follows the active conversation's latest plan.
---@param plan_id any
function M.follow(plan_id)
  if M.listening() and present(plan_id) then
    require("ctx_lsp.tree").follow(plan_id)
  end
end

--- One line of :CtxConversations: "● How is stock reserved? · gpt-4o · 4 messages · 2 requests · 14:03".
---@param c table a GatewayConversation
---@return string
function M.format_conversation(c)
  local title = require("ctx_lsp.tree.render").one_line(present(c.title) and c.title or c.session, 60)
  local n, r = tonumber(c.messages) or 0, tonumber(c.requests) or 0
  return ("%s %s · %s · %d message%s · %d request%s · %s"):format(
    c.active == true and "●" or " ",
    title,
    present(c.model) and c.model or "?",
    n,
    n == 1 and "" or "s",
    r,
    r == 1 and "" or "s",
    tonumber(c.lastActivity) and os.date("%H:%M", math.floor(c.lastActivity)) or "?"
  )
end

--- Make a conversation the active one: pins, plans and the meter without a session go there.
---@param conv table a GatewayConversation (or { session = … })
---@param done? fun(status: table)
function M.activate(conv, done)
  client.request("ctx/setActiveConversation", { session = conv.session }, function(status)
    client.state.gateway = status
    follow_cache()
    redraw()
    client.notify(("active conversation: %s"):format(present(conv.title) and conv.title or conv.session))
    util.event("CtxGatewayStatus", status)
    if done then
      done(status)
    end
  end)
end

--- :CtxConversations: pick the active conversation among those the gateway served.
---@param done? fun(status?: table) after the choice (nil: none made)
function M.pick(done)
  local function finish(status)
    if done then
      done(status)
    end
  end
  if not M.listening() then
    client.request("ctx/gatewayStatus", nil, function(status)
      client.state.gateway = status
      if present(status.listening) then
        return M.pick(done)
      end
      client.notify('no gateway runs: set gateway = { listen = "127.0.0.1:8787" } in setup()', levels.WARN)
      finish(nil)
    end)
    return
  end
  client.request("ctx/listConversations", nil, function(list)
    if type(list) ~= "table" or #list == 0 then
      client.notify(("no conversation went through the gateway yet (%s)"):format(M.listening()))
      return finish(nil)
    end
    vim.ui.select(list, {
      prompt = "ctx: active conversation",
      kind = "ctx_lsp.conversation",
      format_item = M.format_conversation,
    }, function(conv)
      if not conv then
        return finish(nil)
      end
      M.activate(conv, finish)
    end)
  end)
end

return M
