-- Pins in the gutter (:CtxPin / :CtxUnpin at the cursor, pins made elsewhere), the askRepin
-- prompt, "est / actual" in the meter, :CtxPreview, :CtxMode, :CtxBudget, :CtxCompact on a
-- server without compaction, and the capsule-staleness notification.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local client = require("ctx_lsp.client")
local pins = require("ctx_lsp.pins")

local QUERY = "how is the invoice total calculated with tax?"
local CALC = "shop.billing.invoice.calculate_invoice_total"

H.setup()
H.open("shop/billing/invoice.py")
local buf = vim.api.nvim_get_current_buf()

local function signs()
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, pins.ns, 0, -1, { details = true })) do
    table.insert(out, { row = m[2], text = vim.trim(m[4].sign_text or "") })
  end
  return out
end

local function server_pins()
  local out = {}
  for _, p in ipairs(H.request("ctx/listPins")) do
    out[p.symbol] = p
  end
  return out
end

-- ---- :CtxPin on `def calculate_invoice_total` puts a sign there ---------------------------------
local def_row, def_text = H.line_of("def calculate_invoice_total")
vim.api.nvim_win_set_cursor(0, { def_row + 1, def_text:find("calculate") + 2 })
H.eq(#signs(), 0, "no sign before pinning")
vim.cmd("CtxPin")
H.wait("the pin's sign", function()
  return #signs() == 1
end)
H.eq(signs()[1], { row = def_row, text = "📌" }, "sign on the def line")
local pinned = server_pins()[CALC]
H.truthy(pinned, "the server has the pin")
H.eq(pinned.range.start.line, def_row, "pin range starts at the def")
H.truthy(#H.notes_matching("pinned function " .. CALC, vim.log.levels.INFO) == 1, "pin confirmed")

-- ---- :CtxUnpin from inside the function's body removes it ----------------------------------------
vim.api.nvim_win_set_cursor(0, { def_row + 4, 0 })
vim.cmd("CtxUnpin")
H.wait("the sign to go", function()
  return #signs() == 0
end)
H.eq(server_pins()[CALC], nil, "the server dropped the pin")
H.truthy(#H.notes_matching("unpinned function " .. CALC) == 1, "unpin confirmed")

-- ---- a position with no symbol: the server's message, as an error notification ------------------
local blank_row = H.line_of('"""')
vim.api.nvim_win_set_cursor(0, { blank_row + 1, 0 })
vim.cmd("CtxPin")
H.wait("the not-found error", function()
  return #H.notes_matching("no symbol at", vim.log.levels.ERROR) == 1
end)
vim.cmd("CtxUnpin")
H.truthy(
  vim.wait(2000, function()
    return #H.notes_matching("no pinned symbol at the cursor", vim.log.levels.WARN) == 1
  end),
  "unpin where nothing is pinned says so"
)
H.notes = {}

-- ---- a pin made elsewhere (another client, a code lens) shows up via budgetChanged ---------------
local total_pin = H.request("ctx/pinSymbol", { symbol = "shop.billing.invoice.Invoice.total" })
H.wait("the sign of a pin made elsewhere", function()
  local s = signs()
  return #s == 1 and s[1].row == total_pin.range.start.line
end)
H.request("ctx/unpin", { pinId = total_pin.id })
H.wait("that sign to go", function()
  return #signs() == 0
end)

-- ---- askRepin: a leased pin runs out under the `ask` policy; the user drops it -------------------
local asked = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, opts.prompt)
  H.truthy(items[2]:find("Drop"), "second choice drops")
  vim.schedule(function()
    on_choice(items[2], 2)
  end)
end
local tax = H.request("ctx/pinSymbol", {
  symbol = "shop.billing.invoice.tax_for",
  kind = "leased",
  ttl = 1,
  policy = "ask",
})
H.request("ctx/appendMessages", {
  messages = {
    { role = "user", content = "first, a look around:\nwhat is in shop/billing?" },
    { role = "assistant", content = "invoice.py and discounts.py.\nThe totals are in invoice.py." },
    { role = "user", content = QUERY },
  },
}) -- (multi-line messages: the tree shows them on one line each)
local plan = H.await("a plan", function(done)
  ctx.plan(QUERY, nil, done)
end)
H.request("ctx/reportUsage", { planId = plan.planId, inputTokens = plan.totals.tokens + 57, outputTokens = 20 })
H.wait("the re-pin prompt", function()
  return #asked == 1
end)
H.truthy(asked[1]:find("function shop.billing.invoice.tax_for", 1, true), "prompt names the pin: " .. asked[1])
H.wait("the pin to be dropped", function()
  return server_pins()[tax.symbol] == nil
end, 5000)
H.wait("the drop notification", function()
  return #H.notes_matching("dropped the pin on function shop.billing.invoice.tax_for") == 1
end)

-- the meter now knows the actual usage of that plan: "est … / actual …"
H.wait("est/actual in the statusline", function()
  return ctx.statusline():find("actual", 1, true) ~= nil
end)
local meter = require("ctx_lsp.meter")
local m = H.request("ctx/showBudget")
H.log("statusline: " .. ctx.statusline())
H.truthy(
  ctx.statusline():find(
    ("est %s / actual %s"):format(meter.format_tokens(m.lastEstimate), meter.format_tokens(m.lastActual)),
    1,
    true
  ),
  "est/actual values"
)
H.eq(m.lastActual, plan.totals.tokens + 57, "actual from the usage report")

-- ---- :CtxPreview -------------------------------------------------------------------------------
local preview = require("ctx_lsp.preview")
vim.cmd("CtxPreview")
H.wait("the preview buffer", function()
  return preview.buf ~= nil and vim.api.nvim_get_current_buf() == preview.buf
end)
local pbuf = preview.buf
local lines = vim.api.nvim_buf_get_lines(pbuf, 0, -1, false)
local rendered = H.request("ctx/renderPrompt", { format = "text" })
H.log(lines[1])
H.truthy(lines[1]:find("plan " .. rendered.planId, 1, true), "plan id at the top")
H.truthy(lines[1]:find(tostring(rendered.tokens) .. " tokens", 1, true), "token total at the top")
H.truthy(rendered.tokens > 100, "a real prompt")
H.eq(table.concat(vim.list_slice(lines, 3), "\n"), rendered.text, "the rendered text")
H.eq(lines[3], "### system", "starts with the system message")
local text = table.concat(lines, "\n")
H.truthy(text:find(QUERY, 1, true), "the query is in the prompt")
H.truthy(text:find("def calculate_invoice_total", 1, true), "retrieved code is in the prompt")
H.eq(vim.bo[pbuf].filetype, "markdown", "markdown")
H.eq(vim.bo[pbuf].modifiable, false, "read-only")
H.eq(vim.bo[pbuf].buftype, "nofile", "scratch")
vim.cmd("close")

-- ---- :CtxMode and :CtxBudget --------------------------------------------------------------------
vim.cmd("CtxMode off")
H.wait("mode off in the meter", function()
  local cur = ctx.meter()
  return cur and cur.mode == "off"
end)
H.truthy(ctx.statusline():find(" · off$"), "statusline says off: " .. ctx.statusline())
H.eq(H.request("ctx/showBudget").mode, "off", "server mode")
vim.cmd("CtxMode light")
H.wait("mode light", function()
  return ctx.meter().mode == "light"
end)
vim.cmd("CtxMode turbo")
H.truthy(#H.notes_matching("mode must be off, light or heavy", vim.log.levels.ERROR) == 1, "bad mode refused")
H.eq(vim.fn.getcompletion("CtxMode ", "cmdline"), { "off", "light", "heavy" }, ":CtxMode completion")
H.eq(vim.fn.getcompletion("CtxMode l", "cmdline"), { "light" }, ":CtxMode completion of a prefix")
H.eq(vim.fn.getcompletion("CtxCompact ", "cmdline"), { "summary", "trim" }, ":CtxCompact completion")
H.notes = {}
vim.cmd("CtxBudget")
H.wait("the budget", function()
  return #H.notes_matching("^ctx%-lsp: ctx %S+/%S+ ") == 1
end)
local budget_note = H.notes_matching("^ctx%-lsp: ctx ")[1].msg
H.truthy(budget_note:find("rag ", 1, true) and budget_note:find("system ", 1, true), budget_note)

-- ---- :CtxCompact on a server without ctx/compact: a clear message, no error ---------------------
local compact = require("ctx_lsp.compact")
compact.method = "ctx/compactNotImplemented" -- the real server's MethodNotFound answer
vim.cmd("CtxCompact")
H.wait("the unsupported message", function()
  return #H.notes_matching("does not support compaction yet", vim.log.levels.WARN) == 1
end)
compact.method = "ctx/compact"

-- ---- :CtxCompact on this server: the proposal, :w applies it ------------------------------------
H.request("ctx/appendMessages", {
  messages = {
    { role = "assistant", content = "calculate_invoice_total adds tax_for(subtotal) to the subtotal." },
    { role = "user", content = "and where are discounts applied?" },
  },
})
vim.cmd("CtxCompact")
H.wait("the proposal buffer", function()
  return compact.buf ~= nil and vim.api.nvim_get_current_buf() == compact.buf
end)
local proposal = compact.last_proposal
local plines = vim.api.nvim_buf_get_lines(compact.buf, 0, -1, false)
io.stdout:write(table.concat(plines, "\n"), "\n")
H.truthy(plines[1]:find("ctx proposal: compaction #1: 4 messages summarised", 1, true), plines[1])
H.eq(vim.bo[compact.buf].filetype, "markdown", "proposal filetype")
H.eq(table.concat(vim.list_slice(plines, compact.HEADER + 1), "\n"), proposal.summary, "the summary")
H.eq(#H.request("ctx/listMessages", { includeArchived = false }).messages, 5, "nothing archived by the dry run")
vim.cmd("write")
H.wait("the compaction", function()
  return compact.last_result ~= nil
end)
H.eq(compact.last_result.archivedIds, proposal.archivedIds, "applied what was proposed")
H.wait("the compacted notification", function()
  return #H.notes_matching("── compaction #1: 4 messages summarised", vim.log.levels.INFO) == 1
end)
H.eq(#H.notes_matching("compaction #1", vim.log.levels.INFO), 1, "said once")
local archived = 0
for _, msg in ipairs(H.request("ctx/listMessages", { includeArchived = true }).messages) do
  archived = archived + (msg.archived and 1 or 0)
end
H.eq(archived, 4, "the older turns are archived on the server")

-- ---- capsule staleness: saving a changed file warns, and the tree marks it ----------------------
local tree = require("ctx_lsp.tree")
-- (the server makes capsules for the most central modules; make sure config.py has one)
H.request("ctx/refreshCapsules", { paths = { "shop/config.py" } })
H.await("the tree", function(done)
  ctx.plan("what are the shop settings?", nil, done)
end)
vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/shop/config.py"))
H.wait("the client to attach to config.py", function() -- (attaching is scheduled)
  return #vim.lsp.get_clients({ bufnr = 0, name = "ctx_lsp" }) == 1
end)
vim.api.nvim_buf_set_lines(0, -1, -1, false, { "", "", "def shipping_fee() -> int:", "    return 5" })
vim.cmd("write")
H.wait("the stale warning", function()
  return #H.notes_matching("out of date %(.*shop/config.py", vim.log.levels.WARN) == 1
end)
local marked = 0
for _, l in ipairs(vim.api.nvim_buf_get_lines(tree.current.buf, 0, -1, false)) do
  if l:find("stale", 1, true) then
    H.truthy(l:find("shop/config.py", 1, true), "only config.py items are stale: " .. l)
    marked = marked + 1
  end
end
H.truthy(marked > 0, "stale items are marked in the tree")
-- re-planned, the server itself says which items are stale
local before_id = tree.current.plan.planId
vim.api.nvim_set_current_win(vim.fn.bufwinid(tree.current.buf))
vim.api.nvim_feedkeys("R", "x", false)
H.wait("the re-plan", function()
  return tree.current.plan.planId ~= before_id
end)
local stale_items = vim.tbl_filter(function(item)
  return item.reason == "stale"
end, tree.current.plan.excluded)
io.stdout:write(table.concat(vim.api.nvim_buf_get_lines(tree.current.buf, 0, -1, false), "\n"), "\n")
H.truthy(#stale_items > 0, "the server excludes the stale capsule")
for _, item in ipairs(stale_items) do
  H.eq(item.path, "shop/config.py", "stale item path")
end

for _, n in ipairs(H.notes) do
  assert(n.level ~= vim.log.levels.ERROR or n.msg:find("mode must be"), "unexpected error: " .. n.msg)
end
assert(client.state.last_bug == nil, tostring(client.state.last_bug))
H.finish()
