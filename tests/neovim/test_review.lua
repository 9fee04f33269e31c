-- Review before send (`gateway = { review = true }`), answered from Neovim: a request waits, the
-- review buffer opens with the body about to be sent; `s` releases it (the fake upstream gets
-- it); after :CtxPin, `r` re-plans and the new body replaces the text in place, :CtxReview send
-- sends it with the pinned code; require("ctx_lsp").review("cancel") makes the SDK raise
-- (HTTP 400); no answer: sent as planned after the timeout, and the buffer says so.
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local review = require("ctx_lsp.review")

local QUESTION = "How is stock reserved in the inventory?"
local PINNED = "@abc.abstractmethod" -- a line only DiscountRule's whole body shows
local FAKE_REPLY = "FAKE-UPSTREAM-REPLY: hello from the fake model."
local TIMEOUT = 5

H.setup({ gateway = H.gateway_opts({ review = true, review_timeout = TIMEOUT }) })
H.eq(require("ctx_lsp.config").server_settings().gateway.reviewTimeout, TIMEOUT, "review_timeout, camelCase")
H.open("shop/billing/discounts.py")
local code_win = vim.api.nvim_get_current_win()
H.wait("the gateway to listen", function()
  return ctx.gateway_status() ~= ""
end)
H.eq(ctx.gateway().review, true, "review before send is on")

local function buf_text()
  return table.concat(vim.api.nvim_buf_get_lines(review.buf, 0, -1, false), "\n")
end

--- Wait for a review other than `previous` to be shown.
local function next_review(previous, what)
  H.wait(what, function()
    local r = review.current
    return r ~= nil and r ~= previous and r.outcome == nil
  end)
  return review.current
end

local function wait_outcome(id, outcome)
  H.wait("the review to end: " .. outcome, function()
    return review.last and review.last.reviewId == id and review.last.outcome == outcome
  end, 20000)
end

