// The small words the pure models share: plurals, token counts, Markdown escapes.
// PURE: no vscode import (unit-tested under node:test).
import { groupDigits } from "./meter";

/** "1,234 tok" */
export function tok(n: number): string {
  return `${groupDigits(n)} tok`;
}

/** "1 item", "2 items" */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The tokens of a list of plan items. */
export function sumTokens(items: readonly { tokens: number }[]): number {
  return items.reduce((a, i) => a + i.tokens, 0);
}

/** Text shown verbatim inside Markdown (titles, reasons, queries). */
export function escapeMd(s: string): string {
  return s.replace(/([\\`*_{}[\]<>|])/g, "\\$1");
}
