-- :help ctx_lsp: the help file's tags build (:helptags fails on a duplicate tag), every command
-- the plugin defines and every highlight group it links has a tag, and the reflection and
-- gateway topics open. No server needed.
local repo = assert(os.getenv("CTX_REPO"), "CTX_REPO is not set")
local function log(msg)
  io.stdout:write(msg, "\n")
end

-- :helptags on a copy (the repository keeps no generated tags file)
local dir = vim.fn.tempname() .. "/ctx_help"
vim.fn.mkdir(dir .. "/doc", "p")
vim.fn.writefile(vim.fn.readfile(repo .. "/editors/neovim/doc/ctx_lsp.txt", "b"), dir .. "/doc/ctx_lsp.txt", "b")
vim.cmd("helptags " .. vim.fn.fnameescape(dir .. "/doc"))
local tags = {}
for _, line in ipairs(vim.fn.readfile(dir .. "/doc/tags")) do
  tags[line:match("^[^\t]+")] = true
end
vim.opt.runtimepath:prepend(dir)

local commands = vim.api.nvim_get_commands({})
local missing = {}
for name in pairs(commands) do
  if name:match("^Ctx") and not tags[":" .. name] then
    table.insert(missing, ":" .. name)
  end
end
require("ctx_lsp").highlights()
for name in pairs(vim.api.nvim_get_hl(0, {})) do
  if name:match("^Ctx") and not tags["hl-" .. name] then
    table.insert(missing, "hl-" .. name)
  end
end
table.sort(missing)
assert(#missing == 0, "no help tag for: " .. table.concat(missing, ", "))

for _, tag in ipairs({
  "ctx_lsp-reflection",
  "ctx_lsp-suggested",
  "ctx_lsp-auto-pins",
  "ctx_lsp-task",
  ":CtxUndo",
  ":CtxReflections",
  "hl-CtxTreeSuggested",
  "hl-CtxPinAuto",
  "ctx_lsp-gateway",
  "ctx_lsp-review",
  "ctx_lsp-conversations",
  ":CtxConversations",
  ":CtxReview",
  "ctx_lsp.gateway_status()",
  "hl-CtxPreviewInjected",
  "ctx_lsp-root",
  "ctx_lsp-pin-definition",
}) do
  assert(tags[tag], "no tag " .. tag)
  vim.cmd("help " .. tag)
  local line = vim.api.nvim_get_current_line()
  assert(line:find("*" .. tag .. "*", 1, true), ("`:help %s` lands on %q"):format(tag, line))
  vim.cmd("helpclose")
end
log(("%d tags, every :Ctx command and Ctx highlight group documented"):format(vim.tbl_count(tags)))
io.stdout:write("OK\n")
