// The words of the gateway the editor's server runs: the status bar item, the conversations
// picker, the sent-request and review documents, the review's outcome, and the `gateway` object
// of the server settings. PURE: no vscode import (unit-tested under node:test). Every number
// comes from the server (its `label`, its counts); this module only formats them (and counts the
// prompt cache down from the server's timestamp: promptCache.ts).
import { groupDigits } from "./meter";
import { cacheText, cacheTooltip, savedTooltip, type CacheFields } from "./promptCache";
import type { GatewayConversation, GatewayPreview, GatewayRequest, GatewayStatus, ReviewRequest, ReviewResolved } from "./protocol.generated";
import { escapeMd, plural } from "./words";

// ---- settings ---------------------------------------------------------------------------------

/** The `ctx.gateway.*` settings the extension contributes, with their JSON types. */
export const GATEWAY_SETTINGS = {
  listen: "string",
  openaiUpstream: "string",
  anthropicUpstream: "string",
  review: "boolean",
  reviewTimeout: "number",
  contextCost: "string",
} as const;
export type GatewaySettingKey = keyof typeof GATEWAY_SETTINGS;

/**
 * The `gateway` object for the server: the user's explicitly set `ctx.gateway.*` values (`read`
 * gives undefined for one left at its default), over a `gateway` object of `ctx.server.settings`.
 * Empty strings and values of the wrong type are left out. Undefined when nothing is set, so the
 * server keeps the `[gateway]` table of the workspace's ctx.toml.
 */
export function gatewaySettings(
  read: (key: GatewaySettingKey) => unknown,
  fromServerSettings?: unknown,
): Record<string, unknown> | undefined {
  const base =
    fromServerSettings && typeof fromServerSettings === "object" && !Array.isArray(fromServerSettings)
      ? { ...(fromServerSettings as Record<string, unknown>) }
      : {};
  let set = Object.keys(base).length > 0;
  for (const [key, type] of Object.entries(GATEWAY_SETTINGS) as [GatewaySettingKey, string][]) {
    let v = read(key);
    if (typeof v !== type) continue;
    if (typeof v === "string") {
      v = v.trim();
      if (!v) continue;
    }
    if (typeof v === "number" && !(v > 0)) continue;
    base[key] = v;
    set = true;
  }
  return set ? base : undefined;
}

// ---- the status bar item ------------------------------------------------------------------------

export type StatusText = Pick<GatewayStatus, "label" | "cache" | "cacheWarmUntil" | "saved">;

/**
 * "ctx ⇄ 12 · 41.2k/180k · 83% cached · cache warm 4:12 · saved $1.20": the server's label of the
 * latest request, the active conversation's prompt cache at `nowMs` (counted down from the
 * server's cacheWarmUntil) and the server's savings words; before the conversation's first
 * request, the label alone.
 */
export function gatewayText(s: StatusText, nowMs: number): string {
  const label = s.label.trim();
  return [label ? `ctx ${label}` : "ctx ⇄", cacheText(s, nowMs), s.saved.trim()].filter(Boolean).join(" · ");
}

/** The Anthropic and OpenAI base URLs of a gateway listening at `url` ("http://127.0.0.1:8787"). */
export function baseUrls(url: string): { openai: string; anthropic: string } {
  const u = url.replace(/\/+$/, "");
  return { openai: `${u}/v1`, anthropic: u };
}

function num(n: number | null | undefined): string {
  return n === null || n === undefined ? "–" : groupDigits(n);
}

/**
 * The tooltip, as Markdown: where it listens, the active conversation's prompt cache at `nowMs`
 * and its savings, the latest request's numbers, review mode.
 */
export function gatewayTooltip(
  status: Pick<GatewayStatus, "listening" | "review" | "requests" | "planned" | "failOpen" | "activeSession" | "saved"> &
    CacheFields,
  latest: GatewayRequest | null | undefined,
  nowMs: number,
  waiting = 0,
): string {
  const lines: string[] = [];
  const url = status.listening ?? "";
  const { openai, anthropic } = baseUrls(url);
  lines.push(`**ctx gateway** listening on \`${url}\``);
  lines.push("");
  lines.push(`OpenAI base URL \`${openai}\` · Anthropic base URL \`${anthropic}\``);
  lines.push("");
  lines.push(
    `${plural(status.requests, "request")} · ${status.planned} planned · ${status.failOpen} sent as the client sent them (fail open)`,
  );
  lines.push("");
  for (const line of [cacheTooltip(status, nowMs), savedTooltip(status.saved)]) if (line) lines.push(line, "");
  if (latest) {
    lines.push(`**Latest request** · \`${latest.session ?? "–"}\` · ${latest.model ?? "–"}`);
    lines.push("");
    lines.push("| | |", "|:--|--:|");
    lines.push(`| estimated input | ${num(latest.estimatedInput)} |`);
    lines.push(`| input (provider) | ${num(latest.inputTokens)} |`);
    lines.push(`| cached input | ${num(latest.cachedInputTokens)} |`);
    lines.push(`| output | ${num(latest.outputTokens)} |`);
    lines.push(`| prompt budget | ${num(latest.promptBudget)} |`);
    lines.push(`| messages sent / from the client | ${latest.sentMessages} / ${latest.clientMessages} |`);
    lines.push(`| dropped · masked · ctx blocks | ${latest.dropped} · ${latest.masked} · ${latest.injected} |`);
    lines.push(`| added | ${latest.addedMs} ms |`);
    lines.push("");
    if (latest.planId) lines.push(`Plan \`${latest.planId}\``, "");
    if (latest.note) lines.push(`_${escapeMd(latest.note)}_`, "");
  } else {
    lines.push("No request yet: point your assistant at the base URL above.", "");
  }
  lines.push(`Active conversation \`${status.activeSession}\``);
  lines.push("");
  lines.push(
    status.review
      ? `Review before send: on${waiting ? ` · **${plural(waiting, "request")} waiting**` : ""}`
      : "Review before send: off",
  );
  lines.push("");
  lines.push("_Click to select the active conversation._");
  return lines.join("\n");
}

