// Review before send (`ctx.gateway.review`): when a request is held (ctx/reviewRequest), its
// document opens beside the editor with Send, Re-plan and Cancel in the editor title, and a
// notification counts down to the timeout (its Cancel cancels the request). A re-plan replaces
// the document's content in place; the end of the review (ctx/reviewResolved) closes the
// notification and says how it ended.
import * as vscode from "vscode";
import { log } from "../common/log";
import { describeError } from "../common/protocol";
import type { Decision, GatewayClient, Review } from "../gateway";
import { countdown, outcomeMessage, requestTitle } from "../gatewayModel";
import type { PromptPreview } from "./preview";

/** Context key: some review waits for an answer (shows the editor title actions). */
export const WAITING_KEY = "ctx.reviewWaiting";

interface Shown {
  close: () => void;
}

export class ReviewPrompts implements vscode.Disposable {
  private readonly shown = new Map<string, Shown>();
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly gateway: GatewayClient,
    private readonly preview: PromptPreview,
  ) {
    this.subs.push(
      gateway.onDidChange(({ change, reviewId }) => change === "review" && reviewId && this.update(reviewId)),
      gateway.onDidResolve(({ review, outcome }) => {
        void vscode.window.showInformationMessage(outcomeMessage(outcome, requestTitle(review.request.preview)));
      }),
    );
  }

  private update(reviewId: string): void {
    const review = this.gateway.reviews.get(reviewId);
    const open = review && (review.state === "waiting" || review.state === "replanning");
    void vscode.commands.executeCommand("setContext", WAITING_KEY, this.gateway.waiting.length > 0);
    if (!open) {
      this.shown.get(reviewId)?.close();
      this.shown.delete(reviewId);
      return;
    }
    if (this.shown.has(reviewId)) return; // a re-plan: the document refreshes, the countdown restarts
    log.info(`review ${reviewId}: ${review.request.session} waits (${review.request.timeoutSeconds} s)`);
    this.shown.set(reviewId, this.notify(review));
    void this.preview.showReview(reviewId).catch((err) => log.warn(`review document: ${String(err)}`));
  }

  /** The notification: the request's first line, a countdown, and Cancel; it closes with the review. */
  private notify(review: Review): Shown {
    const id = review.request.reviewId;
    let close!: () => void;
    const ended = new Promise<void>((resolve) => (close = resolve));
    const title = `ctx: review before send — “${requestTitle(review.request.preview)}”`;
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, token) => {
      const tick = () => {
        const r = this.gateway.reviews.get(id);
        if (!r) return;
        const left = r.request.timeoutSeconds - (Date.now() - r.since) / 1000;
        progress.report({ message: r.state === "replanning" ? "re-planning…" : countdown(left) });
      };
      const timer = setInterval(tick, 1000);
      tick();
      const sub = token.onCancellationRequested(() => void this.decide(id, "cancel"));
      return ended.finally(() => {
        clearInterval(timer);
        sub.dispose();
      });
    });
    return { close };
  }

  /** Answer a review (undefined: the latest one waiting). */
  async decide(reviewId: string | undefined, decision: Decision): Promise<void> {
    const id = reviewId ?? this.gateway.waiting.at(-1)?.request.reviewId;
    if (!id) {
      void vscode.window.showInformationMessage("ctx: no request is waiting for review.");
      return;
    }
    try {
      const out = await this.gateway.decide(id, decision);
      if (!out.pending) void vscode.window.showInformationMessage("ctx: that request was no longer waiting (already sent, cancelled or timed out).");
    } catch (err) {
      void vscode.window.showErrorMessage(`ctx: review ${decision} failed: ${describeError(err, "ctx/reviewDecision")}`);
    }
  }

  dispose(): void {
    for (const s of this.shown.values()) s.close();
    this.shown.clear();
    for (const s of this.subs) s.dispose();
  }
}
