// Where "Pin Symbol at Cursor" points the server: at a use site, the definition the editor's own
// language servers found (rust-analyzer, tsserver, gopls …, through vscode.executeDefinitionProvider),
// when it is a file of the workspace; else the cursor itself. The server still decides which symbol
// that position is. Pure (no vscode import): test/unit/pinTarget.test.ts tests it.

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** A URI as a string, or anything whose toString() is one (vscode.Uri). */
export type UriLike = string | { toString(): string };

/** vscode.Location: a uri and a range. */
export interface LocationLike {
  uri: UriLike;
  range: Range;
}

/** vscode.LocationLink: the target's whole range, and the range of its name. */
export interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: Range;
  targetSelectionRange?: Range;
}

export interface PinTarget {
  uri: string;
  position: Position;
  /** "definition": the editor's definition provider found it; "cursor": the cursor itself. */
  from: "definition" | "cursor";
}

/** Folders inside the workspace that hold other people's code (the server does not index them). */
const THIRD_PARTY = /\/(node_modules|site-packages)\//;

const before = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.character <= b.character);
const contains = (r: Range, p: Position) => before(r.start, p) && before(p, r.end);

/**
 * The position to send with ctx/pinSymbol. `definitions` is what the definition provider
 * returned (undefined when there is none), `root` the URI of the server's workspace folder.
 * The first definition in a `file:` document under `root` (not under node_modules) wins, unless
 * it is the one the cursor is on; otherwise the cursor.
 */
export function choosePinTarget(
  cursor: { uri: UriLike; position: Position },
  definitions: readonly (LocationLike | LocationLinkLike)[] | LocationLike | undefined | null,
  root: UriLike | undefined,
): PinTarget {
  const here: PinTarget = { uri: String(cursor.uri), position: cursor.position, from: "cursor" };
  if (!definitions || root === undefined) return here;
  const list = Array.isArray(definitions) ? definitions : [definitions as LocationLike];
  const base = String(root).replace(/\/?$/, "/");
  for (const d of list) {
    if (!d) continue;
    const link = "targetUri" in d;
    const uri = String(link ? d.targetUri : d.uri);
    // The name's range when the provider gives one: the server resolves the name under it first.
    const range = link ? (d.targetSelectionRange ?? d.targetRange) : d.range;
    if (!range || !uri.startsWith(base) || THIRD_PARTY.test(uri.slice(base.length - 1))) continue;
    if (uri === here.uri && contains(range, cursor.position)) return here; // on the definition itself
    return { uri, position: { line: range.start.line, character: range.start.character }, from: "definition" };
  }
  return here;
}
