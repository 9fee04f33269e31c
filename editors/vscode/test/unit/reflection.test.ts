// The reflection loop in the tree model: the model's suggestions under "Suggested" (muted, never
// pinned by themselves), automatic pins marked with the server's reason, the plan's task, the
// notifications of ctx/reflected. Fixtures are answers of the real server (fixtures/README.md).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { reflectionLogLine, reflectionNotice } from "../../src/notices";
import { autoPinLine, mergeReflection, pinHover, promotionsByPin, suggestionReflection, undoable } from "../../src/reflections";
import type { TreeNode } from "../../src/treeItems";
import { buildTree } from "../../src/treeModel";
import * as fx from "./fixtures";

const CALC = "shop.billing.invoice.calculate_invoice_total";
const QUERY = "how is the invoice total computed with discounts and tax, step 2?";
const find = (nodes: TreeNode[] | undefined, id: string) => nodes?.find((n) => n.id === id);
const flags = (n: TreeNode) => new Set((n.contextValue ?? "").split(" "));
const all = (nodes: TreeNode[]): TreeNode[] => nodes.flatMap((n) => [n, ...all(n.children ?? [])]);

describe("Suggested: the model's suggestions", () => {
  const plan = fx.reflectionPlan();
  const roots = buildTree({ plan, query: QUERY, pins: fx.reflectionPins(), suggestions: fx.suggestions(), reflections: fx.reflections() });
  const group = find(roots, "suggested")!;

  test("a group between Included and Excluded, muted, saying nothing is pinned", () => {
    assert.deepEqual(roots.map((r) => r.id), ["plan", "included", "suggested", "excluded"]);
    assert.equal(group.label, "Suggested");
    assert.equal(group.description, "2 items · by the model · not pinned");
    assert.equal(group.iconColor, "disabledForeground");
    assert.equal(group.collapse, "expanded");
  });

  test("one muted row per open suggestion, with the server's reason and a pin action", () => {
    assert.deepEqual(group.children!.map((n) => n.label), ["shop.config.TAX_RATE", "shop.storage"]);
    const tax = group.children![0];
    assert.equal(tax.id, "suggested/shop.config.TAX_RATE");
    assert.equal(tax.description, "suggested by the model in turn 1");
    assert.equal(tax.icon, "lightbulb");
    assert.equal(tax.iconColor, "disabledForeground");
    assert.deepEqual(flags(tax), new Set(["suggestion", "canpin"]));
    assert.equal(tax.accessibilityLabel, "suggested: shop.config.TAX_RATE, suggested by the model in turn 1");
    assert.match(tax.tooltip!, /Not pinned: nothing is pinned without you/);
    assert.equal(tax.suggestion!.item, "shop.config.TAX_RATE");
    // not an item row: the item menus (pin, unpin, restore, what-if) do not apply
    assert.equal(tax.item, undefined);
    assert.ok(!flags(tax).has("pinnable") && !flags(tax).has("pinned"));
  });

  test("the suggestions are not pins", () => {
    const pinned = new Set(fx.reflectionPins().map((p) => p.symbol));
    for (const s of fx.suggestions()) assert.ok(!pinned.has(s.item), `${s.item} is not pinned`);
  });

  test("a suggestion you pinned says so and loses its pin action", () => {
    const pin = { ...fx.reflectionPins()[0], id: "pin:shop.config.TAX_RATE", symbol: "shop.config.TAX_RATE", createdBy: "user", kind: "sticky" as const };
    const r = buildTree({ plan, pins: [...fx.reflectionPins(), pin], suggestions: fx.suggestions() });
    const tax = find(r, "suggested")!.children![0];
    assert.equal(tax.description, "pinned · suggested by the model in turn 1");
    assert.deepEqual(flags(tax), new Set(["suggestion", "suggestionpinned"]));
    assert.match(tax.accessibilityLabel!, /, pinned$/);
  });

  test("only open suggestions are listed; none open, no group", () => {
    const [tax, storage] = fx.suggestions();
    const r = buildTree({ plan, suggestions: [{ ...tax, status: "dismissed" }, storage] });
    assert.deepEqual(find(r, "suggested")!.children!.map((n) => n.label), ["shop.storage"]);
    const none = buildTree({ plan, suggestions: [{ ...tax, status: "accepted" }, { ...storage, status: "dismissed" }] });
    assert.equal(find(none, "suggested"), undefined);
    // without a plan (e.g. right after a restart) the group still shows
    assert.deepEqual(buildTree({ suggestions: fx.suggestions() }).map((n) => n.id), ["suggested"]);
  });

  test("dismissing a suggestion undoes the reflection that recorded it", () => {
    const r = suggestionReflection(fx.reflections(), "shop.storage")!;
    assert.equal(r.kind, "suggest");
    assert.equal(r.id, 3);
    assert.equal(suggestionReflection(fx.reflections().map((x) => ({ ...x, undone: true })), "shop.storage"), undefined);
  });
});

