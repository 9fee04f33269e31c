// The status bar meter: "$(dashboard) ctx 41.2k / 120k", tooltip with per-section usage, the
// estimator and est vs actual; warning / error background at 80% / 95%; click opens the view.
import * as vscode from "vscode";
import type { ServerManager, ServerState } from "../common/server";
import { meterText, meterTooltip, serverStateText, severityOf } from "../meter";
import type { SessionState } from "../session";

export class MeterStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly session: SessionState,
    private readonly server: ServerManager,
  ) {
    this.item = vscode.window.createStatusBarItem("ctx.meter", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "ctx budget meter";
    this.item.command = "ctx.showContext";
    this.subs.push(
      session.onDidChange((c) => c === "meter" && this.render()),
      server.onDidChangeState(() => this.render()),
    );
    this.render();
    this.item.show();
  }

  private render(): void {
    const state: ServerState = this.server.state;
    const meter = this.session.meter;
    if (state === "running" && meter) {
      this.item.text = meterText(meter);
      const md = new vscode.MarkdownString(meterTooltip(meter), true);
      md.isTrusted = false;
      this.item.tooltip = md;
      const sev = severityOf(meter.percent);
      this.item.backgroundColor =
        sev === "error"
          ? new vscode.ThemeColor("statusBarItem.errorBackground")
          : sev === "warning"
            ? new vscode.ThemeColor("statusBarItem.warningBackground")
            : undefined;
      this.item.accessibilityInformation = {
        label: `${meter.text || "ctx"}: ${meter.used} of ${meter.promptBudget} prompt tokens used (${meter.percent}%)`,
      };
      return;
    }
    this.item.text = serverStateText(state);
    this.item.backgroundColor = state === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.item.tooltip =
      state === "starting"
        ? "ctx-lsp is starting…"
        : state === "failed"
          ? `ctx-lsp failed: ${this.server.lastError ?? "see the output"}`
          : state === "stopped"
            ? "ctx-lsp is stopped. Run “ctx: Restart Server”."
            : "ctx-lsp is running; no budget yet.";
    this.item.accessibilityInformation = undefined;
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.item.dispose();
  }
}
