// The requests: keeps the session state (src/session.ts) current from the server and runs the
// user's actions (plan, pin, unpin, restore, mode, undo, what-if, compaction, capsules), each
// followed by a re-plan of the current query. Commands call it; the server's notifications
// (src/notifications.ts) ask it for refreshes. It never decides anything the server decides:
// nothing is pinned unless the user asks.
import * as vscode from "vscode";
import { CodeLensRequest } from "vscode-languageclient";
import type { LanguageClient } from "vscode-languageclient/node";
import { describeError, isMethodNotFound, request, type ParamsOf } from "./common/protocol";
import { log, getLog } from "./common/log";
import { getSettings, type Mode, type PreviewFormat } from "./common/settings";
import type { ServerManager } from "./common/server";
import type { Capsule, CompactionResult, ContextPlan, MessageIn, Pin, PlanItem, Reflection, Suggestion, UsageReport } from "./protocol.generated";
import { mergeReflection, suggestionReflection } from "./reflections";
import type { SessionLists, SessionState } from "./session";
import { whatIfDiff, type WhatIf } from "./whatIf";

export class NotRunning extends Error {
  constructor(detail?: string) {
    super(`ctx-lsp is not running${detail ? `: ${detail}` : ""}. See "ctx: Show Server Output", or run "ctx: Restart Server".`);
  }
}

export class Controller implements vscode.Disposable {
  private planRequests = 0;
  private refreshTimer: NodeJS.Timeout | undefined;
  /**
   * The server plans for us (the gateway's active conversation): after a change, show the plan the
   * server made for the conversation's latest question instead of re-planning our own query.
   */
  followsServer: () => boolean = () => false;

