// The language client's lifecycle: resolve the server command, start, restart (serialised, as in
// ruff-vscode), restart on crash with a clear notification, stop.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import * as readline from "node:readline";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
  type Message,
} from "vscode-languageclient";
import {
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { documentSelector } from "../languages";
import { getLog, log } from "./log";
import { pythonInterpreter } from "./python";
import { DEFAULT_COMMAND, getSettings, initializationOptions, type CtxSettings } from "./settings";

export const CLIENT_ID = "ctx"; // the client reads `ctx.trace.server`
export const CLIENT_NAME = "ctx-lsp";

export type ServerState = "starting" | "running" | "stopped" | "failed";

const CRASH_WINDOW_MS = 3 * 60 * 1000;
const MAX_RESTARTS = 4;

export interface ResolvedCommand {
  command: string;
  args: string[];
  source: "setting" | "python extension" | "default";
}

export async function resolveCommand(s: CtxSettings, resource?: vscode.Uri): Promise<ResolvedCommand> {
  if (s.command) return { command: s.command[0], args: s.command.slice(1), source: "setting" };
  if (s.usePythonExtension) {
    const python = await pythonInterpreter(resource);
    if (python) return { command: python, args: ["-m", "ctx_lsp", "serve"], source: "python extension" };
    log.warn("no interpreter from the Python extension; falling back to `ctx-lsp serve`");
  }
  return { command: DEFAULT_COMMAND[0], args: DEFAULT_COMMAND.slice(1), source: "default" };
}

/** Is `command` an existing file, or found on PATH? (A clear message beats `spawn ENOENT`.) */
export function findExecutable(command: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const isFile = (p: string) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes("/") || command.includes("\\")) return isFile(command) ? command : undefined;
  const exts = process.platform === "win32" ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const full = path.join(dir, command + ext);
      if (existsSync(full) && isFile(full)) return full;
    }
  }
  return undefined;
}

/** Restart on crash, at most MAX_RESTARTS times in CRASH_WINDOW_MS, saying so each time. */
class CrashHandler implements ErrorHandler {
  private crashes: number[] = [];
  constructor(
    private readonly manager: ServerManager,
    private readonly describe: () => string,
    /** Is this handler's client still the manager's? A replaced client's close is not a crash. */
    private readonly isCurrent: () => boolean,
  ) {}

  error(_error: Error, _message: Message | undefined, count: number | undefined): ErrorHandlerResult {
    // A write/read error on the pipe: keep going a few times, then shut the connection down.
    return { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true };
  }

  closed(): CloseHandlerResult {
    if (this.manager.stopping || !this.isCurrent()) return { action: CloseAction.DoNotRestart, handled: true };
    if (!this.manager.reachedRunning) {
      // It died while starting: a restart would do the same. Say why, once.
      this.manager.fail(`ctx-lsp exited while starting${this.manager.exitDetail()}.`);
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < CRASH_WINDOW_MS);
    this.crashes.push(now);
    const n = this.crashes.length;
    if (n <= MAX_RESTARTS) {
      // The process's exit status arrives just after the pipe closes: say it a moment later.
      setTimeout(() => {
        const msg = `ctx-lsp stopped unexpectedly${this.manager.exitDetail()}; restarting it (${n} of ${MAX_RESTARTS} in 3 minutes).`;
        log.warn(`${msg} command: ${this.describe()}`);
        void vscode.window.showWarningMessage(msg, "Show Output").then((a) => a && getLog()?.show(true));
      }, 300);
      this.manager.setState("starting");
      return { action: CloseAction.Restart, handled: true };
    }
    const msg =
      `ctx-lsp crashed ${n} times in 3 minutes and was not restarted. ` +
      `Check the output, then run "ctx: Restart Server".`;
    log.error(msg);
    this.manager.setState("failed");
    void vscode.window.showErrorMessage(msg, "Show Output", "Restart Server").then((a) => {
      if (a === "Show Output") getLog()?.show(true);
      if (a === "Restart Server") void vscode.commands.executeCommand("ctx.restartServer");
    });
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  reset(): void {
    this.crashes = [];
  }
}

export interface ClientHooks {
  /** Called with each new client before it starts: register notification handlers here. */
  configure(client: LanguageClient): vscode.Disposable[];
  /** Options merged into the client options (middleware). */
  middleware: LanguageClientOptions["middleware"];
}

export class ServerManager implements vscode.Disposable {
  private _client: LanguageClient | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private restarting: Promise<void> | undefined;
  private queued = false;
  private _state: ServerState = "stopped";
  stopping = false;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly runningEmitter = new vscode.EventEmitter<LanguageClient>();
  /** Fires each time a client reaches Running, including after a crash restart. */
  readonly onDidStart = this.runningEmitter.event;
  lastError: string | undefined;
  commandLine = "";
  /** Did the current client reach Running since it was (re)started? */
  reachedRunning = false;
  private failShown = false;
  private child: ChildProcess | undefined;
  /** How the last server process ended, with its last meaningful stderr line at that moment. */
  private lastExit: { code: number | null; signal: NodeJS.Signals | null; last?: string } | undefined;
  private stderrTail: string[] = [];

