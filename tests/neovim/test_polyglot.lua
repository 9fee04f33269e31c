-- The client on the polyglot workspace (a Rust crate at the root, TypeScript in web/, Go, Java,
-- C/C++): the workspace root of a buffer in every language (a repository is one workspace); one
-- server attaches to every language's buffers; :CtxPin inside Ledger::transfer (src/account.rs)
-- and inside ApiClient.balance (web/src/api/client.ts) puts a sign on each, both show in
-- :CtxPlan's tree as pinned and their code in :CtxPreview; a comment saved in account.rs leaves
-- its capsule fresh, a code change saved makes it stale (the warning, the tree's marks, the
-- server's re-plan).
local H = dofile(os.getenv("CTX_REPO") .. "/tests/neovim/helpers.lua")
local ctx = require("ctx_lsp")
local client = require("ctx_lsp.client")
local pins = require("ctx_lsp.pins")
local tree = require("ctx_lsp.tree")

local TRANSFER = "ledger_core::account::Ledger::transfer"
local BALANCE = "web/src/api/client.ApiClient.balance"
local QUERY = "how does a transfer between two accounts work, and how does the web client show a balance?"

-- ---- the workspace root of a buffer, for every language -----------------------------------------
-- (pure: temporary trees, unloaded buffers) a repository is one workspace, whatever package of it a
-- file is in; ctx.toml marks one explicitly; without either, the nearest project file
do
  local lifecycle = require("ctx_lsp.client.lifecycle")
  local base = vim.fs.normalize(vim.fn.tempname())
  local function tree_of(files)
    for _, rel in ipairs(files) do
      vim.fn.mkdir(vim.fs.dirname(base .. "/" .. rel), "p")
      if rel:sub(-1) == "/" then
        vim.fn.mkdir(base .. "/" .. rel, "p")
      else
        vim.fn.writefile({}, base .. "/" .. rel)
      end
    end
  end
  local function root(rel)
    return lifecycle.root_of(vim.fn.bufadd(base .. "/" .. rel))
  end
  tree_of({
    "repo/.git/",
    "repo/backend/pyproject.toml",
    "repo/backend/app.py",
    "repo/web/package.json",
    "repo/web/src/client.ts",
    "repo/server/go.mod",
    "repo/server/handler.go",
    "repo/java/pom.xml",
    "repo/java/src/Inventory.java",
    "repo/native/CMakeLists.txt",
    "repo/native/codec.cpp",
    "repo/scoped/ctx.toml",
    "repo/scoped/Cargo.toml",
    "repo/scoped/src/lib.rs",
    "loose/Cargo.toml",
    "loose/src/account.rs",
    "loose/web/package.json",
    "loose/web/src/client.ts",
  })
  for _, rel in ipairs({
    "backend/app.py",
    "web/src/client.ts",
    "server/handler.go",
    "java/src/Inventory.java",
    "native/codec.cpp",
  }) do
    H.eq(root("repo/" .. rel), base .. "/repo", "the repository is the root of " .. rel)
  end
  H.eq(root("repo/scoped/src/lib.rs"), base .. "/repo/scoped", "ctx.toml wins over the repository")
  H.eq(root("loose/src/account.rs"), base .. "/loose", "no repository: Cargo.toml")
  H.eq(root("loose/web/src/client.ts"), base .. "/loose/web", "no repository: the nearest package.json")
end

H.setup()
H.open("src/account.rs", "rust")
local rs_buf = vim.api.nvim_get_current_buf()
local ctx_client = assert(client.get_client(rs_buf))
H.eq(client.client_root(ctx_client), H.ws, "the workspace root of a Rust buffer")

local function signs(buf)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, pins.ns, 0, -1, { details = true })) do
    table.insert(out, { row = m[2], text = vim.trim(m[4].sign_text or "") })
  end
  return out
end

local function server_pins()
  local out = {}
  for _, p in ipairs(H.request("ctx/listPins")) do
    out[p.symbol] = p
  end
  return out
end

