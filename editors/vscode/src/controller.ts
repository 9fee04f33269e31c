// The client's view of the session: the current plan, meter, pins, dropped ledger, stale
// capsules, the model's suggestions and the reflections (automatic pins and why), kept current
// from the server's notifications. Views render it; commands call its actions. It never decides
// anything the server decides: nothing is pinned unless the user asks.
import * as vscode from "vscode";
import { CodeLensRequest } from "vscode-languageclient";
import type { LanguageClient } from "vscode-languageclient/node";
import { describeError, isMethodNotFound, onNotification, request, type ParamsOf } from "./common/protocol";
import { log, getLog } from "./common/log";
import { getSettings, type Mode, type PreviewFormat } from "./common/settings";
import type { ServerManager } from "./common/server";
import type {
  AskRepin,
  BudgetMeter,
  Capsule,
  CapsulesStale,
  Compacted,
  CompactionResult,
  ContextPlan,
  LedgerTurn,
  MessageIn,
  Pin,
  PlanChanged,
  PlanItem,
  Reflected,
  Reflection,
  Suggestion,
  UsageReport,
} from "./protocol.generated";
import { reflectionLogLine, reflectionNotice } from "./notices";
import { mergeReflection, suggestionReflection } from "./reflections";
import { whatIfDiff, type WhatIf } from "./whatIf";

export type Change = "plan" | "meter" | "pins" | "ledger" | "stale" | "suggestions";

export class NotRunning extends Error {
  constructor(detail?: string) {
    super(`ctx-lsp is not running${detail ? `: ${detail}` : ""}. See "ctx: Show Server Output", or run "ctx: Restart Server".`);
  }
}

export class Controller implements vscode.Disposable {
  plan: ContextPlan | undefined;
  query: string | undefined;
  meter: BudgetMeter | undefined;
  pins: Pin[] = [];
  ledger: LedgerTurn[] = [];
  /** Workspace-relative paths of capsules the server reported stale. */
  stalePaths = new Set<string>();
  /** ctx/listSuggestions: the model's suggestions (the view lists the open ones). */
  suggestions: Suggestion[] = [];
  /** ctx/listReflections, kept current by ctx/reflected: promotions, renewals, demotions, suggestions. */
  reflections: Reflection[] = [];
  /** Every ctx/reflected, as it came (tests and the log read it). */
  readonly reflected: Reflected[] = [];
  private planRequests = 0;
  private planSeq = 0;
  private lastParams: ParamsOf<"ctx/planContext"> | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly emitter = new vscode.EventEmitter<Change>();
  readonly onDidChange = this.emitter.event;

