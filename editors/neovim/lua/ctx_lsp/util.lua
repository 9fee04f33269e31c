---@brief Small helpers the modules share: JSON null checks, the plugin's User events, its
--- scratch buffers (`ctx://…`) and the window showing one.

local M = {}

--- A value the server sent (JSON null arrives as vim.NIL).
---@param v any
---@return boolean
function M.present(v)
  return v ~= nil and v ~= vim.NIL
end

--- Fire the User event `name` (:help ctx_lsp-api); an error in a user's handler stays theirs.
---@param name string e.g. "CtxPinsChanged"
---@param data? any
function M.event(name, data)
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = name, modeline = false, data = data })
end

--- The first window of the current tabpage showing `buf`, if any.
---@param buf integer
---@return integer?
function M.window_of(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

--- A hidden scratch buffer named `name` (nofile, no swap file, kept when its window closes).
---@param name string e.g. "ctx://plan"
---@param filetype? string
---@return integer buf
function M.scratch_buf(name, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end

--- Replace a read-only buffer's lines (it stays read-only and unmodified).
---@param buf integer
---@param lines string[]
function M.set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

return M
