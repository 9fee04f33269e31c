---@brief Where :CtxPin points. At a use site the name under the cursor is defined elsewhere; the
--- buffer's other language servers (rust-analyzer, tsserver, gopls, …, never ctx_lsp itself) know
--- where. They are asked `textDocument/definition` at the cursor, for at most `pin.timeout` ms;
--- the first location they give inside the workspace root is where the pin points, else the
--- cursor. The server still decides which symbol is there (ctx/pinSymbol): this only picks the
--- position it is asked about.

local config = require("ctx_lsp.config")

local M = {}

local METHOD = "textDocument/definition"
local has_011 = vim.fn.has("nvim-0.11") == 1

--- client:name(...) on 0.11, client.name(...) on 0.10.
local function call(c, name, ...)
  if has_011 then
    return c[name](c, ...)
  end
  return c[name](...)
end

--- The clients of a buffer that can answer textDocument/definition, ctx_lsp's own excepted.
---@param bufnr integer
---@param self vim.lsp.Client the ctx_lsp client
---@return vim.lsp.Client[]
function M.other_clients(bufnr, self)
  local out = {}
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if
      c.id ~= self.id
      and c.name ~= self.name
      and c.initialized
      and not call(c, "is_stopped")
      and (has_011 and c:supports_method(METHOD, bufnr) or (not has_011 and c.supports_method(METHOD, { bufnr = bufnr })))
    then
      table.insert(out, c)
    end
  end
  return out
end

--- The places a definition result names: a Location, Location[] or LocationLink[] (the link's
--- targetSelectionRange, the name, rather than its whole targetRange).
---@param result any
---@return { uri: string, position: lsp.Position }[]
function M.locations(result)
  if type(result) ~= "table" then
    return {}
  end
  if result.uri ~= nil or result.targetUri ~= nil then
    result = { result }
  end
  local out = {}
  for _, loc in ipairs(result) do
    if type(loc) == "table" then
      local uri = loc.targetUri or loc.uri
      local range = loc.targetSelectionRange or loc.targetRange or loc.range
      if type(uri) == "string" and type(range) == "table" and type(range.start) == "table" then
        table.insert(out, { uri = uri, position = { line = range.start.line, character = range.start.character } })
      end
    end
  end
  return out
end

---@param path string
---@return string
local function real(path)
  path = vim.fs.normalize(path)
  return vim.fs.normalize(vim.uv.fs_realpath(path) or path)
end

--- Whether a URI is a file inside the workspace root (symlinks resolved).
---@param uri string
---@param root string
---@return boolean
function M.inside(uri, root)
  if not vim.startswith(uri, "file:") then
    return false
  end
  return vim.startswith(real(vim.uri_to_fname(uri)), real(root) .. "/")
end

--- A position in one encoding as the same place in another (the other server may count
--- characters in UTF-8 or UTF-32, ctx_lsp in its own). Unchanged when the line is unreadable.
---@param uri string
---@param pos lsp.Position
---@param from string
---@param to string
---@return lsp.Position
function M.convert(uri, pos, from, to)
  if from == to or pos.character == 0 or not has_011 then
    return pos
  end
  local fname = vim.uri_to_fname(uri)
  local line
  local bufnr = vim.fn.bufnr(fname)
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    line = vim.api.nvim_buf_get_lines(bufnr, pos.line, pos.line + 1, false)[1]
  else
    local ok, lines = pcall(vim.fn.readfile, fname, "", pos.line + 1)
    line = ok and lines[pos.line + 1] or nil
  end
  if not line then
    return pos
  end
  local ok, byte = pcall(vim.str_byteindex, line, from, pos.character, false)
  if not ok then
    return pos
  end
  local ok2, char = pcall(vim.str_utfindex, line, to, byte, false)
  return ok2 and { line = pos.line, character = char } or pos
end

---@class ctx_lsp.PinTarget
---@field uri string
---@field position lsp.Position in the ctx_lsp client's encoding
---@field client string the server that gave it

--- Ask the buffer's other servers where the name under the cursor of `win` is defined. `done`
--- gets the first location inside `root` any of them gives, or nil: none asked (no other server,
--- `pin.definition` off, no root), none answered in `pin.timeout` ms, none in the workspace.
---@param win integer
---@param self vim.lsp.Client the ctx_lsp client
---@param root? string the workspace root
---@param done fun(target?: ctx_lsp.PinTarget)
function M.find(win, self, root, done)
  local opts = config.get().pin or {}
  local bufnr = vim.api.nvim_win_get_buf(win)
  local others = (opts.definition ~= false and root) and M.other_clients(bufnr, self) or {}
  if #others == 0 then
    return done(nil)
  end
  local finished, pending, open, timer = false, #others, {}, nil
  local function finish(target)
    if finished then
      return
    end
    finished = true
    if timer and not timer:is_closing() then
      timer:stop()
      timer:close()
    end
    for c, id in pairs(open) do
      pcall(call, c, "cancel_request", id)
    end
    done(target)
  end
  for _, c in ipairs(others) do
    if finished then
      break
    end
    local params = vim.lsp.util.make_position_params(win, c.offset_encoding or "utf-16")
    local ok, id = call(c, "request", METHOD, params, function(err, result)
      open[c] = nil
      pending = pending - 1
      if finished then
        return
      end
      if not err then
        for _, loc in ipairs(M.locations(result)) do
          if M.inside(loc.uri, root) then
            local to = self.offset_encoding or "utf-16"
            return finish({
              uri = loc.uri,
              position = M.convert(loc.uri, loc.position, c.offset_encoding or "utf-16", to),
              client = c.name,
            })
          end
        end
      end
      if pending == 0 then
        finish(nil)
      end
    end, bufnr)
    if ok and id then
      open[c] = id
    else
      pending = pending - 1
    end
  end
  if finished then
    return
  elseif pending <= 0 then
    return finish(nil)
  end
  timer = vim.defer_fn(function()
    finish(nil)
  end, opts.timeout or 500)
end

return M