// ---- the conversations picker ---------------------------------------------------------------------

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 days ago" (the times are the server's). */
export function ago(then: number, now: number): string {
  const s = Math.max(0, Math.round(now - then));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return plural(Math.floor(s / 86400), "day") + " ago";
}

export interface ConversationPick {
  label: string;
  description: string;
  detail: string;
  session: string;
  active: boolean;
}

/** One row per conversation, in the server's order (newest first); the active one marked. */
export function conversationPicks(list: readonly GatewayConversation[], nowSeconds: number): ConversationPick[] {
  return list.map((c) => ({
    label: `${c.active ? "$(circle-filled)" : "$(circle-outline)"} ${c.title.trim() || c.session}`,
    description: [c.active ? "active" : "", c.model ?? "", plural(c.messages, "message"), plural(c.requests, "request")]
      .filter(Boolean)
      .join(" · "),
    detail: `${c.session} · last activity ${ago(c.lastActivity, nowSeconds)}`,
    session: c.session,
    active: c.active,
  }));
}

// ---- documents --------------------------------------------------------------------------------

/** The latest user message's first line, for titles ("How is stock reserved…"). */
export function requestTitle(preview: Pick<GatewayPreview, "parts" | "session">, max = 60): string {
  const last = [...preview.parts].reverse().find((p) => p.role === "user" && p.kind === "message" && p.text.trim());
  const line = last?.text.trim().split("\n")[0]?.trim() ?? "";
  if (!line) return preview.session;
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function table(p: GatewayPreview): string[] {
  return [
    "| | |",
    "|:--|:--|",
    `| conversation | \`${p.session}\` |`,
    `| plan | ${p.planId ? `\`${p.planId}\`` : "–"} |`,
    `| model | ${escapeMd(p.model)} · ${p.api} API |`,
    `| tokens | ${groupDigits(p.tokens)} in ${plural(p.parts.length, "part")}, ${p.parts.filter((x) => x.injected).length} added by ctx_lsp |`,
  ];
}

/** The sent-request document: what went upstream for the conversation's latest request. */
export function sentMarkdown(p: GatewayPreview): string {
  const out = ["# ctx sent request", "", ...table(p), ""];
  out.push("_The exact body the gateway sent upstream (read-only); refreshes after each request of the conversation._", "");
  out.push(p.text.trimEnd(), "");
  return out.join("\n");
}

export type ReviewState = "waiting" | "replanning" | ReviewResolved["outcome"] | "gone";

/** The words of a review's state, as the banner of its document says them. */
export function reviewBanner(state: ReviewState, timeoutSeconds: number): string {
  switch (state) {
    case "waiting":
      return (
        `**Waiting for you.** The assistant's request is held until you choose **Send**, **Re-plan** ` +
        `(after changing pins) or **Cancel** (editor title or the notification). Without an answer ` +
        `it is sent as planned after ${timeoutSeconds} s.`
      );
    case "replanning":
      return "**Re-planning…** The new plan replaces this document.";
    case "sent":
      return "**Sent.** This is the body the provider received.";
    case "cancelled":
      return "**Cancelled.** The assistant got an error (HTTP 400); nothing was sent.";
    case "timeout":
      return `**Sent after the timeout** (${timeoutSeconds} s without an answer), as planned.`;
    case "gone":
      return "**No longer waiting.** The server restarted or stopped while the request was held.";
  }
}

/** The review document: the banner, then the body about to be sent. */
export function reviewMarkdown(r: ReviewRequest, state: ReviewState): string {
  const out = [`# ctx review before send — ${escapeMd(requestTitle(r.preview))}`, "", reviewBanner(state, r.timeoutSeconds), ""];
  out.push(...table(r.preview), `| review | \`${r.reviewId}\` |`, "");
  out.push(r.preview.text.trimEnd(), "");
  return out.join("\n");
}

/** The message when a review ends. */
export function outcomeMessage(outcome: ReviewResolved["outcome"], title: string): string {
  switch (outcome) {
    case "sent":
      return `ctx: sent — “${title}”.`;
    case "cancelled":
      return `ctx: cancelled — “${title}”: the assistant got an error (HTTP 400).`;
    case "timeout":
      return `ctx: sent after the timeout — “${title}” went as planned.`;
  }
}

/** The review notification's line: "Send, Re-plan or Cancel · sent as planned in 87 s". */
export function countdown(secondsLeft: number): string {
  const s = Math.max(0, Math.ceil(secondsLeft));
  return `Send, Re-plan or Cancel (editor title) · sent as planned in ${s} s`;
}
