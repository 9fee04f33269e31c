---@brief :CtxCompact: ask the server for a compaction proposal (ctx/compact with dryRun), show
--- it in a scratch buffer where the summary can be edited, and apply it on :w (q cancels).
--- A server without ctx/compact answers MethodNotFound: say so, plainly.

local client = require("ctx_lsp.client")
local meter = require("ctx_lsp.meter")
local util = require("ctx_lsp.util")
local present = util.present

local M = {}

local levels = vim.log.levels

M.method = "ctx/compact"
M.UNSUPPORTED = "this ctx-lsp server does not support compaction yet"
M.HEADER = 3 -- lines above the summary in the proposal buffer

--- "compaction #2: 6 messages summarised (1.2k → 300 tok, extractive)"
---@param c table a CompactionResult
---@return string
function M.headline(c)
  if type(c) ~= "table" then
    return tostring(c)
  end
  local n = type(c.archivedIds) == "table" and #c.archivedIds or 0
  local verb = c.summarizer == "trim" and "trimmed" or "summarised"
  return ("compaction #%s: %d message%s %s (%s → %s tok, %s)"):format(
    tostring(c.number or "?"),
    n,
    n == 1 and "" or "s",
    verb,
    meter.format_tokens(tonumber(c.tokensBefore) or 0),
    meter.format_tokens(tonumber(c.tokensAfter) or 0),
    tostring(c.summarizer or "?")
  )
end

--- The proposal buffer's lines: a header, then the summary (editable).
---@param c table
---@return string[]
function M.lines(c)
  local lines = {
    ("<!-- ctx proposal: %s%s -->"):format(M.headline(c), present(c.note) and (" · " .. c.note) or ""),
    "<!-- :w applies it (edit the summary below first if you like) · q cancels -->",
    "",
  }
  local summary = type(c.summary) == "string" and c.summary or ""
  if summary == "" then
    table.insert(lines, "(no summary: the older turns are archived as they are)")
  else
    vim.list_extend(lines, vim.split(summary, "\n", { plain = true }))
  end
  return lines
end

local function on_error(err)
  if type(err) == "table" and err.code == client.codes.method_not_found then
    client.notify(M.UNSUPPORTED, levels.WARN)
    return true
  end
  return false
end

--- Apply a compaction; `summary` only when the user edited the proposal's.
---@param opts table
---@param summary? string
function M.apply(opts, summary)
  local params = { dryRun = false, strategy = opts.strategy, summary = summary }
  client.request(M.method, params, function(result)
    M.last_result = result
    if M.last_compacted ~= result.number then -- the ctx/compacted notification said it already
      client.notify(M.headline(result))
    end
    require("ctx_lsp.tree").after_change()
    if opts.done then
      opts.done(result)
    end
  end, { on_error = on_error })
end

--- The proposal in an `acwrite` markdown buffer: :w applies it (with the edited summary).
---@param proposal table
---@param opts table
---@return integer buf
function M.show(proposal, opts)
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then
    vim.api.nvim_buf_delete(M.buf, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  M.buf = buf
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, "ctx://compact")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(proposal))
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = "markdown"
  local original = type(proposal.summary) == "string" and proposal.summary or ""
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = buf,
    callback = function()
      local body = table.concat(vim.api.nvim_buf_get_lines(buf, M.HEADER, -1, false), "\n")
      local edited = nil
      if original ~= "" and vim.trim(body) ~= vim.trim(original) then
        edited = body
      end
      vim.bo[buf].modified = false
      M.apply(opts, edited)
      local win = vim.fn.bufwinid(buf)
      if win ~= -1 and #vim.api.nvim_tabpage_list_wins(0) > 1 then
        vim.api.nvim_win_close(win, true)
      end
    end,
  })
  vim.keymap.set("n", "q", function()
    vim.bo[buf].modified = false
    client.notify("compaction cancelled")
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 and #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, true)
    end
    if opts.done then
      opts.done(nil)
    end
  end, { buffer = buf, nowait = true, desc = "ctx: cancel the compaction" })
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  vim.wo.wrap, vim.wo.linebreak = true, true
  return buf
end

--- :CtxCompact: dry run, show, apply on :w.
---@param opts? { strategy?: "summary"|"trim", done?: fun(result: table?), on_proposal?: fun(proposal: table, buf: integer) }
function M.run(opts)
  opts = opts or {}
  client.request(M.method, { dryRun = true, strategy = opts.strategy }, function(proposal)
    M.last_proposal = proposal
    local buf = M.show(proposal, opts)
    if opts.on_proposal then
      opts.on_proposal(proposal, buf)
    end
  end, {
    on_error = function(err)
      local handled = on_error(err)
      if handled and opts.done then
        opts.done(nil)
      end
      return handled
    end,
  })
end

--- ctx/compacted: {session, compaction, marker} (also after automatic compactions).
---@param result table
function M.on_compacted(result)
  result = type(result) == "table" and result or {}
  if type(result.compaction) == "table" then
    M.last_compacted = result.compaction.number
  end
  local text = type(result.marker) == "string" and result.marker or M.headline(result.compaction or result)
  client.notify(text, levels.INFO)
  util.event("CtxCompacted", result)
end

return M
