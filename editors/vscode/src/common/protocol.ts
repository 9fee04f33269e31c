// Typed access to the ctx/ methods. The types are GENERATED from docs/protocol.schema.json
// (scripts/gen-protocol.mjs -> src/protocol.generated.ts) so a server change that breaks the
// client fails `tsc`. Methods that are not in the schema yet (ctx/compact, ctx/listCapsules,
// ctx/refreshCapsules and their notifications) are typed loosely in PENDING below.
import type { CancellationToken, Disposable } from "vscode-languageclient";
import { ResponseError } from "vscode-languageclient";
import type { LanguageClient } from "vscode-languageclient/node";
import type { CtxProtocol } from "../protocol.generated";

export type Requests = CtxProtocol["requests"];
export type Method = keyof Requests;
export type ParamsOf<M extends Method> = Requests[M]["params"];
export type ResultOf<M extends Method> = Requests[M]["result"];
export type Notifications = CtxProtocol["notifications"];
export type NotificationMethod = keyof Notifications;

/** JSON-RPC error codes the server uses (docs/protocol.schema.json "errors"), plus MethodNotFound. */
export const ErrorCodes = {
  MethodNotFound: -32601,
  InvalidParams: -32602 satisfies CtxProtocol["errors"]["InvalidParams"],
  ContextOverflow: -32001 satisfies CtxProtocol["errors"]["ContextOverflow"],
  NotFound: -32002 satisfies CtxProtocol["errors"]["NotFound"],
  IndexNotReady: -32003,
} as const;

export function request<M extends Method>(
  client: LanguageClient,
  method: M,
  params: ParamsOf<M>,
  token?: CancellationToken,
): Promise<ResultOf<M>> {
  // A trailing undefined would be sent as a positional parameter: pass the token only when given.
  return token ? client.sendRequest<ResultOf<M>>(method, params, token) : client.sendRequest<ResultOf<M>>(method, params);
}

/** A handler for a notification of the schema, typed by it. */
export function onNotification<N extends NotificationMethod>(
  client: LanguageClient,
  method: N,
  handler: (params: Notifications[N]) => void,
): Disposable {
  return client.onNotification(method, handler);
}

// ---- methods being added to the server (not in the schema yet): call them from commands only ----

export interface Capsule {
  path: string;
  module?: string;
  text?: string;
  stale?: boolean;
  staleSince?: number | null;
  confidence?: number;
  source?: string;
  [key: string]: unknown;
}

export interface CompactionResult {
  number?: number;
  session?: string;
  branch?: string;
  summary?: string;
  archivedIds?: string[];
  tokensBefore?: number;
  tokensAfter?: number;
  applied?: boolean;
  note?: string | null;
  summarizer?: string;
  [key: string]: unknown;
}

export interface PendingRequests {
  "ctx/compact": {
    params: { session?: string; strategy?: "summary" | "trim"; dryRun?: boolean; summary?: string };
    result: CompactionResult;
  };
  "ctx/listCapsules": { params: { session?: string }; result: Capsule[] };
  "ctx/refreshCapsules": { params: { paths?: string[] }; result: Capsule[] };
}
export type PendingMethod = keyof PendingRequests;

export function requestPending<M extends PendingMethod>(
  client: LanguageClient,
  method: M,
  params: PendingRequests[M]["params"],
): Promise<PendingRequests[M]["result"]> {
  return client.sendRequest<PendingRequests[M]["result"]>(method, params);
}

export interface CapsulesStale {
  capsules: Capsule[];
  files?: string[];
}

export interface Compacted {
  session?: string;
  compaction?: CompactionResult;
  marker?: string;
}

/** A sentence a person can act on, for a failed request. */
export function describeError(err: unknown, method: string): string {
  if (err instanceof ResponseError) {
    switch (err.code) {
      case ErrorCodes.MethodNotFound:
        return `This ctx-lsp server does not support ${method} yet; update the ctx-lsp package.`;
      case ErrorCodes.ContextOverflow:
        return `Context overflow: ${err.message}`;
      case ErrorCodes.IndexNotReady:
        return `ctx-lsp is still starting: ${err.message}`;
      default:
        return err.message;
    }
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

export function isMethodNotFound(err: unknown): boolean {
  return err instanceof ResponseError && err.code === ErrorCodes.MethodNotFound;
}
