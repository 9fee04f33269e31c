---@brief :CtxPreview: the rendered prompt (ctx/renderPrompt, format "text") in a read-only
--- markdown scratch buffer, with the plan id and the token total at the top.

local client = require("ctx_lsp.client")
local meter = require("ctx_lsp.meter")
local util = require("ctx_lsp.util")

local M = {}

M.buf = nil ---@type integer?

--- The buffer's lines for a rendered prompt.
---@param rendered table {planId, format, tokens, text}
---@return string[]
function M.lines(rendered)
  local lines = {
    ("<!-- ctx prompt preview: plan %s · %s tokens (%s) -->"):format(
      rendered.planId,
      tostring(rendered.tokens),
      meter.format_tokens(rendered.tokens or 0)
    ),
    "",
  }
  local text = rendered.text
  if type(text) ~= "string" then
    text = vim.inspect(rendered.messages or rendered.system or rendered)
  end
  vim.list_extend(lines, vim.split(text, "\n", { plain = true }))
  return lines
end

---@param rendered table
function M.show(rendered)
  local buf = M.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = util.scratch_buf("ctx://prompt")
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true, desc = "ctx: close the preview" })
    M.buf = buf
  end
  vim.bo[buf].readonly = false
  util.set_lines(buf, M.lines(rendered))
  vim.bo[buf].readonly = true
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].ctx_plan_id = rendered.planId
  vim.b[buf].ctx_tokens = rendered.tokens
  local win = util.window_of(buf)
  if not win then
    vim.cmd("botright split")
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].conceallevel = 0
  else
    vim.api.nvim_set_current_win(win)
  end
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
end

--- :CtxPreview [planId]
---@param plan_id? string
---@param done? fun(rendered: table)
function M.open(plan_id, done)
  local params = { format = "text" }
  if plan_id and plan_id ~= "" then
    params.planId = plan_id
  end
  client.request("ctx/renderPrompt", params, function(rendered)
    M.show(rendered)
    if done then
      done(rendered)
    end
  end)
end

return M
