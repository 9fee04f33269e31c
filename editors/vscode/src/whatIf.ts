// The what-if of pinning an item: the plan shown against a dry-run plan with the pin.
// PURE: no vscode import (unit-tested under node:test).
import type { ContextPlan, PlanItem } from "./protocol.generated";
import { groupDigits } from "./meter";
import { plural, sumTokens, tok } from "./words";

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
  parts.push(w.evicted.length ? `evicts ${plural(w.evicted.length, "item")} (${tok(sumTokens(w.evicted))})` : "evicts nothing");
  if (w.replaced.length) parts.push(`replaces ${plural(w.replaced.length, "item")} it covers`);
  return parts.join("; ");
}
