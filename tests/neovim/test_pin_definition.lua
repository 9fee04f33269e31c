-- :CtxPin at a use site: the client asks the buffer's other language servers (here a fake
-- "rust-analyzer" running in this Neovim: `cmd` is a function returning an in-process RPC client)
-- for textDocument/definition at the cursor and pins what is there when it is in the workspace:
-- a Location, Location[] and LocationLink[] answer; an answer outside the workspace, no answer in
-- time, a definition the server cannot pin, `pin.definition = false` and no other server all
-- pin at the cursor. Every ctx/pinSymbol the plugin sends is recorded (client.request wrapped).
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local client = require("ctx_lsp.client")
local definition = require("ctx_lsp.definition")

-- ---- the pure parts: result shapes, the workspace test, encodings -------------------------------
local U = "file:///ws/src/error.rs"
local R = { start = { line = 5, character = 9 }, ["end"] = { line = 5, character = 20 } }
local WHOLE = { start = { line = 3, character = 0 }, ["end"] = { line = 13, character = 1 } }
local AT = { uri = U, position = { line = 5, character = 9 } }
H.eq(definition.locations({ uri = U, range = R }), { AT }, "a Location")
H.eq(definition.locations({ { uri = U, range = R } }), { AT }, "a Location[]")
H.eq(
  definition.locations({ { targetUri = U, targetRange = WHOLE, targetSelectionRange = R } }),
  { AT },
  "a LocationLink[]: the name (targetSelectionRange), not the whole definition"
)
H.eq(definition.locations(vim.NIL), {}, "null")
H.eq(definition.locations({}), {}, "[]")
H.truthy(definition.inside("file:///ws/src/error.rs", "/ws"), "inside")
H.truthy(not definition.inside("file:///wsx/src/error.rs", "/ws"), "a sibling folder is outside")
H.truthy(not definition.inside("file:///usr/lib/rustlib/src/result.rs", "/ws"), "the toolchain is outside")
H.truthy(not definition.inside("jdt://contents/rt.jar/java/lang/String.class", "/ws"), "not a file")
local tmp = vim.fn.tempname() .. ".rs"
vim.fn.writefile({ "// ü", 'let café = "é"; let name = 1;' }, tmp)
-- "name" is at byte 20, UTF-16 / UTF-32 character 18 (é is 2 bytes, 1 unit)
H.eq(
  definition.convert(vim.uri_from_fname(tmp), { line = 1, character = 20 }, "utf-8", "utf-16"),
  { line = 1, character = 18 },
  "utf-8 → utf-16"
)
H.eq(
  definition.convert(vim.uri_from_fname(tmp), { line = 1, character = 18 }, "utf-16", "utf-16"),
  { line = 1, character = 18 },
  "same encoding"
)

-- ---- the real server, the Rust buffer, the fake other server ------------------------------------
H.setup()
H.open("src/account.rs", "rust")
local rs_buf = vim.api.nvim_get_current_buf()
local rs_uri = vim.uri_from_bufnr(rs_buf)
local err_uri = vim.uri_from_fname(H.ws .. "/src/error.rs")
local ENUM = { line = 5, character = 9 } -- `pub enum LedgerError` in src/error.rs
local LEDGER_ERROR = "ledger_core::error::LedgerError"
local TRANSFER = "ledger_core::account::Ledger::transfer"

-- every ctx/pinSymbol the plugin sends
local sent = {}
local request = client.request
client.request = function(method, params, ...)
  if method == "ctx/pinSymbol" then
    table.insert(sent, { params = vim.deepcopy(params), t = vim.uv.hrtime() })
  end
  return request(method, params, ...)
end

