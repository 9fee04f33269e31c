---@brief The tree's buffer and windows: the `ctx://plan` scratch buffer, the side split it opens
--- in (folds by ctx_lsp.tree's foldexpr), painting lines and highlights, and the window an
--- item's code opens in.

local config = require("ctx_lsp.config")
local util = require("ctx_lsp.util")

local M = {}

M.ns = vim.api.nvim_create_namespace("ctx_lsp_tree")

--- The window the tree was opened from (an item's code opens there).
---@type integer?
M.prev_win = nil

--- The tree's buffer: `buf` while it is valid, else a new one, set up by `on_new(buf)`.
---@param buf? integer
---@param on_new fun(buf: integer)
---@return integer
function M.ensure_buf(buf, on_new)
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = util.scratch_buf("ctx://plan", "ctx_lsp_tree")
  on_new(buf)
  return buf
end

--- The window showing the tree's buffer, if any.
M.window = util.window_of

--- The tree's window: the one showing it, else a new side split (`tree.position`, `tree.width`).
---@param buf integer
---@return integer win
function M.open(buf)
  local win = M.window(buf)
  if win then
    return win
  end
  local t = config.get().tree
  local cur = vim.api.nvim_get_current_win()
  vim.cmd((t.position == "left" and "topleft" or "botright") .. " vertical " .. tonumber(t.width or 64) .. "split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
  wo.wrap, wo.cursorline, wo.spell, wo.list = false, true, false, false
  wo.winfixwidth = true
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'ctx_lsp.tree'.foldexpr()"
  wo.foldtext = ""
  wo.foldlevel = 99
  wo.foldenable = true
  M.prev_win = cur
  return win
end

--- Replace the buffer's lines and highlights.
---@param buf integer
---@param lines string[]
---@param highlights ctx_lsp.TreeHighlight[]
function M.paint(buf, lines, highlights)
  util.set_lines(buf, lines)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  for _, h in ipairs(highlights) do
    pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, h.row, h.col, { end_col = h.end_col, hl_group = h.group })
  end
end

--- Recompute the folds of the tree's window (after its lines changed).
---@param win integer
function M.refold(win)
  pcall(vim.api.nvim_win_call, win, function()
    vim.cmd("normal! zx")
  end)
end

--- Close the tree's window (never the last window of the tabpage).
---@param buf integer
function M.close(buf)
  local win = M.window(buf)
  if win and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(win, true)
  end
end

--- A window for an item's code: the one the tree was opened from, else any normal window not
--- showing the tree, else a new split.
---@param tree_buf? integer
---@return integer win
function M.code_window(tree_buf)
  local candidates = {}
  if M.prev_win then
    table.insert(candidates, M.prev_win)
  end
  vim.list_extend(candidates, vim.api.nvim_tabpage_list_wins(0))
  for _, win in ipairs(candidates) do
    if
      vim.api.nvim_win_is_valid(win)
      and vim.api.nvim_win_get_config(win).relative == ""
      and (not tree_buf or vim.api.nvim_win_get_buf(win) ~= tree_buf)
    then
      return win
    end
  end
  vim.cmd("leftabove vsplit")
  return vim.api.nvim_get_current_win()
end

return M
