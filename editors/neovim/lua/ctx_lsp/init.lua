---@brief ctx_lsp for Neovim: a thin client of the ctx-lsp language server, which plans what
--- goes into an AI assistant's prompt under a token budget. The server decides; this renders:
--- a statusline meter, the include/exclude tree, gutter pins and the prompt preview; with the
--- gateway in the server, an assistant's live requests and review before send.
--- See :help ctx_lsp.

local M = {}

local function cfg()
  return require("ctx_lsp.config")
end

local function client()
  return require("ctx_lsp.client")
end

local did_setup = false

local KEYMAPS = {
  plan = { "<cmd>CtxPlan<cr>", "ctx: plan context for a question" },
  pin = { "<cmd>CtxPin<cr>", "ctx: pin the symbol under the cursor" },
  unpin = { "<cmd>CtxUnpin<cr>", "ctx: unpin the symbol under the cursor" },
  preview = { "<cmd>CtxPreview<cr>", "ctx: preview the prompt" },
  budget = { "<cmd>CtxBudget<cr>", "ctx: show the budget" },
  compact = { "<cmd>CtxCompact<cr>", "ctx: compact the conversation" },
  undo = { "<cmd>CtxUndo<cr>", "ctx: undo the last automatic pin change" },
  conversations = { "<cmd>CtxConversations<cr>", "ctx: choose the active conversation of the gateway" },
}

--- Configure and start the client. Options: see :help ctx_lsp-setup.
---@param opts? ctx_lsp.Options
function M.setup(opts)
  local c = cfg().set(opts)
  M.highlights()
  client().setup()
  for name, lhs in pairs(c.keymaps or {}) do
    local km = KEYMAPS[name]
    if km and type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set("n", lhs, km[1], { desc = km[2], silent = true })
    elseif not km then
      vim.notify(("ctx-lsp: unknown keymap %q (known: plan, pin, unpin, preview, budget, compact, undo, conversations)"):format(name), vim.log.levels.WARN)
    end
  end
  did_setup = true
end

--- Default highlight links (colourschemes and users win: default = true).
function M.highlights()
  local links = {
    CtxMeterNormal = "StatusLine",
    CtxMeterWarn = "DiagnosticWarn",
    CtxMeterError = "DiagnosticError",
    CtxPinSign = "DiagnosticHint",
    CtxPinGrace = "DiagnosticWarn",
    CtxPinAuto = "DiagnosticInfo",
    CtxTreeSection = "Title",
    CtxTreeIncluded = "DiagnosticOk",
    CtxTreeExcluded = "DiagnosticWarn",
    CtxTreeReason = "Comment",
    CtxTreeStale = "DiagnosticWarn",
    CtxTreePath = "Directory",
    CtxTreeSuggested = "Comment",
    CtxTreeAuto = "DiagnosticInfo",
    CtxPreviewInjected = "DiagnosticInfo",
  }
  for group, link in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

---@return boolean
function M.is_setup()
  return did_setup
end

-- ---- statusline -------------------------------------------------------------------------------

--- The budget meter for a statusline: "ctx 41.2k/122k ▰▱▱▱▱ 34%" ("" until the server sent one);
--- while the server's gateway listens, its line instead: "ctx ⇄ 12 · 41.2k/180k · 83% cached ·
--- cache warm 4:12 · saved $1.20" ({ gateway = false }: the meter still). With { highlight = true } it is wrapped in
--- %#CtxMeter…# … %* for 'statusline'.
---@param opts? { highlight?: boolean, gateway?: boolean }
---@return string
function M.statusline(opts)
  local m = client().state.meter
  local meter = require("ctx_lsp.meter")
  local text = not (opts and opts.gateway == false) and M.gateway_status() or ""
  if text == "" then
    if type(m) ~= "table" then
      return ""
    end
    text = meter.text(m, { bar_width = cfg().get().bar_width })
  end
  if opts and opts.highlight then
    return ("%%#%s#%s%%*"):format(M.statusline_hl(), (text:gsub("%%", "%%%%")))
  end
  return text
end

--- The meter's highlight group now (CtxMeterNormal / CtxMeterWarn / CtxMeterError).
---@return string
function M.statusline_hl()
  local m = client().state.meter
  return require("ctx_lsp.meter").hl_group(type(m) == "table" and m.percent or 0)
end

