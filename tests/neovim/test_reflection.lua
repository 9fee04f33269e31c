-- The reflection loop through the real server: a scripted session (append the user's question,
-- :CtxPlan it, append an assistant reply naming calculate_invoice_total, ctx/reportUsage) until
-- the server leases that function automatically. Checks: the plan's task in the tree header; the
-- model's ```ctx-suggest items listed dimmed under "suggested" and never pinned by themselves;
-- suggestions and renewals logged without a popup; the promotion notified with its reason and
-- :CtxUndo; the automatic pin's own sign and its reason in the tree; :CtxUndo removes it; `p`
-- pins a suggestion, `d` dismisses one; :CtxReflections lists what happened.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local client = require("ctx_lsp.client")
local tree = require("ctx_lsp.tree")
local pins = require("ctx_lsp.pins")

local CALC = "shop.billing.invoice.calculate_invoice_total"
local TAX = "shop.config.TAX_RATE"
local STORAGE = "shop.storage" -- the server resolves "shop/storage.py" to its module

H.setup()
H.open("shop/billing/invoice.py")
local code_buf = vim.api.nvim_get_current_buf()
local calc_row = H.line_of("def calculate_invoice_total")

local reflected = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "CtxReflected",
  callback = function(ev)
    table.insert(reflected, ev.data)
  end,
})

local function server_pins()
  local out = {}
  for _, p in ipairs(H.request("ctx/listPins")) do
    out[p.symbol] = p
  end
  return out
end

local function signs()
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(code_buf, pins.ns, 0, -1, { details = true })) do
    table.insert(out, { row = m[2], text = vim.trim(m[4].sign_text or ""), hl = m[4].sign_hl_group })
  end
  return out
end

local function tree_lines()
  return vim.api.nvim_buf_get_lines(tree.current.buf, 0, -1, false)
end

--- The tree line (1-based) of a suggestion, and its text.
local function suggestion_line(item)
  for lnum, sug in pairs(tree.current.suggestions or {}) do
    if sug.item == item then
      return lnum, tree_lines()[lnum]
    end
  end
end

--- The tree line of the included item of a symbol, and its text.
local function included_line(symbol)
  local lines = tree_lines()
  for lnum, item in pairs(tree.current.items) do
    if item.symbol == symbol and tree.current.kinds[lnum] == "item" then
      return lnum, lines[lnum], item
    end
  end
end

local function promotions()
  return H.notes_matching("leased " .. vim.pesc(CALC) .. " automatically", vim.log.levels.INFO)
end