  constructor(
    private readonly server: ServerManager,
    readonly state: SessionState,
  ) {}

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
  }

  private get client(): LanguageClient {
    const c = this.server.client;
    if (!c) throw new NotRunning(this.server.lastError);
    return c;
  }

  /** An action of ours is running: the server's re-plan notifications are not ours to follow. */
  get busy(): boolean {
    return this.planRequests > 0;
  }

  // ---- keeping the state current ------------------------------------------------------------

  /** Everything from the server, e.g. after a (re)start. */
  async refreshAll(): Promise<void> {
    const client = this.client;
    const [meter, lists] = await Promise.all([
      request(client, "ctx/showBudget", { session: this.state.session }),
      this.fetchLists(client),
    ]);
    this.state.meter = meter;
    this.state.setLists(lists, "meter");
    if (meter.planId && meter.planId !== this.state.plan?.planId) await this.loadPlan(meter.planId);
    else if (!meter.planId && this.state.plan) this.setPlan(undefined, undefined);
    this.refreshCodeLenses();
  }

  /** The pins, ledger and reflections again, soon (notifications come in bursts). */
  scheduleRefresh(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refreshPinsAndLedger().catch((err) => log.warn(`refresh: ${describeError(err, "ctx/listPins")}`));
    }, 50);
  }

  async refreshPinsAndLedger(): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    this.state.setLists(await this.fetchLists(client));
    this.refreshCodeLenses();
  }

  /** ctx/listPins, ctx/listExcluded and the reflection lists. */
  private async fetchLists(client: LanguageClient): Promise<SessionLists> {
    const session = this.state.session;
    const [pins, ledger, [suggestions, reflections]] = await Promise.all([
      request(client, "ctx/listPins", { session }),
      request(client, "ctx/listExcluded", { session }),
      this.fetchReflection(client),
    ]);
    return { pins, ledger: ledger.turns, suggestions, reflections };
  }

  /** ctx/listSuggestions and ctx/listReflections (empty from a server without reflection). */
  private async fetchReflection(client: LanguageClient): Promise<[Suggestion[], Reflection[]]> {
    const session = this.state.session;
    try {
      return await Promise.all([
        request(client, "ctx/listSuggestions", { session }),
        request(client, "ctx/listReflections", { session }),
      ]);
    } catch (err) {
      if (!isMethodNotFound(err)) log.warn(`suggestions: ${describeError(err, "ctx/listSuggestions")}`);
      return [[], []];
    }
  }

  /** The model's suggestions and the reflections again (a plan arrived). */
  async refreshSuggestions(): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    [this.state.suggestions, this.state.reflections] = await this.fetchReflection(client);
    this.state.fire("suggestions");
  }

  /** The plan with this id, rebuilt by the server from its stored inputs. */
  async loadPlan(planId: string): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    const seq = this.state.planSeq;
    try {
      const replay = await request(client, "ctx/replayPlan", { planId });
      if (!replay.identical) log.warn(`plan ${planId} replayed as ${replay.replayedPlanId} (inputs changed)`);
      let query = this.state.ledger.find((t) => t.planId === planId)?.query;
      if (query === undefined) {
        const ledger = await request(client, "ctx/listExcluded", { session: this.state.session, planId });
        query = ledger.turns[0]?.query ?? this.state.query;
      }
      if (seq !== this.state.planSeq) return; // a newer plan arrived meanwhile
      this.setPlan(replay.plan, query);
    } catch (err) {
      log.warn(`could not load plan ${planId}: ${describeError(err, "ctx/replayPlan")}`);
    }
  }

  /** Ask the server to refresh its code lenses ("Pin to context" <-> "Pinned · ttl · unpin"). */
  refreshCodeLenses(): void {
    const client = this.server.client;
    if (!client) return;
    try {
      const feature = client.getFeature(CodeLensRequest.method);
      const seen = new Set<string>();
      for (const editor of vscode.window.visibleTextEditors) {
        const key = editor.document.uri.toString();
        if (seen.has(key)) continue;
        seen.add(key);
        feature.getProvider(editor.document)?.onDidChangeCodeLensEmitter.fire();
      }
    } catch (err) {
      log.debug(`code lens refresh: ${String(err)}`);
    }
  }

  private setPlan(plan: ContextPlan | undefined, query: string | undefined, params?: ParamsOf<"ctx/planContext">): void {
    this.state.setPlan(plan, query, params);
    if (plan) void this.refreshSuggestions().catch((err) => log.warn(`suggestions: ${describeError(err, "ctx/listSuggestions")}`));
  }

  // ---- planning -----------------------------------------------------------------------------

  /** The plan request's parameters from the settings and the editor (focus, open files). */
  planParams(query: string): ParamsOf<"ctx/planContext"> {
    const s = getSettings();
    const params: ParamsOf<"ctx/planContext"> = { query, session: this.state.session };
    if (s.model) params.model = s.model;
    if (s.ragBudget !== null) params.ragBudget = s.ragBudget;
    const root = vscode.workspace.workspaceFolders?.[0]?.uri;
    const inWorkspace = (u: vscode.Uri) =>
      u.scheme === "file" && !!root && vscode.workspace.getWorkspaceFolder(u)?.uri.toString() === root.toString();
    const editor = vscode.window.activeTextEditor;
    if (editor && inWorkspace(editor.document.uri)) {
      const p = editor.selection.active;
      params.focus = { uri: editor.document.uri.toString(), position: { line: p.line, character: p.character } };
    }
    const open = vscode.window.visibleTextEditors.map((e) => e.document.uri).filter(inWorkspace);
    if (open.length) params.openFiles = [...new Set(open.map((u) => u.toString()))];
    return params;
  }

  /** Plan for `query` with the settings and the editor's focus; the tree, meter and preview follow. */
  async planFor(query: string): Promise<ContextPlan> {
    return this.ours(async () => {
      const params = this.planParams(query);
      const plan = await request(this.client, "ctx/planContext", params);
      this.setPlan(plan, query, params);
      return plan;
    });
  }

  /**
   * Run a state-changing action of ours. Meanwhile the server's own re-plan notifications are
   * ignored: afterwards we re-plan the current query with the user's settings (the server's
   * re-plan uses only the query), so the tree shows what the next request will send.
   */
  async ours<T>(fn: () => Promise<T>): Promise<T> {
    this.planRequests++;
    try {
      return await fn();
    } finally {
      this.planRequests--;
    }
  }

  /**
   * After a pin, unpin, restore or mode switch: re-plan the current query, refresh the rest. When
   * the server plans for us (the gateway), its re-plan of the latest question is the one shown.
   */
  async afterChange(): Promise<void> {
    await this.ours(async () => {
      const query = this.state.query;
      if (query && !this.followsServer()) {
        try {
          await this.planFor(query);
        } catch (err) {
          log.warn(`re-plan: ${describeError(err, "ctx/planContext")}`);
          await this.refreshAll();
        }
      } else await this.refreshAll();
      await this.refreshPinsAndLedger();
    });
  }

  /** What pinning `item` would change, from a dry-run plan with it as an extra pin. */
  async whatIf(item: PlanItem): Promise<WhatIf> {
    if (!item.symbol) throw new Error(`${item.title} is not code and cannot be pinned`);
    const { plan, query } = this.state;
    if (!plan || !query) throw new Error("Plan for a query first: the what-if compares against the current plan.");
    const base = this.state.params ?? this.planParams(query);
    const params = { ...base, mode: plan.mode, dryRun: true, extraPins: [{ symbol: item.symbol }] };
    const dry = await request(this.client, "ctx/planContext", params);
    return whatIfDiff(plan, dry);
  }

  async render(format: PreviewFormat, planId?: string) {
    return request(this.client, "ctx/renderPrompt", { planId, format, session: this.state.session });
  }

  // ---- changes (each re-plans) ----------------------------------------------------------------

  /** A change of ours on the server, then the re-plan. */
  private change<T>(fn: (client: LanguageClient, session: string | undefined) => Promise<T>): Promise<T> {
    return this.ours(async () => {
      const out = await fn(this.client, this.state.session);
      await this.afterChange();
      return out;
    });
  }

  async pin(req: Omit<ParamsOf<"ctx/pinSymbol">, "session">): Promise<Pin> {
    return this.change((client, session) => request(client, "ctx/pinSymbol", { ...req, session }));
  }

  async unpin(pinId: string): Promise<Pin> {
    return this.change((client, session) => request(client, "ctx/unpin", { pinId, session }));
  }

  async restore(itemId: string, planId?: string): Promise<Pin> {
    return this.change((client, session) => request(client, "ctx/restoreItem", { itemId, planId, session }));
  }

  async setMode(mode: Mode): Promise<Mode> {
    const out = await this.change((client, session) => request(client, "ctx/setMode", { mode, session }));
    return out.mode;
  }

  /** Undo a reflection: a promotion's automatic pin goes, a demoted lease comes back, a suggestion is dismissed. */
  async undoReflection(id: number): Promise<Reflection> {
    return this.change(async (client, session) => {
      const out = await request(client, "ctx/undoReflection", { id, session });
      this.state.reflections = mergeReflection(this.state.reflections, out);
      return out;
    });
  }

  /** Pin a suggested item: only ever on the user's request. */
  async pinSuggestion(item: string): Promise<Pin> {
    return this.pin({ symbol: item });
  }

  /** Dismiss a suggestion (undo the reflection that recorded it). */
  async dismissSuggestion(item: string): Promise<Reflection> {
    let r = suggestionReflection(this.state.reflections, item);
    if (!r) {
      await this.refreshSuggestions();
      r = suggestionReflection(this.state.reflections, item);
    }
    if (!r) throw new Error(`no open suggestion of ${item}`);
    return this.undoReflection(r.id);
  }

  /** Rebuild capsules (`paths`, or all), drop their stale marks, re-plan. */
  async refreshCapsules(paths?: string[]): Promise<void> {
    await request(this.client, "ctx/refreshCapsules", paths ? { paths } : {});
    for (const p of paths ?? [...this.state.stalePaths]) this.state.stalePaths.delete(p);
    await this.afterChange();
  }

  // ---- other requests -------------------------------------------------------------------------

  /** The reflections again from the server (for "Undo an Automatic Pin Change…"). */
  async listReflections(): Promise<Reflection[]> {
    this.state.reflections = await request(this.client, "ctx/listReflections", { session: this.state.session });
    this.state.fire("suggestions");
    return this.state.reflections;
  }

  async listCapsules(): Promise<Capsule[]> {
    return request(this.client, "ctx/listCapsules", { session: this.state.session });
  }

  /** ctx/compact: a proposal (dryRun) or the compaction itself. */
  async compact(params: Omit<ParamsOf<"ctx/compact">, "session">): Promise<CompactionResult> {
    return request(this.client, "ctx/compact", { ...params, session: this.state.session });
  }

  /** Add messages to the session's conversation (ctx/appendMessages). */
  async appendMessages(messages: MessageIn[]): Promise<void> {
    await request(this.client, "ctx/appendMessages", { messages, session: this.state.session });
  }

  /** Report a model call's usage for a plan: the turn ends and the server reflects on it. */
  async reportUsage(planId: string, inputTokens: number, outputTokens: number): Promise<UsageReport> {
    return request(this.client, "ctx/reportUsage", { planId, inputTokens, outputTokens, session: this.state.session });
  }

  /** Run an action; show a failure as a message a person can act on, never throw. */
  async guard<T>(what: string, fn: () => Promise<T>, method = what): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      const msg = err instanceof NotRunning ? err.message : `ctx: ${what} failed: ${describeError(err, method)}`;
      log.warn(msg);
      void vscode.window.showErrorMessage(msg, "Show Output").then((a) => a && getLog()?.show(true));
      return undefined;
    }
  }
}
