---@brief The client's lifecycle: the workspace root of a buffer, the client config, starting
--- (vim.lsp.config/enable on Neovim 0.11, vim.lsp.start on FileType on 0.10), attaching, the
--- indexing progress that releases queued plans, and a clear word when the server cannot start.

local config = require("ctx_lsp.config")
local notifications = require("ctx_lsp.client.notifications")
local queue = require("ctx_lsp.client.queue")
local event = require("ctx_lsp.util").event

local M = {}

local levels = vim.log.levels

local function client()
  return require("ctx_lsp.client")
end

-- ---- root -------------------------------------------------------------------------------

--- The workspace root of a buffer: the first of `root_markers` found upward, in their order (a
--- nested list: the nearest of its names; by default ctx.toml, else the repository, else the
--- nearest project file of any language); else the current directory when the file is under it
--- (but never the home directory itself); else the file's directory.
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

---@param c vim.lsp.Client
---@return string?
function M.client_root(c)
  local root = c.root_dir or (c.config and c.config.root_dir)
  if type(root) == "string" then
    return root
  end
  local folders = c.workspace_folders
  if type(folders) == "table" and folders[1] then
    return vim.uri_to_fname(folders[1].uri)
  end
  return nil
end

-- ---- the client's callbacks -------------------------------------------------------------------

local initialized = {} ---@type table<integer, true>

function M.on_init(c)
  initialized[c.id] = true
  vim.schedule(function()
    if not queue.has(c.id) then
      return
    end
    if not client().state.indexing[c.id] then
      queue.flush(c.id)
    end
  end)
end

local attached_once = {} ---@type table<integer, true>

function M.on_attach(c, bufnr)
  require("ctx_lsp.pins").place(bufnr)
  if attached_once[c.id] then
    return
  end
  attached_once[c.id] = true
  local state = client().state
  client().request("ctx/showBudget", nil, function(meter)
    if not state.meter or state.meter.session == meter.session then
      notifications.on_budget(meter)
    end
  end, { quiet = true, client = c })
end

--- A server that dies before it is ready gets one clear error (a later crash is reported by
--- Neovim itself, "Client ctx_lsp quit with exit code …").
function M.on_exit(code, signal, client_id)
  local was_ready = initialized[client_id]
  initialized[client_id] = nil
  vim.schedule(function()
    queue.drop(client_id)
    client().state.indexing[client_id] = nil
    client().state.gateway = nil -- it ran in that server
    require("ctx_lsp.prompt_cache").stop() -- nothing to count down
    if code ~= 0 and not was_ready and not client().stopping then
      local cmd = config.get().cmd
      client().notify(
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

--- Indexing progress ($/progress of the server): plans wait for its end.
---@param ev table the LspProgress autocmd's event
local function on_progress(ev)
  local data = ev.data or {}
  local params = data.params or data.result
  local c = data.client_id and vim.lsp.get_client_by_id(data.client_id)
  if not c or c.name ~= client().name or type(params) ~= "table" then
    return
  end
  local state = client().state
  local value = params.value or {}
  if value.kind == "begin" then
    state.indexing[c.id] = true
  elseif value.kind == "end" then
    state.indexing[c.id] = false
    state.indexed[c.id] = true
    state.index_message[c.id] = value.message
    queue.flush(c.id)
    event("CtxIndexed", { client_id = c.id, message = value.message })
    require("ctx_lsp.gateway").on_indexed()
  end
end

-- ---- config and start -------------------------------------------------------------------------

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
    name = client().name,
    cmd = c.cmd,
    filetypes = c.filetypes,
    root_markers = c.root_markers,
    init_options = init_options,
    handlers = notifications.handlers(),
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
    client().notify(
      ("cannot start the server: %q is not an executable. Install ctx-lsp (pip install ctx-lsp) "):format(
        tostring(exe)
      ) .. "or set `cmd` in require('ctx_lsp').setup{}; see :checkhealth ctx_lsp",
      levels.ERROR
    )
  end
  return false
end

--- The loaded buffers of the configured filetypes (open before setup(): lazy loading).
---@return integer[]
local function matching_buffers()
  local filetypes = config.get().filetypes
  local out = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(filetypes, vim.bo[bufnr].filetype) then
      table.insert(out, bufnr)
    end
  end
  return out
end

--- Register the server: vim.lsp.config + vim.lsp.enable when present (0.11), else vim.lsp.start
--- on FileType. Called by setup().
function M.setup()
  local c = config.get()
  local name = client().name
  local group = vim.api.nvim_create_augroup("ctx_lsp", { clear = true })
  warned_cmd = false

  vim.api.nvim_create_autocmd("LspProgress", { group = group, callback = on_progress })

  local cfg = M.lsp_config()
  if vim.lsp.config and vim.lsp.enable then
    cfg.root_dir = function(bufnr, on_dir)
      if M.check_cmd() then
        on_dir(M.root_of(bufnr))
      end
    end
    vim.lsp.config(name, cfg)
    vim.lsp.enable(name)
    -- vim.lsp.enable skips a non-executable cmd silently: say it once, on a matching buffer.
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = c.filetypes,
      callback = function()
        M.check_cmd()
      end,
    })
    if #matching_buffers() > 0 then
      M.check_cmd()
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
      client().notify("cannot start the server: " .. tostring(err), levels.ERROR)
    end
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = c.filetypes,
    callback = function(ev)
      start(ev.buf)
    end,
  })
  for _, bufnr in ipairs(matching_buffers()) do
    start(bufnr)
  end
end

return M
