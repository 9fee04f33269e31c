---@brief :CtxReflections: the session's reflections (ctx/listReflections), newest first, in a
--- scratch buffer (`ctx://reflections`): u undoes the one under the cursor, R refreshes, q closes.

local reflect = require("ctx_lsp.reflect")
local util = require("ctx_lsp.util")

local M = {}

M.buf = nil ---@type integer?

--- The lines of the reflections list, and per line its reflection.
---@param list table[]
---@return string[] lines, table<integer, table> at
function M.render(list)
  local lines = { "ctx reflections · u undo · R refresh · q close", "" }
  local at = {}
  if #list == 0 then
    table.insert(lines, "none yet: the server reflects at the end of each turn (ctx/reportUsage)")
  end
  for i = #list, 1, -1 do -- newest first
    local r = list[i]
    table.insert(
      lines,
      ("#%-3d turn %-3s %-8s %s  %s%s"):format(
        r.id,
        tostring(r.turn),
        r.kind,
        r.item,
        r.reason,
        r.undone == true and "  [undone]" or ""
      )
    )
    at[#lines] = r
  end
  return lines, at
end

--- The list's buffer, with its keys.
---@return integer
local function new_buf()
  local buf = util.scratch_buf("ctx://reflections", "ctx_lsp_reflections")
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "ctx: " .. desc })
  end
  map("q", "<cmd>close<cr>", "close")
  map("R", function()
    M.open()
  end, "refresh")
  map("u", function()
    local r = (vim.b[buf].ctx_at or {})[tostring(vim.api.nvim_win_get_cursor(0)[1])]
    if r then
      reflect.undo(r.id, function()
        M.open()
      end)
    end
  end, "undo the reflection under the cursor")
  return buf
end

--- :CtxReflections: fetch the reflections and show them (in a split below, if not shown yet).
---@param done? fun(buf: integer)
function M.open(done)
  reflect.fetch_reflections(function(list)
    local buf = M.buf
    if not (buf and vim.api.nvim_buf_is_valid(buf)) then
      buf = new_buf()
      M.buf = buf
    end
    local lines, at = M.render(list)
    local keyed = {}
    for lnum, r in pairs(at) do
      keyed[tostring(lnum)] = r
    end
    vim.b[buf].ctx_at = keyed
    util.set_lines(buf, lines)
    if not util.window_of(buf) then
      vim.cmd("botright 12split")
      local win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(win, buf)
      vim.wo[win].wrap = false
      vim.wo[win].number = false
    end
    if done then
      done(buf)
    end
  end)
end

return M
