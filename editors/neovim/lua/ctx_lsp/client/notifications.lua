---@brief The server's ctx/ notifications: the budget meter (ctx/budgetChanged), the latest plan
--- (ctx/planChanged), re-pin prompts (ctx/askRepin), stale capsules (ctx/capsulesStale),
--- compactions (ctx/compacted), reflections (ctx/reflected) and the gateway's status, requests and
--- reviews (ctx/gatewayStatusChanged, ctx/gatewayRequest, ctx/reviewRequest, ctx/reviewResolved),
--- each handed to the module that shows it.

local event = require("ctx_lsp.util").event

local M = {}

local levels = vim.log.levels

local function client()
  return require("ctx_lsp.client")
end

--- Mark the statuslines for redraw; the main loop paints them. (An immediate `:redrawstatus!`
--- from a handler can run while a window layout change is pending, which Neovim 0.11.4 does
--- not survive in some builds: grid_line_flush assertion.)
function M.redraw()
  if vim.api.nvim__redraw then
    pcall(vim.api.nvim__redraw, { statusline = true })
  else
    vim.schedule(function()
      pcall(vim.cmd, "redrawstatus!")
    end)
  end
end

--- A BudgetMeter arrived (a notification, or the answer to ctx/showBudget).
---@param meter table
function M.on_budget(meter)
  if type(meter) ~= "table" then
    return
  end
  local state = client().state
  state.meter = meter
  if meter.planId and meter.planId ~= vim.NIL then
    state.plan_id = meter.planId
  end
  M.redraw()
  event("CtxBudgetChanged", meter)
  require("ctx_lsp.pins").schedule_refresh()
  require("ctx_lsp.gateway").follow(meter.planId)
end

local handlers = {}

handlers["ctx/budgetChanged"] = function(_, result)
  M.on_budget(result)
end

handlers["ctx/planChanged"] = function(_, result)
  if type(result) == "table" and result.planId then
    client().state.plan_id = result.planId
    event("CtxPlanChanged", result)
    require("ctx_lsp.gateway").follow(result.planId)
  end
end

handlers["ctx/gatewayRequest"] = function(_, result)
  require("ctx_lsp.gateway").on_request(result)
end

handlers["ctx/gatewayStatusChanged"] = function(_, result)
  require("ctx_lsp.gateway").on_status(result)
end

handlers["ctx/reviewRequest"] = function(_, result)
  require("ctx_lsp.review").on_request(result)
end

handlers["ctx/reviewResolved"] = function(_, result)
  require("ctx_lsp.review").on_resolved(result)
end

handlers["ctx/askRepin"] = function(_, result)
  if type(result) == "table" and type(result.pins) == "table" then
    require("ctx_lsp.pins").ask_repin(result.pins)
  end
end

handlers["ctx/capsulesStale"] = function(_, result)
  result = type(result) == "table" and result or {}
  local stale = client().state.stale
  local paths = {}
  for _, cap in ipairs(result.capsules or {}) do
    local path = type(cap) == "table" and cap.path or cap
    if type(path) == "string" then
      stale[path] = true
      table.insert(paths, path)
    end
  end
  for _, f in ipairs(result.files or {}) do
    if type(f) == "string" and #paths == 0 then
      table.insert(paths, f)
    end
  end
  client().notify(
    ("%d capsule%s out of date (%s): the plan marks them stale"):format(
      #paths,
      #paths == 1 and "" or "s",
      table.concat(paths, ", ")
    ),
    levels.WARN
  )
  require("ctx_lsp.tree").mark_stale()
  event("CtxCapsulesStale", result)
end

handlers["ctx/compacted"] = function(_, result)
  require("ctx_lsp.compact").on_compacted(result)
end

handlers["ctx/reflected"] = function(_, result)
  require("ctx_lsp.reflect").on_reflected(result)
end

--- The handlers of the client config (a copy: Neovim may change it).
---@return table<string, function>
function M.handlers()
  return vim.deepcopy(handlers)
end

return M
