// The VS Code language ids of the files the server indexes (ctx_lsp/workspace/languages: Python,
// Rust, TypeScript/TSX, JavaScript, Go, Java, C and C++). The client's document selector uses
// them; package.json repeats them (activation events, menus, keys), and test/unit/languages.test.ts
// checks that both say the same. Pure: no vscode import.

export const LANGUAGES = [
  "python",
  "rust",
  "typescript",
  "typescriptreact",
  "javascript",
  "javascriptreact",
  "go",
  "java",
  "c",
  "cpp",
] as const;

export type LanguageId = (typeof LANGUAGES)[number];

/** The documents the server gets (sync, code lenses): files on disk in those languages. */
export function documentSelector(): { scheme: "file"; language: LanguageId }[] {
  return LANGUAGES.map((language) => ({ scheme: "file", language }));
}
