// Workspace Trust: what an untrusted workspace may not decide. A cloned repository's
// .vscode/settings.json could otherwise choose the program the extension runs, open the gateway
// to the network, or send the user's conversation and keys to a server of its choosing. In an
// untrusted workspace these settings are read from the user's own settings only (VS Code's
// restrictedConfigurations does the same for the settings listed in package.json; this holds
// also for the keys inside ctx.server.settings, which VS Code cannot see into). No vscode import:
// unit-tested as it is.

/** package.json's capabilities.untrustedWorkspaces.restrictedConfigurations. */
export const RESTRICTED_SETTINGS = [
  "ctx.server.command",
  "ctx.server.usePythonExtension",
  "ctx.server.settings",
  "ctx.gateway.listen",
  "ctx.gateway.openaiUpstream",
  "ctx.gateway.anthropicUpstream",
] as const;

/** Keys of ctx.server.settings that send data off the machine (as the server's NEEDS_TRUST). */
export const TRUST_NEEDING_KEYS = ["llm", "summarizer", "allowEncodingDownload", "allow_encoding_download"];
/** Keys of its gateway object that open a port or choose where requests go. */
export const TRUST_NEEDING_GATEWAY_KEYS = ["listen", "token", "openaiUpstream", "anthropicUpstream", "upstreams"];

/** What `WorkspaceConfiguration.inspect` tells of a setting. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** The value of a setting for a workspace: as VS Code resolves it when trusted; the user's own
 *  (else the default) when not. */
export function trustedValue<T>(i: Inspected<T> | undefined, trusted: boolean, resolved: T): T {
  if (trusted || !i) return resolved;
  return (i.globalValue !== undefined ? i.globalValue : i.defaultValue) as T;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** A workspace's ctx.server.settings without the keys only the user may set. */
export function withoutTrustNeeding(settings: unknown): Record<string, unknown> {
  if (!isObject(settings)) return {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) {
    if (TRUST_NEEDING_KEYS.includes(k)) continue;
    if (k === "gateway" && isObject(v)) {
      const gateway = Object.fromEntries(Object.entries(v).filter(([g]) => !TRUST_NEEDING_GATEWAY_KEYS.includes(g)));
      if (Object.keys(gateway).length) out.gateway = gateway;
      continue;
    }
    out[k] = v;
  }
  return out;
}

/** ctx.server.settings for a workspace: as VS Code resolves it when trusted; when not, the user's
 *  own object with the workspace's (and its folder's) over it, less what they may not set. */
export function serverSettings(i: Inspected<unknown> | undefined, trusted: boolean, resolved: unknown): Record<string, unknown> {
  if (trusted || !i) return isObject(resolved) ? resolved : {};
  const user = isObject(i.globalValue) ? i.globalValue : {};
  const merged: Record<string, unknown> = { ...user };
  for (const layer of [withoutTrustNeeding(i.workspaceValue), withoutTrustNeeding(i.workspaceFolderValue)]) {
    for (const [k, v] of Object.entries(layer)) {
      merged[k] = k === "gateway" && isObject(merged.gateway) && isObject(v) ? { ...merged.gateway, ...v } : v;
    }
  }
  return merged;
}
