---@brief The tree's text, from a ContextPlan: its lines, and per line the item, kind and fold
--- level, and the highlights. Pure: what else it shows (pins, stale paths, suggestions, why a
--- pin was leased) comes in a `ctx_lsp.TreeContext`; ctx_lsp.tree fills it from the client.

local meter = require("ctx_lsp.meter")
local present = require("ctx_lsp.util").present

local M = {}

local SECTIONS = { "system", "conversation", "rag" }

M.AUTO_MARK = "📎auto"
M.KEYS_HELP = "<CR> open · p pin/unpin · r restore · w what-if · u undo auto · d dismiss · R re-plan · q close"

---@class ctx_lsp.TreeContext what the tree shows besides the plan (all of it from the server)
---@field pins table<string, table> the session's pins by id (ctx/listPins)
---@field stale table<string, true> workspace-relative paths of stale capsules (ctx/capsulesStale)
---@field suggestions? table[] ctx/listSuggestions
---@field auto_reason? fun(pin_id: string): string? why the server leased a pin (ctx/listReflections)
---@field bar_width? integer

--- "shop/billing/invoice.py:47" (1-based line) or "".
---@param item table
---@return string
function M.location(item)
  if not present(item.path) then
    return ""
  end
  if present(item.range) then
    return ("%s:%d"):format(item.path, item.range.start.line + 1)
  end
  return item.path
end

--- One display line: newlines folded, very long text cut.
---@param s any
---@param max? integer
---@return string
function M.one_line(s, max)
  s = tostring(s or ""):gsub("[\r\n]+", " ⏎ ")
  max = max or 120
  if vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. "…"
  end
  return s
end

--- Whether an item is marked stale: by the server's reason, or its file's capsule.
---@param item table
---@param stale table<string, true>
---@return boolean
function M.is_stale(item, stale)
  return item.reason == "stale" or (present(item.path) and stale[item.path] == true)
end

--- A list of pins (ctx/listPins) by id.
---@param list? table[]
---@return table<string, table>
function M.pins_by_id(list)
  local out = {}
  for _, pin in ipairs(list or {}) do
    if type(pin) == "table" and pin.id then
      out[pin.id] = pin
    end
  end
  return out
end

--- The automatic pin (createdBy "auto") that put an item in the plan, if any.
---@param item table
---@param pins table<string, table>
---@return table?
function M.auto_pin_of(item, pins)
  if not present(item.pinId) then
    return nil
  end
  local pin = pins[item.pinId]
  if pin and pin.createdBy == "auto" then
    return pin
  end
  return nil
end

--- One item line: mark, tokens, reason, title, location.
---@param item table
---@param included boolean
---@param auto? table the automatic pin behind the item
---@param stale? boolean
---@return string
function M.item_line(item, included, auto, stale)
  local mark = included and "✓" or "✗"
  local reason = item.reason
  if auto then
    reason = reason .. " " .. M.AUTO_MARK
  elseif present(item.pinId) and reason ~= "pinned" then
    reason = reason .. " 📌"
  end
  if stale and reason ~= "stale" then
    reason = reason .. " ⚠stale"
  end
  local loc = M.location(item)
  return ("  %s %6s  %-11s %s%s"):format(
    mark,
    meter.format_tokens(item.tokens),
    reason,
    M.one_line(item.title or item.id),
    loc ~= "" and ("  " .. loc) or ""
  )
end

--- Section header: "▾ rag  197/200 tok · 3 in · 14 out".
---@param s table a plan section
---@return string
function M.section_line(s)
  return ("▾ %s  %s/%s tok · %d in · %d out"):format(
    s.name,
    meter.format_tokens(s.used),
    meter.format_tokens(s.budget),
    s.count or 0,
    s.excluded or 0
  )
end

--- The line under an automatically pinned item: why the server leased it.
---@param pin table
---@param why? string the promotion's reason
---@return string
function M.auto_note(pin, why)
  local ttl = present(pin.ttlRemaining) and (" (ttl %d)"):format(pin.ttlRemaining) or ""
  return ("      ↳ leased automatically%s: %s · u undo"):format(ttl, why and M.one_line(why, 200) or "by the server")
