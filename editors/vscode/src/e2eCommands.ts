// Test-only commands, registered only when the extension host runs with CTX_E2E=1 (the
// end-to-end run sets it for code-server): they show in the palette under the context key
// `ctx.e2e`, and never in a user's VS Code.
import * as vscode from "vscode";
import type { Controller } from "./controller";
import { log } from "./common/log";

export const SCRIPT_TARGET = "shop.billing.invoice.calculate_invoice_total";

/**
 * A scripted conversation on the fixture workspace, through the controller as an assistant
 * would drive it: per turn, append the user's question, plan it (the view shows the plan),
 * append a reply that names calculate_invoice_total (the first one with a ```ctx-suggest block
 * naming shop.config.TAX_RATE and shop/storage.py) and report the usage. It stops once the
 * server promoted the function to an automatic pin (at most 6 turns).
 */
export async function scriptedSession(c: Controller): Promise<number> {
  const stamp = Date.now().toString(36);
  for (let k = 0; k < 6; k++) {
    const question = `how is the invoice total computed with discounts and tax, step ${k}?`;
    await c.appendMessages([{ id: `e2e-${stamp}-u${k}`, role: "user", content: question }]);
    const plan = await c.planFor(question);
    let reply = `Step ${k}: calculate_invoice_total sums the lines, then applies the discount and the tax.`;
    if (k === 0) reply += "\n```ctx-suggest\n- shop.config.TAX_RATE  # the rate every total uses\n- shop/storage.py\n```";
    await c.appendMessages([{ id: `e2e-${stamp}-a${k}`, role: "assistant", content: reply }]);
    const seen = c.state.reflected.length;
    await c.reportUsage(plan.planId, plan.totals.tokens, 40);
    const promoted = () => c.state.reflected.slice(seen).some((r) => r.kind === "promote" && r.item === SCRIPT_TARGET);
    for (let wait = 0; wait < 20 && !promoted(); wait++) await new Promise((r) => setTimeout(r, 50));
    log.info(`e2e script: turn ${k}, plan ${plan.planId} (task ${plan.clusterId}), ${c.state.reflected.length} reflections`);
    if (promoted()) return k + 1;
  }
  throw new Error(`no promotion of ${SCRIPT_TARGET} in 6 turns`);
}

export function registerE2eCommands(c: Controller): vscode.Disposable[] {
  if (process.env.CTX_E2E !== "1") return [];
  void vscode.commands.executeCommand("setContext", "ctx.e2e", true);
  return [
    vscode.commands.registerCommand("ctx.e2e.scriptedSession", async () => {
      const turns = await c.guard("scripted session", () => scriptedSession(c));
      if (turns) vscode.window.setStatusBarMessage(`ctx e2e: promoted after ${turns} turns`, 10000);
    }),
  ];
}
