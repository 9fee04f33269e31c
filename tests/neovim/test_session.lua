-- Sessions: without a configured session the client uses the server's default session of the
-- workspace (the one every client and tool that names none shares), so a pin survives a restart
-- of the server; a configured session is used as given.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local client = require("ctx_lsp.client")
local pins = require("ctx_lsp.pins")

local CALC = "shop.billing.invoice.calculate_invoice_total"

local function signs()
  return #vim.api.nvim_buf_get_extmarks(0, pins.ns, 0, -1, {})
end

local function pinned_symbols(params)
  local out = {}
  for _, p in ipairs(H.request("ctx/listPins", params)) do
    table.insert(out, p.symbol)
  end
  return out
end

--- Stop the server, then let the plugin start a new one for the buffer (as reopening Neovim would).
local function restart()
  local old = assert(client.get_client()).id
  client.stop()
  H.wait("the server to stop", function()
    return #vim.lsp.get_clients({ name = "ctx_lsp" }) == 0
  end)
  client.stopping = false
  vim.cmd("edit")
  H.wait("a new server, initialized and indexed", function()
    local c = client.get_client()
    return c ~= nil and c.id ~= old and client.ready()
  end, 20000)
end

-- ---- no session configured: the server's default, nothing sent ---------------------------------
H.setup()
H.open("shop/billing/invoice.py")
local first = assert(client.get_client())
H.eq((first.config.init_options or {}).session, nil, "no session in initializationOptions")
H.eq(H.request("ctx/showBudget").session, "default", "the server's default session")

local def_row, def_text = H.line_of("def calculate_invoice_total")
vim.api.nvim_win_set_cursor(0, { def_row + 1, def_text:find("calculate") + 2 })
vim.cmd("CtxPin")
H.wait("the pin's sign", function()
  return signs() == 1
end)
H.eq(pinned_symbols({ session = "default" }), { CALC }, "the pin is in the default session")

-- ---- a restart: the pin is still there, and its sign comes back ----------------------------------
restart()
H.eq(H.request("ctx/showBudget").session, "default", "the same session after the restart")
H.eq(pinned_symbols(), { CALC }, "the pin survived the restart")
H.wait("the sign after the restart", function()
  return signs() == 1
end)

-- ---- a configured session is sent and used -------------------------------------------------------
H.setup({ session = "mine" })
restart()
H.eq(assert(client.get_client()).config.init_options.session, "mine", "the configured session is sent")
H.eq(H.request("ctx/showBudget").session, "mine", "the server uses it")
H.eq(pinned_symbols(), {}, "its own pins: none")
H.eq(pinned_symbols({ session = "default" }), { CALC }, "the default session's pin is untouched")

H.no_errors()
H.finish()
