// The Context view's tree, as plain data built from the server's plan, dropped ledger, pins and
// reflections (the model's suggestions, automatic pins and why the server made them).
// PURE: no vscode import (unit-tested under node:test); src/views/contextTree.ts turns nodes into
// TreeItems. Every number and reason comes from the server: this module only arranges them.
import type { ContextPlan, LedgerTurn, Pin, PlanItem, Range, Reflected, Reflection, Suggestion } from "./protocol.generated";
import { formatTokens, groupDigits } from "./meter";

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

export interface TreeInput {
  plan?: ContextPlan;
  /** The question the plan answers (the client's last query, or the ledger's). */
  query?: string;
  ledger?: LedgerTurn[];
  pins?: Pin[];
  /** Workspace-relative paths of stale capsules (from ctx/capsulesStale). */
  stalePaths?: ReadonlySet<string>;
  /** ctx/listSuggestions: the open ones are listed under "Suggested". */
  suggestions?: Suggestion[];
  /** ctx/listReflections (and ctx/reflected): why automatic pins were made. */
  reflections?: Reflection[];
}

/** What each reason means, for tooltips (DESIGN.md §5). */
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
};

const SECTION_ORDER = ["system", "conversation", "rag"];

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

function tok(n: number): string {
  return `${groupDigits(n)} tok`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function sum(items: readonly PlanItem[]): number {
  return items.reduce((a, i) => a + i.tokens, 0);
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

export function iconOf(item: PlanItem): string {
  if (item.pinId || item.reason === "pinned") return "pinned";
  const first = item.title.split(" ", 1)[0];
  switch (item.kind) {
    case "symbol_card":
    case "symbol_body":
      return (
        { class: "symbol-class", method: "symbol-method", function: "symbol-function", module: "symbol-namespace" }[
          first
        ] ?? "symbol-misc"
      );
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

/** The module a workspace-relative path defines: "shop/billing/__init__.py" -> "shop.billing". */
export function moduleOf(path: string): string | undefined {
  if (!path.endsWith(".py")) return undefined;
  const parts = path.slice(0, -3).split("/");
  if (parts[parts.length - 1] === "__init__") parts.pop();
  return parts.join(".") || undefined;
}

/**
 * The row's label: a symbol's name inside its module ("Invoice.total", "tax_for (body)"); other
 * items keep the server's title. The full title is in the tooltip and the accessibility label.
 */
export function shortTitle(item: Pick<PlanItem, "title" | "symbol" | "path" | "kind">): string {
  if (!item.symbol || !item.path || (item.kind !== "symbol_card" && item.kind !== "symbol_body")) return item.title;
  const mod = moduleOf(item.path);
  if (!mod || !item.symbol.startsWith(`${mod}.`)) return item.title;
  const local = item.symbol.slice(mod.length + 1);
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

function escapeMd(s: string): string {
  return s.replace(/([\\`*_{}[\]<>|])/g, "\\$1");
}

// ---- reflection: automatic pins, suggestions, notifications ---------------------------------

/** The promotion behind each automatic pin: the latest one not undone, by pin id. */
export function promotionsByPin(reflections: readonly Reflection[] | undefined): Map<string, Reflection> {
  const out = new Map<string, Reflection>();
  for (const r of reflections ?? []) {
    if (r.kind !== "promote" || !r.pinId || r.undone) continue;
    const known = out.get(r.pinId);
    if (!known || r.id > known.id) out.set(r.pinId, r);
  }
  return out;
}

/** The open suggestion reflection of an item (undoing it dismisses the suggestion). */
export function suggestionReflection(reflections: readonly Reflection[] | undefined, item: string): Reflection | undefined {
  let best: Reflection | undefined;
  for (const r of reflections ?? []) if (r.kind === "suggest" && r.item === item && !r.undone && (!best || r.id > best.id)) best = r;
  return best;
}

/** Promotions and demotions not undone, newest first (what "Undo…" offers). */
export function undoable(reflections: readonly Reflection[] | undefined): Reflection[] {
  return (reflections ?? []).filter((r) => (r.kind === "promote" || r.kind === "demote") && !r.undone).sort((a, b) => b.id - a.id);
}

/** Keep a reflection list current with one more (a ctx/reflected, an undo's answer). */
export function mergeReflection(list: readonly Reflection[], r: Reflected | Reflection): Reflection[] {
  const entry: Reflection = {
    id: r.id,
    turn: r.turn,
    kind: r.kind as Reflection["kind"],
    item: r.item,
    pinId: r.pinId,
    reason: r.reason,
    undone: "undone" in r ? r.undone : false,
  };
  const out = list.filter((x) => x.id !== r.id);
  out.push(entry);
  return out.sort((a, b) => a.id - b.id);
}

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

/** "leased automatically: <reason>" (the pin's tooltip and hover line). */
export function autoPinLine(reason: string | undefined): string {
  return `leased automatically: ${reason ?? "by the server (the reason is in ctx: Undo an Automatic Pin Change…)"}`;
}

/** The gutter hover of a pin (Markdown); an automatic pin says why the server made it. */
export function pinHover(pin: Pin, autoReason?: string): string {
  const ttl = pin.ttlRemaining === null || pin.ttlRemaining === undefined ? "no ttl" : `ttl ${pin.ttlRemaining}`;
  const tokens = pin.tokens !== null && pin.tokens !== undefined ? ` · ${formatTokens(pin.tokens)} tok` : "";
  const facts = `${pin.kind} · ${ttl}${tokens} · \`${pin.id}\``;
  if (pin.createdBy === "auto") {
    return `📎 **Pinned automatically**: ${escapeMd(pin.title)}\n\n${escapeMd(autoPinLine(autoReason))}\n\n${facts}${
      pin.leaseScope === "task" ? " · ends with the task" : ""
    }`;
  }
  return `📌 **Pinned to context**: ${escapeMd(pin.title)}\n\n${facts}`;
}

interface ItemContext {
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

function bySection(items: readonly PlanItem[]): Map<string, PlanItem[]> {
  const groups = new Map<string, PlanItem[]>();
  for (const item of items) {
    const list = groups.get(item.section);
    if (list) list.push(item);
    else groups.set(item.section, [item]);
  }
  const order = (s: string) => (SECTION_ORDER.indexOf(s) + SECTION_ORDER.length + 1) % (SECTION_ORDER.length + 1);
  return new Map([...groups].sort((a, b) => order(a[0]) - order(b[0])));
}

function sectionNodes(items: readonly PlanItem[], plan: ContextPlan, included: boolean, ctx: ItemContext): TreeNode[] {
  const out: TreeNode[] = [];
  for (const [name, list] of bySection(items)) {
    const usage = plan.sections.find((s) => s.name === name);
    const tokens = sum(list);
    const description = included && usage
      ? `${groupDigits(usage.used)} / ${groupDigits(usage.budget)} tok · ${plural(list.length, "item")}`
      : `${tok(tokens)} · ${plural(list.length, "item")}`;
    const id = `${ctx.idPrefix}/${name}`;
    out.push({
      id,
      label: sectionTitle(name),
      description,
      tooltip: usage
        ? `**${sectionTitle(name)}**: ${groupDigits(usage.used)} of ${groupDigits(usage.budget)} tokens used by ` +
          `${plural(usage.count, "item")}; ${plural(usage.excluded ?? 0, "item")} excluded.`
        : undefined,
      icon: "folder",
      contextValue: "section",
      collapse: "expanded",
      children: list.map((i) => itemNode(i, { ...ctx, idPrefix: id })),
    });
  }
  return out;
}

function suggestedGroup(suggestions: readonly Suggestion[] | undefined, pinsBySymbol: ReadonlyMap<string, Pin>): TreeNode | undefined {
  const open = (suggestions ?? []).filter((s) => s.status === "open");
  if (!open.length) return undefined;
  return {
    id: "suggested",
    label: "Suggested",
    description: `${plural(open.length, "item")} · by the model · not pinned`,
    tooltip:
      "What the model named as foundational in `ctx-suggest` blocks of its replies. " +
      "Nothing here is pinned until you pin it; dismiss what you do not want.",
    icon: "lightbulb",
    iconColor: "disabledForeground",
    contextValue: "suggested",
    collapse: "expanded",
    accessibilityLabel: `Suggested: ${plural(open.length, "item")} the model named, not pinned`,
    children: open.map((s) => suggestionNode(s, pinsBySymbol.has(s.item))),
  };
}

export function buildTree(input: TreeInput): TreeNode[] {
  const plan = input.plan;
  const pinsBySymbol = new Map<string, Pin>();
  const pinsById = new Map<string, Pin>();
  for (const p of input.pins ?? []) {
    pinsById.set(p.id, p);
    if (p.symbol && p.status === "active") pinsBySymbol.set(p.symbol, p);
  }
  const promotions = promotionsByPin(input.reflections);
  const stalePaths = input.stalePaths ?? new Set<string>();
  const roots: TreeNode[] = [];
  if (plan) {
    const notes = plan.notes ?? [];
    const task = plan.clusterId ? ` · task ${plan.clusterId}` : "";
    const tooltip = [
      `**Plan \`${plan.planId}\`**`,
      "",
      input.query ? `Query: ${escapeMd(input.query)}` : "",
      "",
      plan.clusterId ? `Task \`${plan.clusterId}\`: the cluster of similar questions this one belongs to` : "",
      "",
      `${plan.model} · mode ${plan.mode} · context ${groupDigits(plan.contextLength)} − completion ` +
        `${groupDigits(plan.maxCompletionTokens)} − safety ${groupDigits(plan.safetyBuffer)} = ` +
        `prompt budget ${groupDigits(plan.promptBudget)}`,
      "",
      `${groupDigits(plan.totals.tokens)} tokens in ${plural(plan.totals.items, "item")} ` +
        `(framing ${groupDigits(plan.totals.framing)}); ${plural(plan.totals.excluded, "item")} excluded`,
      ...notes.flatMap((n) => ["", `- ${escapeMd(n)}`]),
    ].join("\n");
    roots.push({
      id: "plan",
      label: input.query ? `“${input.query}”` : plan.planId,
      description: `${tok(plan.totals.tokens)} of ${groupDigits(plan.promptBudget)} · ${plan.model} · ${plan.mode}${task}`,
      tooltip,
      icon: "dashboard",
      contextValue: "plan",
      collapse: "none",
      accessibilityLabel: `plan ${plan.planId}: ${plan.totals.tokens} of ${plan.promptBudget} tokens${task ? `, task ${plan.clusterId}` : ""}`,
    });
    const base = { planId: plan.planId, pinsBySymbol, pinsById, promotions, stalePaths };
    const inc = sectionNodes(plan.included, plan, true, { ...base, included: true, idPrefix: "included" });
    roots.push({
      id: "included",
      label: "Included",
      description: `${plural(plan.included.length, "item")} · ${tok(sum(plan.included))}`,
      icon: "pass",
      iconColor: "testing.iconPassed",
      contextValue: "group",
      accessibilityLabel: `Included: ${plural(plan.included.length, "item")}, ${sum(plan.included)} tokens`,
      collapse: "expanded",
      children: inc,
    });
    const suggested = suggestedGroup(input.suggestions, pinsBySymbol);
    if (suggested) roots.push(suggested); // before Excluded (long): what the model would add
    const exc = sectionNodes(plan.excluded, plan, false, { ...base, included: false, idPrefix: "excluded" });
    roots.push({
      id: "excluded",
      label: "Excluded",
      description: `${plural(plan.excluded.length, "item")} · ${tok(sum(plan.excluded))}`,
      icon: "circle-slash",
      contextValue: "group",
      accessibilityLabel: `Excluded: ${plural(plan.excluded.length, "item")}, ${sum(plan.excluded)} tokens`,
      collapse: "expanded",
      children: exc.length
        ? exc
        : [{ id: "excluded/none", label: "nothing excluded: everything fitted", collapse: "none", icon: "check" }],
    });
  }
  if (!plan) {
    const suggested = suggestedGroup(input.suggestions, pinsBySymbol);
    if (suggested) roots.push(suggested);
  }
  const turns = input.ledger ?? [];
  if (turns.length) {
    const children = turns.map((t): TreeNode => {
      const items = t.excluded.map(asPlanItem).filter((x): x is PlanItem => !!x);
      const id = `ledger/${t.planId}`;
      return {
        id,
        label: `turn ${t.turn}: ${t.query}`,
        description: `${plural(items.length, "dropped item")} · ${tok(sum(items))}`,
        tooltip: `**Turn ${t.turn}** · plan \`${t.planId}\`\n\n${escapeMd(t.query)}`,
        icon: "history",
        contextValue: "turn",
        collapse: "collapsed",
        planId: t.planId,
        children: items.map((i) =>
          itemNode(i, { included: false, planId: t.planId, pinsBySymbol, pinsById, promotions, stalePaths, idPrefix: id }),
        ),
      };
    });
    roots.push({
      id: "ledger",
      label: "Dropped ledger",
      description: `${plural(turns.length, "turn")} · ${plural(children.reduce((a, c) => a + (c.children?.length ?? 0), 0), "item")}`,
      tooltip: "What recent plans left out, per turn. Restore an item to pin it into the next plans.",
      icon: "archive",
      contextValue: "ledger",
      collapse: "collapsed",
      children,
    });
  }
  return roots;
}

export interface WhatIf {
  /** Included now, excluded in the what-if plan (excluding copies the pin itself replaces). */
  evicted: PlanItem[];
  /** Included now, excluded as duplicates in the what-if plan: the pin covers them. */
  replaced: PlanItem[];
  /** Included in the what-if plan, not now. */
  added: PlanItem[];
  tokensBefore: number;
  tokensAfter: number;
  planId: string;
}

/** What pinning would change: compare the current plan with the dry-run plan that has the pin. */
export function whatIfDiff(current: ContextPlan, dry: ContextPlan): WhatIf {
  const nowIncluded = new Set(current.included.map((i) => i.id));
  const dryIncluded = new Set(dry.included.map((i) => i.id));
  const dryExcluded = new Map(dry.excluded.map((i) => [i.id, i]));
  const evicted: PlanItem[] = [];
  const replaced: PlanItem[] = [];
  for (const item of current.included) {
    if (dryIncluded.has(item.id)) continue;
    const after = dryExcluded.get(item.id);
    if (after?.reason === "duplicate") replaced.push(after);
    else evicted.push(after ?? item);
  }
  return {
    evicted,
    replaced,
    added: dry.included.filter((i) => !nowIncluded.has(i.id)),
    tokensBefore: current.totals.tokens,
    tokensAfter: dry.totals.tokens,
    planId: dry.planId,
  };
}

/** "+130 tok; evicts 2 items (75 tok)" */
export function whatIfSummary(w: WhatIf): string {
  const delta = w.tokensAfter - w.tokensBefore;
  const parts = [`${delta >= 0 ? "+" : "−"}${groupDigits(Math.abs(delta))} tok (${groupDigits(w.tokensBefore)} → ${groupDigits(w.tokensAfter)})`];
  parts.push(w.evicted.length ? `evicts ${plural(w.evicted.length, "item")} (${tok(sum(w.evicted))})` : "evicts nothing");
  if (w.replaced.length) parts.push(`replaces ${plural(w.replaced.length, "item")} it covers`);
  return parts.join("; ");
}
