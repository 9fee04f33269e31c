-- The meter's pure formatting (no server): the same numbers as ctx_lsp/core/meter.py; the
-- gateway's line with its prompt-cache countdown.
local meter = require("ctx_lsp.meter")

local function eq(a, b, what)
  if a ~= b then
    error(("%s: expected %s, got %s"):format(what, vim.inspect(b), vim.inspect(a)), 2)
  end
end

-- format_tokens, the cases of the server's docstring and its edges
for n, want in pairs({
  [0] = "0",
  [999] = "999",
  [1000] = "1k",
  [1050] = "1.1k",
  [12345] = "12.3k",
  [41200] = "41.2k",
  [99999] = "100.0k",
  [120000] = "120k",
  [121856] = "122k",
  [1048576] = "1.05M",
  [2000000] = "2.00M",
}) do
  eq(meter.format_tokens(n), want, "format_tokens(" .. n .. ")")
end

-- Python's round (half to even), so bars match the CLI
eq(meter.round(0.5), 0, "round(0.5)")
eq(meter.round(1.5), 2, "round(1.5)")
eq(meter.round(2.5), 2, "round(2.5)")
eq(meter.round(2.51), 3, "round(2.51)")
eq(meter.bar(0, 100, 5), "▱▱▱▱▱", "empty bar")
eq(meter.bar(34, 100, 5), "▰▰▱▱▱", "34 %")
eq(meter.bar(50, 100, 5), "▰▰▱▱▱", "50 % rounds half to even")
eq(meter.bar(100, 100, 5), "▰▰▰▰▰", "full")
eq(meter.bar(500, 100, 5), "▰▰▰▰▰", "over budget stays full")
eq(meter.bar(5, 0, 5), "▱▱▱▱▱", "no budget")

eq(meter.hl_group(10), "CtxMeterNormal", "normal")
eq(meter.hl_group(79.9), "CtxMeterNormal", "just under 80")
eq(meter.hl_group(80), "CtxMeterWarn", "80")
eq(meter.hl_group(94.9), "CtxMeterWarn", "just under 95")
eq(meter.hl_group(95), "CtxMeterError", "95")

local m = { used = 41200, promptBudget = 120000, percent = 34.3, mode = "light", lastEstimate = vim.NIL, lastActual = vim.NIL }
eq(meter.text(m), "ctx 41.2k/120k ▰▰▱▱▱ 34%", "meter text")
m.lastEstimate, m.lastActual = 96000, 101000
eq(meter.text(m), "ctx 41.2k/120k ▰▰▱▱▱ 34% · est 96k / actual 101k", "est vs actual")
m.mode = "off"
eq(meter.text(m, { bar_width = 10 }), "ctx 41.2k/120k ▰▰▰▱▱▱▱▱▱▱ 34% · est 96k / actual 101k · off", "off, wide bar")
eq(meter.encoding_label({ encoding = "cl100k_base", exact = false, calibration = 1.0 }), "cl100k (est.)", "label")
eq(meter.encoding_label({ encoding = "o200k_base", exact = true, calibration = 1.08 }), "o200k ×1.08", "exact label")

-- the highlight groups exist (plugin/ctx_lsp.lua links them by default, colourschemes win)
for _, g in ipairs({ "CtxMeterNormal", "CtxMeterWarn", "CtxMeterError", "CtxPinSign" }) do
  local hl = vim.api.nvim_get_hl(0, { name = g })
  assert(hl.link ~= nil, g .. " is linked by default")
end
vim.api.nvim_set_hl(0, "CtxMeterWarn", { fg = "#ff0000" })
require("ctx_lsp").highlights()
assert(vim.api.nvim_get_hl(0, { name = "CtxMeterWarn" }).fg == 0xff0000, "a user's highlight wins")

-- the statusline is empty until the server sent a meter; with highlight, a %# group
local ctx = require("ctx_lsp")
eq(ctx.statusline(), "", "no meter yet")
require("ctx_lsp.client").state.meter = { used = 118000, promptBudget = 120000, percent = 98.3, mode = "light" }
eq(ctx.statusline(), "ctx 118k/120k ▰▰▰▰▰ 98%", "statusline")
eq(ctx.statusline({ highlight = true }), "%#CtxMeterError#ctx 118k/120k ▰▰▰▰▰ 98%%%*", "statusline with highlight")
eq(ctx.statusline_hl(), "CtxMeterError", "statusline_hl")

-- the gateway's line: the server's label, the prompt cache counted down from the server's
-- cacheWarmUntil (epoch ms) at render time, the server's savings words
local prompt_cache = require("ctx_lsp.prompt_cache")
local UNTIL = 1795586280430
local warm = { cache = "warm 5m00s", cacheWarmUntil = UNTIL }
eq(prompt_cache.clock(252000), "4:12", "clock")
eq(prompt_cache.clock(251001), "4:12", "clock rounds up")
eq(prompt_cache.clock(251000), "4:11", "clock on the second")
eq(prompt_cache.clock(1), "0:01", "clock: the last second")
eq(prompt_cache.text(warm, UNTIL - 252000), "cache warm 4:12", "warm")
eq(prompt_cache.text(warm, UNTIL - 1), "cache warm 0:01", "warm: the last millisecond")
eq(prompt_cache.text(warm, UNTIL), "cache cold", "cold at the server's time")
eq(prompt_cache.text({ cache = "cold", cacheWarmUntil = vim.NIL }, UNTIL), "cache cold", "cold (the server said so)")
eq(prompt_cache.text({ cache = "", cacheWarmUntil = vim.NIL }, UNTIL), "", "unknown: no request yet")
eq(prompt_cache.text(nil, UNTIL), "", "no status")
local near = prompt_cache.now_ms()
assert(math.abs(near - os.time() * 1000) < 2000, "now_ms is epoch milliseconds: " .. near)
local st = require("ctx_lsp.client").state
st.gateway = { listening = "http://127.0.0.1:1", label = "⇄ 2 · 1.7k/122k · 0% cached", saved = "saved $1.20" }
st.gateway.cache, st.gateway.cacheWarmUntil = "warm 5m00s", UNTIL
local gw = require("ctx_lsp.gateway")
eq(gw.statusline(UNTIL - 252000), "ctx ⇄ 2 · 1.7k/122k · 0% cached · cache warm 4:12 · saved $1.20", "gateway line")
eq(gw.statusline(UNTIL + 1), "ctx ⇄ 2 · 1.7k/122k · 0% cached · cache cold · saved $1.20", "gateway line, cold")
st.gateway.cache, st.gateway.cacheWarmUntil, st.gateway.saved = "", vim.NIL, ""
eq(gw.statusline(UNTIL), "ctx ⇄ 2 · 1.7k/122k · 0% cached", "gateway line: the label alone")
st.gateway = nil

-- commands exist (plugin/ctx_lsp.lua ran)
for _, c in ipairs({ "CtxPlan", "CtxPin", "CtxUnpin", "CtxPreview", "CtxMode", "CtxCompact", "CtxBudget" }) do
  assert(vim.fn.exists(":" .. c) == 2, c .. " is defined")
end
io.stdout:write("OK\n")
