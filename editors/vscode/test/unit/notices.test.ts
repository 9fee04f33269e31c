// The words of the server's notifications (ctx/askRepin, ctx/capsulesStale, ctx/compacted), as
// the handlers of src/notifications.ts show them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { askRepinMessage, compactedMessage, staleMessage, stalePaths } from "../../src/notices";
import type { Capsule, CompactionResult } from "../../src/protocol.generated";
import * as fx from "./fixtures";

const capsule = (path: string): Capsule => ({
  codeHash: "h",
  confidence: 1,
  created: 0,
  module: path.replace(/\.py$/, "").replace(/\//g, "."),
  path,
  source: "extractive",
  stale: true,
  text: "",
});

describe("ctx/askRepin", () => {
  test("one pin: its title", () => {
    assert.equal(
      askRepinMessage([fx.pin()]),
      "ctx: the TTL of a pin ran out: class shop.inventory.Product. Pin again?",
    );
  });
  test("several pins: how many, and their titles", () => {
    const other = { ...fx.pin(), title: "function shop.config.load" };
    assert.equal(
      askRepinMessage([fx.pin(), other]),
      "ctx: the TTL of 2 pins ran out: class shop.inventory.Product, function shop.config.load. Pin again?",
    );
  });
});

describe("ctx/capsulesStale", () => {
  test("the paths of the capsules (the files alone name none)", () => {
    assert.deepEqual(stalePaths({ capsules: [capsule("shop/config.py"), capsule("shop/storage.py")], files: ["x.py"] }), [
      "shop/config.py",
      "shop/storage.py",
    ]);
    assert.deepEqual(stalePaths({ files: ["x.py"] }), []);
  });
  test("one capsule, then at most three named and how many more", () => {
    assert.equal(staleMessage(["shop/config.py"]), "ctx: a capsule is stale (the code changed): shop/config.py");
    assert.equal(
      staleMessage(["a.py", "b.py", "c.py", "d.py", "e.py"]),
      "ctx: 5 capsules are stale (the code changed): a.py, b.py, c.py and 2 more",
    );
  });
});

describe("ctx/compacted", () => {
  const compaction: CompactionResult = {
    archivedIds: ["m1", "m2", "m3"],
    branch: "main",
    milliseconds: 12,
    number: 2,
    session: "probe",
    summarizer: "extractive",
    summary: "…",
    tokensAfter: 300,
    tokensBefore: 1200,
  };
  test("how many messages were archived and the tokens before and after", () => {
    assert.equal(compactedMessage(compaction), "ctx: the conversation was compacted (3 messages archived, 1200 → 300 tokens).");
  });
  test("what it does not know it does not say", () => {
    assert.equal(compactedMessage({}), "ctx: the conversation was compacted.");
    assert.equal(compactedMessage({ archivedIds: [] }), "ctx: the conversation was compacted (0 messages archived).");
  });
});