-- the fake server: answer(params) gives the definition result, or "never"
local fake = { answer = nil, asked = {}, cancelled = {} }
local function fake_cmd(dispatchers)
  local closing, next_id = false, 0
  local function reply(callback, notify_reply, id, result)
    vim.schedule(function()
      callback(nil, result)
      if notify_reply then
        notify_reply(id)
      end
    end)
  end
  return {
    request = function(method, params, callback, notify_reply)
      next_id = next_id + 1
      local id = next_id
      if method == "initialize" then
        reply(callback, notify_reply, id, { capabilities = { definitionProvider = true } })
      elseif method == "textDocument/definition" then
        table.insert(fake.asked, vim.deepcopy(params))
        local result = fake.answer(params)
        if result ~= "never" then
          reply(callback, notify_reply, id, result)
        end
      else
        reply(callback, notify_reply, id, vim.NIL)
      end
      return true, id
    end,
    notify = function(method, params)
      if method == "$/cancelRequest" then
        table.insert(fake.cancelled, params.id)
      elseif method == "exit" then
        closing = true
        vim.schedule(function()
          dispatchers.on_exit(0, 0)
        end)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      closing = true
    end,
  }
end
local fake_id = assert(vim.lsp.start({ name = "fake-rust-analyzer", cmd = fake_cmd, root_dir = H.ws }, { bufnr = rs_buf }))
local fake_client = assert(vim.lsp.get_client_by_id(fake_id))
H.wait("the fake server to initialize", function()
  return fake_client.initialized
end)
H.eq(#vim.lsp.get_clients({ bufnr = rs_buf }), 2, "two servers on the Rust buffer")

local function pins_now()
  local out = {}
  for _, p in ipairs(H.request("ctx/listPins")) do
    out[p.symbol] = p
  end
  return out
end

--- Unpin everything, put the cursor on `word` in the line holding `needle`, :CtxPin, and wait
--- until the server holds exactly one pin; return it and the ctx/pinSymbol requests sent.
local function pin(needle, word)
  for _, p in ipairs(H.request("ctx/listPins")) do
    H.request("ctx/unpin", { pinId = p.id })
  end
  sent, fake.asked, fake.cancelled = {}, {}, {}
  local row, text = H.line_of(needle)
  local col = word and (assert(text:find(word, 1, true), word) - 1) or 0
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  local t0 = vim.uv.hrtime()
  vim.cmd("CtxPin")
  H.wait("a pin", function()
    return vim.tbl_count(pins_now()) == 1
  end)
  local p = next(pins_now())
  return p, sent, { line = row, character = col }, (sent[#sent].t - t0) / 1e6
end

local SIGNATURE = "pub fn transfer(&mut self"

-- ---- a Location: the cursor on a use of LedgerError pins the enum, at its definition ------------
fake.answer = function()
  return { uri = err_uri, range = { start = ENUM, ["end"] = { line = 5, character = 20 } } }
end
local symbol, reqs, cursor = pin(SIGNATURE, "LedgerError>")
H.eq(symbol, LEDGER_ERROR, "the pin (a Location)")
H.eq(#fake.asked, 1, "the other server was asked once")
H.eq(fake.asked[1].textDocument.uri, rs_uri, "about the Rust buffer")
H.eq(fake.asked[1].position, cursor, "at the cursor")
H.eq(#reqs, 1, "one ctx/pinSymbol")
H.eq(reqs[1].params.textDocument.uri, err_uri, "sent at the definition's file")
H.eq(reqs[1].params.position, ENUM, "and its position")
H.wait("the confirmation naming the server", function()
  return #H.notes_matching("pinned %a+ " .. vim.pesc(LEDGER_ERROR) .. ".* · fake%-rust%-analyzer's definition") == 1
end)

-- ---- a LocationLink[]: the link's name (targetSelectionRange) ------------------------------------
fake.answer = function()
  return {
    {
      originSelectionRange = { start = cursor, ["end"] = cursor },
      targetUri = err_uri,
      targetRange = { start = { line = 3, character = 0 }, ["end"] = { line = 13, character = 1 } },
      targetSelectionRange = { start = ENUM, ["end"] = { line = 5, character = 20 } },
    },
  }
end
symbol, reqs = pin("fn find(&self", "LedgerError>")
H.eq(symbol, LEDGER_ERROR, "the pin (a LocationLink[])")
H.eq(reqs[1].params.position, ENUM, "the link's selection range")

-- ---- a Location[]: the toolchain's copy is skipped, the workspace's taken -----------------------
fake.answer = function()
  return {
    { uri = "file:///usr/lib/rustlib/src/rust/library/core/src/error.rs", range = { start = ENUM, ["end"] = ENUM } },
    { uri = err_uri, range = { start = ENUM, ["end"] = ENUM } },
  }
end
symbol, reqs = pin("use crate::error::LedgerError;", "LedgerError")
H.eq(symbol, LEDGER_ERROR, "the pin (a Location[])")
H.eq(reqs[1].params.textDocument.uri, err_uri, "the workspace's location")

-- ---- only outside the workspace: the cursor (Result is the toolchain's: transfer is pinned) -----
fake.answer = function()
  return { uri = "file:///usr/lib/rustlib/src/rust/library/core/src/result.rs", range = { start = ENUM, ["end"] = ENUM } }
end
symbol, reqs, cursor = pin(SIGNATURE, "Result<")
H.eq(symbol, TRANSFER, "the pin around the cursor")
H.eq(#reqs, 1, "one ctx/pinSymbol")
H.eq({ reqs[1].params.textDocument.uri, reqs[1].params.position }, { rs_uri, cursor }, "sent at the cursor")

-- ---- a definition the server cannot pin (a `use` line): the cursor, and no error shown ----------
fake.answer = function()
  return { uri = err_uri, range = { start = { line = 1, character = 4 }, ["end"] = { line = 1, character = 13 } } }
end
symbol, reqs, cursor = pin("let source = self.find(from)?;", nil)
H.eq(symbol, TRANSFER, "the pin around the cursor")
H.eq(#reqs, 2, "the definition, then the cursor")
H.eq(reqs[1].params.textDocument.uri, err_uri, "first the definition")
H.eq({ reqs[2].params.textDocument.uri, reqs[2].params.position }, { rs_uri, cursor }, "then the cursor")
H.no_errors()

-- ---- no answer in time: the cursor after pin.timeout, and the request is cancelled --------------
fake.answer = function()
  return "never"
end
local waited
symbol, reqs, cursor, waited = pin(SIGNATURE, "LedgerError>")
H.log(("no answer: pinned at the cursor after %.0f ms"):format(waited))
H.eq({ reqs[1].params.textDocument.uri, reqs[1].params.position }, { rs_uri, cursor }, "sent at the cursor")
H.truthy(waited >= 450 and waited < 3000, "after the 500 ms timeout: " .. waited)
H.eq(#fake.cancelled, 1, "the unanswered request is cancelled")

-- ---- pin.definition = false: the other server is not asked --------------------------------------
fake.answer = function()
  return { uri = err_uri, range = { start = ENUM, ["end"] = ENUM } }
end
require("ctx_lsp.config").get().pin.definition = false
symbol, reqs, cursor = pin(SIGNATURE, "LedgerError>")
H.eq(#fake.asked, 0, "not asked")
H.eq({ reqs[1].params.textDocument.uri, reqs[1].params.position }, { rs_uri, cursor }, "sent at the cursor")
require("ctx_lsp.config").get().pin.definition = true

-- ---- no other server: the cursor, at once --------------------------------------------------------
fake_client:stop()
H.wait("the fake server to stop", function()
  return #vim.lsp.get_clients({ bufnr = rs_buf }) == 1
end)
symbol, reqs, cursor, waited = pin(SIGNATURE, "Result<")
H.eq(symbol, TRANSFER, "the pin around the cursor")
H.eq({ reqs[1].params.textDocument.uri, reqs[1].params.position }, { rs_uri, cursor }, "sent at the cursor")
H.eq(#fake.asked, 0, "nobody asked")
H.truthy(waited < 400, "without waiting: " .. waited)
symbol, reqs, cursor = pin(SIGNATURE, "LedgerError>")
H.log("no other server, cursor on LedgerError: the server pinned " .. symbol)
H.eq({ reqs[1].params.textDocument.uri, reqs[1].params.position }, { rs_uri, cursor }, "sent at the cursor")

H.no_errors()
H.finish()
