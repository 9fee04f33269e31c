---@brief The LSP side: the client config, starting and attaching (vim.lsp.config/enable on
--- Neovim 0.11, vim.lsp.start on FileType on 0.10), the ctx/ notification handlers, and a
--- request helper that turns JSON-RPC errors into notifications (never a stack trace).

local config = require("ctx_lsp.config")

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

local function event(name, data)
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = name, modeline = false, data = data })
end

-- ---- root -------------------------------------------------------------------------------

--- The workspace root of a buffer: the nearest root marker; else the current directory when
--- the file is under it (but never the home directory itself); else the file's directory.
---@param bufnr integer
---@return string?
function M.root_of(bufnr)
  local markers = config.get().root_markers
  local root = vim.fs.root(bufnr, markers)
  if root then
    return root
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return nil
  end
  name = vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  local home = vim.fs.normalize(vim.uv.os_homedir() or "")
  if cwd ~= home and cwd ~= "/" and vim.startswith(name, cwd .. "/") then
    return cwd
  end
  return vim.fs.dirname(name)
end

---@param client vim.lsp.Client
---@return string?
function M.client_root(client)
  local root = client.root_dir or (client.config and client.config.root_dir)
  if type(root) == "string" then
    return root
  end
  local folders = client.workspace_folders
  if type(folders) == "table" and folders[1] then
    return vim.uri_to_fname(folders[1].uri)
  end
  return nil
end

-- ---- notifications from the server ------------------------------------------------------------

--- Mark the statuslines for redraw; the main loop paints them. (An immediate `:redrawstatus!`
--- from a handler can run while a window layout change is pending, which Neovim 0.11.4 does
--- not survive in some builds: grid_line_flush assertion.)
local function redraw()
  if vim.api.nvim__redraw then
    pcall(vim.api.nvim__redraw, { statusline = true })
  else
    vim.schedule(function()
      pcall(vim.cmd, "redrawstatus!")
    end)
  end
end

---@param meter table
function M.on_budget(meter)
  if type(meter) ~= "table" then
    return
  end
  M.state.meter = meter
  if meter.planId and meter.planId ~= vim.NIL then
    M.state.plan_id = meter.planId
  end
  redraw()
  event("CtxBudgetChanged", meter)
  require("ctx_lsp.pins").schedule_refresh()
end

local handlers = {}

handlers["ctx/budgetChanged"] = function(_, result)
  M.on_budget(result)
end

handlers["ctx/planChanged"] = function(_, result)
  if type(result) == "table" and result.planId then
    M.state.plan_id = result.planId
    event("CtxPlanChanged", result)
  end
end

handlers["ctx/askRepin"] = function(_, result)
  if type(result) == "table" and type(result.pins) == "table" then
    require("ctx_lsp.pins").ask_repin(result.pins)
  end
end

handlers["ctx/capsulesStale"] = function(_, result)
  result = type(result) == "table" and result or {}
  local paths = {}
  for _, cap in ipairs(result.capsules or {}) do
    local path = type(cap) == "table" and cap.path or cap
    if type(path) == "string" then
      M.state.stale[path] = true
      table.insert(paths, path)
    end
  end
  for _, f in ipairs(result.files or {}) do
    if type(f) == "string" and #paths == 0 then
      table.insert(paths, f)
    end
  end
  M.notify(
    ("%d capsule%s out of date (%s): the plan marks them stale"):format(
      #paths,
      #paths == 1 and "" or "s",
      table.concat(paths, ", ")
    ),
    levels.WARN
  )
  require("ctx_lsp.tree").mark_stale()
  event("CtxCapsulesStale", result)
end

handlers["ctx/compacted"] = function(_, result)
  require("ctx_lsp.compact").on_compacted(result)
end

handlers["ctx/reflected"] = function(_, result)
  require("ctx_lsp.reflect").on_reflected(result)
end

---@return table<string, function>
function M.handlers()
  return vim.deepcopy(handlers)
end

-- ---- lifecycle ------------------------------------------------------------------------------

local pending = {} ---@type table<integer, function[]> requests waiting for initialize / indexing

local function flush(client_id)
  local queue = pending[client_id]
  pending[client_id] = nil
  for _, fn in ipairs(queue or {}) do
    fn()
  end
end

local initialized = {} ---@type table<integer, true>

function M.on_init(client)
  initialized[client.id] = true
  vim.schedule(function()
    if not pending[client.id] then
      return
    end
    if not M.state.indexing[client.id] then
      flush(client.id)
    end
  end)
end

local attached_once = {} ---@type table<integer, true>

function M.on_attach(client, bufnr)
  require("ctx_lsp.pins").place(bufnr)
  if attached_once[client.id] then
    return
  end
  attached_once[client.id] = true
  M.request("ctx/showBudget", nil, function(meter)
    if not M.state.meter or M.state.meter.session == meter.session then
      M.on_budget(meter)
    end
  end, { quiet = true, client = client })
end