end

--- The suggested group's line of a suggestion: ☆ (★ when it is pinned already), item, reason.
---@param s table {item, turn, reason, status}
---@param pinned boolean
---@return string
function M.suggestion_line(s, pinned)
  return ("  %s %s  %s%s"):format(pinned and "★" or "☆", s.item, pinned and "pinned · " or "", M.one_line(s.reason))
end

--- The open suggestions (status "open"), in the server's order.
---@param list? table[]
---@return table[]
function M.open_suggestions(list)
  local out = {}
  for _, sug in ipairs(list or {}) do
    if type(sug) == "table" and sug.status == "open" and type(sug.item) == "string" then
      table.insert(out, sug)
    end
  end
  return out
end

--- The plan's items by section, sections in the server's order (system, conversation, rag,
--- then any other in order of appearance).
---@param plan table
---@return string[] order, table<string, { included: table[], excluded: table[] }> by_section
local function by_section(plan)
  local groups = {}
  for _, name in ipairs(SECTIONS) do
    groups[name] = { included = {}, excluded = {} }
  end
  local order = vim.deepcopy(SECTIONS)
  local function bucket(name)
    if not groups[name] then
      groups[name] = { included = {}, excluded = {} }
      table.insert(order, name)
    end
    return groups[name]
  end
  for _, item in ipairs(plan.included or {}) do
    table.insert(bucket(item.section).included, item)
  end
  for _, item in ipairs(plan.excluded or {}) do
    table.insert(bucket(item.section).excluded, item)
  end
  return order, groups
end

