---@brief Requests waiting, per client, for the server to be initialized (or to have indexed the
--- workspace, for plans): ctx_lsp.client queues them, the lifecycle sends them.

local M = {}

local pending = {} ---@type table<integer, function[]>

--- Queue `send` until the client is ready.
---@param client_id integer
---@param send fun()
function M.add(client_id, send)
  pending[client_id] = pending[client_id] or {}
  table.insert(pending[client_id], send)
end

---@param client_id integer
---@return boolean
function M.has(client_id)
  return pending[client_id] ~= nil
end

--- Send what waits for the client, in order.
---@param client_id integer
function M.flush(client_id)
  local queue = pending[client_id]
  pending[client_id] = nil
  for _, fn in ipairs(queue or {}) do
    fn()
  end
end

--- Forget what waits for a client that exited.
---@param client_id integer
function M.drop(client_id)
  pending[client_id] = nil
end

return M
