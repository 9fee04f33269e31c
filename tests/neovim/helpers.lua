-- Shared helpers of the Neovim tests (dofile'd by each test_*.lua).
local H = {}

H.python = assert(os.getenv("CTX_PYTHON"), "CTX_PYTHON is not set")
H.ws = assert(os.getenv("CTX_WORKSPACE"), "CTX_WORKSPACE is not set")
H.t0 = vim.uv.hrtime()
H.repo = assert(os.getenv("CTX_REPO"), "CTX_REPO is not set")

function H.log(...)
  local parts = {}
  for _, v in ipairs({ ... }) do
    table.insert(parts, type(v) == "string" and v or vim.inspect(v))
  end
  io.stdout:write(("[%5.2fs] "):format((vim.uv.hrtime() - H.t0) / 1e9), table.concat(parts, " "), "\n")
  io.stdout:flush()
end

--- Every vim.notify, kept (and echoed to stdout for the pytest log).
H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
  H.log(("notify[%s] %s"):format(tostring(level), tostring(msg)))
end

function H.notes_matching(pattern, level)
  local out = {}
  for _, n in ipairs(H.notes) do
    if n.msg:find(pattern) and (level == nil or n.level == level) then
      table.insert(out, n)
    end
  end
  return out
end

--- Wait for pred() (processing events), fail with `what` on timeout.
function H.wait(what, pred, ms)
  local ok = vim.wait(ms or 15000, pred, 20)
  if not ok then
    H.log("notifications so far: " .. vim.inspect(H.notes))
    error("timed out waiting for " .. what, 2)
  end
end

--- Run an async function that takes a `done(value)` callback; return the value.
function H.await(what, fn, ms)
  local got, value = false, nil
  fn(function(v)
    got, value = true, v
  end)
  H.wait(what, function()
    return got
  end, ms)
  return value
end

--- A request straight to the server (independent of the plugin's code paths).
function H.request(method, params, ms)
  local client = assert(require("ctx_lsp.client").get_client(), "no ctx_lsp client")
  local resp = client:request_sync(method, params or vim.empty_dict(), ms or 10000, 0)
  assert(resp, method .. ": no response")
  assert(not resp.err, method .. ": " .. vim.inspect(resp.err))
  return resp.result
end

function H.setup(opts)
  opts = vim.tbl_extend("force", { cmd = { H.python, "-m", "ctx_lsp", "serve" } }, opts or {})
  require("ctx_lsp").setup(opts)
end

--- Open a workspace file and wait until the server is initialized and has indexed.
---@param rel string
---@param filetype? string what Neovim must detect (default "python")
function H.open(rel, filetype)
  vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/" .. rel))
  H.eq(vim.bo.filetype, filetype or "python", "filetype of " .. rel)
  H.wait("the ctx_lsp client to start, initialize and index", function()
    return require("ctx_lsp.client").ready()
  end, 20000)
  H.log("ready: " .. rel)
end

--- The 0-based line of the first line containing `needle` in the current buffer.
function H.line_of(needle)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if l:find(needle, 1, true) then
      return i - 1, l
    end
  end
  error("not in buffer: " .. needle)
end

function H.eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(("%s: expected %s, got %s"):format(what or "value", vim.inspect(b), vim.inspect(a)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error((what or "assertion") .. " failed", 2)
  end
  return v
end

--- No error notifications besides the allowed ones, no internal bug caught.
function H.no_errors()
  local client = require("ctx_lsp.client")
  assert(client.state.last_bug == nil, "client bug: " .. tostring(client.state.last_bug))
  for _, n in ipairs(H.notes) do
    assert(n.level ~= vim.log.levels.ERROR, "unexpected error notification: " .. n.msg)
  end
end

-- ---- the gateway tests (test_neovim.py starts the fake upstream and passes these) ------------

H.gateway_port = os.getenv("CTX_GATEWAY_PORT")
H.openai_upstream = os.getenv("CTX_OPENAI_UPSTREAM")
H.anthropic_upstream = os.getenv("CTX_ANTHROPIC_UPSTREAM")
H.upstream_record = os.getenv("CTX_UPSTREAM_RECORD")

--- An assistant's request through the gateway (the openai SDK in a subprocess: openai_ask.py).
--- Returns at once; the table gets `done`, `code` and `result` ({ok, content} or {ok, status,
--- message}) when the SDK has its answer.
---@param messages table[]
---@param model? string
---@return table call
function H.ask(messages, model)
  local call = { done = false }
  local base = ("http://127.0.0.1:%s/v1"):format(assert(H.gateway_port, "CTX_GATEWAY_PORT is not set"))
  vim.system(
    { H.python, H.repo .. "/tests/neovim/openai_ask.py", base, model or "gpt-4o" },
    { stdin = vim.json.encode(messages), text = true },
    function(res)
      local ok, decoded = pcall(vim.json.decode, vim.trim(res.stdout or ""))
      call.code, call.stderr, call.result = res.code, res.stderr, ok and decoded or nil
      call.done = true
    end
  )
  return call
end

--- Wait for an ask() to finish; its result.
---@param call table
---@param what? string
---@return table result
function H.answer(call, what)
  H.wait(what or "the assistant's answer", function()
    return call.done
  end, 30000)
  if not call.result then
    error(("openai_ask.py: exit %s\n%s"):format(tostring(call.code), tostring(call.stderr)), 2)
  end
  return call.result
end

--- The bodies of the model requests the fake upstream received, in order (decoded JSON).
---@return table[]
function H.upstream_bodies()
  local out = {}
  local path = assert(H.upstream_record, "CTX_UPSTREAM_RECORD is not set")
  if vim.fn.filereadable(path) == 0 then
    return out
  end
  for _, line in ipairs(vim.fn.readfile(path)) do
    local rec = vim.json.decode(line)
    if type(rec.api) == "string" then
      table.insert(out, vim.json.decode(rec.body))
    end
  end
  return out
end

--- The gateway options of the tests: the free port and the fake upstream, plus `extra`.
---@param extra? table
---@return table
function H.gateway_opts(extra)
  return vim.tbl_extend("force", {
    listen = "127.0.0.1:" .. assert(H.gateway_port, "CTX_GATEWAY_PORT is not set"),
    openai_upstream = H.openai_upstream,
    anthropic_upstream = H.anthropic_upstream,
  }, extra or {})
end

function H.finish()
  local client = require("ctx_lsp.client")
  client.stop()
  vim.wait(3000, function()
    return #vim.lsp.get_clients({ name = "ctx_lsp" }) == 0
  end, 20)
  H.log("done")
  io.stdout:write("OK\n")
end

return H