-- ---- 1: a request waits; the buffer opens with the body about to be sent; `s` sends it ---------
local messages = { { role = "user", content = QUESTION } }
local call = H.ask(messages)
local first = next_review(nil, "the first review")
local win = vim.fn.bufwinid(review.buf)
H.truthy(win ~= -1, "the review is shown")
H.eq(vim.api.nvim_get_current_win(), win, "and focused")
local lines = vim.api.nvim_buf_get_lines(review.buf, 0, -1, false)
io.stdout:write(table.concat(vim.list_slice(lines, 1, 8), "\n"), "\n")
H.truthy(lines[1]:find("^<!%-%- ctx review · " .. vim.pesc(first.session) .. " · gpt%-4o · "), "header: " .. lines[1])
H.truthy(lines[1]:find("sent as planned at %d%d:%d%d:%d%d unless you answer %-%->$"), "the deadline: " .. lines[1])
H.truthy(lines[2]:find("s send · c cancel · r re-plan", 1, true), "the keys: " .. lines[2])
H.truthy(buf_text():find("\n# chat request to gpt%-4o: [%d,]+ tokens\n"), "the body about to be sent")
H.truthy(buf_text():find(QUESTION, 1, true), "with the user's question")
H.truthy(not buf_text():find(PINNED, 1, true), "nothing pinned yet")
H.eq(vim.b[review.buf].ctx_review_id, first.reviewId, "b:ctx_review_id")
vim.wait(300)
H.eq(#H.upstream_bodies(), 0, "held: nothing upstream yet")
H.truthy(not call.done, "the SDK still waits")

vim.cmd.normal("s") -- the buffer's key
H.eq(H.answer(call, "the first request"), { ok = true, content = FAKE_REPLY }, "released")
H.eq(#H.upstream_bodies(), 1, "the fake upstream received it")
wait_outcome(first.reviewId, "sent")
H.wait("the sent notice", function()
  return #H.notes_matching("review " .. vim.pesc(first.reviewId) .. ": sent upstream") == 1
end)
H.eq(vim.fn.bufwinid(review.buf), -1, "answered: the review window closed")

-- ---- 2: :CtxPin, then `r`: the re-plan replaces the text in place; :CtxReview send ------------
vim.list_extend(messages, { { role = "assistant", content = FAKE_REPLY }, { role = "user", content = "And how is a reservation released?" } })
call = H.ask(messages)
local second = next_review(first, "the second review")
win = vim.fn.bufwinid(review.buf)
H.truthy(not buf_text():find(PINNED, 1, true), "not pinned yet")
vim.api.nvim_set_current_win(code_win)
local row, text = H.line_of("class DiscountRule")
vim.api.nvim_win_set_cursor(0, { row + 1, (text:find("DiscountRule")) })
vim.cmd("CtxPin")
H.wait("the pin", function()
  return #H.notes_matching("pinned class shop.billing.discounts.DiscountRule") == 1
end)
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { 5, 0 })
vim.cmd.normal("r")
H.wait("the re-planned body in place", function()
  return buf_text():find(PINNED, 1, true) ~= nil
end)
H.eq(review.current.reviewId, second.reviewId, "the same review")
H.eq(vim.fn.bufwinid(review.buf), win, "in the same window")
H.eq(vim.api.nvim_win_get_cursor(win)[1], 5, "the cursor stayed")
H.truthy(#H.notes_matching("re%-planned") == 1, "re-planned notice")
H.truthy(not call.done, "still waiting after the re-plan")
vim.cmd("CtxReview send")
H.eq(H.answer(call, "the second request").ok, true, "sent")
local bodies = H.upstream_bodies()
H.eq(#bodies, 2, "two requests upstream")
H.truthy(vim.inspect(bodies[2]):find(PINNED, 1, true), "with the pinned code")
wait_outcome(second.reviewId, "sent")

-- ---- 3: cancel, from Lua: the SDK raises (HTTP 400), nothing goes upstream ---------------------
vim.list_extend(messages, { { role = "assistant", content = FAKE_REPLY }, { role = "user", content = "now cancel me" } })
call = H.ask(messages)
local third = next_review(second, "the third review")
local decided = H.await("the decision", function(done)
  ctx.review("cancel", done)
end)
H.eq({ decided.reviewId, decided.decision, decided.pending }, { third.reviewId, "cancel", true }, "decision")
local result = H.answer(call, "the cancelled request")
H.eq({ result.ok, result.status }, { false, 400 }, "the SDK raised: " .. vim.inspect(result))
H.truthy(result.message:find("cancelled in the editor", 1, true), "the error says why: " .. result.message)
wait_outcome(third.reviewId, "cancelled")
H.eq(#H.upstream_bodies(), 2, "nothing more upstream")

-- ---- 4: nobody answers: sent as planned after the timeout, and the buffer says so --------------
call = H.ask(messages)
local fourth = next_review(third, "the fourth review")
H.eq(H.answer(call, "the request sent after the timeout").ok, true, "sent after the timeout")
wait_outcome(fourth.reviewId, "timeout")
H.eq(#H.upstream_bodies(), 3, "upstream after the timeout")
local warned = H.notes_matching("sent as planned after the timeout", vim.log.levels.WARN)
H.eq(#warned, 1, "a warning says so")
H.truthy(warned[1].msg:find(("no answer within %d s"):format(TIMEOUT), 1, true), warned[1].msg)
H.truthy(vim.fn.bufwinid(review.buf) ~= -1, "the review stays open")
local header = vim.api.nvim_buf_get_lines(review.buf, 0, 1, false)[1]
H.truthy(header:find("sent as planned after the timeout", 1, true), "its header says so: " .. header)
H.eq(vim.b[review.buf].ctx_review_outcome, "timeout", "b:ctx_review_outcome")

-- a late answer: nothing waits
ctx.review("send")
H.eq(#H.notes_matching("no request waits for review", vim.log.levels.WARN), 1, "says nothing waits")

H.no_errors()
H.finish()
