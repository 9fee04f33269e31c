---@brief The LSP side: the shared client state, and a request helper that turns JSON-RPC
--- errors into notifications (never a stack trace). Starting and attaching are in
--- ctx_lsp.client.lifecycle, the ctx/ notification handlers in ctx_lsp.client.notifications
--- (their functions are reachable from here too).

local config = require("ctx_lsp.config")
local lifecycle = require("ctx_lsp.client.lifecycle")
local notifications = require("ctx_lsp.client.notifications")
local queue = require("ctx_lsp.client.queue")

local M = {}

M.name = "ctx_lsp"

--- JSON-RPC error codes the client treats specially.
M.codes = {
  method_not_found = -32601,
  invalid_params = -32602,
  context_overflow = -32001,
  not_found = -32002,
  index_not_ready = -32003,
}

--- Shared client state; every number in it came from the server.
M.state = {
  meter = nil, ---@type table? last BudgetMeter
  plan_id = nil, ---@type string? latest plan of the session (ctx/planChanged)
  pins = {}, ---@type table[] last ctx/listPins
  stale = {}, ---@type table<string, true> workspace-relative paths with stale capsules
  indexing = {}, ---@type table<integer, boolean> client id -> indexing in progress
  indexed = {}, ---@type table<integer, boolean> client id -> indexing finished
  index_message = {}, ---@type table<integer, string> client id -> the server's last word on indexing
  last_error = nil, ---@type string? last error shown to the user (tests read it)
  suggestions = {}, ---@type table[] last ctx/listSuggestions (the tree's "suggested" group)
  reflections = {}, ---@type table<integer, table> reflections seen (ctx/reflected, ctx/listReflections)
  reflection_log = {}, ---@type string[] one line per ctx/reflected (renewals and suggestions are only logged)
  last_undoable = nil, ---@type integer? the last promotion/demotion notified (:CtxUndo's default)
  gateway = nil, ---@type table? last ctx/gatewayStatus (listening, label, cacheWarmUntil, saved, …), kept current by ctx/gatewayRequest and ctx/gatewayStatusChanged
  gateway_request = nil, ---@type table? the last ctx/gatewayRequest
}

local levels = vim.log.levels
local has_011 = vim.fn.has("nvim-0.11") == 1

---@param msg string
---@param level? integer
function M.notify(msg, level)
  level = level or levels.INFO
  if level >= levels.ERROR then
    M.state.last_error = msg
  end
  vim.notify("ctx-lsp: " .. msg, level, { title = "ctx-lsp" })
end

-- ---- lifecycle and notifications (ctx_lsp.client.lifecycle, ctx_lsp.client.notifications) ----

M.root_of = lifecycle.root_of
M.client_root = lifecycle.client_root
M.on_init = lifecycle.on_init
M.on_attach = lifecycle.on_attach
M.on_exit = lifecycle.on_exit
M.lsp_config = lifecycle.lsp_config
M.check_cmd = lifecycle.check_cmd
M.setup = lifecycle.setup
M.on_budget = notifications.on_budget
M.handlers = notifications.handlers

-- ---- requests -------------------------------------------------------------------------------

---@param bufnr? integer
---@return vim.lsp.Client?
function M.get_client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local opts = { name = M.name, bufnr = bufnr }
  if has_011 then
    opts._uninitialized = true
  end
  local clients = vim.lsp.get_clients(opts)
  if #clients == 0 then
    opts.bufnr = nil
    clients = vim.lsp.get_clients(opts)
  end
  for _, client in ipairs(clients) do
    if not (client.is_stopped and client:is_stopped()) then
      return client
    end
  end
  return nil
end

--- True once a client runs, is initialized and has indexed the workspace.
---@return boolean
function M.ready()
  local client = M.get_client()
  return client ~= nil and client.initialized == true and M.state.indexed[client.id] == true
end

---@param err table
---@return string
function M.error_message(err)
  if type(err) ~= "table" then
    return tostring(err)
  end
  local msg = err.message
  if type(msg) ~= "string" or msg == "" then
    msg = "request failed"
  end
  return msg
end

---@class ctx_lsp.RequestOpts
---@field bufnr? integer
---@field client? vim.lsp.Client
---@field on_error? fun(err: table): boolean? return true when handled (no notification)
---@field quiet? boolean no notification on errors or a missing server
---@field wait_index? boolean send once the workspace is indexed (plans)

--- Send a ctx/ request. Errors become a vim.notify at ERROR level with the server's message;
--- `on_result` runs only on success.
---@param method string
---@param params? table
---@param on_result? fun(result: any)
---@param opts? ctx_lsp.RequestOpts
---@return boolean sent (or queued)
function M.request(method, params, on_result, opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = opts.client or M.get_client(bufnr)
  if not client then
    local err = { code = M.codes.index_not_ready, message = "not running" }
    if not (opts.on_error and opts.on_error(err)) and not opts.quiet then
      M.notify(
        "the server is not running: open a file of your project ("
          .. table.concat(config.get().filetypes, ", ")
          .. ") or see :checkhealth ctx_lsp",
        levels.WARN
      )
    end
    return false
  end
  if params == nil or (type(params) == "table" and next(params) == nil) then
    params = vim.empty_dict()
  end

  local function handler(err, result)
    if err then
      if opts.on_error and opts.on_error(err) then
        return
      end
      if not opts.quiet then
        M.notify(M.error_message(err), levels.ERROR)
      end
      return
    end
    if on_result then
      local ok, bug = xpcall(on_result, debug.traceback, result)
      if not ok then
        M.notify("internal error in the Neovim client: " .. tostring(bug):gsub("\n.*", ""), levels.ERROR)
        M.state.last_bug = bug
      end
    end
  end

  local function send()
    if client.is_stopped and client:is_stopped() then
      return
    end
    local send_buf = vim.api.nvim_buf_is_valid(bufnr) and bufnr or nil
    if has_011 then
      client:request(method, params, handler, send_buf)
    else
      client.request(method, params, handler, send_buf)
    end
  end

  local waiting = not client.initialized or (opts.wait_index and M.state.indexing[client.id])
  if waiting then
    queue.add(client.id, send)
    -- never wait forever on a server that does not report progress
    vim.defer_fn(function()
      if queue.has(client.id) and client.initialized then
        queue.flush(client.id)
      end
    end, 15000)
    return true
  end
  send()
  return true
end

--- Stop the clients (tests; :CtxRestart could use it).
function M.stop()
  M.stopping = true
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if has_011 then
      client:stop()
    else
      client.stop()
    end
  end
end

return M
