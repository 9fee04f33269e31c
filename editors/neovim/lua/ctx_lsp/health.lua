---@brief :checkhealth ctx_lsp: Neovim version, the server command and its version, the running
--- client, the gateway (whether it listens, and where), the workspace store (.ctx/), and the
--- token estimator of the last meter.

local M = {}

local health = vim.health

--- The command that prints the server's version: the configured cmd with `serve` (and what
--- follows) replaced by `--version`.
---@param cmd string[]
---@return string[]
function M.version_cmd(cmd)
  local out = {}
  for _, arg in ipairs(cmd) do
    if arg == "serve" then
      break
    end
    table.insert(out, arg)
  end
  table.insert(out, "--version")
  return out
end

--- The gateway: asked of the running server (ctx.toml may start it too), said plainly.
---@param running? vim.lsp.Client
function M.check_gateway(running)
  local client = require("ctx_lsp.client")
  local listen = require("ctx_lsp.config").get().gateway.listen
  health.start("ctx_lsp: gateway")
  local status
  if running and running.initialized then
    local resp
    if vim.fn.has("nvim-0.11") == 1 then
      resp = running:request_sync("ctx/gatewayStatus", vim.empty_dict(), 3000, 0)
    else
      resp = running.request_sync("ctx/gatewayStatus", vim.empty_dict(), 3000, 0)
    end
    status = resp and not resp.err and resp.result or nil
    if status then
      client.state.gateway = status
    end
  end
  if status and type(status.listening) == "string" then
    health.ok(
      ("gateway listening on %s%s · active conversation %s · %s"):format(
        status.listening,
        status.review and " (review before send)" or "",
        tostring(status.activeSession),
        status.label ~= "" and status.label or "no request yet"
      )
    )
    health.info(("point your assistant at it: OPENAI_BASE_URL=%s/v1, ANTHROPIC_BASE_URL=%s"):format(status.listening, status.listening))
  elseif listen then
    local indexed = running and client.state.indexed[running.id]
    if running and not indexed then
      health.info(("gateway.listen = %q: it starts once the workspace is indexed"):format(listen))
    else
      health.warn(("gateway.listen = %q, but the server's gateway does not listen"):format(listen), {
        "See the server's warning (:messages, :LspLog): the port may be taken, or the address off loopback without gateway.token",
        "The server starts its gateway once, at start-up: restart Neovim (or the server) after fixing it",
      })
    end
  else
    health.info('gateway off: set gateway = { listen = "127.0.0.1:8787" } in setup() to run it in the server')
  end
end

function M.check()
  local config = require("ctx_lsp.config").get()
  local client = require("ctx_lsp.client")
  local meter = require("ctx_lsp.meter")

  health.start("ctx_lsp: Neovim")
  local v = vim.version()
  local vs = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok(("Neovim %s (vim.lsp.config / vim.lsp.enable)"):format(vs))
  elseif vim.fn.has("nvim-0.10") == 1 then
    health.ok(("Neovim %s (vim.lsp.start on FileType)"):format(vs))
  else
    health.error(("Neovim %s is too old"):format(vs), { "ctx_lsp needs Neovim 0.10 or newer" })
  end

  health.start("ctx_lsp: server")
  local cmd = config.cmd
  if type(cmd) ~= "table" then
    health.info("cmd is a function: not checked")
  else
    local exe = cmd[1]
    if type(exe) == "string" and vim.fn.executable(exe) == 1 then
      health.ok(("server command: %s (%s)"):format(table.concat(cmd, " "), vim.fn.exepath(exe)))
      local vcmd = M.version_cmd(cmd)
      local ok, res = pcall(function()
        return vim.system(vcmd, { text = true }):wait(10000)
      end)
      local out = ""
      if ok and res then
        out = vim.trim(res.stdout or "")
        if out == "" then
          out = vim.trim(res.stderr or "")
        end
      end
      if ok and res and res.code == 0 and out:match("^ctx%-lsp ") then
        health.ok(("version: %s"):format(out))
      else
        health.error(
          ("`%s` failed: %s"):format(table.concat(vcmd, " "), ok and res and (out ~= "" and out or ("exit " .. res.code)) or tostring(res)),
          { "Install the server: pip install ctx-lsp", "or point `cmd` at it in require('ctx_lsp').setup{}" }
        )
      end
    else
      health.error(("server command not found: %q"):format(tostring(exe)), {
        "Install the server: pip install ctx-lsp (it provides the `ctx-lsp` executable)",
        "or set `cmd` in require('ctx_lsp').setup{ cmd = { '/path/to/ctx-lsp', 'serve' } }",
      })
    end
  end

  local running = client.get_client()
  local root
  if running then
    root = client.client_root(running)
    health.ok(
      ("client %d running (%s) on %s"):format(
        running.id,
        running.initialized and "initialized" or "starting",
        root or "(no root)"
      )
    )
    local msg = client.state.index_message[running.id]
    if type(msg) == "string" and msg:find("fail") then
      health.error(msg, { "See :LspLog; the server keeps serving from what it could index" })
    elseif client.state.indexed[running.id] then
      health.ok("workspace indexed" .. (type(msg) == "string" and (": " .. msg) or ""))
    elseif client.state.indexing[running.id] then
      health.info("indexing the workspace…")
    end
  else
    health.info(
      ("no client running: open a %s file of your project"):format(table.concat(config.filetypes, "/"))
    )
    root = client.root_of(vim.api.nvim_get_current_buf()) or vim.fn.getcwd()
  end

  M.check_gateway(running)

  health.start("ctx_lsp: workspace")
  if root then
    local store = vim.fs.joinpath(root, ".ctx")
    if vim.fn.isdirectory(store) == 1 then
      health.ok(("workspace store: %s"):format(store))
    else
      health.warn(
        ("no workspace store yet: %s"):format(store),
        { "The server creates it when it starts on this workspace" }
      )
    end
  end
  local m = client.state.meter
  if m and type(m.estimator) == "table" then
    local est = m.estimator
    if est.exact then
      health.ok(("token counts for %s are exact (%s)"):format(tostring(m.model), tostring(est.encoding)))
    else
      health.ok(
        ("token estimator: %s stands in for %s's tokenizer (calibration ×%s, %s usage report%s)"):format(
          tostring(est.encoding),
          tostring(m.model),
          tostring(est.calibration),
          tostring(est.reports or 0),
          est.reports == 1 and "" or "s"
        )
      )
    end
    health.ok(("budget meter: %s · session %s"):format(meter.text(m), tostring(m.session)))
  else
    health.info("no budget meter yet: run :CtxPlan {query}")
  end
end

return M
