// One row of the Context view, as plain data: a plan item (label, description, icon, tooltip,
// the flags package.json menus match) or a model's suggestion. The words and numbers are the
// server's; src/treeModel.ts arranges the rows, src/views/contextTree.ts turns them into TreeItems.
// PURE: no vscode import (unit-tested under node:test).
import type { Pin, PlanItem, Range, Reflection, Suggestion } from "./protocol.generated";
import { groupDigits } from "./meter";
import { autoPinLine } from "./reflections";
import { escapeMd, tok } from "./words";

export type Collapse = "none" | "collapsed" | "expanded";

export interface TreeNode {
  /** Stable across refreshes (keeps expansion state). */
  id: string;
  label: string;
  description?: string;
  /** Markdown. */
  tooltip?: string;
  /** A codicon id ("symbol-method") and an optional theme color id. */
  icon?: string;
  iconColor?: string;
  /**
   * Space-separated flags matched by package.json menus: item included|excluded pinnable pinned
   * restorable whatif autopin; suggestion canpin|suggestionpinned.
   */
  contextValue?: string;
  collapse: Collapse;
  children?: TreeNode[];
  /** What the row stands for, for the inline actions. */
  item?: PlanItem;
  planId?: string;
  pinId?: string;
  /** A row of the Suggested group: the model's suggestion. */
  suggestion?: Suggestion;
  /** The promotion that made the row's automatic pin (to undo it). */
  reflectionId?: number;
  /** Clicking the row opens this workspace-relative path at range. */
  open?: { path: string; range: Range | null };
  accessibilityLabel?: string;
}

/** What each reason means, for tooltips (the reasons of docs/protocol.md). */
export const REASONS: Readonly<Record<string, string>> = {
  required: "always included (system prompt, the question)",
  latest_user: "the latest user message: always included",
  pinned: "pinned by you",
  recent: "recent conversation",
  relevant: "retrieved as relevant to the query",
  scaffold: "workspace scaffold (module tree)",
  summary: "summary of older conversation",
  budget: "did not fit the section's token budget",
  ttl_expired: "its pin's TTL ran out",
  policy: "left out by its pin's policy",
  duplicate: "already covered by another item",
  stale: "the code changed since it was summarised",
  mode_off: "retrieval mode is off",
  archived: "archived by a compaction",
  cost: "not paid for yet: the gateway adds context from what it saved this conversation",
};

export function sectionTitle(name: string): string {
  switch (name) {
    case "system":
      return "System";
    case "conversation":
      return "Conversation";
    case "rag":
      return "Retrieved code";
    default:
      return name;
  }
}

/** A ledger entry is typed loosely by the schema ({}[]): keep what has the shape of a plan item. */
export function asPlanItem(x: unknown): PlanItem | undefined {
  if (typeof x !== "object" || x === null) return undefined;
  const o = x as Record<string, unknown>;
  if (typeof o.id !== "string" || typeof o.title !== "string" || typeof o.tokens !== "number") return undefined;
  if (typeof o.reason !== "string" || typeof o.section !== "string") return undefined;
  return {
    id: o.id,
    section: o.section as PlanItem["section"],
    kind: typeof o.kind === "string" ? o.kind : "item",
    title: o.title,
    path: typeof o.path === "string" ? o.path : null,
    range: isRange(o.range) ? o.range : null,
    symbol: typeof o.symbol === "string" ? o.symbol : null,
    tokens: o.tokens,
    priority: typeof o.priority === "number" ? o.priority : 0,
    score: typeof o.score === "number" ? o.score : null,
    reason: o.reason,
    detail: typeof o.detail === "string" ? o.detail : null,
    pinId: typeof o.pinId === "string" ? o.pinId : null,
    atomId: typeof o.atomId === "string" ? o.atomId : null,
  };
}

function isRange(x: unknown): x is Range {
  const r = x as Range | null | undefined;
  return (
    !!r && typeof r === "object" && typeof r.start?.line === "number" && typeof r.end?.line === "number"
  );
}

// The first word of a code item's title: its kind as the language's users say it (the server's
// ``kind_label``), to a codicon.
const SYMBOL_ICONS: Record<string, string> = {
  class: "symbol-class",
  struct: "symbol-struct",
  union: "symbol-struct",
  record: "symbol-struct",
  enum: "symbol-enum",
  interface: "symbol-interface",
  trait: "symbol-interface",
  annotation: "symbol-interface",
  impl: "symbol-class",
  type: "symbol-type-parameter",
  method: "symbol-method",
  function: "symbol-function",
  variable: "symbol-variable",
  module: "symbol-namespace",
  namespace: "symbol-namespace",
};

