---@brief :CtxPreview: in a read-only markdown scratch buffer (`ctx://prompt`), with the plan id
--- and the token total at the top, either the body the gateway last sent upstream for the active
--- conversation (ctx/gatewayPreview: as sent, part by part, ctx_lsp's own blocks marked), when
--- the server runs the gateway, or the plan's prompt rendered (ctx/renderPrompt, format "text").

local client = require("ctx_lsp.client")
local meter = require("ctx_lsp.meter")
local util = require("ctx_lsp.util")
local present = util.present

local M = {}

M.buf = nil ---@type integer?
M.ns = vim.api.nvim_create_namespace("ctx_lsp_preview")

local levels = vim.log.levels

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

--- The lines of a GatewayPreview: a header, then the server's readable document of the body
--- (`## role (kind, N tokens) · added by ctx_lsp` per part).
---@param shown table a GatewayPreview {session, planId, api, model, tokens, time, parts, text}
---@param header? string the first line (default: what was sent, and when)
---@return string[]
function M.sent_lines(shown, header)
  local lines = {
    header
      or ("<!-- ctx sent upstream: plan %s · %s · %s tokens (%s) · %s · %s -->"):format(
        present(shown.planId) and shown.planId or "(as the client sent it)",
        tostring(shown.session),
        tostring(shown.tokens),
        meter.format_tokens(tonumber(shown.tokens) or 0),
        tostring(shown.api),
        tonumber(shown.time) and os.date("%H:%M:%S", math.floor(shown.time)) or "?"
      ),
    "",
  }
  vim.list_extend(lines, vim.split(type(shown.text) == "string" and shown.text or "", "\n", { plain = true }))
  return lines
end

--- Mark the headings of ctx_lsp's own parts (hl-CtxPreviewInjected).
---@param buf integer
function M.mark_injected(buf)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:match("^## .* · added by ctx_lsp$") then
      pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, i - 1, 0, { line_hl_group = "CtxPreviewInjected" })
    end
  end
end

--- Show lines in the preview buffer (split below, unless it is shown already).
---@param lines string[]
---@param vars table buffer variables: ctx_plan_id, ctx_tokens, ctx_preview ("sent" | "rendered")
local function show(lines, vars)
  local buf = M.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = util.scratch_buf("ctx://prompt")
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true, desc = "ctx: close the preview" })
    M.buf = buf
  end
  vim.bo[buf].readonly = false
  util.set_lines(buf, lines)
  vim.bo[buf].readonly = true
  vim.bo[buf].filetype = "markdown"
  for k, v in pairs(vars) do
    vim.b[buf][k] = v
  end
  M.mark_injected(buf)
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

---@param rendered table
function M.show(rendered)
  show(M.lines(rendered), { ctx_plan_id = rendered.planId, ctx_tokens = rendered.tokens, ctx_preview = "rendered" })
end

---@param shown table a GatewayPreview
function M.show_sent(shown)
  show(M.sent_lines(shown), {
    ctx_plan_id = present(shown.planId) and shown.planId or "",
    ctx_tokens = shown.tokens,
    ctx_preview = "sent",
  })
end

--- ctx/renderPrompt: the plan's prompt rendered.
---@param plan_id? string
---@param done? fun(rendered: table)
local function open_rendered(plan_id, done)
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

--- :CtxPreview[!] [planId]: with the gateway running, the body last sent upstream for the active
--- conversation; with a plan id, `rendered`, or no gateway, the plan's prompt rendered.
---@param plan_id? string
---@param done? fun(result: table) a GatewayPreview or a rendered prompt
---@param opts? { rendered?: boolean }
function M.open(plan_id, done, opts)
  opts = opts or {}
  if (plan_id and plan_id ~= "") or opts.rendered or not require("ctx_lsp.gateway").listening() then
    return open_rendered(plan_id, done)
  end
  client.request("ctx/gatewayPreview", nil, function(shown)
    M.show_sent(shown)
    if done then
      done(shown)
    end
  end, {
    on_error = function(err)
      if type(err) == "table" and err.code == client.codes.not_found then
        client.notify("no request of the active conversation went through the gateway yet: the plan's prompt instead", levels.INFO)
        open_rendered(nil, done)
        return true
      end
    end,
  })
end

return M
