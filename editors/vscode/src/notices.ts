// The words of the server's notifications, as a person reads them (the handlers in
// src/notifications.ts show them). PURE: no vscode import (unit-tested under node:test).
import type { AskRepin, CapsulesStale, CompactionResult, Reflected } from "./protocol.generated";

/**
 * The notification of a ctx/reflected: promotions and demotions are shown (with Undo);
 * renewals and suggestions are only logged (undefined).
 */
export function reflectionNotice(r: Pick<Reflected, "kind" | "item" | "reason">): string | undefined {
  if (r.kind === "promote") return `ctx: ${r.item} is now leased automatically — ${r.reason}`;
  if (r.kind === "demote") return `ctx: the lease on ${r.item} ended — ${r.reason}`;
  return undefined;
}

/** The log line of any reflection: "reflection turn 2 renew shop.x.f: lease renewed …". */
export function reflectionLogLine(r: Pick<Reflected, "kind" | "item" | "reason" | "turn" | "id">): string {
  return `reflection #${r.id} turn ${r.turn} ${r.kind} ${r.item}: ${r.reason}`;
}

/** ctx/askRepin: "ctx: the TTL of 2 pins ran out: a, b. Pin again?" */
export function askRepinMessage(pins: AskRepin["pins"]): string {
  const names = pins.map((x) => x.title).join(", ");
  return `ctx: the TTL of ${pins.length === 1 ? "a pin" : `${pins.length} pins`} ran out: ${names}. Pin again?`;
}

/** The workspace-relative paths of the capsules a ctx/capsulesStale names. */
export function stalePaths(p: Partial<CapsulesStale>): string[] {
  return (p.capsules ?? []).map((c) => c.path).filter((x): x is string => typeof x === "string");
}

/** ctx/capsulesStale: "ctx: 4 capsules are stale (the code changed): a, b, c and 1 more". */
export function staleMessage(paths: readonly string[]): string {
  const shown = paths.slice(0, 3).join(", ") + (paths.length > 3 ? ` and ${paths.length - 3} more` : "");
  return `ctx: ${paths.length === 1 ? "a capsule is" : `${paths.length} capsules are`} stale (the code changed): ${shown}`;
}

/** ctx/compacted: "ctx: the conversation was compacted (6 messages archived, 1200 → 300 tokens)." */
export function compactedMessage(c: Partial<CompactionResult>): string {
  const parts: string[] = [];
  if (c.archivedIds) parts.push(`${c.archivedIds.length} messages archived`);
  if (typeof c.tokensBefore === "number" && typeof c.tokensAfter === "number")
    parts.push(`${c.tokensBefore} → ${c.tokensAfter} tokens`);
  return `ctx: the conversation was compacted${parts.length ? ` (${parts.join(", ")})` : ""}.`;
}
