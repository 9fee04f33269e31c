// A gutter pin on the first line of every pinned symbol (ranges from ctx/listPins), in visible
// editors, refreshed when the pins change (after budgetChanged, pin, unpin). Pins the server
// leased automatically (createdBy "auto") get their own icon, and their hover says why.
import * as vscode from "vscode";
import type { Pin } from "../protocol.generated";
import { pinHover, promotionsByPin } from "../reflections";
import type { SessionState } from "../session";

export class PinDecorations implements vscode.Disposable {
  private readonly type: vscode.TextEditorDecorationType;
  private readonly autoType: vscode.TextEditorDecorationType;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    context: vscode.ExtensionContext,
    private readonly state: SessionState,
  ) {
    this.type = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(context.extensionUri, "media", "pin.svg"),
      gutterIconSize: "contain",
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.infoForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.autoType = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(context.extensionUri, "media", "pin-auto.svg"),
      gutterIconSize: "contain",
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.infoForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.subs.push(
      this.type,
      this.autoType,
      state.onDidChange((c) => (c === "pins" || c === "meter" || c === "suggestions") && this.render()),
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
    const autoByFile = new Map<string, vscode.DecorationOptions[]>();
    const promotions = promotionsByPin(this.state.reflections);
    for (const pin of this.state.pins) {
      if (pin.status !== "active" || !pin.range) continue;
      const file = this.pinFile(pin);
      if (!file) continue;
      const line = pin.range.start.line;
      const auto = pin.createdBy === "auto";
      const hover = new vscode.MarkdownString(pinHover(pin, promotions.get(pin.id)?.reason));
      const target = auto ? autoByFile : byFile;
      const list = target.get(file) ?? [];
      list.push({ range: new vscode.Range(line, 0, line, 0), hoverMessage: hover });
      target.set(file, list);
    }
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.scheme !== "file") continue;
      editor.setDecorations(this.type, byFile.get(editor.document.uri.fsPath) ?? []);
      editor.setDecorations(this.autoType, autoByFile.get(editor.document.uri.fsPath) ?? []);
    }
  }

  /** The pin whose range holds `line` in `file` (the innermost one). */
  pinAt(uri: vscode.Uri, line: number): Pin | undefined {
    let best: Pin | undefined;
    for (const pin of this.state.pins) {
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
