-- The tree's pure parts (no server): the lines of a plan with their kinds, folds and highlights
-- (ctx_lsp.tree.render), and the what-if float's lines (ctx_lsp.tree.what_if).
local render = require("ctx_lsp.tree.render")
local what_if = require("ctx_lsp.tree.what_if")

local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(("%s: expected %s, got %s"):format(what, vim.inspect(b), vim.inspect(a)), 2)
  end
end

--- A retrieved symbol of the fixture workspace (shop/…) as the server lists it in a plan.
local function symbol_item(id, kind, symbol, path, line, tokens, reason, pin_id)
  return {
    id = id,
    section = "rag",
    title = kind .. " " .. symbol,
    path = path,
    range = { start = { line = line, character = 0 }, ["end"] = { line = line + 3, character = 0 } },
    symbol = symbol,
    tokens = tokens,
    reason = reason,
    pinId = pin_id or vim.NIL,
  }
end

local calc = symbol_item(
  "i-calc", "function", "shop.billing.invoice.calculate_invoice_total", "shop/billing/invoice.py", 51, 161, "pinned", "p-auto"
)
local rate = symbol_item("i-rate", "variable", "shop.config.TAX_RATE", "shop/config.py", 7, 35, "relevant")
local invoice = symbol_item("i-invoice", "class", "shop.billing.invoice.Invoice", "shop/billing/invoice.py", 19, 1200, "budget")
local system = { id = "i-sys", section = "system", title = "system prompt", kind = "system_prompt", tokens = 64, reason = "required" }
local plan = {
  planId = "plan-1",
  model = "gpt-4o",
  mode = "light",
  clusterId = "t1",
  promptBudget = 1000,
  totals = { tokens = 260, items = 3, excluded = 1 },
  estimator = { encoding = "cl100k_base", exact = false },
  notes = { "a note\nover two lines" },
  sections = {
    { name = "system", budget = 100, used = 64, count = 1, excluded = 0 },
    { name = "rag", budget = 400, used = 196, count = 2, excluded = 1 },
  },
  included = { system, calc, rate },
  excluded = { invoice },
}
local pins = render.pins_by_id({
  { id = "p-auto", symbol = calc.symbol, createdBy = "auto", ttlRemaining = 4, status = "active" },
  { id = "p-storage", symbol = "shop.storage", createdBy = "user", status = "active" },
})
local ctx = {
  pins = pins,
  stale = { ["shop/config.py"] = true },
  suggestions = {
    { item = "shop.config.TAX_RATE", turn = 5, reason = "the rate", status = "open" },
    { item = "shop.storage", turn = 5, reason = "storage", status = "open" },
    { item = "shop.gone", turn = 4, reason = "dismissed", status = "dismissed" },
  },
  auto_reason = function(pin_id)
    return pin_id == "p-auto" and "promoted: activation 2.55" or nil
  end,
  bar_width = 5,
}

local lines, items, kinds, sugs = render.lines(plan, ctx)
io.stdout:write(table.concat(lines, "\n"), "\n")
eq(lines, {
  "ctx plan plan-1 · gpt-4o · mode light · task t1",
  "260/1k tok ▰▱▱▱▱ 26% · 3 in · 1 out · cl100k (est.)",
  "note: a note ⏎ over two lines",
  render.KEYS_HELP,
  "",
  "▾ system  64/100 tok · 1 in · 0 out",
  "  ✓     64  required    system prompt",
  "",
  "▾ conversation  0/0 tok · 0 in · 0 out",
  "",
  "▾ rag  196/400 tok · 2 in · 1 out",
  "  ✓    161  pinned 📎auto function shop.billing.invoice.calculate_invoice_total  shop/billing/invoice.py:52",
  "      ↳ leased automatically (ttl 4): promoted: activation 2.55 · u undo",
  "  ✓     35  relevant ⚠stale variable shop.config.TAX_RATE  shop/config.py:8",
  "  ▸ excluded (1, 1.2k tok)",
  "  ✗   1.2k  budget      class shop.billing.invoice.Invoice  shop/billing/invoice.py:20",
  "",
  "▾ suggested  2 open · by the model, not pinned until you pin them (p)",
  "  ☆ shop.config.TAX_RATE  the rate",
  "  ★ shop.storage  pinned · storage",
}, "lines")
eq(kinds[12], "item", "an included item")
eq(items[12], calc, "the line's item")
eq(kinds[13], "item_note", "the note under an automatic pin")
eq(items[13], calc, "the note's item")
eq(kinds[16], "excluded_item", "an excluded item")
eq(sugs[19].item, "shop.config.TAX_RATE", "the line's suggestion")
eq(vim.tbl_count(sugs), 2, "only open suggestions")