--- :CtxPin with the cursor at the start of the line holding `needle` (no name under it: the
--- server pins the innermost definition around it); waits for the pin's sign.
local function pin_inside(needle, qualname)
  local buf = vim.api.nvim_get_current_buf()
  local row = H.line_of(needle)
  vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
  vim.cmd("CtxPin")
  H.wait("the pin of " .. qualname, function()
    return server_pins()[qualname] ~= nil
  end)
  local pin = server_pins()[qualname]
  H.wait("the sign of " .. qualname, function()
    return #signs(buf) == 1
  end)
  H.eq(signs(buf)[1], { row = pin.range.start.line, text = "📌" }, "the sign of " .. qualname)
  H.truthy(pin.range.start.line < row and row <= pin.range["end"].line, "the pin's range holds the cursor")
  local first = vim.api.nvim_buf_get_lines(buf, pin.range.start.line, pin.range.start.line + 1, false)[1]
  H.log(("pinned %s: sign on line %d: %s"):format(qualname, pin.range.start.line + 1, first))
  H.truthy(#H.notes_matching("pinned %a+ " .. vim.pesc(qualname), vim.log.levels.INFO) == 1, "pin confirmed")
  return pin
end

-- ---- Rust: inside Ledger::transfer -------------------------------------------------------------
local transfer = pin_inside("let source = self.find(from)?;", TRANSFER)
H.eq(transfer.range.start.line, H.line_of("/// Transfers `amount` cents"), "the sign is on transfer's first line (its doc)")

-- ---- TypeScript: inside ApiClient.balance, the same server --------------------------------------
H.open("web/src/api/client.ts", "typescript")
local ts_buf = vim.api.nvim_get_current_buf()
H.wait("the client to attach to client.ts", function()
  return #vim.lsp.get_clients({ bufnr = ts_buf, name = "ctx_lsp" }) == 1
end)
H.eq(assert(client.get_client(ts_buf)).id, ctx_client.id, "one server for the repository")
pin_inside("const body = await response.json();", BALANCE)
H.eq(#signs(rs_buf), 1, "transfer keeps its sign")

-- ---- every other language of the workspace attaches to that server too (Python: the other tests)
for _, f in ipairs({
  { "web/src/components/Invoice.tsx", "typescriptreact" },
  { "web/src/utils/format.js", "javascript" },
  { "server/handler.go", "go" },
  { "java/src/main/java/com/shop/Inventory.java", "java" },
  { "native/checksum.c", "c" },
  { "native/codec.cpp", "cpp" },
}) do
  vim.cmd.edit(vim.fn.fnameescape(H.ws .. "/" .. f[1]))
  H.eq(vim.bo.filetype, f[2], "filetype of " .. f[1])
  local b = vim.api.nvim_get_current_buf()
  H.wait("the client to attach to " .. f[1], function()
    local attached = vim.lsp.get_clients({ bufnr = b, name = "ctx_lsp" })
    return #attached == 1 and attached[1].id == ctx_client.id
  end)
end
H.eq(#vim.lsp.get_clients({ name = "ctx_lsp" }), 1, "still one server")
vim.cmd.buffer(ts_buf)

-- ---- both pinned in :CtxPlan's tree -------------------------------------------------------------
vim.cmd("CtxPlan " .. QUERY)
H.wait("the tree", function()
  return tree.current ~= nil and tree.current.plan ~= nil and tree.current.buf ~= nil
end)
local lines = vim.api.nvim_buf_get_lines(tree.current.buf, 0, -1, false)
io.stdout:write(table.concat(lines, "\n"), "\n")
for _, qualname in ipairs({ TRANSFER, BALANCE }) do
  local found
  for i, item in pairs(tree.current.items) do
    if type(item) == "table" and item.symbol == qualname and item.reason == "pinned" then
      found = i
    end
  end
  H.truthy(found, qualname .. " is an included, pinned item of the plan's tree")
  H.truthy(lines[found]:find("^%s*✓%s+%d+%s+pinned "), "its line says pinned: " .. lines[found])
end

-- ---- and their code in :CtxPreview --------------------------------------------------------------
local preview = require("ctx_lsp.preview")
vim.cmd("CtxPreview")
H.wait("the preview buffer", function()
  return preview.buf ~= nil and vim.api.nvim_get_current_buf() == preview.buf
end)
local text = table.concat(vim.api.nvim_buf_get_lines(preview.buf, 0, -1, false), "\n")
H.truthy(text:find("pub fn transfer(&mut self, from: &str, to: &str, amount: i64)", 1, true), "transfer's code in the prompt")
H.truthy(text:find("async balance(account: string): Promise<string>", 1, true), "balance's code in the prompt")
H.truthy(text:find(QUERY, 1, true), "the question in the prompt")
vim.cmd("close")

-- ---- capsule staleness on save of a Rust file -----------------------------------------------------
local caps = H.request("ctx/refreshCapsules", { paths = { "src/account.rs" } })
local has_cap = false
for _, cap in ipairs(caps) do
  has_cap = has_cap or cap.path == "src/account.rs"
end
H.truthy(has_cap, "a capsule of src/account.rs: " .. vim.inspect(caps))
H.await("a plan with the capsule", function(done)
  ctx.plan("what does the account module do?", nil, done)
end)
local function stale_warnings()
  return #H.notes_matching("out of date %(.*src/account%.rs", vim.log.levels.WARN)
end
vim.api.nvim_set_current_buf(rs_buf)
-- a comment is not code: saved, the capsule stays fresh
vim.api.nvim_buf_set_lines(rs_buf, 0, 0, false, { "// Accounts and the ledger that moves money between them." })
vim.cmd("write")
H.truthy(not vim.wait(1500, function()
  return stale_warnings() > 0
end, 20), "a comment-only change leaves the capsule fresh")
-- code is
vim.api.nvim_buf_set_lines(rs_buf, -1, -1, false, { "", "pub fn fee(amount: i64) -> i64 {", "    amount / 100", "}" })
vim.cmd("write")
H.wait("the stale warning", function()
  return stale_warnings() == 1
end)
H.truthy(client.state.stale["src/account.rs"], "the client keeps src/account.rs as stale")
local marked = 0
for _, l in ipairs(vim.api.nvim_buf_get_lines(tree.current.buf, 0, -1, false)) do
  if l:find("stale", 1, true) then
    H.truthy(l:find("src/account.rs", 1, true), "only account.rs items are stale: " .. l)
    marked = marked + 1
  end
end
H.truthy(marked > 0, "stale items are marked in the tree")
local replanned = H.await("the re-plan", function(done)
  ctx.plan("what does the account module do?", nil, done)
end)
local stale_items = vim.tbl_filter(function(item)
  return item.reason == "stale"
end, replanned.excluded)
H.truthy(#stale_items > 0, "the server excludes the stale capsule")
for _, item in ipairs(stale_items) do
  H.eq(item.path, "src/account.rs", "stale item path")
end

H.no_errors()
H.finish()
