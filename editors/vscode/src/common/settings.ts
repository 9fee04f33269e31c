// Typed settings read from the `ctx.*` configuration.
import * as vscode from "vscode";
import { gatewaySettings, type GatewaySettingKey } from "../gatewayModel";
import { serverSettings, trustedValue } from "../trust";
import type { RenderPromptParams, SetModeParams } from "../protocol.generated";

export type Mode = SetModeParams["mode"];
export type PreviewFormat = NonNullable<RenderPromptParams["format"]>;

export const DEFAULT_COMMAND = ["ctx-lsp", "serve"];

export interface CtxSettings {
  /** The user's ctx.server.command, or undefined when left at its default. */
  command: string[] | undefined;
  usePythonExtension: boolean;
  serverSettings: Record<string, unknown>;
  model: string;
  mode: Mode | "";
  session: string;
  ragBudget: number | null;
  previewFormat: PreviewFormat;
  /** The server's `gateway` settings (the explicitly set ctx.gateway.*), or undefined. */
  gateway: Record<string, unknown> | undefined;
}

/** Split a command string on whitespace; double or single quotes group ("C:/Program Files/x"). */
export function splitCommand(s: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of s.matchAll(re)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

export function parseCommand(value: unknown): string[] | undefined {
  if (typeof value === "string") {
    const parts = splitCommand(value.trim());
    return parts.length ? parts : undefined;
  }
  if (Array.isArray(value)) {
    const parts = value.filter((v): v is string => typeof v === "string" && v.length > 0);
    return parts.length ? parts : undefined;
  }
  return undefined;
}

function isSet<T>(i: { globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined): boolean {
  return !!i && (i.globalValue !== undefined || i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
}

export function getSettings(scope?: vscode.ConfigurationScope): CtxSettings {
  const c = vscode.workspace.getConfiguration("ctx", scope);
  // an untrusted workspace does not choose the program run, nor where data goes (src/trust.ts)
  const trusted = vscode.workspace.isTrusted;
  const user = <T>(key: string, fallback: T): T => trustedValue(c.inspect<T>(key), trusted, c.get<T>(key, fallback)) ?? fallback;
  const userSet = (key: string): boolean => {
    const i = c.inspect(key);
    return trusted ? isSet(i) : i?.globalValue !== undefined;
  };
  const mode = c.get<string>("mode", "");
  const fmt = c.get<string>("preview.format", "text");
  const rag = c.get<number | null>("ragBudget", null);
  const server = serverSettings(c.inspect("server.settings"), trusted, c.get("server.settings", {}));
  const restricted = new Set(["listen", "openaiUpstream", "anthropicUpstream"]);
  return {
    command: userSet("server.command") ? parseCommand(user<unknown>("server.command", undefined)) : undefined,
    usePythonExtension: user<boolean>("server.usePythonExtension", false),
    serverSettings: server && typeof server === "object" && !Array.isArray(server) ? server : {},
    model: c.get<string>("model", "").trim(),
    mode: mode === "off" || mode === "light" || mode === "heavy" ? mode : "",
    session: c.get<string>("session", "").trim(),
    ragBudget: typeof rag === "number" && rag >= 0 ? Math.floor(rag) : null,
    previewFormat: fmt === "openai" || fmt === "anthropic" ? fmt : "text",
    gateway: gatewaySettings((key: GatewaySettingKey) => {
      const name = `gateway.${key}`;
      if (!restricted.has(key)) return isSet(c.inspect(name)) ? c.get(name) : undefined;
      return userSet(name) ? user<unknown>(name, undefined) : undefined;
    }, server?.gateway),
  };
}

/** initializationOptions for the server: {session?, settings}. */
export function initializationOptions(s: CtxSettings): { session?: string; settings: Record<string, unknown> } {
  const settings: Record<string, unknown> = { ...s.serverSettings };
  if (s.model) settings.model = s.model;
  if (s.mode) settings.mode = s.mode;
  if (s.gateway) settings.gateway = s.gateway;
  return s.session ? { session: s.session, settings } : { settings };
}

/** ctx.gateway.* changed: the gateway starts with the server only, so a restart is offered. */
export function gatewayChanged(e: vscode.ConfigurationChangeEvent): boolean {
  return e.affectsConfiguration("ctx.gateway");
}

/** Changes that need a server restart (they go into the command or initializationOptions). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
  return ["ctx.server", "ctx.model", "ctx.session"].some((k) => e.affectsConfiguration(k));
}
