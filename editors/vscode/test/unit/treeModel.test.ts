import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asPlanItem, location, moduleOf, shortTitle, type TreeNode } from "../../src/treeItems";
import { buildTree } from "../../src/treeModel";
import { whatIfDiff, whatIfSummary } from "../../src/whatIf";
import { fence, previewMarkdown } from "../../src/previewModel";
import * as fx from "./fixtures";

const QUERY = "how is the invoice total calculated with tax?";
const find = (nodes: TreeNode[] | undefined, id: string) => nodes?.find((n) => n.id === id);
const flags = (n: TreeNode) => new Set((n.contextValue ?? "").split(" "));

describe("tree model from a plan", () => {
  const plan = fx.plan();
  const roots = buildTree({ plan, query: QUERY, ledger: fx.ledger().turns, pins: [] });

  test("roots: the plan, Included, Excluded, Dropped ledger", () => {
    assert.deepEqual(
      roots.map((r) => r.label),
      [`“${QUERY}”`, "Included", "Excluded", "Dropped ledger"],
    );
    assert.equal(roots[0].description, "503 tok of 121,856 · gpt-4o · light");
    assert.match(roots[0].tooltip!, /context 128,000 − completion 4,096 − safety 2,048 = prompt budget 121,856/);
  });

  test("Included: grouped by section in order, with the server's section budgets", () => {
    const inc = find(roots, "included")!;
    assert.equal(inc.description, "8 items · 472 tok");
    assert.deepEqual(inc.children!.map((s) => s.label), ["System", "Conversation", "Retrieved code"]);
    const rag = inc.children![2];
    assert.equal(rag.description, "285 / 300 tok · 5 items");
    assert.equal(rag.collapse, "expanded");
  });

  test("items: tokens and reason in the row, provenance in the tooltip, code to open", () => {
    const rag = find(roots, "included")!.children![2];
    const total = rag.children!.find((n) => n.item!.title === "method shop.billing.invoice.Invoice.total")!;
    assert.equal(total.label, "Invoice.total");
    assert.equal(total.description, "45 tok · relevant");
    assert.equal(total.accessibilityLabel, "method shop.billing.invoice.Invoice.total, 45 tokens, included: relevant");
    assert.equal(total.icon, "symbol-method");
    assert.deepEqual(total.open, { path: "shop/billing/invoice.py", range: total.item!.range });
    assert.equal(location(total.item!), "shop/billing/invoice.py:46-49");
    assert.match(total.tooltip!, /Included · `relevant` — retrieved as relevant to the query/);
    assert.match(total.tooltip!, /bm25 11\.40 on name: invoice total/);
    assert.match(total.tooltip!, /\| where \| `shop\/billing\/invoice\.py:46-49` \|/);
    assert.deepEqual(flags(total), new Set(["item", "included", "pinnable", "whatif"]));
    const system = find(roots, "included")!.children![0].children![0];
    assert.equal(system.label, "system prompt");
    assert.equal(system.open, undefined); // nothing to open
    assert.deepEqual(flags(system), new Set(["item", "included"])); // not code: no pin, no what-if
  });

  test("Excluded: budget drops are restorable and can be tried with what-if", () => {
    const exc = find(roots, "excluded")!;
    assert.equal(exc.description, `12 items · ${plan.excluded.reduce((a, i) => a + i.tokens, 0)} tok`);
    const rag = exc.children!.find((s) => s.label === "Retrieved code")!;
    assert.equal(rag.collapse, "expanded");
    const taxFor = rag.children!.find((n) => n.item!.title === "function shop.billing.invoice.tax_for")!;
    assert.equal(taxFor.label, "tax_for");
    assert.equal(taxFor.description, "70 tok · budget");
    assert.equal(taxFor.accessibilityLabel, "function shop.billing.invoice.tax_for, 70 tokens, excluded: budget");
    assert.match(taxFor.tooltip!, /Excluded · `budget` — did not fit the section's token budget/);
    assert.deepEqual(flags(taxFor), new Set(["item", "excluded", "restorable", "whatif"]));
    assert.equal(taxFor.planId, plan.planId);
    assert.equal(taxFor.iconColor, "disabledForeground");
  });

  test("ids are unique (VS Code requires it)", () => {
    const ids: string[] = [];
    const walk = (ns: TreeNode[]) => ns.forEach((n) => (ids.push(n.id), n.children && walk(n.children)));
    walk(roots);
    assert.equal(new Set(ids).size, ids.length);
  });

  test("no plan: only the ledger, or nothing (the view's welcome shows)", () => {
    assert.deepEqual(buildTree({}), []);
    assert.deepEqual(buildTree({ ledger: fx.ledger().turns }).map((n) => n.id), ["ledger"]);
  });

  test("nothing excluded says so", () => {
    const roots2 = buildTree({ plan: { ...plan, excluded: [] } });
    assert.equal(find(roots2, "excluded")!.children![0].label, "nothing excluded: everything fitted");
  });
});

describe("pins in the tree", () => {
  const plan = fx.planPinned();
  const pin = fx.pin();
  const roots = buildTree({ plan, query: QUERY, pins: [pin] });

  test("the pinned body is included with its pin id and an unpin action", () => {
    const inc = find(roots, "included")!;
    const pinned = inc.children!.flatMap((s) => s.children!).find((n) => n.item!.reason === "pinned")!;
    assert.equal(pinned.label, "Product (body)");
    assert.equal(pinned.item!.title, "class shop.inventory.Product (body)");
    assert.equal(pinned.icon, "pinned");
    assert.equal(pinned.pinId, pin.id);
    assert.deepEqual(flags(pinned), new Set(["item", "included", "pinned"]));
  });

  test("the card it covers is excluded as a duplicate, unpinnable through the pin", () => {
    const exc = find(roots, "excluded")!;
    const dup = exc.children!.flatMap((s) => s.children!).find((n) => n.item!.reason === "duplicate")!;
    assert.equal(dup.label, "Product");
    assert.equal(dup.pinId, pin.id);
    assert.ok(flags(dup).has("pinned") && !flags(dup).has("restorable"));
  });

  test("stale capsules are marked", () => {
    const capsule = { ...plan.included[4], id: "capsule:shop/billing/invoice.py", kind: "capsule", path: "shop/billing/invoice.py" };
    const r = buildTree({ plan: { ...plan, included: [capsule] }, stalePaths: new Set(["shop/billing/invoice.py"]) });
    const node = find(r, "included")!.children![0].children![0];
    assert.match(node.description!, / · stale$/);
    assert.equal(node.icon, "warning");
    assert.ok(flags(node).has("stale"));
  });
});

describe("labels", () => {
  test("a symbol's name inside its module; other titles as the server wrote them", () => {
    assert.equal(moduleOf("shop/billing/__init__.py"), "shop.billing");
    assert.equal(moduleOf("README.md"), undefined);
    const it = (title: string, symbol: string | null, path: string | null, kind = "symbol_card") =>
      shortTitle({ title, symbol, path, kind });
    assert.equal(it("method shop.billing.invoice.Invoice.total", "shop.billing.invoice.Invoice.total", "shop/billing/invoice.py"), "Invoice.total");
    assert.equal(it("function shop.billing.invoice.tax_for (body)", "shop.billing.invoice.tax_for", "shop/billing/invoice.py"), "tax_for (body)");
    assert.equal(it("module shop.billing", "shop.billing", "shop/billing/__init__.py"), "module shop.billing");
    assert.equal(it("variable shop.__all__", "shop.__all__", "shop/__init__.py"), "__all__");
    assert.equal(it("system prompt", null, null), "system prompt");
    assert.equal(it("capsule shop.config", "shop.config", "shop/config.py", "capsule"), "capsule shop.config");
    // TypeScript and JavaScript: the module is the path without its extension
    assert.equal(moduleOf("web/src/api/client.ts"), "web/src/api/client");
    assert.equal(it("method web/src/api/client.ApiClient.balance (body)", "web/src/api/client.ApiClient.balance", "web/src/api/client.ts", "symbol_body"), "ApiClient.balance (body)");
    assert.equal(it("function web/src/utils/format.formatCents", "web/src/utils/format.formatCents", "web/src/utils/format.js"), "formatCents");
    // Rust, Go, Java: the module's name from the crate or the package, the file's path hints at it
    assert.equal(moduleOf("src/account.rs"), undefined);
    assert.equal(
      it("method ledger_core::account::Ledger::transfer (body)", "ledger_core::account::Ledger::transfer", "src/account.rs", "symbol_body"),
      "Ledger::transfer (body)",
    );
    assert.equal(it("function ledger_core::total_balance", "ledger_core::total_balance", "src/lib.rs"), "total_balance");
    assert.equal(it("function transfers::transfer_moves_money", "transfers::transfer_moves_money", "tests/transfers.rs"), "transfer_moves_money");
    assert.equal(it("class ledger_core::store::Store", "ledger_core::store::Store", "src/store/mod.rs"), "Store");
    assert.equal(it("method server.Server.Handle (body)", "server.Server.Handle", "server/handler.go", "symbol_body"), "Server.Handle (body)");
    assert.equal(
      it("method com.shop.Inventory.reserve", "com.shop.Inventory.reserve", "java/src/main/java/com/shop/Inventory.java"),
      "Inventory.reserve",
    );
    // the path says nothing of it (Go's package main in cmd/tool/, a module card, C): the server's title
    assert.equal(it("function main.run", "main.run", "cmd/tool/main.go"), "function main.run");
    assert.equal(it("module ledger_core::account", "ledger_core::account", "src/account.rs"), "module ledger_core::account");
    assert.equal(it("class ledger::Codec", "ledger::Codec", "native/codec.cpp"), "class ledger::Codec");
    assert.equal(it("focus: shop/billing/invoice.py:76", "shop.billing.invoice.tax_for", "shop/billing/invoice.py", "focus_hint"), "focus: shop/billing/invoice.py:76");
  });
});

describe("dropped ledger", () => {
  const turns = fx.ledger().turns;
  const roots = buildTree({ ledger: turns });
  test("one node per turn with its query, items restorable against that turn's plan", () => {
    const ledger = roots[0];
    assert.equal(ledger.label, "Dropped ledger");
    assert.equal(ledger.children!.length, turns.length);
    const turn = ledger.children![0];
    assert.equal(turn.label, `turn ${turns[0].turn}: ${QUERY}`);
    assert.match(turn.description!, /^12 dropped items · /);
    const item = turn.children!.find((n) => n.item!.reason === "budget")!;
    assert.equal(item.planId, turns[0].planId);
    assert.ok(flags(item).has("restorable"));
  });
  test("asPlanItem keeps only what has the shape of an item", () => {
    assert.equal(asPlanItem(null), undefined);
    assert.equal(asPlanItem({ id: "x" }), undefined);
    const ok = asPlanItem({ id: "x", title: "t", tokens: 3, reason: "budget", section: "rag" })!;
    assert.equal(ok.path, null);
    assert.equal(ok.range, null);
  });
});

describe("what-if", () => {
  test("pinning tax_for: it replaces its own card; nothing included now is evicted", () => {
    const w = whatIfDiff(fx.planPinned(), fx.whatIfPlan());
    assert.deepEqual(w.evicted, []);
    assert.deepEqual(w.added.map((i) => i.title), ["function shop.billing.invoice.tax_for (body)"]);
    assert.equal(w.tokensBefore, 613);
    assert.equal(w.tokensAfter, 695);
    assert.equal(whatIfSummary(w), "+82 tok (613 → 695); evicts nothing");
  });
  test("evicted = included now, excluded in the dry run", () => {
    const now = fx.plan();
    const dry = fx.whatIfPlan();
    const victim = now.included.find((i) => i.symbol === "shop.config.TAX_RATE")!;
    const dry2 = {
      ...dry,
      included: dry.included.filter((i) => i.id !== victim.id),
      excluded: [{ ...victim, reason: "budget" }, ...dry.excluded],
    };
    const w = whatIfDiff(now, dry2);
    assert.deepEqual(w.evicted.map((i) => `${i.title}:${i.reason}`), ["variable shop.config.TAX_RATE:budget"]);
    assert.match(whatIfSummary(w), /evicts 1 item \(35 tok\)/);
  });
});

describe("prompt preview", () => {
  test("text: plan id, tokens, the rendered prompt verbatim in a fence", () => {
    const rendered = fx.renderText();
    const plan = fx.planPinned();
    const md = previewMarkdown({ rendered, plan, query: QUERY });
    assert.match(md, /^# ctx prompt preview\n/);
    assert.ok(md.includes(`| plan | \`${rendered.planId}\` |`));
    assert.ok(md.includes(`| rendered | ${rendered.tokens} tokens as \`text\` |`));
    assert.ok(md.includes(`| planned | 613 tokens of 121,856 (9 items, 12 excluded) |`));
    assert.ok(md.includes(rendered.text!));
  });
  test("openai: one section per message", () => {
    const md = previewMarkdown({ rendered: fx.renderOpenai() });
    assert.match(md, /## system\n\n```text\nYou are an AI coding assistant/);
    assert.match(md, /## user\n/);
  });
  test("fences are longer than any backtick run inside", () => {
    assert.equal(fence("a ``` b"), "````\na ``` b\n````");
    assert.equal(fence("plain", "text"), "```text\nplain\n```");
  });
});