export function iconOf(item: PlanItem): string {
  if (item.pinId || item.reason === "pinned") return "pinned";
  const first = item.title.split(" ", 1)[0];
  switch (item.kind) {
    case "symbol_card":
    case "symbol_body":
      return SYMBOL_ICONS[first] ?? "symbol-misc";
    case "system_prompt":
      return "gear";
    case "scaffold":
      return "list-tree";
    case "focus_hint":
      return "eye";
    case "capsule":
      return "package";
    case "message":
      return "comment";
    case "tool_episode":
      return "tools";
    case "compaction_summary":
    case "history_chunk":
      return "fold";
    case "note":
      return "note";
    default:
      return "circle-small";
  }
}

/**
 * The module a workspace-relative path defines, where the path alone says it: Python's dotted
 * import path ("shop/billing/__init__.py" -> "shop.billing"), TypeScript's and JavaScript's path
 * without its extension ("web/src/api/client.ts" -> "web/src/api/client", whose definitions are
 * "web/src/api/client.ApiClient.balance"). Other languages name modules by crate or package.
 */
export function moduleOf(path: string): string | undefined {
  const js = /^(.+)\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/.exec(path);
  if (js) return js[1];
  if (!path.endsWith(".py")) return undefined;
  const parts = path.slice(0, -3).split("/");
  if (parts[parts.length - 1] === "__init__") parts.pop();
  return parts.join(".") || undefined;
}

/**
 * The name inside its module of a symbol whose module the path only hints at: Rust's
 * `crate::module::Ledger::transfer` in `src/module.rs` (or `src/lib.rs`, `src/module/mod.rs`),
 * Go's and Java's `package.Type.method` in a folder ending with the package (`com/shop/`).
 */
function localName(symbol: string, path: string): string | undefined {
  const m = /^(?:(.*)\/)?([^/]+)\.(rs|go|java)$/.exec(path);
  if (!m) return undefined;
  const dirs = m[1] ? m[1].split("/") : [];
  if (m[3] === "rs") {
    const parts = symbol.split("::");
    const stem = m[2] === "mod" ? dirs.at(-1) : m[2];
    const at = stem === "lib" || stem === "main" ? 0 : parts.indexOf(stem?.replace(/-/g, "_") ?? "");
    return at >= 0 && at < parts.length - 1 ? parts.slice(at + 1).join("::") : undefined;
  }
  for (let k = dirs.length; k > 0; k--) {
    const pkg = dirs.slice(-k).join(".");
    if (symbol.startsWith(`${pkg}.`) && symbol.length > pkg.length + 1) return symbol.slice(pkg.length + 1);
  }
  return undefined;
}

/**
 * The row's label: a symbol's name inside its module ("Invoice.total", "tax_for (body)",
 * "Ledger::transfer (body)"); other items keep the server's title. The full title is in the
 * tooltip and the accessibility label.
 */
export function shortTitle(item: Pick<PlanItem, "title" | "symbol" | "path" | "kind">): string {
  if (!item.symbol || !item.path || (item.kind !== "symbol_card" && item.kind !== "symbol_body")) return item.title;
  const mod = moduleOf(item.path);
  const local = mod ? (item.symbol.startsWith(`${mod}.`) ? item.symbol.slice(mod.length + 1) : undefined) : localName(item.symbol, item.path);
  if (!local) return item.title;
  const suffix = /\s\((\w+)\)$/.exec(item.title);
  return suffix ? `${local} (${suffix[1]})` : local;
}

/** "shop/billing/invoice.py:46-49" (1-based lines, for people). */
export function location(item: Pick<PlanItem, "path" | "range">): string | undefined {
  if (!item.path) return undefined;
  if (!item.range) return item.path;
  const a = item.range.start.line + 1;
  const b = item.range.end.line + 1;
  return a === b ? `${item.path}:${a}` : `${item.path}:${a}-${b}`;
}

