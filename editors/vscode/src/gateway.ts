// The gateway the editor's server runs (`gateway.listen`): its status as the server last said it,
// the latest request, the reviews (review before send), and the requests about them
// (ctx/gatewayStatus, ctx/listConversations, ctx/setActiveConversation, ctx/gatewayPreview,
// ctx/reviewDecision). The server's ctx/gatewayRequest, ctx/gatewayStatusChanged (after each
// request's savings are summed), ctx/reviewRequest and ctx/reviewResolved notifications keep it
// current. Views read it; nothing here decides anything.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { log } from "./common/log";
import { describeError, isMethodNotFound, onNotification, request } from "./common/protocol";
import type { ServerManager } from "./common/server";
import type { Controller } from "./controller";
import type { ReviewState } from "./gatewayModel";
import type { GatewayConversation, GatewayPreview, GatewayRequest, GatewayStatus, ReviewDecisionResult, ReviewRequest, ReviewResolved } from "./protocol.generated";

/** The gateway starts after the server's first indexing: ask for its status this often, this long. */
const POLL_MS = 1000;
const POLL_FOR_MS = 5 * 60 * 1000;
/** Ended reviews kept (their documents still show them). */
const KEEP_ENDED = 20;

export type Decision = "send" | "cancel" | "replan";

export interface Review {
  request: ReviewRequest;
  state: ReviewState;
  /** Date.now() when the latest ctx/reviewRequest of it arrived (the timeout counts from there). */
  since: number;
}

export type GatewayChange = "status" | "request" | "review";

