// The preview documents, read-only virtual Markdown under ctx-preview:
//   /prompt.md          the plan id, tokens and the rendered prompt; refreshes when the plan changes
//   /sent-request.md    the body the gateway last sent upstream for the active conversation
//                       (ctx/gatewayPreview); refreshes after each request through the gateway
//   /review/<id>.md     a request held for review before send; a re-plan replaces it in place
import * as vscode from "vscode";
import type { Controller } from "../controller";
import type { GatewayClient } from "../gateway";
import { reviewMarkdown, sentMarkdown } from "../gatewayModel";
import { describeError, ErrorCodes } from "../common/protocol";
import { getSettings } from "../common/settings";
import { previewMarkdown, previewPlaceholder } from "../previewModel";
import { ResponseError } from "vscode-languageclient";

export const PREVIEW_SCHEME = "ctx-preview";
export const PREVIEW_URI = vscode.Uri.parse(`${PREVIEW_SCHEME}:/prompt.md`);
export const SENT_URI = vscode.Uri.parse(`${PREVIEW_SCHEME}:/sent-request.md`);

/** A review's document: its tab is named after the review ("review-3b57903072d4.md"). */
export function reviewUri(reviewId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/review/${reviewId}.md` });
}

/** The review id of a review document's URI. */
export function reviewIdOf(uri: vscode.Uri | undefined): string | undefined {
  if (uri?.scheme !== PREVIEW_SCHEME) return undefined;
  return /^\/review\/(.+)\.md$/.exec(uri.path)?.[1];
}

export class PromptPreview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly controller: Controller,
    private readonly gateway: GatewayClient,
  ) {
    this.subs.push(
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this),
      controller.state.onDidChange((c) => c === "plan" && this.refresh()),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("ctx.preview") && this.refresh()),
      gateway.onDidChange(({ change, reviewId }) => {
        if (change === "review" && reviewId) this.refresh(reviewUri(reviewId));
        else this.refresh(SENT_URI);
      }),
    );
  }

  /** Re-read an open document (default: the prompt preview). */
  refresh(uri: vscode.Uri = PREVIEW_URI): void {
    if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) this.emitter.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> | string {
    if (uri.path === SENT_URI.path) return this.sentContent();
    const reviewId = reviewIdOf(uri);
    if (reviewId) {
      const review = this.gateway.reviews.get(reviewId);
      return review ? reviewMarkdown(review.request, review.state) : previewPlaceholder(`Review \`${reviewId}\` is over.`);
    }
    return this.promptContent();
  }

  private async promptContent(): Promise<string> {
    const plan = this.controller.state.plan;
    if (!plan) return previewPlaceholder("No plan yet: run “ctx: Plan for a Query…”.");
    try {
      const rendered = await this.controller.render(getSettings().previewFormat, plan.planId);
      return previewMarkdown({ rendered, plan, query: this.controller.state.query });
    } catch (err) {
      return previewPlaceholder(`Could not render plan \`${plan.planId}\`: ${describeError(err, "ctx/renderPrompt")}`);
    }
  }

  private async sentContent(): Promise<string> {
    const title = "# ctx sent request\n\n";
    if (!this.gateway.listening) {
      return `${title}The gateway is not running: set \`ctx.gateway.listen\` (e.g. \`127.0.0.1:8787\`) and restart the server.\n`;
    }
    try {
      return sentMarkdown(await this.gateway.sentPreview());
    } catch (err) {
      if (err instanceof ResponseError && err.code === ErrorCodes.NotFound) {
        return `${title}No request of the active conversation went through the gateway (${this.gateway.listening}) yet.\n`;
      }
      return `${title}Could not read the sent request: ${describeError(err, "ctx/gatewayPreview")}\n`;
    }
  }

  private async open(uri: vscode.Uri): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  /** The prompt preview; when the gateway has sent a request, offer the sent body first. */
  async show(): Promise<void> {
    if (!this.gateway.latest) return this.open(PREVIEW_URI);
    const pick = await vscode.window.showQuickPick(
      [
        { label: "$(arrow-swap) Sent request", detail: "The exact body the gateway sent upstream for the active conversation's latest request.", uri: SENT_URI },
        { label: "$(open-preview) Plan preview", detail: "The current plan, rendered as a prompt.", uri: PREVIEW_URI },
      ],
      { title: "ctx: Show Prompt Preview" },
    );
    if (pick) await this.open(pick.uri);
  }

  async showSent(): Promise<void> {
    await this.open(SENT_URI);
  }

  /** A review's document, beside the editor and focused: its title has Send, Re-plan and Cancel. */
  async showReview(reviewId: string): Promise<void> {
    await this.open(reviewUri(reviewId));
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
  }
}
