// The gateway's status bar item, shown while the server's gateway listens: "ctx ⇄ 12 · 41.2k/180k ·
// cache 83%" (the server's label), updated on each ctx/gatewayRequest; the tooltip has the URL
// and the latest request's numbers; a warning background while a request waits for review.
// Click: the conversations picker.
import * as vscode from "vscode";
import type { GatewayClient } from "../gateway";
import { gatewayText, gatewayTooltip } from "../gatewayModel";

export class GatewayStatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];
  private listening: boolean | undefined;

  constructor(private readonly gateway: GatewayClient) {
    this.item = vscode.window.createStatusBarItem("ctx.gateway", vscode.StatusBarAlignment.Right, 99);
    this.item.name = "ctx gateway";
    this.item.command = "ctx.selectConversation";
    this.subs.push(gateway.onDidChange(() => this.render()));
    this.render();
  }

  private render(): void {
    const status = this.gateway.status;
    if (!!status?.listening !== this.listening) {
      this.listening = !!status?.listening; // the Context view's "Select Conversation", "Show Sent Request"
      void vscode.commands.executeCommand("setContext", "ctx.gatewayListening", this.listening);
    }
    if (!status?.listening) {
      this.item.hide();
      return;
    }
    const waiting = this.gateway.waiting.length;
    this.item.text = gatewayText(status.label);
    const md = new vscode.MarkdownString(gatewayTooltip(status, status.latest, waiting), true);
    md.isTrusted = false;
    this.item.tooltip = md;
    this.item.backgroundColor = waiting ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.accessibilityInformation = {
      label: `ctx gateway on ${status.listening}: ${status.label}${waiting ? `, ${waiting} waiting for review` : ""}`,
    };
    this.item.show();
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.item.dispose();
  }
}
