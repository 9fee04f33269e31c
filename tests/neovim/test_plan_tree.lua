-- :CtxPlan against the real server on the fixture workspace: the statusline meter, the tree's
-- lines (sections, reasons, token counts), folds, <CR>, the what-if of `w` (and that pinning
-- then evicts exactly what it predicted), `r` restore and `p` unpin in the tree.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local tree = require("ctx_lsp.tree")
local meter = require("ctx_lsp.meter")

local QUERY = "how is the invoice total calculated with tax?"

H.setup()
H.eq(ctx.statusline(), "", "statusline before the server is up")
H.open("shop/billing/invoice.py")
local code_win = vim.api.nvim_get_current_win()

-- ---- :CtxPlan and the statusline ---------------------------------------------------------------
vim.cmd("CtxPlan " .. QUERY)
H.wait("the tree", function()
  return tree.current ~= nil and tree.current.plan ~= nil
end)
local plan = tree.current.plan
H.wait("the meter of the plan", function()
  local m = ctx.meter()
  return m and m.planId == plan.planId
end)
local independent = H.request("ctx/showBudget") -- asked directly, not through the plugin
H.eq(independent.planId, plan.planId, "the session's latest plan")
H.eq(independent.used, plan.totals.tokens, "meter used = plan total")

local line = ctx.statusline()
H.log("statusline: " .. line)
H.truthy(line:match("^ctx %S+/%S+ "), "statusline shape: " .. line)
local used_s, budget_s, bar, pct = line:match("^ctx (%S+)/(%S+) (%S+) (%d+)%%$")
H.truthy(used_s, "statusline fields: " .. line)
H.eq(used_s, meter.format_tokens(independent.used), "statusline used")
H.eq(budget_s, meter.format_tokens(independent.promptBudget), "statusline budget")
H.eq(tonumber(pct), meter.round(independent.percent), "statusline percent")
H.eq(vim.fn.strchars(bar), 5, "bar width")
H.truthy(independent.promptBudget > 100000 and independent.used > 100, "real numbers from the server")
local hl = ctx.statusline({ highlight = true })
H.truthy(hl:find("^%%#CtxMeterNormal#ctx ") and hl:find("%%%%%%%*$"), "highlighted statusline: " .. hl)

-- ---- the tree's lines ---------------------------------------------------------------------------
local buf = tree.current.buf
local win = vim.fn.bufwinid(buf)
H.truthy(win ~= -1, "the tree is shown in a window")
H.eq(vim.bo[buf].filetype, "ctx_lsp_tree", "tree filetype")
H.eq(vim.bo[buf].modifiable, false, "tree is read-only")
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
io.stdout:write(table.concat(lines, "\n"), "\n")
H.truthy(lines[1]:find("ctx plan " .. plan.planId, 1, true), "header names the plan")

local headers = {}
for i, l in ipairs(lines) do
  local name, used, budget, nin, nout = l:match("^▾ (%a+)  (%S+)/(%S+) tok · (%d+) in · (%d+) out$")
  if name then
    headers[name] = { line = i, used = used, budget = budget, count = tonumber(nin), excluded = tonumber(nout) }
  end
end
for _, s in ipairs(plan.sections) do
  local h = H.truthy(headers[s.name], "section header " .. s.name)
  H.eq(h.used, meter.format_tokens(s.used), s.name .. " used")
  H.eq(h.budget, meter.format_tokens(s.budget), s.name .. " budget")
  H.eq(h.count, s.count, s.name .. " count")
end
H.truthy(headers.system and headers.conversation and headers.rag, "three sections")
H.truthy(headers.system.line < headers.conversation.line and headers.conversation.line < headers.rag.line, "order")

-- every included item has a line with its token count and reason, in its section
local function item_line(item)
  for i, l in ipairs(lines) do
    if tree.current.items[i] and tree.current.items[i].id == item.id then
      return i, l
    end
  end
