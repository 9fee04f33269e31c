// The gateway's status bar item, shown while the server's gateway listens: "ctx ⇄ 12 · 41.2k/180k ·
// 83% cached · cache warm 4:12 · saved $1.20" (the server's label, the active conversation's prompt
// cache counted down from the server's timestamp, the server's savings words), updated on each
// ctx/gatewayRequest and ctx/gatewayStatusChanged; the tooltip has the URL, what the cache and the
// savings mean, and the latest request's numbers; a warning background while a request waits for
// review. Click: the conversations picker.
import * as vscode from "vscode";
import type { GatewayClient } from "../gateway";
import { gatewayText, gatewayTooltip } from "../gatewayModel";
import { nextTickMs } from "../promptCache";

export class GatewayStatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];
  private listening: boolean | undefined;
  /** The countdown's next step: set only while the item is shown and the cache is warm. */
  private tick: NodeJS.Timeout | undefined;

  constructor(private readonly gateway: GatewayClient) {
    this.item = vscode.window.createStatusBarItem("ctx.gateway", vscode.StatusBarAlignment.Right, 99);
    this.item.name = "ctx gateway";
    this.item.command = "ctx.selectConversation";
    this.subs.push(gateway.onDidChange(() => this.render()));
    this.render();
  }

  private render(): void {
    this.stopTicking();
    const status = this.gateway.status;
    if (!!status?.listening !== this.listening) {
      this.listening = !!status?.listening; // the Context view's "Select Conversation", "Show Sent Request"
      void vscode.commands.executeCommand("setContext", "ctx.gatewayListening", this.listening);
    }
    if (!status?.listening) {
      this.item.hide();
      return;
    }
    const now = Date.now();
    const waiting = this.gateway.waiting.length;
    const text = gatewayText(status, now);
    this.item.text = text;
    const md = new vscode.MarkdownString(gatewayTooltip(status, status.latest, now, waiting), true);
    md.isTrusted = false;
    this.item.tooltip = md;
    this.item.backgroundColor = waiting ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.accessibilityInformation = {
      label: `ctx gateway on ${status.listening}: ${text.replace(/^ctx /, "")}${waiting ? `, ${waiting} waiting for review` : ""}`,
    };
    this.item.show();
    // While warm, the next second of the countdown; its last step renders "cache cold" and stops.
    const next = nextTickMs(status, now);
    if (next !== undefined) this.tick = setTimeout(() => this.render(), next);
  }

  private stopTicking(): void {
    if (this.tick) clearTimeout(this.tick);
    this.tick = undefined;
  }

  dispose(): void {
    this.stopTicking();
    for (const s of this.subs) s.dispose();
    this.item.dispose();
  }
}
