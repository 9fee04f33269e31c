// The provider's prompt cache of the active conversation, and what the conversation saved, as the
// gateway's status bar item says them. PURE: no vscode import (unit-tested under node:test).
// The server gives when the cache goes cold (cacheWarmUntil, epoch ms), its words for the price
// of a cache read and for the savings; this module only counts down from the timestamp, so the
// item says "cache cold" at the right second without asking the server.
import type { GatewayStatus } from "./protocol.generated";

export type CacheFields = Pick<GatewayStatus, "cache" | "cacheWarmUntil" | "cacheTtlSeconds" | "cacheReadPrice">;

/** warm (this long left), cold, or unknown (no request of the conversation since the server started). */
export type CacheState = { kind: "warm"; leftMs: number } | { kind: "cold" } | { kind: "unknown" };

export function cacheState(s: Pick<GatewayStatus, "cache" | "cacheWarmUntil">, nowMs: number): CacheState {
  if (typeof s.cacheWarmUntil === "number" && s.cacheWarmUntil > nowMs) return { kind: "warm", leftMs: s.cacheWarmUntil - nowMs };
  // The server knew the conversation's cache (warm then, or cold already): past its time it is cold.
  return s.cache ? { kind: "cold" } : { kind: "unknown" };
}

/** Whole seconds left, rounded up: the countdown shows 0:01 in its last second, then "cold". */
function secondsLeft(leftMs: number): number {
  return Math.max(0, Math.ceil(leftMs / 1000));
}

/** 252 300 ms → "4:13" (m:ss). */
export function clock(leftMs: number): string {
  const s = secondsLeft(leftMs);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** 252 300 ms → "4 min 13 s"; 40 000 → "40 s"; 120 000 → "2 min". */
export function duration(leftMs: number): string {
  const s = secondsLeft(leftMs);
  const m = Math.floor(s / 60);
  const r = s % 60;
  if (!m) return `${r} s`;
  return r ? `${m} min ${r} s` : `${m} min`;
}

/** The status bar's piece: "cache warm 4:12", "cache cold", or "" (unknown). */
export function cacheText(s: Pick<GatewayStatus, "cache" | "cacheWarmUntil">, nowMs: number): string {
  const st = cacheState(s, nowMs);
  switch (st.kind) {
    case "warm":
      return `cache warm ${clock(st.leftMs)}`;
    case "cold":
      return "cache cold";
    case "unknown":
      return "";
  }
}

/** The tooltip's sentence on the cache ("" when unknown). */
export function cacheTooltip(s: CacheFields, nowMs: number): string {
  const st = cacheState(s, nowMs);
  const ttl = `${Math.round(s.cacheTtlSeconds / 60)}-minute TTL`;
  const price = s.cacheReadPrice ? `at ${s.cacheReadPrice}` : "at the provider's lower price for cached input";
  switch (st.kind) {
    case "warm":
      return (
        `The provider's prompt cache for this conversation: **warm** for ${duration(st.leftMs)} more (${ttl}) — ` +
        `the next request reads the repeated prefix ${price}.`
      );
    case "cold":
      return (
        `The provider's prompt cache for this conversation: **cold** (no request within its ${ttl}) — ` +
        `the next request pays the full input price for its whole prompt, and warms the cache again.`
      );
    case "unknown":
      return "";
  }
}

/** The tooltip's sentence on the savings ("" for a model without prices). */
export function savedTooltip(saved: string): string {
  if (!saved) return "";
  return `**${saved}** in this conversation so far: its requests at the provider's prices, cache-weighted against sending the same requests direct.`;
}

/**
 * When the countdown's text changes next (ms from now), aligned on its seconds; undefined when
 * nothing will change (not warm). The extra milliseconds keep a timer from landing just before.
 */
export function nextTickMs(s: Pick<GatewayStatus, "cache" | "cacheWarmUntil">, nowMs: number): number | undefined {
  const st = cacheState(s, nowMs);
  if (st.kind !== "warm") return undefined;
  return (st.leftMs % 1000 || 1000) + 5;
}
