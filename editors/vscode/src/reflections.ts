// The reflection loop's automatic pins and suggestions, from ctx/listReflections (kept current
// by ctx/reflected): which promotion made each automatic pin, what can be undone, and the words
// that say why. PURE: no vscode import (unit-tested under node:test).
import type { Pin, Reflected, Reflection } from "./protocol.generated";
import { formatTokens } from "./meter";
import { escapeMd } from "./words";

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
