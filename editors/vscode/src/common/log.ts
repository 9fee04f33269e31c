// One log output channel for the client and the server (its stderr and, with ctx.trace.server,
// the trace). A facade so modules log without holding the channel.
import * as vscode from "vscode";

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
  channel = vscode.window.createOutputChannel("ctx-lsp", { log: true });
  return channel;
}

export function getLog(): vscode.LogOutputChannel | undefined {
  return channel;
}

export const log = {
  info: (msg: string) => channel?.info(msg),
  warn: (msg: string) => channel?.warn(msg),
  error: (msg: string | Error) => channel?.error(msg),
  debug: (msg: string) => channel?.debug(msg),
};