--- A server that dies before it is ready gets one clear error (a later crash is reported by
--- Neovim itself, "Client ctx_lsp quit with exit code …").
function M.on_exit(code, signal, client_id)
  local was_ready = initialized[client_id]
  initialized[client_id] = nil
  vim.schedule(function()
    pending[client_id] = nil
    M.state.indexing[client_id] = nil
    if code ~= 0 and not was_ready and not M.stopping then
      local cmd = config.get().cmd
      M.notify(
        ("the server (%s) exited with code %s%s before it was ready; see :LspLog and :checkhealth ctx_lsp"):format(
          type(cmd) == "table" and table.concat(cmd, " ") or "cmd",
          tostring(code),
          (signal and signal ~= 0) and (" (signal %d)"):format(signal) or ""
        ),
        levels.ERROR
      )
    end
  end)
end

--- The client config (the 0.11 `lsp/ctx_lsp.lua` returns it with the defaults).
---@return table
function M.lsp_config()
  local c = config.get()
  local init_options = {}
  local settings = config.server_settings()
  if next(settings) ~= nil then
    init_options.settings = settings
  end
  -- Without a configured session the server's default session of the workspace is used: the one
  -- every client and tool that names none shares, so pins survive restarts and show everywhere.
  if c.session then
    init_options.session = c.session
  end
  return {
    name = M.name,
    cmd = c.cmd,
    filetypes = c.filetypes,
    root_markers = c.root_markers,
    init_options = init_options,
    handlers = M.handlers(),
    on_init = M.on_init,
    on_attach = M.on_attach,
    on_exit = M.on_exit,
  }
end

--- Whether the configured command can run; says so once, clearly, when it cannot.
local warned_cmd = false
---@return boolean
function M.check_cmd()
  local cmd = config.get().cmd
  if type(cmd) ~= "table" then
    return true -- a function (0.11): Neovim's business
  end
  local exe = cmd[1]
  if type(exe) == "string" and exe ~= "" and vim.fn.executable(exe) == 1 then
    return true
  end
  if not warned_cmd then
    warned_cmd = true
    M.notify(
      ("cannot start the server: %q is not an executable. Install ctx-lsp (pip install ctx-lsp) "):format(
        tostring(exe)
      ) .. "or set `cmd` in require('ctx_lsp').setup{}; see :checkhealth ctx_lsp",
      levels.ERROR
    )
  end
  return false
end

local group

--- Register the server: vim.lsp.config + vim.lsp.enable when present (0.11), else vim.lsp.start
--- on FileType. Called by setup().
function M.setup()
  local c = config.get()
  group = vim.api.nvim_create_augroup("ctx_lsp", { clear = true })
  warned_cmd = false

  vim.api.nvim_create_autocmd("LspProgress", {
    group = group,
    callback = function(ev)
      local data = ev.data or {}
      local params = data.params or data.result
      local client = data.client_id and vim.lsp.get_client_by_id(data.client_id)
      if not client or client.name ~= M.name or type(params) ~= "table" then
        return
      end
      local value = params.value or {}
      if value.kind == "begin" then
        M.state.indexing[client.id] = true
      elseif value.kind == "end" then
        M.state.indexing[client.id] = false
        M.state.indexed[client.id] = true
        M.state.index_message[client.id] = value.message
        flush(client.id)
        event("CtxIndexed", { client_id = client.id, message = value.message })
      end
    end,
  })

  local cfg = M.lsp_config()
  if vim.lsp.config and vim.lsp.enable then
    cfg.root_dir = function(bufnr, on_dir)
      if M.check_cmd() then
        on_dir(M.root_of(bufnr))
      end
    end
    vim.lsp.config(M.name, cfg)
    vim.lsp.enable(M.name)
    -- vim.lsp.enable skips a non-executable cmd silently: say it once, on a matching buffer.
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = c.filetypes,
      callback = function()
        M.check_cmd()
      end,
    })
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do -- buffers open before setup() (lazy loading)
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(c.filetypes, vim.bo[bufnr].filetype) then
        M.check_cmd()
        break
      end
    end
    return
  end

  local function start(bufnr)
    if vim.bo[bufnr].buftype ~= "" or not M.check_cmd() then
      return
    end
    local root = M.root_of(bufnr)
    local start_cfg = vim.tbl_extend("force", cfg, { root_dir = root })
    start_cfg.root_markers, start_cfg.filetypes = nil, nil
    local ok, err = pcall(vim.lsp.start, start_cfg, { bufnr = bufnr })
    if not ok then
      M.notify("cannot start the server: " .. tostring(err), levels.ERROR)
    end
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = c.filetypes,
    callback = function(ev)
      start(ev.buf)
    end,
  })
  -- buffers already open when setup() ran (lazy loading)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(c.filetypes, vim.bo[bufnr].filetype) then
      start(bufnr)
    end
  end
end

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
    pending[client.id] = pending[client.id] or {}
    table.insert(pending[client.id], send)
    -- never wait forever on a server that does not report progress
    vim.defer_fn(function()
      if pending[client.id] and client.initialized then
        flush(client.id)
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