-- folds: a section (and the suggested group) opens a fold, its excluded items a nested one
local folds = {}
for i = 1, #lines do
  folds[i] = render.fold_level(kinds[i])
end
eq(folds, { "0", "0", "0", "0", "0", ">1", "1", "0", ">1", "0", ">1", "1", "1", "1", ">2", "2", "0", ">1", "1", "1" }, "folds")

-- highlights: the marks, the reason (stale when the file's capsule is), the auto mark, the path
local by_row = {}
for _, h in ipairs(render.highlights(lines, items, kinds, ctx.stale)) do
  by_row[h.row + 1] = by_row[h.row + 1] or {}
  table.insert(by_row[h.row + 1], { lines[h.row + 1]:sub(h.col + 1, h.end_col), h.group })
end
eq(by_row[1], { { lines[1], "Title" } }, "the header")
eq(by_row[3], { { lines[3], "Comment" } }, "a note")
eq(by_row[4], { { render.KEYS_HELP, "Comment" } }, "the keys")
eq(by_row[6], { { lines[6], "CtxTreeSection" } }, "a section")
eq(by_row[12], {
  { "✓", "CtxTreeIncluded" },
  { "pinned", "CtxTreeReason" },
  { "📎auto", "CtxTreeAuto" },
  { "shop/billing/invoice.py:52", "CtxTreePath" },
}, "an automatically pinned item")
eq(by_row[13], { { lines[13], "CtxTreeReason" }, { "leased automatically", "CtxTreeAuto" } }, "the auto note")
eq(by_row[14], {
  { "✓", "CtxTreeIncluded" },
  { "relevant", "CtxTreeStale" },
  { "⚠stale", "CtxTreeStale" },
  { "shop/config.py:8", "CtxTreePath" },
}, "an item of a stale file")
eq(by_row[15], { { lines[15], "Comment" } }, "the excluded fold")
eq(by_row[16][1], { "✗", "CtxTreeExcluded" }, "an excluded item")
eq(by_row[19], { { lines[19], "CtxTreeSuggested" } }, "a suggestion")

-- an unknown section follows the known ones; a section the plan does not list counts its items
local extra_plan = vim.deepcopy(plan)
table.insert(extra_plan.included, { id = "i-x", section = "tools", title = "tool", tokens = 5, reason = "recent" })
local extra_lines = render.lines(extra_plan, { pins = {}, stale = {} })
eq(extra_lines[#extra_lines - 1], "▾ tools  0/0 tok · 1 in · 0 out", "an unknown section, last")

-- the what-if float: tokens before and after, the pin, what it evicts
local after = vim.deepcopy(plan)
after.planId = "plan-dry"
after.totals = { tokens = 1300, items = 3, excluded = 1 }
local pinned_invoice = vim.tbl_extend("force", invoice, { reason = "pinned", pinId = "p-new" })
after.included = { system, calc, pinned_invoice }
after.excluded = { vim.tbl_extend("force", rate, { reason = "budget" }) }
local evicted = what_if.evictions(plan, after, invoice.symbol)
eq(#evicted, 1, "one eviction")
eq(evicted[1].item, rate, "the item as it was")
eq(evicted[1].reason, "budget", "the reason of the dry run")
local wl = what_if.lines(plan, after, invoice.symbol)
eq(wl, {
  "What if you pin shop.billing.invoice.Invoice?",
  "  ctx 260 → 1.3k / 1k tok",
  "  +   1.2k  pinned      class shop.billing.invoice.Invoice",
  "Would evict 1 item (35 tok):",
  "  -     35  budget      variable shop.config.TAX_RATE  shop/config.py:8",
  "",
  "p pin it · q close",
}, "what-if lines")
local nothing = what_if.lines(plan, plan, "shop.unknown")
eq(nothing[3], "  the plan would not include it", "a symbol the plan leaves out")
eq(nothing[4], "Evicts nothing.", "nothing evicted")

io.stdout:write("OK\n")