end
local reasons = {}
for _, item in ipairs(plan.included) do
  local i, l = item_line(item)
  H.truthy(i, "a line for " .. item.title)
  H.truthy(i > headers[item.section].line, item.title .. " under its section")
  local mark, tok, reason = l:match("^  (%S+) +(%S+)  (%S+)")
  H.eq({ mark, tok, reason }, { "✓", meter.format_tokens(item.tokens), item.reason }, "line of " .. item.title)
  reasons[item.reason] = true
end
for _, r in ipairs({ "required", "latest_user", "scaffold", "relevant" }) do
  H.truthy(reasons[r], "reason " .. r .. " in the plan")
end
-- known facts of the fixture
local calc
for _, item in ipairs(plan.included) do
  if item.symbol == "shop.billing.invoice.calculate_invoice_total" then
    calc = item
  end
end
H.truthy(calc and calc.reason == "relevant", "calculate_invoice_total is retrieved")
local calc_line, calc_text = item_line(calc)
H.truthy(calc_text:find("function shop.billing.invoice.calculate_invoice_total", 1, true), calc_text)
H.truthy(calc_text:find("shop/billing/invoice.py:52", 1, true), calc_text)
H.truthy(calc.tokens > 50 and calc_text:find(" " .. calc.tokens .. "  relevant", 1, true), calc_text)

-- folds: a level-1 fold per section
vim.api.nvim_set_current_win(win)
H.eq(vim.wo[win].foldmethod, "expr", "foldmethod")
H.eq(vim.fn.foldlevel(headers.rag.line), 1, "section header fold level")
H.eq(vim.fn.foldlevel(calc_line), 1, "item fold level")
H.eq(vim.fn.foldlevel(1), 0, "top lines are not folded")
vim.api.nvim_win_set_cursor(win, { headers.system.line, 0 })
vim.cmd("normal! zc")
H.truthy(vim.fn.foldclosed(headers.system.line + 1) == headers.system.line, "zc closes the system section")
vim.cmd("normal! zo")

-- <CR> opens the item's code
vim.api.nvim_win_set_cursor(win, { calc_line, 0 })
vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
H.eq(vim.api.nvim_get_current_win(), code_win, "<CR> goes to the code window")
H.truthy(vim.api.nvim_buf_get_name(0):find("shop/billing/invoice.py$"), "the item's file")
H.eq(vim.api.nvim_win_get_cursor(0)[1], 52, "the item's line")
H.truthy(vim.api.nvim_get_current_line():find("def calculate_invoice_total", 1, true), "the def line")

