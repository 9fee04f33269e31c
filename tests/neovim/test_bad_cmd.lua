-- A server that cannot start: one clear error notification, no Lua stack trace, and the
-- commands say the server is not running instead of failing.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local client = require("ctx_lsp.client")

-- 1. a command that does not exist
require("ctx_lsp").setup({ cmd = { "/nonexistent/ctx-lsp", "serve" } })
vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/shop/inventory.py"))
H.eq(vim.bo.filetype, "python", "filetype")
vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/shop/config.py")) -- a second buffer: still one message
vim.wait(500)
local errors = H.notes_matching(".", vim.log.levels.ERROR)
H.eq(#errors, 1, "exactly one error notification")
local msg = errors[1].msg
H.truthy(msg:find('"/nonexistent/ctx-lsp" is not an executable', 1, true), msg)
H.truthy(msg:find("setup", 1, true) and msg:find(":checkhealth ctx_lsp", 1, true), "it says what to do: " .. msg)
H.truthy(not msg:find("traceback") and not msg:find("%.lua:%d+:"), "no Lua location or traceback: " .. msg)
H.eq(#vim.lsp.get_clients({ name = "ctx_lsp" }), 0, "no client")
H.eq(require("ctx_lsp").statusline(), "", "no meter")

vim.cmd("CtxPlan what does Product hold?")
vim.cmd("CtxPin")
vim.cmd("CtxPreview")
vim.cmd("CtxBudget")
vim.wait(200)
local warns = H.notes_matching("the server is not running", vim.log.levels.WARN)
H.eq(#warns, 4, "each command says the server is not running")
H.eq(#H.notes_matching(".", vim.log.levels.ERROR), 1, "still one error")

vim.cmd("checkhealth ctx_lsp")
local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
H.truthy(report:find('ERROR server command not found: "/nonexistent/ctx-lsp"', 1, true), report)
vim.cmd("bwipeout")

-- 2. a command that runs but dies at once (the module is missing): one error, with the exit code
H.notes = {}
require("ctx_lsp").setup({ cmd = { H.python, "-m", "ctx_lsp_missing_module", "serve" } })
vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/shop/storage.py"))
H.wait("the exit notification", function()
  return #H.notes_matching("exited with code", vim.log.levels.ERROR) > 0
end, 10000)
vim.wait(300)
for _, n in ipairs(H.notes) do
  H.truthy(not n.msg:find("traceback"), "no traceback: " .. n.msg)
end
H.eq(#H.notes_matching("exited with code 1 before it was ready", vim.log.levels.ERROR), 1, "one exit message")
H.truthy(H.notes_matching("exited with code", vim.log.levels.ERROR)[1].msg:find("ctx_lsp_missing_module", 1, true), "names the command")
H.log("messages: " .. vim.inspect(vim.tbl_map(function(n) return n.msg end, H.notes)))

-- nothing went to :messages as a Lua error either
local messages = vim.api.nvim_exec2("messages", { output = true }).output
H.truthy(not messages:find("E5108") and not messages:find("stack traceback"), "messages: " .. messages)
H.truthy(client.state.last_bug == nil, "no client bug")

-- 3. the Neovim 0.10 path (no vim.lsp.config / vim.lsp.enable: vim.lsp.start on FileType) with a
-- good command: it starts, attaches and plans
vim.lsp.enable("ctx_lsp", false)
local config, enable = vim.lsp.config, vim.lsp.enable
vim.lsp.config, vim.lsp.enable = nil, nil
H.notes = {}
H.setup()
vim.lsp.config, vim.lsp.enable = config, enable
H.open("shop/billing/invoice.py")
local c = require("ctx_lsp.client").get_client()
H.eq(c.config.root_dir, H.ws, "root from the markers")
H.eq(vim.lsp.get_clients({ bufnr = 0, name = "ctx_lsp" })[1].id, c.id, "attached to the buffer")
local plan = H.await("a plan", function(done)
  require("ctx_lsp").plan("how is the invoice total calculated with tax?", nil, done)
end)
H.wait("the meter", function()
  return require("ctx_lsp").statusline():find("^ctx ") ~= nil
end)
H.truthy(#plan.included > 5, "a real plan")
H.no_errors()
H.finish()