  constructor(private readonly server: ServerManager) {}

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.emitter.dispose();
  }

  private get client(): LanguageClient {
    const c = this.server.client;
    if (!c) throw new NotRunning(this.server.lastError);
    return c;
  }

  get session(): string | undefined {
    return getSettings().session || undefined;
  }

  private fire(...changes: Change[]): void {
    for (const c of changes) this.emitter.fire(c);
  }

  // ---- notifications ----------------------------------------------------------------------

  /** Registered on every new client, before it starts (server.ts ClientHooks.configure). */
  configure(client: LanguageClient): vscode.Disposable[] {
    return [
      onNotification(client, "ctx/budgetChanged", (m) => this.onBudget(m)),
      onNotification(client, "ctx/planChanged", (p) => this.onPlanChanged(p)),
      onNotification(client, "ctx/askRepin", (p) => void this.onAskRepin(p)),
      onNotification(client, "ctx/reflected", (r) => void this.onReflected(r)),
      onNotification(client, "ctx/capsulesStale", (p) => void this.onCapsulesStale(p)),
      onNotification(client, "ctx/compacted", (p) => void this.onCompacted(p)),
    ];
  }

  private onBudget(m: BudgetMeter): void {
    if (this.session && m.session !== this.session) return;
    this.meter = m;
    this.fire("meter");
    this.scheduleRefresh(); // pins may have changed (TTLs, repins) and the ledger grows per turn
  }

  private onPlanChanged(p: PlanChanged): void {
    if (this.session && p.session !== this.session) return;
    if (this.plan?.planId === p.planId) return;
    // Our own planContext answers with the plan itself; anything else (a pin, a mode switch, a
    // usage report) re-planned on the server: fetch that plan by id.
    if (this.planRequests > 0) return;
    void this.loadPlan(p.planId);
  }

  private async onAskRepin(p: AskRepin): Promise<void> {
    const names = p.pins.map((x) => x.title).join(", ");
    const action = await vscode.window.showWarningMessage(
      `ctx: the TTL of ${p.pins.length === 1 ? "a pin" : `${p.pins.length} pins`} ran out: ${names}. Pin again?`,
      "Re-pin",
      "Let Go",
    );
    if (action !== "Re-pin") return;
    for (const pin of p.pins) {
      if (!pin.symbol) continue;
      await this.guard("re-pin", () =>
        this.pin({ symbol: pin.symbol, kind: pin.kind, ttl: pin.ttl, policy: pin.policy }),
      );
    }
  }

  /**
   * The server reflected on a turn. Promotions and demotions are shown with an Undo; renewals
   * and suggestions are only logged. The suggestions, pins and the reasons of automatic pins are
   * fetched again (the server re-plans by itself and says so with ctx/planChanged).
   */
  private async onReflected(r: Reflected): Promise<void> {
    if (this.session && r.session !== this.session) return;
    this.reflected.push(r);
    this.reflections = mergeReflection(this.reflections, r);
    log.info(reflectionLogLine(r));
    this.fire("suggestions");
    this.scheduleRefresh();
    const notice = reflectionNotice(r);
    if (!notice) return;
    const action = await vscode.window.showInformationMessage(notice, "Undo");
    if (action === "Undo") await this.guard("undo", () => this.undoReflection(r.id), "ctx/undoReflection");
  }

  private async onCapsulesStale(p: CapsulesStale): Promise<void> {
    const paths = (p.capsules ?? []).map((c) => c.path).filter((x): x is string => typeof x === "string");
    for (const path of paths) this.stalePaths.add(path);
    this.fire("stale");
    if (!paths.length) return;
    const shown = paths.slice(0, 3).join(", ") + (paths.length > 3 ? ` and ${paths.length - 3} more` : "");
    const action = await vscode.window.showWarningMessage(
      `ctx: ${paths.length === 1 ? "a capsule is" : `${paths.length} capsules are`} stale (the code changed): ${shown}`,
      "Refresh",
    );
    if (action === "Refresh") await vscode.commands.executeCommand("ctx.refreshCapsules", paths);
  }

  private async onCompacted(p: Compacted): Promise<void> {
    if (this.session && p.session && p.session !== this.session) return;
    const c: Partial<CompactionResult> = p.compaction ?? {};
    const parts: string[] = [];
    if (c.archivedIds) parts.push(`${c.archivedIds.length} messages archived`);
    if (typeof c.tokensBefore === "number" && typeof c.tokensAfter === "number")
      parts.push(`${c.tokensBefore} → ${c.tokensAfter} tokens`);
    const action = await vscode.window.showInformationMessage(
      `ctx: the conversation was compacted${parts.length ? ` (${parts.join(", ")})` : ""}.`,
      "Show Summary",
    );
    if (action === "Show Summary") await showSummary(c);
  }

  // ---- state ------------------------------------------------------------------------------

  /** Everything from the server, e.g. after a (re)start. */
  async refreshAll(): Promise<void> {
    const client = this.client;
    const session = this.session;
    const [meter, pins, ledger, reflection] = await Promise.all([
      request(client, "ctx/showBudget", { session }),
      request(client, "ctx/listPins", { session }),
      request(client, "ctx/listExcluded", { session }),
      this.fetchReflection(client),
    ]);
    this.meter = meter;
    this.pins = pins;
    this.ledger = ledger.turns;
    [this.suggestions, this.reflections] = reflection;
    this.fire("meter", "pins", "ledger", "suggestions");
    if (meter.planId && meter.planId !== this.plan?.planId) await this.loadPlan(meter.planId);
    else if (!meter.planId && this.plan) this.setPlan(undefined, undefined);
    this.refreshCodeLenses();
  }

  private scheduleRefresh(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refreshPinsAndLedger().catch((err) => log.warn(`refresh: ${describeError(err, "ctx/listPins")}`));
    }, 50);
  }

  async refreshPinsAndLedger(): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    const session = this.session;
    const [pins, ledger, reflection] = await Promise.all([
      request(client, "ctx/listPins", { session }),
      request(client, "ctx/listExcluded", { session }),
      this.fetchReflection(client),
    ]);
    this.pins = pins;
    this.ledger = ledger.turns;
    [this.suggestions, this.reflections] = reflection;
    this.fire("pins", "ledger", "suggestions");
    this.refreshCodeLenses();
  }

  /** ctx/listSuggestions and ctx/listReflections (empty from a server without reflection). */
  private async fetchReflection(client: LanguageClient): Promise<[Suggestion[], Reflection[]]> {
    const session = this.session;
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
    [this.suggestions, this.reflections] = await this.fetchReflection(client);
    this.fire("suggestions");
  }

  /** The plan with this id, rebuilt by the server from its stored inputs. */
  private async loadPlan(planId: string): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    const seq = this.planSeq;
    try {
      const replay = await request(client, "ctx/replayPlan", { planId });
      if (!replay.identical) log.warn(`plan ${planId} replayed as ${replay.replayedPlanId} (inputs changed)`);
      let query = this.ledger.find((t) => t.planId === planId)?.query;
      if (query === undefined) {
        const ledger = await request(client, "ctx/listExcluded", { session: this.session, planId });
        query = ledger.turns[0]?.query ?? this.query;
      }
      if (seq !== this.planSeq) return; // a newer plan arrived meanwhile
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

  // ---- actions ----------------------------------------------------------------------------

  /** The plan request's parameters from the settings and the editor (focus, open files). */
  planParams(query: string): ParamsOf<"ctx/planContext"> {
    const s = getSettings();
    const params: ParamsOf<"ctx/planContext"> = { query, session: this.session };
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

  private setPlan(plan: ContextPlan | undefined, query: string | undefined, params?: ParamsOf<"ctx/planContext">): void {
    this.planSeq++;
    this.plan = plan;
    this.query = query;
    this.lastParams = params;
    this.fire("plan");
    if (plan) void this.refreshSuggestions().catch((err) => log.warn(`suggestions: ${describeError(err, "ctx/listSuggestions")}`));
  }

  /** After a pin, unpin, restore or mode switch: re-plan the current query, refresh the rest. */
  async afterChange(): Promise<void> {
    await this.ours(async () => {
      if (this.query) {
        try {
          await this.planFor(this.query);
        } catch (err) {
          log.warn(`re-plan: ${describeError(err, "ctx/planContext")}`);
          await this.refreshAll();
        }
      } else await this.refreshAll();
      await this.refreshPinsAndLedger();
    });
  }

  async pin(req: Omit<ParamsOf<"ctx/pinSymbol">, "session">): Promise<Pin> {
    return this.ours(async () => {
      const pin = await request(this.client, "ctx/pinSymbol", { ...req, session: this.session });
      await this.afterChange();
      return pin;
    });
  }

  async unpin(pinId: string): Promise<Pin> {
    return this.ours(async () => {
      const pin = await request(this.client, "ctx/unpin", { pinId, session: this.session });
      await this.afterChange();
      return pin;
    });
  }

  async restore(itemId: string, planId?: string): Promise<Pin> {
    return this.ours(async () => {
      const pin = await request(this.client, "ctx/restoreItem", { itemId, planId, session: this.session });
      await this.afterChange();
      return pin;
    });
  }

  async setMode(mode: Mode): Promise<Mode> {
    return this.ours(async () => {
      const out = await request(this.client, "ctx/setMode", { mode, session: this.session });
      await this.afterChange();
      return out.mode;
    });
  }

  /** Undo a reflection: a promotion's automatic pin goes, a demoted lease comes back, a suggestion is dismissed. */
  async undoReflection(id: number): Promise<Reflection> {
    return this.ours(async () => {
      const out = await request(this.client, "ctx/undoReflection", { id, session: this.session });
      this.reflections = mergeReflection(this.reflections, out);
      await this.afterChange();
      return out;
    });
  }

  /** Pin a suggested item: only ever on the user's request. */
  async pinSuggestion(item: string): Promise<Pin> {
    return this.pin({ symbol: item });
  }

  /** Dismiss a suggestion (undo the reflection that recorded it). */
  async dismissSuggestion(item: string): Promise<Reflection> {
    let r = suggestionReflection(this.reflections, item);
    if (!r) {
      await this.refreshSuggestions();
      r = suggestionReflection(this.reflections, item);
    }
    if (!r) throw new Error(`no open suggestion of ${item}`);
    return this.undoReflection(r.id);
  }

  /** The reflections again from the server (for "Undo an Automatic Pin Change…"). */
  async listReflections(): Promise<Reflection[]> {
    this.reflections = await request(this.client, "ctx/listReflections", { session: this.session });
    this.fire("suggestions");
    return this.reflections;
  }

  /** Add messages to the session's conversation (ctx/appendMessages). */
  async appendMessages(messages: MessageIn[]): Promise<void> {
    await request(this.client, "ctx/appendMessages", { messages, session: this.session });
  }

  /** Report a model call's usage for a plan: the turn ends and the server reflects on it. */
  async reportUsage(planId: string, inputTokens: number, outputTokens: number): Promise<UsageReport> {
    return request(this.client, "ctx/reportUsage", { planId, inputTokens, outputTokens, session: this.session });
  }

  /** What pinning `item` would change, from a dry-run plan with it as an extra pin. */
  async whatIf(item: PlanItem): Promise<WhatIf> {
    if (!item.symbol) throw new Error(`${item.title} is not code and cannot be pinned`);
    const plan = this.plan;
    if (!plan || !this.query) throw new Error("Plan for a query first: the what-if compares against the current plan.");
    const base = this.lastParams ?? this.planParams(this.query);
    const params = { ...base, mode: plan.mode, dryRun: true, extraPins: [{ symbol: item.symbol }] };
    const dry = await request(this.client, "ctx/planContext", params);
    return whatIfDiff(plan, dry);
  }

  async render(format: PreviewFormat, planId?: string) {
    return request(this.client, "ctx/renderPrompt", { planId, format, session: this.session });
  }

  async listCapsules(): Promise<Capsule[]> {
    return request(this.client, "ctx/listCapsules", { session: this.session });
  }

  /** Rebuild capsules (`paths`, or all), drop their stale marks, re-plan. */
  async refreshCapsules(paths?: string[]): Promise<void> {
    await request(this.client, "ctx/refreshCapsules", paths ? { paths } : {});
    for (const p of paths ?? [...this.stalePaths]) this.stalePaths.delete(p);
    await this.afterChange();
  }

  /** ctx/compact: a proposal (dryRun) or the compaction itself. */
  async compact(params: Omit<ParamsOf<"ctx/compact">, "session">): Promise<CompactionResult> {
    return request(this.client, "ctx/compact", { ...params, session: this.session });
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

export async function showSummary(p: Partial<CompactionResult>): Promise<void> {
  const summary =
    typeof p.summary === "string" && p.summary.trim()
      ? p.summary
      : "```json\n" + JSON.stringify(p, null, 2) + "\n```";
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: `# Compaction summary\n\n${summary}\n` });
  await vscode.window.showTextDocument(doc, { preview: true });
}
