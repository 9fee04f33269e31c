---@brief Options of require('ctx_lsp').setup{}: defaults, merge, and the current values.

local M = {}

---@class ctx_lsp.Options
---@field cmd string[]            server command (default { "ctx-lsp", "serve" })
---@field model? string           model name the server plans for (its default: gpt-4o)
---@field context_length? integer override the model's context length in every plan
---@field mode? "off"|"light"|"heavy" retrieval mode (the server's default: light)
---@field session? string         session id (default: the server's default session of the workspace)
---@field filetypes string[]      buffers the server attaches to (default: every language it indexes)
---@field root_markers (string|string[])[] what marks the workspace root, in priority order (a nested list: equal priority, nearest wins)
---@field pin ctx_lsp.PinOptions  how :CtxPin finds the symbol
---@field settings table          extra server settings, passed as is (camelCase keys)
---@field keymaps table<string, string|false> global normal-mode maps; none by default
---@field tree { width: integer, position: "right"|"left" }
---@field sign_text string        gutter sign of pinned symbols (1-2 cells)
---@field auto_sign_text string   gutter sign of pins the server leased automatically (1-2 cells)
---@field reflections { notify: boolean } promotions/demotions as notifications (with :CtxUndo)
---@field bar_width integer       cells of the meter's bar
---@field gateway ctx_lsp.GatewayOptions the gateway in the editor's server (off unless `listen` is set)

---@class ctx_lsp.PinOptions
---@field definition boolean  ask the buffer's other language servers where the name under the cursor is defined, and pin that
---@field timeout integer     milliseconds to wait for their answer before pinning at the cursor

---@class ctx_lsp.GatewayOptions sent as settings `gateway.*` (camelCase); unset keys: the server's
---@field listen? string             "HOST:PORT": the server runs the gateway there
---@field openai_upstream? string    default https://api.openai.com/v1
---@field anthropic_upstream? string default https://api.anthropic.com
---@field mode? "off"|"light"|"heavy" the gateway's retrieval mode (default: the workspace's)
---@field token? string              X-Ctx-Token the assistants send (required off loopback)
---@field context_budget? integer    tokens of retrieved code a request carries at most
---@field context_cost? "savings"|"always" what pays for it (default: savings in light mode)
---@field review? boolean            review before send: each request waits for :CtxReview
---@field review_timeout? number     seconds until a request under review is sent as planned

M.defaults = {
  cmd = { "ctx-lsp", "serve" },
  model = nil,
  context_length = nil,
  mode = nil,
  session = nil,
  -- the languages the server indexes (DESIGN §4a); Neovim's names for them
  filetypes = {
    "python",
    "rust",
    "typescript",
    "typescriptreact",
    "javascript",
    "javascriptreact",
    "go",
    "java",
    "c",
    "cpp",
  },
  -- ctx.toml first (it says "this is the workspace"), then the repository: one server for every
  -- language of a repository, not one per package of it; without either, the nearest project file
  root_markers = {
    "ctx.toml",
    { ".git", ".hg", ".jj" },
    {
      "pyproject.toml",
      "setup.py",
      "setup.cfg",
      "Cargo.toml",
      "go.mod",
      "go.work",
      "package.json",
      "tsconfig.json",
      "jsconfig.json",
      "deno.json",
      "pom.xml",
      "build.gradle",
      "build.gradle.kts",
      "settings.gradle",
      "settings.gradle.kts",
      "CMakeLists.txt",
      "meson.build",
      "compile_commands.json",
    },
  },
  pin = { definition = true, timeout = 500 },
  settings = {},
  keymaps = {},
  tree = { width = 64, position = "right" },
  sign_text = "📌",
  auto_sign_text = "📎",
  reflections = { notify = true },
  bar_width = 5,
  gateway = {},
}

local current = vim.deepcopy(M.defaults)

---@param opts? table
---@return ctx_lsp.Options
function M.set(opts)
  if type(opts) ~= "table" then
    vim.notify("ctx-lsp: setup() takes a table of options", vim.log.levels.ERROR)
    opts = {}
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- lists replace, they do not merge
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts[key] ~= nil then
      merged[key] = vim.deepcopy(opts[key])
    end
  end
  if merged.mode ~= nil and not vim.tbl_contains({ "off", "light", "heavy" }, merged.mode) then
    vim.notify(
      ("ctx-lsp: mode must be off, light or heavy, got %q (using the server's default)"):format(
        tostring(merged.mode)
      ),
      vim.log.levels.WARN
    )
    merged.mode = nil
  end
  if type(merged.gateway) ~= "table" then
    vim.notify("ctx-lsp: gateway must be a table, e.g. { listen = \"127.0.0.1:8787\" }", vim.log.levels.WARN)
    merged.gateway = {}
  end
  if type(merged.pin) ~= "table" then
    vim.notify("ctx-lsp: pin must be a table, e.g. { definition = true, timeout = 500 }", vim.log.levels.WARN)
    merged.pin = vim.deepcopy(M.defaults.pin)
  elseif type(merged.pin.timeout) ~= "number" or merged.pin.timeout < 0 then
    vim.notify(
      ("ctx-lsp: pin.timeout must be milliseconds (a number ≥ 0), got %q (using 500)"):format(
        tostring(merged.pin.timeout)
      ),
      vim.log.levels.WARN
    )
    merged.pin.timeout = M.defaults.pin.timeout
  end
  current = merged
  return current
end

---@return ctx_lsp.Options
function M.get()
  return current
end

--- "review_timeout" -> "reviewTimeout" (the server's settings are camelCase).
---@param key string
---@return string
function M.camel(key)
  return (key:gsub("_(%l)", string.upper))
end

--- The `gateway` option as the server's `gateway` settings: camelCase keys, only those set.
---@param opts? table
---@return table
function M.gateway_settings(opts)
  local out = {}
  for key, value in pairs(type(opts) == "table" and opts or {}) do
    if type(key) == "string" then
      out[M.camel(key)] = value
    end
  end
  return out
end

--- Server settings sent as initializationOptions.settings (camelCase, as the protocol wants).
---@return table
function M.server_settings()
  local c = current
  local s = vim.deepcopy(c.settings or {})
  if c.model then
    s.model = c.model
  end
  if c.mode then
    s.mode = c.mode
  end
  local gateway = M.gateway_settings(c.gateway)
  if next(gateway) ~= nil then
    s.gateway = vim.tbl_extend("force", type(s.gateway) == "table" and s.gateway or {}, gateway)
  end
  return s
end

return M