export class GatewayClient implements vscode.Disposable {
  /** The server's ctx/gatewayStatus, kept current by its notifications; undefined: none listens. */
  status: GatewayStatus | undefined;
  readonly reviews = new Map<string, Review>();
  private readonly emitter = new vscode.EventEmitter<{ change: GatewayChange; reviewId?: string }>();
  readonly onDidChange = this.emitter.event;
  private readonly resolvedEmitter = new vscode.EventEmitter<{ review: Review; outcome: ReviewResolved["outcome"] }>();
  /** A review ended (the server's ctx/reviewResolved). */
  readonly onDidResolve = this.resolvedEmitter.event;
  private pollTimer: NodeJS.Timeout | undefined;
  private generation = 0;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly server: ServerManager,
    private readonly controller: Controller,
  ) {
    this.subs.push(
      server.onDidStart(() => this.poll()),
      server.onDidChangeState((s) => s !== "running" && this.reset()),
    );
  }

  get listening(): string | undefined {
    return this.status?.listening ?? undefined;
  }

  get latest(): GatewayRequest | undefined {
    return this.status?.latest ?? undefined;
  }

  /** Reviews still waiting for an answer, oldest first. */
  get waiting(): Review[] {
    return [...this.reviews.values()].filter((r) => r.state === "waiting" || r.state === "replanning");
  }

  private fire(change: GatewayChange, reviewId?: string): void {
    this.emitter.fire({ change, reviewId });
  }

  private get client(): LanguageClient {
    const c = this.server.client;
    if (!c) throw new Error(`ctx-lsp is not running${this.server.lastError ? `: ${this.server.lastError}` : ""}.`);
    return c;
  }

  // ---- status -------------------------------------------------------------------------------

  /** The server stopped: no gateway, and nothing waits any more. */
  private reset(): void {
    this.generation++;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    for (const [id, r] of this.reviews) {
      if (r.state === "waiting" || r.state === "replanning") {
        r.state = "gone";
        this.fire("review", id);
      }
    }
    if (this.status) {
      this.status = undefined;
      this.fire("status");
    }
  }

  /** Ask for ctx/gatewayStatus until the gateway listens (it starts after the first indexing). */
  private poll(): void {
    const gen = ++this.generation;
    const until = Date.now() + POLL_FOR_MS;
    const tick = async () => {
      this.pollTimer = undefined;
      if (gen !== this.generation) return;
      let again = true;
      try {
        await this.refreshStatus();
        again = !this.listening;
      } catch (err) {
        again = !isMethodNotFound(err); // a server without the gateway: nothing to wait for
        if (!again) log.info("this ctx-lsp has no gateway methods");
      }
      if (again && gen === this.generation && Date.now() < until) this.pollTimer = setTimeout(() => void tick(), POLL_MS);
    };
    void tick();
  }

  async refreshStatus(): Promise<GatewayStatus> {
    const status = await request(this.client, "ctx/gatewayStatus", {});
    const was = this.listening;
    this.status = status;
    if (status.listening && !was) log.info(`gateway listening on ${status.listening}${status.review ? " (review before send)" : ""}`);
    this.fire("status");
    return status;
  }

  // ---- notifications --------------------------------------------------------------------------

  /** The server's gateway notifications, on each new client (server.ts ClientHooks.configure). */
  register(client: LanguageClient): vscode.Disposable[] {
    return [
      onNotification(client, "ctx/gatewayRequest", (r) => this.onRequest(r)),
      onNotification(client, "ctx/gatewayStatusChanged", (s) => this.onStatus(s)),
      onNotification(client, "ctx/reviewRequest", (r) => this.onReviewRequest(r)),
      onNotification(client, "ctx/reviewResolved", (r) => this.onReviewResolved(r)),
    ];
  }

  private onRequest(r: GatewayRequest): void {
    if (this.status) {
      this.status = { ...this.status, latest: r, label: r.label, requests: r.requests };
      this.fire("request");
    }
    // The counts the notification does not carry (planned, fail open, the active conversation).
    void this.refreshStatus().catch((err) => log.warn(`gateway status: ${describeError(err, "ctx/gatewayStatus")}`));
  }

  /** The whole status, as the server has it now: its gateway started, or a request was summed. */
  private onStatus(s: GatewayStatus): void {
    if (s.listening && !this.listening) log.info(`gateway listening on ${s.listening}${s.review ? " (review before send)" : ""}`);
    this.status = s;
    this.fire("status");
  }

  private onReviewRequest(r: ReviewRequest): void {
    this.reviews.set(r.reviewId, { request: r, state: "waiting", since: Date.now() });
    this.trim();
    this.fire("review", r.reviewId);
  }

  private onReviewResolved(r: ReviewResolved): void {
    const review = this.reviews.get(r.reviewId);
    if (!review) return;
    review.state = r.outcome;
    this.fire("review", r.reviewId);
    this.resolvedEmitter.fire({ review, outcome: r.outcome });
  }

  /** Keep the waiting reviews and the latest ended ones. */
  private trim(): void {
    const ended = [...this.reviews.entries()].filter(([, r]) => r.state !== "waiting" && r.state !== "replanning");
    for (const [id] of ended.slice(0, Math.max(0, ended.length - KEEP_ENDED))) this.reviews.delete(id);
  }

  // ---- requests -----------------------------------------------------------------------------

  async listConversations(): Promise<GatewayConversation[]> {
    return request(this.client, "ctx/listConversations", {});
  }

  /** Make `session` the active conversation; the view, meter and pins follow it. */
  async setActive(session: string): Promise<GatewayStatus> {
    const status = await request(this.client, "ctx/setActiveConversation", { session });
    this.status = status;
    this.fire("status");
    await this.controller.refreshAll();
    return status;
  }

  /** The body last sent upstream for the active conversation. */
  async sentPreview(): Promise<GatewayPreview> {
    return request(this.client, "ctx/gatewayPreview", {});
  }

  /** Answer a waiting review. "replan": a new ctx/reviewRequest of the same review follows. */
  async decide(reviewId: string, decision: Decision): Promise<ReviewDecisionResult> {
    const since = this.reviews.get(reviewId)?.since;
    const out = await request(this.client, "ctx/reviewDecision", { reviewId, decision });
    const review = this.reviews.get(reviewId);
    // (unless the re-planned ctx/reviewRequest already arrived)
    if (review && out.pending && decision === "replan" && review.since === since) {
      review.state = "replanning";
      this.fire("review", reviewId);
    }
    return out;
  }

  dispose(): void {
    this.generation++;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
    this.resolvedEmitter.dispose();
  }
}