-- ---- what-if (`w`) under a tight budget, then committing it -----------------------------------
-- (pins are planned before retrieval: with a small prompt budget, a pin pushes retrieved items out)
local TIGHT = { contextLength = 700, maxCompletionTokens = 100, safetyBuffer = 0 }
local small = H.await("a plan with a small budget", function(done)
  ctx.plan(QUERY, TIGHT, done)
end)
H.eq(small.promptBudget, 600, "prompt budget of the tight plan")
H.truthy(#small.excluded > 0, "a small budget excludes items")
lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
-- a budget-excluded symbol whose pin pushes something out (probed with direct dry runs)
local function pushes_out(symbol)
  local p = vim.deepcopy(tree.current.params)
  p.dryRun, p.extraPins = true, { { symbol = symbol } }
  local dry = H.request("ctx/planContext", p)
  local now_in = {}
  for _, item in ipairs(dry.included) do
    now_in[item.id] = true
  end
  for _, item in ipairs(small.included) do
    if not now_in[item.id] and item.symbol ~= symbol then
      return true
    end
  end
  return false
end
local target, target_line
for i, l in ipairs(lines) do
  local item = tree.current.items[i]
  if not target and item and item.reason == "budget" and type(item.symbol) == "string" and pushes_out(item.symbol) then
    target, target_line = item, i
    H.truthy(l:find("^  ✗ "), "excluded mark: " .. l)
  end
end
H.truthy(target, "a budget-excluded symbol whose pin evicts something")
H.log("what-if on " .. target.symbol)
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { target_line, 0 })
tree.last_what_if = nil
vim.api.nvim_feedkeys("w", "x", false)
H.wait("the what-if window", function()
  return tree.last_what_if ~= nil
end)
local wi = tree.last_what_if
H.eq(wi.symbol, target.symbol, "what-if symbol")
H.eq(small.planId, tree.current.plan.planId, "the dry run did not change the tree")
H.eq(H.request("ctx/showBudget").planId, small.planId, "the dry run did not change the session")
H.truthy(#wi.evicted > 0, "pinning " .. target.symbol .. " evicts something")
local float_lines = vim.api.nvim_buf_get_lines(wi.buf, 0, -1, false)
io.stdout:write(table.concat(float_lines, "\n"), "\n")
H.eq(vim.api.nvim_win_get_config(wi.win).relative, "editor", "a floating window")
H.truthy(float_lines[1]:find(target.symbol, 1, true), "float names the symbol")
local small_in = {}
for _, item in ipairs(small.included) do
  small_in[item.id] = true
end
for _, e in ipairs(wi.evicted) do
  H.truthy(small_in[e.item.id], "evicted items were included: " .. e.item.title)
  local found = false
  for _, l in ipairs(float_lines) do
    found = found or (l:find(e.item.title, 1, true) ~= nil and l:find("^  %- ") ~= nil)
  end
  H.truthy(found, "float lists " .. e.item.title)
end
-- commit from the float: the real plan evicts what the what-if said
vim.api.nvim_set_current_win(wi.win)
local before_id = tree.current.plan.planId
vim.api.nvim_feedkeys("p", "x", false)
H.wait("the re-plan after pinning", function()
  return tree.current.plan.planId ~= before_id
end)
local after = tree.current.plan
H.eq(after.promptBudget, 600, "the re-plan keeps the tree's params (contextLength...)")
local after_in, pinned_item = {}, nil
for _, item in ipairs(after.included) do
  after_in[item.id] = true
  if item.symbol == target.symbol and item.reason == "pinned" then
    pinned_item = item
  end
end
H.truthy(pinned_item, "the symbol is pinned into the plan")
for _, e in ipairs(wi.evicted) do
  H.truthy(not after_in[e.item.id], "evicted as predicted: " .. e.item.title)
end
local pins = H.request("ctx/listPins")
H.truthy(vim.iter(pins):any(function(p)
  return p.symbol == target.symbol
end), "the pin exists on the server")

-- ---- `p` in the tree unpins a pinned item ------------------------------------------------------
lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local pinned_line = item_line(pinned_item)
for i in ipairs(lines) do
  local item = tree.current.items[i]
  if item and item.id == pinned_item.id then
    pinned_line = i
  end
end
H.truthy(lines[pinned_line]:find("pinned", 1, true), "pinned reason shown")
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { pinned_line, 0 })
before_id = tree.current.plan.planId
vim.api.nvim_feedkeys("p", "x", false)
H.wait("the re-plan after unpinning", function()
  return tree.current.plan.planId ~= before_id
end)
H.eq(#H.request("ctx/listPins"), 0, "unpinned on the server")

-- ---- `r` restores an excluded item (by pinning it) ---------------------------------------------
lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local restore, restore_line
for i in ipairs(lines) do
  local item = tree.current.items[i]
  if not restore and item and item.reason == "budget" and type(item.symbol) == "string" then
    restore, restore_line = item, i
  end
end
H.truthy(restore, "an excluded item to restore")
vim.api.nvim_win_set_cursor(win, { restore_line, 0 })
before_id = tree.current.plan.planId
vim.api.nvim_feedkeys("r", "x", false)
H.wait("the re-plan after restoring", function()
  return tree.current.plan.planId ~= before_id
end)
local restored = false
for _, item in ipairs(tree.current.plan.included) do
  restored = restored or (item.symbol == restore.symbol and item.reason == "pinned")
end
H.truthy(restored, "restored item is included as pinned: " .. restore.symbol)
H.eq(H.request("ctx/listPins")[1].symbol, restore.symbol, "restore pinned it on the server")

-- q closes the tree
vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
vim.api.nvim_feedkeys("q", "x", false)
H.eq(vim.fn.bufwinid(buf), -1, "q closes the tree")

H.no_errors()
H.finish()
