// The client's view of the session: the current plan, meter, pins, dropped ledger, stale
// capsules, the model's suggestions and the reflections (automatic pins and why), as the server
// last sent them, with an event per change. Views read it; only the controller and the
// notification handlers (src/notifications.ts) write it. Nothing here decides anything.
import * as vscode from "vscode";
import type { ParamsOf } from "./common/protocol";
import { getSettings } from "./common/settings";
import type { BudgetMeter, ContextPlan, LedgerTurn, Pin, Reflected, Reflection, Suggestion } from "./protocol.generated";

export type Change = "plan" | "meter" | "pins" | "ledger" | "stale" | "suggestions";

/** What ctx/listPins, ctx/listExcluded, ctx/listSuggestions and ctx/listReflections said. */
export interface SessionLists {
  pins: Pin[];
  ledger: LedgerTurn[];
  suggestions: Suggestion[];
  reflections: Reflection[];
}

export class SessionState implements vscode.Disposable {
  plan: ContextPlan | undefined;
  query: string | undefined;
  /** The ctx/planContext params of the plan shown, when this client asked for it (the what-if reuses them). */
  params: ParamsOf<"ctx/planContext"> | undefined;
  /** Counts the plans shown: an answer for an older one is not shown. */
  planSeq = 0;
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
  private readonly emitter = new vscode.EventEmitter<Change>();
  readonly onDidChange = this.emitter.event;

  /** The configured session (undefined: the server's default session of the workspace). */
  get session(): string | undefined {
    return getSettings().session || undefined;
  }

  /** Whether a message about `session` is about ours. */
  isOurs(session: string | undefined): boolean {
    return !this.session || session === this.session;
  }

  fire(...changes: Change[]): void {
    for (const c of changes) this.emitter.fire(c);
  }

  setPlan(plan: ContextPlan | undefined, query: string | undefined, params?: ParamsOf<"ctx/planContext">): void {
    this.planSeq++;
    this.plan = plan;
    this.query = query;
    this.params = params;
    this.fire("plan");
  }

  setMeter(meter: BudgetMeter): void {
    this.meter = meter;
    this.fire("meter");
  }

  /** The lists again; `also` names what else changed with them (fired first). */
  setLists(lists: SessionLists, ...also: Change[]): void {
    this.pins = lists.pins;
    this.ledger = lists.ledger;
    this.suggestions = lists.suggestions;
    this.reflections = lists.reflections;
    this.fire(...also, "pins", "ledger", "suggestions");
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