export function itemTooltip(item: PlanItem, included: boolean, stale: boolean): string {
  const lines = [`**${escapeMd(item.title)}**`, ""];
  const meaning = REASONS[item.reason];
  lines.push(`${included ? "Included" : "Excluded"} · \`${item.reason}\`${meaning ? ` — ${meaning}` : ""}`);
  if (item.detail) lines.push("", escapeMd(item.detail));
  if (stale) lines.push("", "$(warning) stale capsule: the code changed since it was made");
  lines.push("", "| | |", "|:--|:--|");
  lines.push(`| tokens | ${groupDigits(item.tokens)} |`);
  lines.push(`| section | ${sectionTitle(item.section)} |`);
  lines.push(`| kind | ${item.kind} |`);
  if (item.score !== null && item.score !== undefined) lines.push(`| score | ${item.score.toFixed(2)} |`);
  if (item.priority) lines.push(`| priority | ${item.priority} |`);
  const where = location(item);
  if (where) lines.push(`| where | \`${where}\` |`);
  if (item.symbol) lines.push(`| symbol | \`${item.symbol}\` |`);
  if (item.pinId) lines.push(`| pin | \`${item.pinId}\` |`);
  if (item.atomId) lines.push(`| atom | \`${item.atomId}\` |`);
  lines.push(`| id | \`${item.id}\` |`);
  return lines.join("\n");
}

export interface ItemContext {
  included: boolean;
  planId?: string;
  pinsBySymbol: ReadonlyMap<string, Pin>;
  pinsById: ReadonlyMap<string, Pin>;
  promotions: ReadonlyMap<string, Reflection>;
  stalePaths: ReadonlySet<string>;
  idPrefix: string;
}

export function itemNode(item: PlanItem, ctx: ItemContext): TreeNode {
  const pinId = item.pinId ?? (item.symbol ? ctx.pinsBySymbol.get(item.symbol)?.id : undefined) ?? undefined;
  const pin = pinId ? ctx.pinsById.get(pinId) : undefined;
  const auto = pin?.createdBy === "auto";
  const promotion = auto && pinId ? ctx.promotions.get(pinId) : undefined;
  const stale = item.kind === "capsule" && !!item.path && ctx.stalePaths.has(item.path);
  const flags = ["item", ctx.included ? "included" : "excluded"];
  if (pinId) flags.push("pinned");
  else if (item.symbol) {
    flags.push(ctx.included ? "pinnable" : "restorable");
    flags.push("whatif");
  }
  if (auto) flags.push("autopin");
  if (stale) flags.push("stale");
  const description = `${tok(item.tokens)} · ${item.reason}${auto ? " · auto" : ""}${stale ? " · stale" : ""}`;
  let tooltip = itemTooltip(item, ctx.included, stale);
  if (auto) {
    const ttl = pin?.ttlRemaining !== null && pin?.ttlRemaining !== undefined ? ` (ttl ${pin.ttlRemaining})` : "";
    tooltip = tooltip.replace("\n\n", `\n\n$(sparkle) ${escapeMd(autoPinLine(promotion?.reason))}${ttl}\n\n`);
  }
  return {
    id: `${ctx.idPrefix}/${item.id}`,
    label: shortTitle(item),
    description,
    tooltip,
    icon: stale ? "warning" : auto ? "sparkle" : iconOf(item),
    iconColor: stale ? "list.warningForeground" : ctx.included ? undefined : "disabledForeground",
    contextValue: flags.join(" "),
    collapse: "none",
    item,
    planId: ctx.planId,
    pinId,
    reflectionId: promotion?.id,
    open: item.path ? { path: item.path, range: item.range } : undefined,
    accessibilityLabel:
      `${item.title}, ${item.tokens} tokens, ${ctx.included ? "included" : "excluded"}: ${item.reason}` +
      `${auto ? ", leased automatically" : ""}${stale ? ", stale" : ""}`,
  };
}

/** A row of the Suggested group: muted (the description and a disabled-colour icon), never pinned by itself. */
export function suggestionNode(s: Suggestion, pinned: boolean): TreeNode {
  return {
    id: `suggested/${s.item}`,
    label: s.item,
    description: pinned ? `pinned · ${s.reason}` : s.reason,
    tooltip:
      `**${escapeMd(s.item)}**\n\nSuggested by the model (a \`ctx-suggest\` block) in turn ${s.turn}: ` +
      `${escapeMd(s.reason)}.\n\n` +
      (pinned
        ? "You have pinned it."
        : "Not pinned: nothing is pinned without you. Pin it to keep it in the next plans, or dismiss it."),
    icon: "lightbulb",
    iconColor: "disabledForeground",
    contextValue: `suggestion ${pinned ? "suggestionpinned" : "canpin"}`,
    collapse: "none",
    suggestion: s,
    accessibilityLabel: `suggested: ${s.item}, ${s.reason}${pinned ? ", pinned" : ""}`,
  };
}