  constructor(private readonly hooks: ClientHooks) {}

  get client(): LanguageClient | undefined {
    return this._client && this._client.state === State.Running ? this._client : undefined;
  }

  get state(): ServerState {
    return this._state;
  }

  setState(s: ServerState): void {
    if (s === this._state) return;
    this._state = s;
    this.stateEmitter.fire(s);
  }

  /** Start, or restart with the current settings. A restart asked for during one is queued once. */
  restart(): Promise<void> {
    if (this.restarting) {
      this.queued = true;
      return this.restarting;
    }
    this.restarting = (async () => {
      try {
        do {
          this.queued = false;
          await this.stopClient();
          await this.startClient();
        } while (this.queued);
      } finally {
        this.restarting = undefined;
      }
    })();
    return this.restarting;
  }

  private async startClient(): Promise<void> {
    const settings = getSettings();
    const folder = vscode.workspace.workspaceFolders?.[0];
    const cmd = await resolveCommand(settings, folder?.uri);
    this.commandLine = [cmd.command, ...cmd.args].join(" ");
    this.lastError = undefined;
    this.failShown = false;
    this.reachedRunning = false;
    this.setState("starting");
    const found = findExecutable(cmd.command);
    if (!found) {
      const where = cmd.source === "setting" ? "ctx.server.command" : cmd.source;
      this.fail(
        `Cannot start ctx-lsp: \`${cmd.command}\` was not found (from ${where}). Install the ctx-lsp ` +
          `Python package into an environment on PATH, or set "ctx.server.command" to e.g. ` +
          `["/path/to/python", "-m", "ctx_lsp", "serve"].`,
      );
      return;
    }
    log.info(`starting ctx-lsp: ${this.commandLine} (from ${cmd.source}) in ${folder?.uri.fsPath ?? process.cwd()}`);
    // We spawn the process ourselves (stdio, no extra arguments) to keep its exit status and the
    // last lines of its stderr for the notifications; stderr also goes to the output channel.
    this.lastExit = undefined;
    const serverOptions: ServerOptions = async () => {
      this.stderrTail = [];
      const child = spawn(cmd.command, cmd.args, {
        cwd: folder?.uri.fsPath,
        env: { ...process.env, PYTHONUNBUFFERED: "1" },
        stdio: ["pipe", "pipe", "pipe"],
      });
      this.child = child;
      child.on("error", (err) => {
        this.stderrTail.push(`cannot run ${cmd.command}: ${err.message}`);
        log.error(`cannot run ${this.commandLine}: ${err.message}`);
      });
      child.on("exit", (code, signal) => {
        const last = this.stderrTail.filter((l) => !/^\s*(Traceback|File |\^|~)/.test(l)).at(-1)?.trim();
        this.lastExit = { code, signal, last };
        log.info(`ctx-lsp (pid ${child.pid}) exited${code !== null ? ` with code ${code}` : ""}${signal ? ` on ${signal}` : ""}`);
      });
      return child;
    };
    let client: LanguageClient | undefined = undefined;
    const crash = new CrashHandler(this, () => this.commandLine, () => client !== undefined && this._client === client);
    const clientOptions: LanguageClientOptions = {
      // Files on disk in every language the server indexes (src/languages.ts); not untitled or
      // virtual documents (another language server's, a diff's), which have no workspace path.
      documentSelector: documentSelector(),
      workspaceFolder: folder,
      outputChannel: getLog(),
      traceOutputChannel: getLog(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(settings),
      stdioOptions: {
        stdout: (input, channel) => lines(input, (l) => channel.info(l)),
        // The server logs "ctx-lsp LEVEL message" to stderr: keep the level, and the tail for errors.
        stderr: (input, channel) =>
          lines(input, (l) => {
            this.stderrTail.push(l);
            if (this.stderrTail.length > 20) this.stderrTail.shift();
            const level = /^ctx-lsp (DEBUG|INFO|WARNING|ERROR|CRITICAL)\b/.exec(l)?.[1];
            if (level === "INFO" || level === "DEBUG") channel.info(l);
            else if (level === "WARNING") channel.warn(l);
            else channel.error(l);
          }),
      },
      errorHandler: crash,
      middleware: this.hooks.middleware,
      initializationFailedHandler: (err) => {
        // If the process died, closed() reports it with its exit status; else say what failed.
        setTimeout(() => {
          if (!this.lastExit) this.fail(`ctx-lsp failed to initialize: ${err instanceof Error ? err.message : String(err)}`);
        }, 500);
        return false;
      },
    };
    client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this._client = client;
    this.clientDisposables = this.hooks.configure(client);
    this.clientDisposables.push(
      client.onDidChangeState((e) => {
        log.debug(`client state ${State[e.oldState]} -> ${State[e.newState]}`);
        if (e.newState === State.Running) {
          this.reachedRunning = true;
          this.setState("running");
          this.runningEmitter.fire(client);
        } else if (e.newState === State.Starting) {
          this.setState("starting");
        } else if (e.newState === State.Stopped && this._state === "running" && !this.stopping) {
          this.setState("stopped");
        }
      }),
    );
    try {
      await client.start();
    } catch (err) {
      // Reported by closed() / initializationFailedHandler with more detail; this is the fallback.
      setTimeout(() => this.fail(`Cannot start ctx-lsp (${this.commandLine})${this.exitDetail()}: ${err instanceof Error ? err.message : String(err)}`), 1000);
    }
  }

  /** " (exit code 2: <last stderr line>)" of the server process, when it exited. */
  exitDetail(): string {
    const e = this.lastExit;
    if (!e) return "";
    const how = e.code !== null ? `exit code ${e.code}` : `signal ${e.signal}`;
    // The last stderr line explains an error exit; after a signal it is just the last log line.
    return ` (${how}${e.last && e.code ? `: ${e.last}` : ""})`;
  }

  fail(message: string): void {
    this.lastError = message;
    log.error(message);
    this.setState("failed");
    if (this.failShown) return;
    this.failShown = true;
    void vscode.window.showErrorMessage(message, "Open Settings", "Show Output").then((a) => {
      if (a === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "ctx.server");
      if (a === "Show Output") getLog()?.show(true);
    });
  }

  private async stopClient(): Promise<void> {
    const client = this._client;
    this._client = undefined;
    for (const d of this.clientDisposables.splice(0)) d.dispose();
    if (!client) return;
    this.stopping = true;
    try {
      // A client still starting (at activation, or restarting after a crash) cannot be stopped:
      // let its start finish first (start() returns the one under way), or it fails with
      // "connection got disposed" and leaves its commands registered.
      if (client.state === State.Starting) await started(client, 15000);
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (err) {
      log.warn(`stopping ctx-lsp: ${String(err)}`);
    } finally {
      try {
        await client.dispose(2000);
      } catch {
        /* already gone */
      }
      this.killChild();
      this.stopping = false;
      this.setState("stopped");
    }
  }

  async stop(): Promise<void> {
    await this.stopClient();
  }

  /** The server process we spawned, if it is still alive after the client stopped. */
  private killChild(): void {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) child.kill();
  }

  dispose(): void {
    void this.stopClient();
    this.stateEmitter.dispose();
    this.runningEmitter.dispose();
  }
}

/** Until the start under way of `client` ends (or `ms` passed). */
function started(client: LanguageClient, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    client.start().catch(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}

function lines(input: NodeJS.ReadableStream, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", (l) => {
    if (l.trim()) each(l);
  });
}
