-- Minimal init for the headless tests: the plugin from this repo on 'runtimepath', nothing else.
-- Run as: nvim --clean -u tests/neovim/minimal_init.lua -l tests/neovim/test_x.lua
local here = debug.getinfo(1, "S").source:sub(2)
local repo = os.getenv("CTX_REPO") or vim.fn.fnamemodify(here, ":p:h:h:h")
vim.opt.runtimepath:prepend(repo .. "/editors/neovim")
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
vim.opt.more = false