-- ---- the scripted session ---------------------------------------------------------------------
local SUGGEST = "\n```ctx-suggest\n- " .. TAX .. "  # the rate every total uses\n- shop/storage.py\n```"
local plans, turns = {}, 0
for k = 0, 5 do
  local question = ("how is the invoice total computed with discounts and tax, step %d?"):format(k)
  H.request("ctx/appendMessages", { messages = { { id = "u" .. k, role = "user", content = question } } })
  local plan = H.await("the plan of turn " .. k, function(done)
    ctx.plan(question, nil, done)
  end)
  table.insert(plans, plan)
  local reply = ("Step %d: calculate_invoice_total sums the lines, then applies the discount and the tax."):format(k)
  if k == 0 then
    reply = reply .. SUGGEST
  end
  H.request("ctx/appendMessages", { messages = { { id = "a" .. k, role = "assistant", content = reply } } })
  local before = #reflected
  H.request("ctx/reportUsage", { planId = plan.planId, inputTokens = plan.totals.tokens, outputTokens = 40 })
  turns = k + 1
  -- the turn's reflections arrive right after the report
  vim.wait(1000, function()
    return #reflected > before and #promotions() > 0
  end, 20)
  H.log(("turn %d: plan %s task %s, %d reflections so far"):format(k, plan.planId, tostring(plan.clusterId), #reflected))
  if k == 0 then
    -- ---- suggestions: listed dimmed, not pinned, no popup -----------------------------------------
    H.wait("the suggestions of turn 0", function()
      return tree.current and suggestion_line(TAX) ~= nil and suggestion_line(STORAGE) ~= nil
    end)
    local lnum, text = suggestion_line(TAX)
    H.log("suggested line: " .. text)
    H.truthy(text:find("☆ " .. TAX, 1, true), "an open suggestion's line: " .. text)
    H.truthy(text:find("suggested by the model in turn 0", 1, true), "its reason: " .. text)
    local marks = vim.api.nvim_buf_get_extmarks(tree.current.buf, tree.ns, { lnum - 1, 0 }, { lnum - 1, -1 }, { details = true })
    local dim = vim.iter(marks):find(function(m)
      return m[4].hl_group == "CtxTreeSuggested" and m[3] == 0 and m[4].end_col == #text
    end)
    H.truthy(dim, "the whole suggestion line is CtxTreeSuggested: " .. vim.inspect(marks))
    H.eq(vim.api.nvim_get_hl(0, { name = "CtxTreeSuggested" }).link, "Comment", "CtxTreeSuggested links to Comment")
    local header
    for i, l in ipairs(tree_lines()) do
      if tree.current.kinds[i] == "suggested" then
        header = l
      end
    end
    H.truthy(header and header:find("^▾ suggested  2 open"), "the group header: " .. tostring(header))
    H.eq(#ctx.suggestions(), 2, "ctx.suggestions()")
    H.eq(server_pins()[TAX], nil, "a suggestion is not a pin")
    H.eq(#H.notes_matching(vim.pesc(TAX)), 0, "no popup for a suggestion")
    H.truthy(vim.iter(client.state.reflection_log):any(function(l)
      return l:find("suggest " .. TAX, 1, true) ~= nil
    end), "the suggestion is in the quiet log")
  end
  if #promotions() > 0 then
    break
  end
end
H.log(("promoted after %d turns"):format(turns))

-- ---- the plan's task in the header ----------------------------------------------------------------
local last = plans[#plans]
H.truthy(type(last.clusterId) == "string" and last.clusterId ~= "", "plans carry a clusterId")
H.wait("the tree of the last plan", function()
  return tree.current.plan.clusterId == last.clusterId
end)
H.truthy(tree_lines()[1]:find(" · task " .. last.clusterId, 1, true), "header names the task: " .. tree_lines()[1])

-- ---- the promotion: one info notification naming the item, the reason and the undo ---------------
local note = H.truthy(promotions()[1], "a promotion notification")
local promo = vim.iter(reflected):find(function(r)
  return r.kind == "promote" and r.item == CALC
end)
H.truthy(promo, "ctx/reflected promote arrived")
H.truthy(note.msg:find(promo.reason, 1, true), "the notification gives the reason: " .. note.msg)
H.truthy(note.msg:find(":CtxUndo " .. promo.id, 1, true), "the notification offers the undo: " .. note.msg)
H.eq(#promotions(), 1, "one notification per promotion")
H.eq(client.state.last_undoable, promo.id, ":CtxUndo's default")
H.truthy(vim.tbl_contains(vim.fn.getcompletion("CtxUndo ", "cmdline"), tostring(promo.id)), ":CtxUndo completes the id")
for _, r in ipairs(reflected) do
  if r.kind == "renew" or r.kind == "suggest" then
    H.eq(#H.notes_matching("turn " .. r.turn .. " " .. r.kind), 0, "renew/suggest make no popup")
  end
end

-- ---- the automatic pin: on the server, in the gutter, in the tree --------------------------------
local auto = H.truthy(server_pins()[CALC], "the server leased it")
H.eq({ auto.kind, auto.createdBy }, { "leased", "auto" }, "an automatic lease")
H.wait("the automatic pin's sign", function()
  local s = signs()
  return #s == 1 and s[1].row == calc_row and s[1].text == "📎"
end)
H.eq(signs()[1].hl, "CtxPinAuto", "its sign's highlight")
H.wait("the tree re-planned with the automatic pin", function()
  local _, text, item = included_line(CALC)
  return item and item.reason == "pinned" and text:find("📎auto", 1, true) ~= nil
end)
local lnum, text = included_line(CALC)
local note_line = tree_lines()[lnum + 1]
H.log("auto pin in the tree:\n" .. text .. "\n" .. note_line)
H.eq(tree.current.kinds[lnum + 1], "item_note", "a note under the auto-pinned item")
H.truthy(note_line:find("leased automatically (ttl 4): " .. promo.reason, 1, true), "the note gives the reason: " .. note_line)
H.eq(H.request("ctx/showBudget").planId, tree.current.plan.planId, "the tree shows the session's latest plan")

-- ---- :CtxReflections lists it ---------------------------------------------------------------------
local list_buf = H.await(":CtxReflections", function(done)
  ctx.reflections(done)
end)
local listed = table.concat(vim.api.nvim_buf_get_lines(list_buf, 0, -1, false), "\n")
H.truthy(listed:find("promote  " .. CALC .. "  " .. promo.reason, 1, true), "promotion listed:\n" .. listed)
H.truthy(listed:find("suggest  " .. TAX, 1, true), "suggestion listed:\n" .. listed)
vim.cmd("close")

-- ---- :CtxUndo removes the automatic pin -----------------------------------------------------------
local undone
vim.cmd("CtxUndo")
H.wait("the undo", function()
  undone = H.notes_matching("undone: the automatic lease on " .. vim.pesc(CALC))[1]
  return undone ~= nil
end)
H.eq(server_pins()[CALC], nil, "undo removed the automatic pin on the server")
local reflections = H.request("ctx/listReflections")
H.truthy(vim.iter(reflections):any(function(r)
  return r.id == promo.id and r.undone == true
end), "the promotion is marked undone")
H.wait("the sign to go", function()
  return #signs() == 0
end)
H.wait("the tree re-planned without the pin", function()
  local _, t, item = included_line(CALC)
  return item == nil or (item.reason ~= "pinned" and not t:find("📎auto", 1, true))
end)
H.eq(client.state.last_undoable, nil, "nothing left to undo by default")
vim.cmd("CtxUndo")
H.wait("nothing to undo", function()
  return #H.notes_matching("nothing to undo", vim.log.levels.WARN) == 1
end)

-- ---- `p` on a suggestion pins it (the user's choice), `d` dismisses one ---------------------------
local win = vim.fn.bufwinid(tree.current.buf)
vim.api.nvim_set_current_win(win)
local tax_line = suggestion_line(TAX)
vim.api.nvim_win_set_cursor(win, { tax_line, 0 })
vim.api.nvim_feedkeys("p", "x", false)
H.wait("the suggestion pinned", function()
  local p = server_pins()[TAX]
  return p ~= nil
end)
local tax_pin = server_pins()[TAX]
H.eq({ tax_pin.kind, tax_pin.createdBy }, { "sticky", "user" }, "pinned by the user")
H.wait("the suggestion marked pinned", function()
  local _, t = suggestion_line(TAX)
  return t and t:find("★ " .. TAX .. "  pinned · ", 1, true) ~= nil
end)
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { (suggestion_line(STORAGE)), 0 })
vim.api.nvim_feedkeys("d", "x", false)
H.wait("the dismissed suggestion to leave the group", function()
  return suggestion_line(STORAGE) == nil
end)
local statuses = {}
for _, s in ipairs(H.request("ctx/listSuggestions")) do
  statuses[s.item] = s.status
end
H.eq(statuses[STORAGE], "dismissed", "dismissed on the server")
H.eq(server_pins()[STORAGE], nil, "a dismissed suggestion is not pinned")

-- ---- an undone promotion stays undone for the rest of its task: move to another task first, then
-- come back; the model keeps using it there, so it is promoted again and `u` on its tree line undoes it
do
  local k = turns
  local question = "where does the warehouse keep stock records on disk?"
  H.request("ctx/appendMessages", { messages = { { id = "u" .. k, role = "user", content = question } } })
  local plan = H.await("the plan of the detour", function(done)
    ctx.plan(question, nil, done)
  end)
  H.request("ctx/appendMessages", { messages = { { id = "a" .. k, role = "assistant", content = "StockRepository." } } })
  H.request("ctx/reportUsage", { planId = plan.planId, inputTokens = plan.totals.tokens, outputTokens = 10 })
  turns = turns + 1
end
local again
for k = turns, turns + 3 do
  local question = ("how is the invoice total computed with discounts and tax, step %d?"):format(k)
  H.request("ctx/appendMessages", { messages = { { id = "u" .. k, role = "user", content = question } } })
  local plan = H.await("the plan of turn " .. k, function(done)
    ctx.plan(question, nil, done)
  end)
  local reply = ("Step %d: calculate_invoice_total applies the tax last."):format(k)
  H.request("ctx/appendMessages", { messages = { { id = "a" .. k, role = "assistant", content = reply } } })
  H.request("ctx/reportUsage", { planId = plan.planId, inputTokens = plan.totals.tokens, outputTokens = 40 })
  if vim.wait(1000, function()
    return #promotions() == 2
  end, 20) then
    again = k
    break
  end
end
H.truthy(again, "promoted again while the model keeps using it")
H.log("promoted again in turn " .. again)
H.wait("the second automatic pin in the tree", function()
  local _, t, item = included_line(CALC)
  return item and item.reason == "pinned" and t:find("📎auto", 1, true) ~= nil
end)
local second = vim.iter(reflected):rev():find(function(r)
  return r.kind == "promote"
end)
H.truthy(second.id ~= promo.id, "a new promotion")
win = vim.fn.bufwinid(tree.current.buf)
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { (included_line(CALC)), 0 })
vim.api.nvim_feedkeys("u", "x", false)
H.wait("`u` to remove the automatic pin", function()
  return server_pins()[CALC] == nil
end)
H.truthy(vim.iter(H.request("ctx/listReflections")):any(function(r)
  return r.id == second.id and r.undone == true
end), "`u` undid that promotion")
H.eq(server_pins()[TAX].createdBy, "user", "the user's pin stays")

H.no_errors()
H.finish()
