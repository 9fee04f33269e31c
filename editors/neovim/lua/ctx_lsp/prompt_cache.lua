---@brief The provider's prompt cache of the gateway's active conversation, for the statusline:
--- "cache warm 4:12" counted down from the server's `cacheWarmUntil` (epoch milliseconds) each
--- time the statusline is drawn, "cache cold" from that time on. A statusline is only drawn
--- when something redraws it, so while the cache is warm a timer redraws it every second; it
--- stops once the cache is cold (or the gateway is gone).

local M = {}

--- Epoch milliseconds now: the server's clock (same machine) for `cacheWarmUntil`.
---@return integer
function M.now_ms()
  local sec, usec = vim.uv.gettimeofday()
  return sec * 1000 + math.floor(usec / 1000)
end

--- Milliseconds the cache stays warm after `now` (nil when it is not warm).
---@param status table a GatewayStatus
---@param now? integer epoch ms
---@return number?
function M.left_ms(status, now)
  local until_ms = type(status) == "table" and tonumber(status.cacheWarmUntil) or nil
  if until_ms and until_ms > (now or M.now_ms()) then
    return until_ms - (now or M.now_ms())
  end
  return nil
end

--- "4:12" (m:ss), seconds rounded up: "0:01" in the last one.
---@param left_ms number
---@return string
function M.clock(left_ms)
  local s = math.max(0, math.ceil(left_ms / 1000))
  return ("%d:%02d"):format(math.floor(s / 60), s % 60)
end

--- "cache warm 4:12", "cache cold", or "" when the server knows no request of the active
--- conversation (its `cache` is "").
---@param status table a GatewayStatus
---@param now? integer epoch ms
---@return string
function M.text(status, now)
  if type(status) ~= "table" then
    return ""
  end
  local left = M.left_ms(status, now)
  if left then
    return "cache warm " .. M.clock(left)
  end
  -- the server knew the cache (warm then, or cold already): past its time it is cold
  return (type(status.cache) == "string" and status.cache ~= "") and "cache cold" or ""
end

local timer ---@type uv.uv_timer_t?

--- Whether the redraw timer runs.
---@return boolean
function M.ticking()
  return timer ~= nil
end

local function stop()
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
end

--- Keep the statusline's countdown moving while `get()`'s status is warm: a redraw every second,
--- the last one showing "cache cold", then no timer. Call it whenever the status changes.
---@param get fun(): table? the current GatewayStatus
---@param redraw fun()
function M.follow(get, redraw)
  local left = M.left_ms(get())
  if timer or not left then
    return
  end
  timer = assert(vim.uv.new_timer())
  -- first when the shown second changes, then every second: the redraws land on the countdown's steps
  timer:start(math.floor(left % 1000) + 5, 1000, vim.schedule_wrap(function()
    redraw()
    if not M.left_ms(get()) then
      stop()
    end
  end))
end

--- Stop the timer (the plugin's client stopped).
M.stop = stop

return M
