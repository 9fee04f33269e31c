// The server's ctx/ notifications, registered on every new client before it starts (server.ts
// ClientHooks.configure): the meter, the latest plan, re-pin prompts, reflections, stale
// capsules and compactions. Each updates the session state, tells the user what a person should
// know (src/notices.ts has the words) and asks the controller for what follows.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { log } from "./common/log";
import { onNotification } from "./common/protocol";
import type { Controller } from "./controller";
import { askRepinMessage, compactedMessage, reflectionLogLine, reflectionNotice, staleMessage, stalePaths } from "./notices";
import type { AskRepin, BudgetMeter, CapsulesStale, Compacted, CompactionResult, PlanChanged, Reflected } from "./protocol.generated";
import { mergeReflection } from "./reflections";
import { showSummary } from "./views/compactionSummary";

export function registerNotifications(client: LanguageClient, controller: Controller): vscode.Disposable[] {
  const state = controller.state;

  const onBudget = (m: BudgetMeter): void => {
    if (!state.isOurs(m.session)) return;
    state.setMeter(m);
    controller.scheduleRefresh(); // pins may have changed (TTLs, repins) and the ledger grows per turn
  };

  const onPlanChanged = (p: PlanChanged): void => {
    if (!state.isOurs(p.session)) return;
    if (state.plan?.planId === p.planId) return;
    // Our own planContext answers with the plan itself; anything else (a pin, a mode switch, a
    // usage report) re-planned on the server: fetch that plan by id.
    if (controller.busy) return;
    void controller.loadPlan(p.planId);
  };

  const onAskRepin = async (p: AskRepin): Promise<void> => {
    const action = await vscode.window.showWarningMessage(askRepinMessage(p.pins), "Re-pin", "Let Go");
    if (action !== "Re-pin") return;
    for (const pin of p.pins) {
      if (!pin.symbol) continue;
      await controller.guard("re-pin", () =>
        controller.pin({ symbol: pin.symbol, kind: pin.kind, ttl: pin.ttl, policy: pin.policy }),
      );
    }
  };

  /**
   * The server reflected on a turn. Promotions and demotions are shown with an Undo; renewals
   * and suggestions are only logged. The suggestions, pins and the reasons of automatic pins are
   * fetched again (the server re-plans by itself and says so with ctx/planChanged).
   */
  const onReflected = async (r: Reflected): Promise<void> => {
    if (!state.isOurs(r.session)) return;
    state.reflected.push(r);
    state.reflections = mergeReflection(state.reflections, r);
    log.info(reflectionLogLine(r));
    state.fire("suggestions");
    controller.scheduleRefresh();
    const notice = reflectionNotice(r);
    if (!notice) return;
    const action = await vscode.window.showInformationMessage(notice, "Undo");
    if (action === "Undo") await controller.guard("undo", () => controller.undoReflection(r.id), "ctx/undoReflection");
  };

  const onCapsulesStale = async (p: CapsulesStale): Promise<void> => {
    const paths = stalePaths(p);
    for (const path of paths) state.stalePaths.add(path);
    state.fire("stale");
    if (!paths.length) return;
    const action = await vscode.window.showWarningMessage(staleMessage(paths), "Refresh");
    if (action === "Refresh") await vscode.commands.executeCommand("ctx.refreshCapsules", paths);
  };

  const onCompacted = async (p: Compacted): Promise<void> => {
    if (p.session && !state.isOurs(p.session)) return;
    const c: Partial<CompactionResult> = p.compaction ?? {};
    const action = await vscode.window.showInformationMessage(compactedMessage(c), "Show Summary");
    if (action === "Show Summary") await showSummary(c);
  };

  return [
    onNotification(client, "ctx/budgetChanged", onBudget),
    onNotification(client, "ctx/planChanged", onPlanChanged),
    onNotification(client, "ctx/askRepin", (p) => void onAskRepin(p)),
    onNotification(client, "ctx/reflected", (r) => void onReflected(r)),
    onNotification(client, "ctx/capsulesStale", (p) => void onCapsulesStale(p)),
    onNotification(client, "ctx/compacted", (p) => void onCompacted(p)),
  ];
}
