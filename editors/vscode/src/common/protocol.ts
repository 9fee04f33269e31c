// Typed access to the ctx/ methods. The types are GENERATED from docs/protocol.schema.json
// (scripts/gen-protocol.mjs -> src/protocol.generated.ts) so a server change that breaks the
// client fails `tsc`; no wire shape is written by hand here.
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
  NotInitialized: -32003 satisfies CtxProtocol["errors"]["NotInitialized"],
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

/** A sentence a person can act on, for a failed request. */
export function describeError(err: unknown, method: string): string {
  if (err instanceof ResponseError) {
    switch (err.code) {
      case ErrorCodes.MethodNotFound:
        return `This ctx-lsp server does not support ${method} yet; update the ctx-lsp package.`;
      case ErrorCodes.ContextOverflow:
        return `Context overflow: ${err.message}`;
      case ErrorCodes.NotInitialized:
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
