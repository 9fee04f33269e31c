-- ctx_lsp: user commands and highlight defaults. Nothing heavy: modules load on first use.
if vim.g.loaded_ctx_lsp ~= nil then
  return
end
vim.g.loaded_ctx_lsp = 1

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify_once("ctx_lsp needs Neovim 0.10 or newer", vim.log.levels.ERROR)
  return
end

local function ctx()
  return require("ctx_lsp")
end

require("ctx_lsp").highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("ctx_lsp_highlights", { clear = true }),
  callback = function()
    require("ctx_lsp").highlights()
  end,
})

local command = vim.api.nvim_create_user_command

--- A `complete` function: the candidates (a list, or a function giving one) that start with
--- what was typed.
local function starting_with(candidates)
  return function(lead)
    local list = type(candidates) == "function" and candidates() or candidates
    return vim.tbl_filter(function(c)
      return vim.startswith(c, lead)
    end, list)
  end
end

command("CtxPlan", function(a)
  ctx().plan(a.args)
end, { nargs = "*", desc = "ctx: plan the context for a question and open the include/exclude tree" })

local kinds = { "sticky", "leased", "ephemeral" }
command("CtxPin", function(a)
  local kind, ttl = a.fargs[1], tonumber(a.fargs[2])
  if kind and not vim.tbl_contains(kinds, kind) then
    vim.notify(("ctx-lsp: pin kind must be sticky, leased or ephemeral, not %q"):format(kind), vim.log.levels.ERROR)
    return
  end
  ctx().pin({ kind = kind, ttl = ttl })
end, {
  nargs = "*",
  desc = "ctx: pin the symbol under the cursor ([sticky|leased|ephemeral] [ttl])",
  complete = function(_, line)
    if #vim.split(line, "%s+", { trimempty = true }) <= 2 then
      return kinds
    end
    return {}
  end,
})

command("CtxUnpin", function()
  ctx().unpin()
end, { desc = "ctx: unpin the symbol under the cursor" })

command("CtxPreview", function(a)
  ctx().preview(a.args, nil, { rendered = a.bang })
end, {
  nargs = "?",
  bang = true,
  desc = "ctx: the body the gateway last sent upstream; ! or [planId]: the plan's prompt rendered",
})

command("CtxConversations", function()
  ctx().conversations()
end, { desc = "ctx: choose the active conversation among those the gateway served" })

command("CtxReview", function(a)
  ctx().review(a.args)
end, {
  nargs = "?",
  desc = "ctx: answer the request waiting for review (send, cancel, replan; none: show it)",
  complete = starting_with({ "send", "cancel", "replan" }),
})

command("CtxMode", function(a)
  ctx().set_mode(a.args)
end, {
  nargs = "?",
  desc = "ctx: retrieval mode (off, light, heavy)",
  complete = starting_with({ "off", "light", "heavy" }),
})

command("CtxCompact", function(a)
  local strategy = a.args ~= "" and a.args or nil
  if strategy and strategy ~= "summary" and strategy ~= "trim" then
    vim.notify(("ctx-lsp: strategy must be summary or trim, not %q"):format(strategy), vim.log.levels.ERROR)
    return
  end
  ctx().compact({ strategy = strategy })
end, {
  nargs = "?",
  desc = "ctx: compact the conversation ([summary|trim]); shows the server's proposal, :w applies it",
  complete = starting_with({ "summary", "trim" }),
})

command("CtxBudget", function()
  ctx().budget()
end, { desc = "ctx: show the budget meter and its sections" })

command("CtxUndo", function(a)
  ctx().undo(a.args ~= "" and a.args or nil)
end, {
  nargs = "?",
  desc = "ctx: undo a promotion or demotion of the reflection loop ([id]; default: the last one notified)",
  complete = starting_with(function()
    return require("ctx_lsp.reflect").undoable_ids()
  end),
})

command("CtxReflections", function()
  ctx().reflections()
end, { desc = "ctx: the session's promotions, renewals, demotions and suggestions (u undoes one)" })
