---@brief Review before send (`gateway = { review = true }`): the gateway holds each planned
--- request, and the server sends ctx/reviewRequest with the body about to go upstream. It opens
--- in `ctx://review` with `s` send · `c` cancel · `r` re-plan (after a pin change: the new
--- preview replaces the text in place) · `q` close (the request keeps waiting), and
--- :CtxReview send|cancel|replan. ctx/reviewResolved says how it ended: sent, cancelled (the
--- assistant gets HTTP 400), or sent as planned after the timeout. A review that arrives while
--- one is shown waits its turn.

local client = require("ctx_lsp.client")
local preview = require("ctx_lsp.preview")
local util = require("ctx_lsp.util")

local M = {}

M.DECISIONS = { "send", "cancel", "replan" }
M.KEYS_HELP = "s send · c cancel · r re-plan (change pins first) · q close · :CtxReview send|cancel|replan"

M.buf = nil ---@type integer?
--- The ReviewRequest shown, with `deadline` (os.time() when it is sent as planned) and, once
--- resolved, `outcome`.
---@type table?
M.current = nil
--- ReviewRequests waiting to be shown.
---@type table[]
M.queue = {}
--- The last review that ended: { reviewId, outcome, message }.
---@type table?
M.last = nil

local levels = vim.log.levels

--- What an outcome means, in words.
---@param outcome string
---@param review? table
---@return string message, integer level
function M.outcome_message(outcome, review)
  if outcome == "sent" then
    return "sent upstream", levels.INFO
  elseif outcome == "cancelled" then
    return "cancelled: the assistant got an error (HTTP 400, cancelled in the editor)", levels.INFO
  end
  local after = review and tonumber(review.timeoutSeconds)
  return ("no answer%s: sent as planned after the timeout"):format(after and (" within %g s"):format(after) or ""),
    levels.WARN
end

--- The header of a review: what waits, until when, and the keys (or how it ended).
---@param review table
---@return string
function M.header(review)
  local p = review.preview or {}
  local what = ("ctx review · %s · %s · %s tokens"):format(
    tostring(review.session),
    tostring(p.model),
    require("ctx_lsp.meter").format_tokens(tonumber(p.tokens) or 0)
  )
  if review.outcome then
    return ("<!-- %s · %s -->"):format(what, (M.outcome_message(review.outcome, review)))
  end
  return ("<!-- %s · sent as planned at %s unless you answer -->"):format(what, os.date("%H:%M:%S", review.deadline))
end

---@param review table
---@return string[]
function M.lines(review)
  local lines = preview.sent_lines(review.preview or {}, M.header(review))
  table.insert(lines, 2, "<!-- " .. M.KEYS_HELP .. " -->")
  return lines
end

--- The review buffer, with its keys.
---@return integer
local function ensure_buf()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then
    return M.buf
  end
  local buf = util.scratch_buf("ctx://review")
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "ctx: " .. desc })
  end
  map("s", function()
    M.decide("send")
  end, "send the request as shown")
  map("c", function()
    M.decide("cancel")
  end, "cancel the request (the assistant gets an error)")
  map("r", function()
    M.decide("replan")
  end, "re-plan the request (after changing pins)")
  map("q", "<cmd>close<cr>", "close (the request keeps waiting)")
  M.buf = buf
  return buf
end

--- Paint the review shown into its buffer; open a split below when it is not shown (focused,
--- unless you are typing).
---@param open boolean
local function paint(open)
  local r = M.current
  if not r then
    return
  end
  local buf = ensure_buf()
  local win = util.window_of(buf)
  local cursor = win and vim.api.nvim_win_get_cursor(win)
  vim.bo[buf].readonly = false
  util.set_lines(buf, M.lines(r))
  vim.bo[buf].readonly = true
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].ctx_review_id = r.reviewId
  vim.b[buf].ctx_review_outcome = r.outcome or ""
  preview.mark_injected(buf)
  if win and cursor then -- in place: the cursor stays where it was
    pcall(vim.api.nvim_win_set_cursor, win, { math.min(cursor[1], vim.api.nvim_buf_line_count(buf)), 0 })
  end
  if win or not open then
    return
  end
  local here = vim.api.nvim_get_current_win()
  local mode = vim.api.nvim_get_mode().mode
  vim.cmd("botright split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].conceallevel = 0
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  if (mode:sub(1, 1) == "i" or mode:sub(1, 1) == "c") and vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
end

--- Show a review: `M.current` becomes it.
---@param review table
local function present_review(review)
  review.deadline = os.time() + math.floor(tonumber(review.timeoutSeconds) or 0)
  M.current = review
  paint(true)
  util.event("CtxReviewRequest", review)
end

--- ctx/reviewRequest: a request waits (or, for the review shown, its re-plan arrived).
---@param review table {reviewId, session, timeoutSeconds, preview}
function M.on_request(review)
  if type(review) ~= "table" or not review.reviewId then
    return
  end
  vim.schedule(function()
    local cur = M.current
    if cur and cur.reviewId == review.reviewId then
      present_review(review) -- re-planned: the text is replaced in place
      client.notify("re-planned: the review shows the new request")
    elseif cur and not cur.outcome then
      table.insert(M.queue, review)
      client.notify(("another request waits for review (%d queued)"):format(#M.queue))
    else
      present_review(review)
    end
  end)
end

--- ctx/reviewResolved: a review ended.
---@param res table {reviewId, outcome}
function M.on_resolved(res)
  if type(res) ~= "table" or not res.reviewId then
    return
  end
  vim.schedule(function()
    local cur = M.current
    local review = (cur and cur.reviewId == res.reviewId) and cur or nil
    for i, q in ipairs(M.queue) do
      if q.reviewId == res.reviewId then
        review = table.remove(M.queue, i)
        break
      end
    end
    local msg, level = M.outcome_message(res.outcome, review)
    M.last = { reviewId = res.reviewId, outcome = res.outcome, message = msg }
    client.notify(("review %s: %s"):format(res.reviewId, msg), level)
    if review and review == cur then
      cur.outcome = res.outcome
      local nxt = table.remove(M.queue, 1)
      if nxt then
        present_review(nxt)
      else
        paint(false)
        local win = M.buf and util.window_of(M.buf)
        -- answered here: close it; sent after the timeout: keep it, it says so
        if win and res.outcome ~= "timeout" and #vim.api.nvim_tabpage_list_wins(0) > 1 then
          vim.api.nvim_win_close(win, true)
        end
      end
    end
    util.event("CtxReviewResolved", M.last)
  end)
end

--- Answer the review shown: "send", "cancel" or "replan" (ctx/reviewDecision).
---@param decision string
---@param done? fun(result: table) {reviewId, decision, pending}
function M.decide(decision, done)
  if not vim.tbl_contains(M.DECISIONS, decision) then
    client.notify(("a review's answer is send, cancel or replan, not %q"):format(tostring(decision)), levels.ERROR)
    return
  end
  local r = M.current
  if not r or r.outcome then
    client.notify("no request waits for review", levels.WARN)
    return
  end
  client.request("ctx/reviewDecision", { reviewId = r.reviewId, decision = decision }, function(result)
    if result.pending == false then
      client.notify("that request no longer waited (sent after the timeout, or answered already)", levels.WARN)
    end
    if done then
      done(result)
    end
  end)
end

--- :CtxReview without an answer: show the review again (its window may have been closed).
function M.show()
  if not M.current then
    client.notify("no request waited for review yet", levels.INFO)
    return
  end
  paint(true)
end

return M
