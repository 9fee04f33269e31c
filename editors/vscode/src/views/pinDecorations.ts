// A gutter pin on the first line of every pinned symbol (ranges from ctx/listPins), in visible
// editors, refreshed when the pins change (after budgetChanged, pin, unpin).
import * as vscode from "vscode";
import type { Controller } from "../controller";
import type { Pin } from "../protocol.generated";
import { formatTokens } from "../meter";

export class PinDecorations implements vscode.Disposable {
  private readonly type: vscode.TextEditorDecorationType;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    context: vscode.ExtensionContext,
    private readonly controller: Controller,
  ) {
    this.type = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(context.extensionUri, "media", "pin.svg"),
      gutterIconSize: "contain",
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.infoForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.subs.push(
      this.type,
      controller.onDidChange((c) => (c === "pins" || c === "meter") && this.render()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.render()),
    );
    this.render();
  }

  /** Which file a pin is in: its URI, or its workspace-relative path. */
  private pinFile(pin: Pin): string | undefined {
    if (pin.uri) {
      try {
        return vscode.Uri.parse(pin.uri).fsPath;
      } catch {
        /* fall through */
      }
    }
    const root = vscode.workspace.workspaceFolders?.[0]?.uri;
    return pin.path && root ? vscode.Uri.joinPath(root, pin.path).fsPath : undefined;
  }

  render(): void {
    const byFile = new Map<string, vscode.DecorationOptions[]>();
    for (const pin of this.controller.pins) {
      if (pin.status !== "active" || !pin.range) continue;
      const file = this.pinFile(pin);
      if (!file) continue;
      const line = pin.range.start.line;
      const ttl = pin.ttlRemaining === null || pin.ttlRemaining === undefined ? "no ttl" : `ttl ${pin.ttlRemaining}`;
      const tok = pin.tokens !== null && pin.tokens !== undefined ? ` · ${formatTokens(pin.tokens)} tok` : "";
      const hover = new vscode.MarkdownString(`📌 **Pinned to context**: ${pin.title}\n\n${pin.kind} · ${ttl}${tok} · \`${pin.id}\``);
      const list = byFile.get(file) ?? [];
      list.push({ range: new vscode.Range(line, 0, line, 0), hoverMessage: hover });
      byFile.set(file, list);
    }
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.scheme !== "file") continue;
      editor.setDecorations(this.type, byFile.get(editor.document.uri.fsPath) ?? []);
    }
  }

  /** The pin whose range holds `line` in `file` (the innermost one). */
  pinAt(uri: vscode.Uri, line: number): Pin | undefined {
    let best: Pin | undefined;
    for (const pin of this.controller.pins) {
      if (pin.status !== "active" || !pin.range || this.pinFile(pin) !== uri.fsPath) continue;
      const { start, end } = pin.range;
      if (line < start.line || line > end.line) continue;
      if (!best || end.line - start.line < best.range!.end.line - best.range!.start.line) best = pin;
    }
    return best;
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
  }
}