--- The gateway for a statusline: "ctx ⇄ 12 · 41.2k/180k · 83% cached · cache warm 4:12 · saved
--- $1.20" — the server's label of the latest request (requests so far, its input / prompt budget,
--- the provider's cache share), the active conversation's prompt cache (warm with the time left
--- of the provider's 5-minute TTL, counted down at each redraw, or cold) and what it saved,
--- cache-weighted against sending direct — or "" when the server runs no gateway.
---@return string
function M.gateway_status()
  return require("ctx_lsp.gateway").statusline()
end

--- The last ctx/gatewayStatus, kept current by each ctx/gatewayRequest and
--- ctx/gatewayStatusChanged (or nil).
---@return table?
function M.gateway()
  return client().state.gateway
end

--- The last BudgetMeter the server sent (or nil).
---@return table?
function M.meter()
  return client().state.meter
end

-- ---- actions (the commands call these) ---------------------------------------------------------

--- ctx/planContext params for a query: the configured context length, the current buffer as
--- focus and the open buffers, when they are in the workspace.
---@param query string
---@param extra? table more params (ragBudget, maxCompletionTokens, ...), camelCase
---@return table
function M.plan_params(query, extra)
  local c = cfg().get()
  local params = { query = query }
  if c.context_length then
    params.contextLength = c.context_length
  end
  local lsp_client = client().get_client()
  local root = lsp_client and client().client_root(lsp_client)
  if root then
    root = vim.fs.normalize(root)
    local function inside(name)
      return name ~= "" and vim.startswith(vim.fs.normalize(name), root .. "/")
    end
    local cur = vim.api.nvim_get_current_buf()
    local name = vim.api.nvim_buf_get_name(cur)
    if vim.bo[cur].buftype == "" and inside(name) then
      local pos = vim.api.nvim_win_get_cursor(0)
      params.focus = { uri = vim.uri_from_bufnr(cur), position = { line = pos[1] - 1, character = 0 } }
    end
    local open = {}
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local n = vim.api.nvim_buf_get_name(b)
      if
        vim.bo[b].buflisted
        and vim.bo[b].buftype == ""
        and vim.api.nvim_buf_is_loaded(b)
        and vim.tbl_contains(c.filetypes, vim.bo[b].filetype)
        and inside(n)
      then
        table.insert(open, vim.uri_from_bufnr(b))
      end
    end
    if #open > 0 then
      params.openFiles = open
    end
  end
  return vim.tbl_extend("force", params, extra or {})
end

M.last_query = nil

--- :CtxPlan {query}: plan and open the tree. Without a query, when the gateway runs: the tree
--- of the active conversation's latest plan (it then follows that conversation).
---@param query? string
---@param extra? table more ctx/planContext params (camelCase)
---@param done? fun(plan: table)
function M.plan(query, extra, done)
  local plan_id = client().state.plan_id
  if (not query or vim.trim(query) == "") and require("ctx_lsp.gateway").listening() and plan_id then
    return require("ctx_lsp.tree").follow(plan_id, done, { open = true })
  end
  local function go(q)
    if not q or vim.trim(q) == "" then
      return
    end
    M.last_query = q
    require("ctx_lsp.tree").plan(M.plan_params(q, extra), done)
  end
  if query and vim.trim(query) ~= "" then
    return go(query)
  end
  vim.ui.input({ prompt = "ctx query: ", default = M.last_query }, go)
end

function M.pin(opts)
  require("ctx_lsp.pins").pin_at_cursor(opts)
end

function M.unpin(opts)
  require("ctx_lsp.pins").unpin_at_cursor(opts)
end

--- :CtxPreview[!] [planId]: the body the gateway last sent (when it runs), else or with
--- { rendered = true } the plan's prompt rendered.
---@param plan_id? string
---@param done? fun(result: table)
---@param opts? { rendered?: boolean }
function M.preview(plan_id, done, opts)
  require("ctx_lsp.preview").open(plan_id, done, opts)
end

--- :CtxConversations: pick the active conversation of the gateway.
---@param done? fun(status?: table)
function M.conversations(done)
  require("ctx_lsp.gateway").pick(done)
end

--- :CtxReview {send|cancel|replan}: answer the request that waits for review (no decision:
--- show it again).
---@param decision? "send"|"cancel"|"replan"
---@param done? fun(result: table) {reviewId, decision, pending}
function M.review(decision, done)
  if decision == nil or decision == "" then
    return require("ctx_lsp.review").show()
  end
  require("ctx_lsp.review").decide(decision, done)
end

function M.compact(opts)
  require("ctx_lsp.compact").run(opts)
end

--- :CtxUndo [id]: undo a promotion or demotion (default: the last one notified).
---@param id? integer
---@param done? fun(result: table)
function M.undo(id, done)
  require("ctx_lsp.reflect").undo_cmd(id, done)
end

--- :CtxReflections: the session's promotions, renewals, demotions and suggestions.
---@param done? fun(buf: integer)
function M.reflections(done)
  require("ctx_lsp.reflect").open_list(done)
end

--- The model's open suggestions, as last fetched (the tree's "suggested" group).
---@return table[]
function M.suggestions()
  return require("ctx_lsp.tree").open_suggestions(client().state.suggestions)
end

M.modes = { "off", "light", "heavy" }

--- :CtxMode [off|light|heavy]
---@param mode? string
---@param done? fun(result: table)
function M.set_mode(mode, done)
  local c = client()
  if not mode or mode == "" then
    local m = c.state.meter
    c.notify(("mode %s (one of off, light, heavy)"):format(m and tostring(m.mode) or "unknown"))
    return
  end
  if not vim.tbl_contains(M.modes, mode) then
    c.notify(("mode must be off, light or heavy, not %q"):format(mode), vim.log.levels.ERROR)
    return
  end
  c.request("ctx/setMode", { mode = mode }, function(result)
    c.notify(("mode %s"):format(result.mode))
    require("ctx_lsp.tree").after_change()
    if done then
      done(result)
    end
  end)
end

--- :CtxBudget: the meter with its sections.
---@param done? fun(meter: table)
function M.budget(done)
  local c = client()
  c.request("ctx/showBudget", nil, function(m)
    c.on_budget(m)
    c.notify(require("ctx_lsp.meter").details(m))
    if done then
      done(m)
    end
  end)
end

return M
