// "Pin Symbol at Cursor" at a use site: which position goes to ctx/pinSymbol, from what the
// editor's definition provider (vscode.executeDefinitionProvider) answered.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { choosePinTarget, type LocationLike, type LocationLinkLike, type Range } from "../../src/pinTarget";

const ROOT = "file:///home/me/poly_ws";
const range = (line: number, from: number, to = from + 5, endLine = line): Range => ({
  start: { line, character: from },
  end: { line: endLine, character: to },
});
// The cursor on `client.balance(…)` in a component, a use of ApiClient.balance.
const cursor = { uri: `${ROOT}/web/src/components/Invoice.tsx`, position: { line: 7, character: 20 } };
const CLIENT = `${ROOT}/web/src/api/client.ts`;
// a vscode.Uri stands in: anything whose toString() is the URI
const uri = (s: string) => ({ toString: () => s });

describe("choosePinTarget", () => {
  test("a Location inside the workspace: its uri and range.start", () => {
    const defs: LocationLike[] = [{ uri: uri(CLIENT), range: range(13, 8, 15) }];
    assert.deepEqual(choosePinTarget(cursor, defs, uri(ROOT)), {
      uri: CLIENT,
      position: { line: 13, character: 8 },
      from: "definition",
    });
  });

  test("a LocationLink: the start of the target's name (targetSelectionRange), else of targetRange", () => {
    const link: LocationLinkLike = { targetUri: uri(CLIENT), targetRange: range(12, 2, 3, 17), targetSelectionRange: range(13, 8, 15) };
    assert.deepEqual(choosePinTarget(cursor, [link], ROOT).position, { line: 13, character: 8 });
    const bare: LocationLinkLike = { targetUri: CLIENT, targetRange: range(12, 2, 3, 17) };
    assert.deepEqual(choosePinTarget(cursor, [bare], ROOT), { uri: CLIENT, position: { line: 12, character: 2 }, from: "definition" });
  });

  test("no provider, no result, an empty result: the cursor", () => {
    const here = { uri: cursor.uri, position: cursor.position, from: "cursor" };
    assert.deepEqual(choosePinTarget(cursor, undefined, ROOT), here);
    assert.deepEqual(choosePinTarget(cursor, null, ROOT), here);
    assert.deepEqual(choosePinTarget(cursor, [], ROOT), here);
  });

  test("outside the workspace (the standard library, another folder, a sibling with the same prefix): the cursor", () => {
    for (const where of [
      "file:///usr/lib/node_modules/typescript/lib/lib.dom.d.ts",
      "file:///home/me/.rustup/toolchains/stable/lib/rustlib/src/rust/library/core/src/result.rs",
      "file:///home/me/poly_ws_old/web/src/api/client.ts",
    ]) {
      assert.equal(choosePinTarget(cursor, [{ uri: where, range: range(3, 0) }], ROOT).from, "cursor", where);
    }
  });

  test("node_modules and site-packages inside the workspace count as outside", () => {
    for (const where of [`${ROOT}/web/node_modules/react/index.d.ts`, `${ROOT}/.venv/lib/python3.11/site-packages/requests/api.py`]) {
      assert.equal(choosePinTarget(cursor, [{ targetUri: where, targetRange: range(3, 0) }], ROOT).from, "cursor", where);
    }
  });

  test("another language server's virtual document (not file:): the cursor", () => {
    for (const where of ["rust-analyzer:/home/me/poly_ws/src/macro.rs", "jdt://contents/rt.jar/java.util/List.class", "untitled:Untitled-1"]) {
      assert.equal(choosePinTarget(cursor, [{ uri: where, range: range(0, 0) }], ROOT).from, "cursor", where);
    }
  });

  test("the cursor on the definition itself: the cursor", () => {
    const onName = { uri: CLIENT, position: { line: 13, character: 10 } };
    assert.equal(choosePinTarget(onName, [{ uri: CLIENT, range: range(13, 8, 15) }], ROOT).from, "cursor");
    // the same file, elsewhere: a use of another definition in it
    assert.equal(choosePinTarget(onName, [{ uri: CLIENT, range: range(20, 16, 23) }], ROOT).from, "definition");
  });

  test("several results: the first inside the workspace", () => {
    const defs = [
      { uri: "file:///usr/lib/typescript/lib.d.ts", range: range(1, 0) },
      { uri: `${ROOT}/web/src/api/types.ts`, range: range(4, 2) },
      { uri: CLIENT, range: range(13, 8) },
    ];
    assert.deepEqual(choosePinTarget(cursor, defs, `${ROOT}/`), { uri: `${ROOT}/web/src/api/types.ts`, position: { line: 4, character: 2 }, from: "definition" });
  });

  test("no workspace folder: the cursor", () => {
    assert.equal(choosePinTarget(cursor, [{ uri: CLIENT, range: range(13, 8) }], undefined).from, "cursor");
  });
});