--- Lines of a plan, and per line its item, kind and suggestion.
--- Kinds: "top"|"section"|"excluded"|"item"|"excluded_item"|"item_note"|"suggested"|"suggestion".
---@param plan table
---@param ctx ctx_lsp.TreeContext
---@return string[] lines, table<integer, table> items, table<integer, string> kinds, table<integer, table> suggestions
function M.lines(plan, ctx)
  local pins, stale = ctx.pins, ctx.stale
  local lines, items, kinds, sugs = {}, {}, {}, {}
  local function add(text, kind, item)
    table.insert(lines, text)
    kinds[#lines] = kind
    items[#lines] = item
  end
  local totals = plan.totals or {}
  local task = present(plan.clusterId) and (" · task " .. plan.clusterId) or ""
  add(("ctx plan %s · %s · mode %s%s"):format(plan.planId, tostring(plan.model), tostring(plan.mode), task), "top")
  local percent = (plan.promptBudget or 0) > 0 and 100 * totals.tokens / plan.promptBudget or 0
  add(
    ("%s/%s tok %s %s · %d in · %d out · %s"):format(
      meter.format_tokens(totals.tokens or 0),
      meter.format_tokens(plan.promptBudget or 0),
      meter.bar(totals.tokens or 0, plan.promptBudget or 0, ctx.bar_width),
      meter.format_percent(percent),
      totals.items or 0,
      totals.excluded or 0,
      meter.encoding_label(plan.estimator)
    ),
    "top"
  )
  for _, note in ipairs(plan.notes or {}) do
    add("note: " .. M.one_line(note, 400), "top")
  end
  add(M.KEYS_HELP, "top")

  local order, groups = by_section(plan)
  local sections = {}
  for _, s in ipairs(plan.sections or {}) do
    sections[s.name] = s
  end
  for _, name in ipairs(order) do
    local group = groups[name]
    local s = sections[name]
      or { name = name, budget = 0, used = 0, count = #group.included, excluded = #group.excluded }
    add("", "top")
    add(M.section_line(s), "section")
    for _, item in ipairs(group.included) do
      local auto = M.auto_pin_of(item, pins)
      add(M.item_line(item, true, auto, M.is_stale(item, stale)), "item", item)
      if auto and item.reason == "pinned" then
        add(M.auto_note(auto, ctx.auto_reason and ctx.auto_reason(auto.id)), "item_note", item)
      end
    end
    if #group.excluded > 0 then
      local tok = 0
      for _, item in ipairs(group.excluded) do
        tok = tok + (tonumber(item.tokens) or 0)
      end
      add(("  ▸ excluded (%d, %s tok)"):format(#group.excluded, meter.format_tokens(tok)), "excluded")
      for _, item in ipairs(group.excluded) do
        add(M.item_line(item, false, M.auto_pin_of(item, pins), M.is_stale(item, stale)), "excluded_item", item)
      end
    end
  end
  local open = M.open_suggestions(ctx.suggestions)
  if #open > 0 then
    local pinned_symbols = {}
    for _, pin in pairs(pins) do
      if present(pin.symbol) and pin.status ~= "expired" then
        pinned_symbols[pin.symbol] = true
      end
    end
    add("", "top")
    add(("▾ suggested  %d open · by the model, not pinned until you pin them (p)"):format(#open), "suggested")
    for _, sug in ipairs(open) do
      add(M.suggestion_line(sug, pinned_symbols[sug.item] == true), "suggestion")
      sugs[#lines] = sug
    end
  end
  return lines, items, kinds, sugs
end

--- The fold level of a line of a kind (a 'foldexpr' value): one fold per section and for the
--- suggested group, the excluded items of a section in a nested fold.
---@param kind? string
---@return string
function M.fold_level(kind)
  if kind == "section" or kind == "suggested" then
    return ">1"
  elseif kind == "item" or kind == "item_note" or kind == "suggestion" then
    return "1"
  elseif kind == "excluded" then
    return ">2"
  elseif kind == "excluded_item" then
    return "2"
  end
  return "0"
end

---@class ctx_lsp.TreeHighlight
---@field row integer 0-based
---@field col integer 0-based byte column
---@field end_col integer
---@field group string

--- The highlights of the tree's lines (byte columns).
---@param lines string[]
---@param items table<integer, table>
---@param kinds table<integer, string>
---@param stale table<string, true>
---@return ctx_lsp.TreeHighlight[]
function M.highlights(lines, items, kinds, stale)
  local out = {}
  local function hl(row, col, end_col, group)
    table.insert(out, { row = row, col = col, end_col = end_col, group = group })
  end
  local function mark(row, text, needle, group)
    local s, e = text:find(needle, 1, true)
    if s then
      hl(row, s - 1, e, group)
    end
  end
  for lnum, text in ipairs(lines) do
    local row = lnum - 1
    local kind = kinds[lnum]
    if kind == "section" or kind == "suggested" then
      hl(row, 0, #text, "CtxTreeSection")
    elseif kind == "suggestion" then
      hl(row, 0, #text, "CtxTreeSuggested")
    elseif kind == "item_note" then
      hl(row, 0, #text, "CtxTreeReason")
      mark(row, text, "leased automatically", "CtxTreeAuto")
    elseif kind == "excluded" or (kind == "top" and text:match("^<CR>")) or text:match("^note:") then
      hl(row, 0, #text, "Comment")
    elseif kind == "top" and lnum == 1 then
      hl(row, 0, #text, "Title")
    elseif kind == "item" or kind == "excluded_item" then
      local item = items[lnum]
      local is_stale = M.is_stale(item, stale)
      hl(row, 2, 2 + #"✓", kind == "item" and "CtxTreeIncluded" or "CtxTreeExcluded")
      local rs, re = text:find(vim.pesc(item.reason), 2 + #"✓" + 8, false)
      if rs then
        hl(row, rs - 1, re, is_stale and "CtxTreeStale" or "CtxTreeReason")
      end
      mark(row, text, M.AUTO_MARK, "CtxTreeAuto")
      if is_stale then
        mark(row, text, "⚠stale", "CtxTreeStale")
      end
      local loc = M.location(item)
      if loc ~= "" then
        hl(row, #text - #loc, #text, "CtxTreePath")
      end
    end
  end
  return out
end

return M
