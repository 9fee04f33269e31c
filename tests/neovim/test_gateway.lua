-- The gateway in the editor's server, from Neovim: `gateway = { listen = … }` starts it, the
-- openai SDK sends requests through it to the fake upstream (test_neovim.py starts that), the
-- statusline shows the server's label, the prompt cache counting down (cold at its time, with no
-- server) and the savings, :CtxConversations picks the active conversation, the
-- tree follows it, :CtxPin reaches the assistant's next request, :CtxPreview shows the body sent
-- (:CtxPreview! the plan's prompt rendered) and :checkhealth says where the gateway listens.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local client = require("ctx_lsp.client")
local prompt_cache = require("ctx_lsp.prompt_cache")
local tree = require("ctx_lsp.tree")

local QUESTION_A = "How is stock reserved in the inventory?"
local QUESTION_B = "What does an invoice line hold?"
local PINNED = "@abc.abstractmethod" -- a line only DiscountRule's whole body shows
local BASE = "http://127.0.0.1:" .. H.gateway_port
local FAKE_REPLY = "FAKE-UPSTREAM-REPLY: hello from the fake model."

-- ---- the setup option reaches the server as camelCase settings ---------------------------------
-- the context is added whatever it costs: the tests look for it in what was sent
H.setup({ gateway = H.gateway_opts({ context_cost = "always" }) })
H.eq(require("ctx_lsp.config").server_settings().gateway, {
  listen = "127.0.0.1:" .. H.gateway_port,
  openaiUpstream = H.openai_upstream,
  anthropicUpstream = H.anthropic_upstream,
  contextCost = "always",
}, "gateway settings")
H.eq(ctx.gateway_status(), "", "no gateway before the server is up")
H.open("shop/billing/discounts.py")
local code_win = vim.api.nvim_get_current_win()

H.wait("the gateway to listen", function()
  return ctx.gateway_status() ~= ""
end)
H.eq(ctx.gateway().listening, BASE, "where it listens")
H.eq(ctx.statusline(), "ctx ⇄ 0", "statusline before any request")
H.truthy(ctx.statusline({ gateway = false }):match("^ctx %S+/%S+ ") or ctx.meter() == nil, "the meter on demand")

-- ---- conversation A: the statusline shows the request, with the server's label -----------------
local a = { { role = "system", content = "Agent" }, { role = "user", content = QUESTION_A } }
H.eq(H.answer(H.ask(a), "the first request"), { ok = true, content = FAKE_REPLY }, "the SDK's answer")
H.wait("the statusline to show the request", function()
  return ctx.statusline():find("^ctx ⇄ 1 · ") ~= nil
end)
local req_a = client.state.gateway_request
H.log("statusline: " .. ctx.statusline() .. " · " .. vim.inspect(req_a))
H.truthy(req_a.label:find("/") and req_a.label:find("cache"), "label: " .. req_a.label)
-- ctx/gatewayStatusChanged, once the request's usage is summed: the cache warm, the savings
H.wait("the cache warm and the savings in the statusline", function()
  local line = ctx.statusline()
  return line:find(" · cache warm %d+:%d%d") and (line:find(" · saved %$[%d.,]+$") or line:find(" · cost %+%$[%d.,]+$"))
end)
local line = ctx.statusline()
H.log("statusline: " .. line)
H.truthy(vim.startswith(line, "ctx " .. req_a.label .. " · cache warm "), "the server's label as it is, then the cache: " .. line)
local left = ctx.gateway().cacheWarmUntil - prompt_cache.now_ms()
H.truthy(left > 290000 and left <= 301000, "warm for the provider's 5 minutes from now: " .. left .. " ms")
H.truthy(line:match("cache warm (%d+):") == "4" or line:match("cache warm (%d+):") == "5", "minutes left: " .. line)
H.truthy(prompt_cache.ticking(), "a timer redraws the statusline while the cache is warm")
H.eq(#H.upstream_bodies(), 1, "the fake upstream got it")
H.truthy(not vim.inspect(H.upstream_bodies()[1]):find(PINNED, 1, true), "nothing pinned yet")
H.truthy(
  ctx.statusline({ highlight = true }):find("^%%#CtxMeter%a+#ctx ⇄ 1 · "),
  "highlighted: " .. ctx.statusline({ highlight = true })
)

-- ---- :CtxPlan without a question: the tree of the active conversation's latest plan ------------
H.wait("the conversation's plan", function()
  return client.state.plan_id == req_a.planId
end)
vim.cmd("CtxPlan")
H.wait("the tree on the gateway's plan", function()
  return tree.current and tree.current.plan.planId == req_a.planId
end)
H.truthy(tree.current.following, "the tree follows")
H.eq(tree.current.params.query, QUESTION_A, "the plan's question (for the what-if)")
H.truthy(vim.fn.bufwinid(tree.current.buf) ~= -1, "the tree is open")

-- ---- conversation B: the active conversation follows the traffic, and so does the tree ---------
vim.api.nvim_set_current_win(code_win)
local b = { { role = "user", content = QUESTION_B } }
H.answer(H.ask(b), "conversation B")
H.wait("the request of B", function()
  return client.state.gateway_request.requests == 2
end)
local req_b = client.state.gateway_request
H.truthy(req_b.session ~= req_a.session, "another conversation")
H.wait("the tree to follow B", function()
  return tree.current.plan.planId == req_b.planId
end)
H.eq(vim.api.nvim_get_current_win(), code_win, "following keeps the cursor where it is")

-- ---- :CtxConversations: B (newest, active) and A; choose A -------------------------------------
local shown
vim.ui.select = function(items, opts, on_choice)
  shown = {}
  for _, it in ipairs(items) do
    table.insert(shown, opts.format_item(it))
  end
  H.eq(opts.kind, "ctx_lsp.conversation", "select kind")
  vim.schedule(function()
    on_choice(items[2], 2)
  end)
end
local status = H.await("the choice of A", function(done)
  vim.cmd("CtxConversations")
  local timer = vim.uv.new_timer()
  timer:start(20, 20, vim.schedule_wrap(function()
    local g = ctx.gateway()
    if g and g.activeSession == req_a.session then
      timer:stop()
      timer:close()
      done(g)
    end
  end))
end)
H.log("conversations: " .. vim.inspect(shown))
H.eq(#shown, 2, "two conversations")
H.truthy(vim.startswith(shown[1], "● " .. QUESTION_B .. " · gpt-4o · "), "B first, active: " .. shown[1])
H.truthy(vim.startswith(shown[2], "  " .. QUESTION_A .. " · gpt-4o · 2 messages · 1 request · "), "A: " .. shown[2])
H.eq(status.activeSession, req_a.session, "A is active")
H.eq(H.request("ctx/gatewayStatus").activeSession, req_a.session, "the server says so too")
H.wait("the activation notice", function()
  return #H.notes_matching("active conversation: " .. vim.pesc(QUESTION_A)) == 1
end)
H.wait("the tree to follow A", function()
  return tree.current.plan.planId == req_a.planId
end)

-- ---- :CtxPin reaches the assistant's next request of A ------------------------------------------
vim.api.nvim_set_current_win(code_win)
local row, text = H.line_of("class DiscountRule")
vim.api.nvim_win_set_cursor(0, { row + 1, (text:find("DiscountRule")) })
vim.cmd("CtxPin")
H.wait("the pin", function()
  return #H.notes_matching("pinned class shop.billing.discounts.DiscountRule") == 1
end)
local pinned = false
for _, p in ipairs(H.request("ctx/listPins", { session = req_a.session })) do
  pinned = pinned or p.symbol == "shop.billing.discounts.DiscountRule"
end
H.truthy(pinned, "the pin went to the active conversation A")

vim.list_extend(a, { { role = "assistant", content = FAKE_REPLY }, { role = "user", content = "And how is a reservation released?" } })
H.eq(H.answer(H.ask(a), "A's next request").ok, true, "answered")
local bodies = H.upstream_bodies()
H.eq(#bodies, 3, "three requests upstream")
H.truthy(vim.inspect(bodies[3]):find(PINNED, 1, true), "the pinned class's code went upstream")
H.wait("the third request in the statusline", function()
  return ctx.statusline():find("^ctx ⇄ 3 · ") ~= nil
end)
local req_a2 = client.state.gateway_request
H.eq(req_a2.session, req_a.session, "still A")
H.wait("the tree to follow A's new plan", function()
  return tree.current.plan.planId == req_a2.planId
end)

-- ---- :CtxPreview: the body sent, ctx_lsp's blocks marked; :CtxPreview! the rendered plan -------
local sent = H.await("the sent body", function(done)
  ctx.preview(nil, done)
end)
local pbuf = require("ctx_lsp.preview").buf
local plines = vim.api.nvim_buf_get_lines(pbuf, 0, -1, false)
local ptext = table.concat(plines, "\n")
io.stdout:write(table.concat(vim.list_slice(plines, 1, 12), "\n"), "\n")
H.eq(vim.b[pbuf].ctx_preview, "sent", "the sent body")
H.eq(vim.b[pbuf].ctx_plan_id, req_a2.planId, "of the latest request")
H.eq(sent.session, req_a.session, "of the active conversation")
H.truthy(plines[1]:find("^<!%-%- ctx sent upstream: plan " .. vim.pesc(req_a2.planId)), "header: " .. plines[1])
H.truthy(ptext:find("\n# chat request to gpt%-4o: [%d,]+ tokens\n"), "the server's document")
H.truthy(ptext:find("\n## system %(system, [%d,]+ tokens%)\n"), "the client's system prompt")
H.truthy(ptext:find("· added by ctx_lsp\n", 1, true), "ctx_lsp's blocks marked")
H.truthy(ptext:find(PINNED, 1, true), "the pinned code, as sent")
H.truthy(ptext:find("And how is a reservation released?", 1, true), "the user's message")
local marks = vim.api.nvim_buf_get_extmarks(pbuf, require("ctx_lsp.preview").ns, 0, -1, {})
H.truthy(#marks >= 1, "injected headings highlighted")

vim.cmd("CtxPreview!")
H.wait("the rendered prompt", function()
  return vim.b[pbuf].ctx_preview == "rendered"
end)
H.truthy(
  vim.api.nvim_buf_get_lines(pbuf, 0, 1, false)[1]:find("^<!%-%- ctx prompt preview: plan "),
  "the plan's prompt rendered"
)

-- ---- the countdown ends without the server: cold at cacheWarmUntil, and the timer stops ----------
local redraws = 0
local notifications = require("ctx_lsp.client.notifications")
local redraw = notifications.redraw
notifications.redraw = function()
  redraws = redraws + 1
  redraw()
end
local saved = ctx.gateway().saved
ctx.gateway().cacheWarmUntil = prompt_cache.now_ms() + 1500 -- as if the last request were 4:58.5 ago
H.truthy(ctx.statusline():find(" · cache warm 0:02 · ", 1, true), "almost cold: " .. ctx.statusline())
H.wait("the statusline to say cold", function()
  return ctx.statusline():find(" · cache cold · ", 1, true) ~= nil
end)
H.wait("the timer to stop", function()
  return not prompt_cache.ticking()
end)
H.truthy(redraws >= 1, "the timer redrew the statusline")
H.eq(ctx.statusline():sub(-#saved), saved, "the savings stay")
notifications.redraw = redraw

-- ---- :checkhealth ctx_lsp: where the gateway listens ---------------------------------------------
vim.cmd("checkhealth ctx_lsp")
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
io.stdout:write(health, "\n")
H.truthy(health:find("ctx_lsp: gateway", 1, true), "a gateway section")
H.truthy(
  health:find("- ✅ OK gateway listening on " .. BASE .. " · active conversation " .. req_a.session, 1, true),
  "health: listening"
)
H.truthy(not health:find("WARNING") and not health:find("ERROR"), "no warning in the report")

H.no_errors()
H.finish()
