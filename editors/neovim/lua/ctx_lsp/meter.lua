---@brief The budget meter's words: pure functions over a BudgetMeter (ctx/budgetChanged,
--- ctx/showBudget). The numbers come from the server; this only formats them, the same way
--- as the server's ctx_lsp/core/meter.py.

local M = {}

--- Python's round(): halves go to the even neighbour (so the bar matches the CLI's).
---@param x number
---@return integer
function M.round(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 then
    return f + 1
  elseif d < 0.5 then
    return f
  end
  return (f % 2 == 0) and f or f + 1
end

--- 12345 -> "12.3k"; 120000 -> "120k"; 1048576 -> "1.05M" (as format_tokens in meter.py).
---@param n number
---@return string
function M.format_tokens(n)
  n = tonumber(n) or 0
  if n < 1000 then
    return tostring(math.floor(n))
  end
  if n < 1000000 then
    local k = n / 1000
    if k >= 100 or k == math.floor(k) then
      return string.format("%.0fk", k)
    end
    return string.format("%.1fk", k)
  end
  return string.format("%.2fM", n / 1000000)
end

--- "▰▰▱▱▱": used/budget as a bar of `width` cells.
---@param used number
---@param budget number
---@param width? integer
---@return string
function M.bar(used, budget, width)
  width = width or 5
  local frac = 0
  if budget and budget > 0 then
    frac = math.min(1, math.max(0, used / budget))
  end
  local filled = M.round(frac * width)
  return string.rep("▰", filled) .. string.rep("▱", width - filled)
end

---@param percent number
---@return string
function M.format_percent(percent)
  return string.format("%d%%", M.round(tonumber(percent) or 0))
end

--- The highlight group for a fill level: normal, >= 80 % warn, >= 95 % error.
---@param percent number
---@return "CtxMeterNormal"|"CtxMeterWarn"|"CtxMeterError"
function M.hl_group(percent)
  percent = tonumber(percent) or 0
  if percent >= 95 then
    return "CtxMeterError"
  elseif percent >= 80 then
    return "CtxMeterWarn"
  end
  return "CtxMeterNormal"
end

local function num(v)
  if v == nil or v == vim.NIL then
    return nil
  end
  return tonumber(v)
end

--- "ctx 41.2k/122k ▰▱▱▱▱ 34%", plus " · est 96k / actual 101k" once the server has a usage
--- report, plus " · off" when retrieval is off.
---@param m table a BudgetMeter
---@param opts? { bar_width?: integer }
---@return string
function M.text(m, opts)
  opts = opts or {}
  local used, budget = num(m.used) or 0, num(m.promptBudget) or 0
  local percent = num(m.percent)
  if percent == nil then
    percent = budget > 0 and 100 * used / budget or 0
  end
  local parts = {
    ("ctx %s/%s %s %s"):format(
      M.format_tokens(used),
      M.format_tokens(budget),
      M.bar(used, budget, opts.bar_width),
      M.format_percent(percent)
    ),
  }
  local est, actual = num(m.lastEstimate), num(m.lastActual)
  if actual ~= nil then
    table.insert(
      parts,
      ("est %s / actual %s"):format(est and M.format_tokens(est) or "?", M.format_tokens(actual))
    )
  end
  if m.mode == "off" then
    table.insert(parts, "off")
  end
  return table.concat(parts, " · ")
end

--- "cl100k (est.) ×1.08": the estimator, as the CLI labels it.
---@param est table|nil the estimator of a BudgetMeter or ContextPlan
---@return string
function M.encoding_label(est)
  if type(est) ~= "table" then
    return "?"
  end
  local label = tostring(est.encoding or "?"):gsub("_base$", "")
  if not est.exact then
    label = label .. " (est.)"
  end
  local cal = num(est.calibration)
  if cal and cal ~= 1 then
    label = label .. (" ×%g"):format(cal)
  end
  return label
end

--- Multi-line summary for :CtxBudget.
---@param m table a BudgetMeter
---@return string
function M.details(m)
  local lines = {
    ("%s · %s · %s · mode %s"):format(M.text(m), tostring(m.model), M.encoding_label(m.estimator), tostring(m.mode)),
  }
  for _, s in ipairs(m.sections or {}) do
    table.insert(
      lines,
      ("  %-12s %s/%s  %d item%s"):format(
        s.name,
        M.format_tokens(s.used),
        M.format_tokens(s.budget),
        s.count,
        s.count == 1 and "" or "s"
      )
    )
  end
  if num(m.turn) then
    table.insert(lines, ("  turn %d%s"):format(m.turn, m.planId and m.planId ~= vim.NIL and (" · " .. m.planId) or ""))
  end
  return table.concat(lines, "\n")
end

return M
