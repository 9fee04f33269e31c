// The Context view's tree, as plain data built from the server's plan, dropped ledger, pins and
// reflections (the model's suggestions, automatic pins and why the server made them): the plan,
// Included and Excluded by section, Suggested, the Dropped ledger. src/treeItems.ts makes the
// rows of items and suggestions; src/views/contextTree.ts turns nodes into TreeItems.
// PURE: no vscode import (unit-tested under node:test). Every number and reason comes from the
// server: this module only arranges them.
import type { ContextPlan, LedgerTurn, Pin, PlanItem, Reflection, Suggestion } from "./protocol.generated";
import { groupDigits } from "./meter";
import { promotionsByPin } from "./reflections";
import { asPlanItem, itemNode, sectionTitle, suggestionNode, type ItemContext, type TreeNode } from "./treeItems";
import { escapeMd, plural, sumTokens, tok } from "./words";

const SECTION_ORDER = ["system", "conversation", "rag"];

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
    const tokens = sumTokens(list);
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

/** The plan's row: the question, tokens of the budget, model, mode and task. */
function planNode(plan: ContextPlan, query: string | undefined): TreeNode {
  const notes = plan.notes ?? [];
  const task = plan.clusterId ? ` · task ${plan.clusterId}` : "";
  const tooltip = [
    `**Plan \`${plan.planId}\`**`,
    "",
    query ? `Query: ${escapeMd(query)}` : "",
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
  return {
    id: "plan",
    label: query ? `“${query}”` : plan.planId,
    description: `${tok(plan.totals.tokens)} of ${groupDigits(plan.promptBudget)} · ${plan.model} · ${plan.mode}${task}`,
    tooltip,
    icon: "dashboard",
    contextValue: "plan",
    collapse: "none",
    accessibilityLabel: `plan ${plan.planId}: ${plan.totals.tokens} of ${plan.promptBudget} tokens${task ? `, task ${plan.clusterId}` : ""}`,
  };
}

/** Included or Excluded: the plan's items of one side, by section. */
function sideNode(
  plan: ContextPlan,
  included: boolean,
  ctx: Omit<ItemContext, "included" | "idPrefix">,
): TreeNode {
  const items = included ? plan.included : plan.excluded;
  const id = included ? "included" : "excluded";
  const label = included ? "Included" : "Excluded";
  const sections = sectionNodes(items, plan, included, { ...ctx, included, idPrefix: id });
  return {
    id,
    label,
    description: `${plural(items.length, "item")} · ${tok(sumTokens(items))}`,
    icon: included ? "pass" : "circle-slash",
    iconColor: included ? "testing.iconPassed" : undefined,
    contextValue: "group",
    accessibilityLabel: `${label}: ${plural(items.length, "item")}, ${sumTokens(items)} tokens`,
    collapse: "expanded",
    children:
      sections.length || included
        ? sections
        : [{ id: "excluded/none", label: "nothing excluded: everything fitted", collapse: "none", icon: "check" }],
  };
}

/** The Dropped ledger: per turn, what its plan left out (restorable against that plan). */
function ledgerNode(turns: readonly LedgerTurn[], ctx: Omit<ItemContext, "included" | "idPrefix" | "planId">): TreeNode {
  const children = turns.map((t): TreeNode => {
    const items = t.excluded.map(asPlanItem).filter((x): x is PlanItem => !!x);
    const id = `ledger/${t.planId}`;
    return {
      id,
      label: `turn ${t.turn}: ${t.query}`,
      description: `${plural(items.length, "dropped item")} · ${tok(sumTokens(items))}`,
      tooltip: `**Turn ${t.turn}** · plan \`${t.planId}\`\n\n${escapeMd(t.query)}`,
      icon: "history",
      contextValue: "turn",
      collapse: "collapsed",
      planId: t.planId,
      children: items.map((i) => itemNode(i, { ...ctx, included: false, planId: t.planId, idPrefix: id })),
    };
  });
  return {
    id: "ledger",
    label: "Dropped ledger",
    description: `${plural(turns.length, "turn")} · ${plural(children.reduce((a, c) => a + (c.children?.length ?? 0), 0), "item")}`,
    tooltip: "What recent plans left out, per turn. Restore an item to pin it into the next plans.",
    icon: "archive",
    contextValue: "ledger",
    collapse: "collapsed",
    children,
  };
}

/** The view's roots: the plan, Included, Suggested, Excluded, the Dropped ledger (those that apply). */
export function buildTree(input: TreeInput): TreeNode[] {
  const plan = input.plan;
  const pinsBySymbol = new Map<string, Pin>();
  const pinsById = new Map<string, Pin>();
  for (const p of input.pins ?? []) {
    pinsById.set(p.id, p);
    if (p.symbol && p.status === "active") pinsBySymbol.set(p.symbol, p);
  }
  const ctx = { pinsBySymbol, pinsById, promotions: promotionsByPin(input.reflections), stalePaths: input.stalePaths ?? new Set<string>() };
  const roots: TreeNode[] = [];
  const suggested = suggestedGroup(input.suggestions, pinsBySymbol);
  if (plan) {
    roots.push(planNode(plan, input.query), sideNode(plan, true, { ...ctx, planId: plan.planId }));
    if (suggested) roots.push(suggested); // before Excluded (long): what the model would add
    roots.push(sideNode(plan, false, { ...ctx, planId: plan.planId }));
  } else if (suggested) roots.push(suggested);
  const turns = input.ledger ?? [];
  if (turns.length) roots.push(ledgerNode(turns, ctx));
  return roots;
}
