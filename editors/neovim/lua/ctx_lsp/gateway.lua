---@brief The gateway the editor's server runs (`gateway.listen`): its status (ctx/gatewayStatus,
--- asked once the workspace is indexed, then kept current by ctx/gatewayRequest), the
--- statusline's `ctx ⇄ …` (the server's label, as it is), :CtxConversations
--- (ctx/listConversations → ctx/setActiveConversation), and the tree following the active
--- conversation's plans.

local client = require("ctx_lsp.client")
local config = require("ctx_lsp.config")
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

--- "ctx ⇄ 12 · 41.2k/180k · cache 83%" (the server's label), or "" when no gateway listens.
---@return string
function M.statusline()
  if not M.listening() then
    return ""
  end
  local label = client.state.gateway.label
  if type(label) ~= "string" or label == "" then
    label = "⇄"
  end
  return "ctx " .. label
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
    if M.listening() ~= was then
      require("ctx_lsp.client.notifications").redraw()
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
    require("ctx_lsp.client.notifications").redraw()
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
