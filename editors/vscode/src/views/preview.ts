// The prompt preview: a read-only virtual Markdown document (ctx-preview:/prompt.md) with the
// plan id, tokens and the rendered prompt; it refreshes when the plan changes.
import * as vscode from "vscode";
import type { Controller } from "../controller";
import { describeError } from "../common/protocol";
import { getSettings } from "../common/settings";
import { previewMarkdown, previewPlaceholder } from "../previewModel";

export const PREVIEW_SCHEME = "ctx-preview";
export const PREVIEW_URI = vscode.Uri.parse(`${PREVIEW_SCHEME}:/prompt.md`);

export class PromptPreview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly controller: Controller) {
    this.subs.push(
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this),
      controller.state.onDidChange((c) => c === "plan" && this.refresh()),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("ctx.preview") && this.refresh()),
    );
  }

  refresh(): void {
    if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === PREVIEW_URI.toString())) {
      this.emitter.fire(PREVIEW_URI);
    }
  }

  async provideTextDocumentContent(_uri: vscode.Uri): Promise<string> {
    const plan = this.controller.state.plan;
    if (!plan) return previewPlaceholder("No plan yet: run “ctx: Plan for a Query…”.");
    try {
      const rendered = await this.controller.render(getSettings().previewFormat, plan.planId);
      return previewMarkdown({ rendered, plan, query: this.controller.state.query });
    } catch (err) {
      return previewPlaceholder(`Could not render plan \`${plan.planId}\`: ${describeError(err, "ctx/renderPrompt")}`);
    }
  }

  async show(): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(PREVIEW_URI);
    await vscode.window.showTextDocument(doc, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
  }
}