describe("automatic pins", () => {
  const plan = fx.reflectionPlan();
  const pins = fx.reflectionPins();
  const roots = buildTree({ plan, query: QUERY, pins, reflections: fx.reflections() });
  const rows = all(roots).filter((n) => n.item?.symbol === CALC);
  const pinned = rows.find((n) => n.item!.reason === "pinned")!;

  test("the server's pin is automatic: a leased, task-scoped pin created by auto", () => {
    assert.deepEqual([pins[0].symbol, pins[0].kind, pins[0].createdBy, pins[0].leaseScope], [CALC, "leased", "auto", "task"]);
  });

  test("its row: sparkle icon, `auto`, the reason in the tooltip, an undo action", () => {
    assert.equal(pinned.label, "calculate_invoice_total (body)");
    assert.equal(pinned.icon, "sparkle");
    assert.equal(pinned.description, `${pinned.item!.tokens} tok · pinned · auto`);
    assert.deepEqual(flags(pinned), new Set(["item", "included", "pinned", "autopin"]));
    assert.equal(pinned.pinId, pins[0].id);
    assert.equal(pinned.reflectionId, 1);
    const reason = fx.reflections()[0].reason;
    assert.ok(pinned.tooltip!.includes(`$(sparkle) leased automatically: ${reason} (ttl 4)`), pinned.tooltip);
    assert.equal(
      pinned.accessibilityLabel,
      `${pinned.item!.title}, ${pinned.item!.tokens} tokens, included: pinned, leased automatically`,
    );
  });

  test("a user's pin is not marked automatic", () => {
    const mine = pins.map((p) => ({ ...p, createdBy: "user" }));
    const r = all(buildTree({ plan, pins: mine, reflections: fx.reflections() })).find((n) => n.item?.reason === "pinned")!;
    assert.equal(r.icon, "pinned");
    assert.ok(!flags(r).has("autopin"));
    assert.equal(r.reflectionId, undefined);
    assert.doesNotMatch(r.tooltip!, /leased automatically/);
  });

  test("an undone promotion is no reason any more", () => {
    const undone = fx.reflections().map((r) => (r.kind === "promote" ? { ...r, undone: true } : r));
    assert.equal(promotionsByPin(undone).size, 0);
    const r = all(buildTree({ plan, pins, reflections: undone })).find((n) => n.item?.reason === "pinned")!;
    assert.equal(r.reflectionId, undefined);
    assert.ok(r.tooltip!.includes(autoPinLine(undefined).replace(/([\\`*_{}[\]<>|])/g, "\\$1")));
  });

  test("the gutter hover of an automatic pin says why; a user's pin keeps its hover", () => {
    const reason = fx.reflections()[0].reason;
    const hover = pinHover(pins[0], reason);
    assert.match(hover, /^📎 \*\*Pinned automatically\*\*: function shop\.billing\.invoice\.calculate\\_invoice\\_total\n\n/);
    assert.ok(hover.includes(`leased automatically: ${reason}`), hover);
    assert.match(hover, /leased · ttl 4 · 160 tok · `pin:shop\.billing\.invoice\.calculate_invoice_total` · ends with the task$/);
    const mine = pinHover({ ...pins[0], createdBy: "user", kind: "sticky", ttlRemaining: null, leaseScope: "turn" });
    assert.match(mine, /^📌 \*\*Pinned to context\*\*: .*\n\nsticky · no ttl · 160 tok · `pin:/);
  });
});

describe("the plan's task", () => {
  test("the plan row names the task (the query's cluster)", () => {
    const plan = fx.reflectionPlan();
    assert.equal(plan.clusterId, "t1");
    const root = buildTree({ plan, query: QUERY })[0];
    assert.match(root.description!, / · gpt-4o · light · task t1$/);
    assert.match(root.tooltip!, /Task `t1`: the cluster of similar questions/);
    assert.match(root.accessibilityLabel!, /^plan plan-\S+: \d+ of \d+ tokens, task t1$/);
  });
  test("a plan without a cluster shows none", () => {
    const root = buildTree({ plan: { ...fx.plan(), clusterId: null } })[0];
    assert.doesNotMatch(root.description!, /task/);
  });
});

describe("ctx/reflected", () => {
  const events = fx.reflected();
  test("promotions and demotions are notified with the item and the reason; renewals and suggestions are not", () => {
    const shown = events.map((r) => [r.kind, reflectionNotice(r)]);
    assert.deepEqual(shown.map(([k, n]) => [k, n !== undefined]), [
      ["promote", true],
      ["suggest", false],
      ["suggest", false],
      ["renew", false],
      ["demote", true],
    ]);
    assert.equal(reflectionNotice(events[0]), `ctx: ${CALC} is now leased automatically — ${events[0].reason}`);
    assert.equal(
      reflectionNotice(events[4]),
      `ctx: the lease on ${CALC} ended — task lease ended: the conversation moved from task t1 to task t2`,
    );
  });
  test("every reflection is logged", () => {
    assert.equal(reflectionLogLine(events[3]), `reflection #4 turn 2 renew ${CALC}: lease renewed for 4 turns: the model used it this turn`);
  });
  test("merging notifications and undo answers keeps one entry per id", () => {
    let list = fx.reflections(); // ids 1-4
    list = mergeReflection(list, events[4]);
    assert.deepEqual(list.map((r) => r.id), [1, 2, 3, 4, 5]);
    assert.equal(list[4].undone, false);
    list = mergeReflection(list, { ...list[0], undone: true });
    assert.deepEqual(list.map((r) => r.id), [1, 2, 3, 4, 5]);
    assert.equal(list[0].undone, true);
    assert.deepEqual(undoable(list).map((r) => `${r.id} ${r.kind}`), ["5 demote"]);
  });
});
