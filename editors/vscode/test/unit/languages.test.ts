// Every language the server indexes reaches it: the client's document selector (src/languages.ts)
// and package.json's activation events, menus and keys say the same languages, and the activation
// events cover every file suffix the server reads (ctx_lsp/workspace/languages/__init__.py).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { documentSelector, LANGUAGES } from "../../src/languages";

// Bundled by esbuild into out/unit/: the package is two folders up, the repository four.
const root = join(__dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const SERVER_LANGUAGES = join(root, "..", "..", "ctx_lsp", "workspace", "languages", "__init__.py");

describe("languages", () => {
  test("the document selector: files on disk of each language, nothing else", () => {
    const sel = documentSelector();
    assert.deepEqual(sel.map((s) => s.language), [...LANGUAGES]);
    assert.ok(sel.every((s) => s.scheme === "file"));
    for (const id of ["python", "rust", "typescript", "typescriptreact", "javascript", "javascriptreact", "go", "java", "c", "cpp"]) {
      assert.ok((LANGUAGES as readonly string[]).includes(id), id);
    }
  });

  test("package.json activates on each language", () => {
    const events: string[] = pkg.activationEvents;
    for (const id of LANGUAGES) assert.ok(events.includes(`onLanguage:${id}`), `onLanguage:${id}`);
    assert.ok(!events.includes("*"), "not on every start-up");
  });

  test("package.json activates in a folder with a file of any suffix the server indexes", { skip: !existsSync(SERVER_LANGUAGES) && "no server source" }, () => {
    const source = readFileSync(SERVER_LANGUAGES, "utf8");
    const table = /EXTENSIONS[^=]*=\s*\{([^}]*)\}/.exec(source)?.[1] ?? "";
    const suffixes = [...table.matchAll(/"\.([^"]+)":/g)].map((m) => m[1]);
    assert.ok(suffixes.length >= 10 && suffixes.includes("rs") && suffixes.includes("py"), JSON.stringify(suffixes));
    for (const s of suffixes) assert.ok(pkg.activationEvents.includes(`workspaceContains:**/*.${s}`), `workspaceContains:**/*.${s}`);
  });

  test("the pin and unpin commands: in the palette, the editor's menu and the keys for every language", () => {
    const { menus, keybindings } = pkg.contributes;
    const whens = [
      ...[...menus.commandPalette, ...menus["editor/context"]].filter((m: { command: string }) => /^ctx\.(un)?pinAtCursor$/.test(m.command)),
      ...keybindings.filter((k: { command: string }) => /^ctx\.(un)?pinAtCursor$/.test(k.command)),
    ].map((m: { when: string }) => m.when);
    assert.equal(whens.length, 6);
    for (const when of whens) {
      assert.ok(!/editorLangId == /.test(when), when);
      const m = /editorLangId =~ \/(.*)\/(?= |$)/.exec(when);
      assert.ok(m, when);
      const re = new RegExp(m[1]);
      for (const id of LANGUAGES) assert.ok(re.test(id), `${id} in ${when}`);
      for (const id of ["markdown", "json", "plaintext", "pythonx"]) assert.ok(!re.test(id), `not ${id} in ${when}`);
      assert.match(when, /resourceScheme == file/);
    }
  });
});
