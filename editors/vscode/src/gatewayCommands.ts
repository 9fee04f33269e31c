// The gateway's commands: select the active conversation, show the sent request, and answer a
// request held for review (Send, Re-plan, Cancel: editor title of the review document, palette).
import * as vscode from "vscode";
import { describeError } from "./common/protocol";
import { getSettings } from "./common/settings";
import type { Decision, GatewayClient } from "./gateway";
import { conversationPicks } from "./gatewayModel";
import type { PromptPreview } from "./views/preview";
import { reviewIdOf } from "./views/preview";
import type { ReviewPrompts } from "./views/review";

interface Deps {
  gateway: GatewayClient;
  preview: PromptPreview;
  reviews: ReviewPrompts;
}

async function notRunning(): Promise<void> {
  const a = await vscode.window.showInformationMessage(
    "ctx: the gateway is not running. Set “ctx.gateway.listen” (e.g. 127.0.0.1:8787) and restart the server.",
    "Open Settings",
  );
  if (a) await vscode.commands.executeCommand("workbench.action.openSettings", "ctx.gateway");
}

export function registerGatewayCommands({ gateway, preview, reviews }: Deps): vscode.Disposable[] {
  const selectConversation = async () => {
    if (!gateway.listening) return notRunning();
    let list;
    try {
      list = await gateway.listConversations();
    } catch (err) {
      void vscode.window.showErrorMessage(`ctx: list conversations failed: ${describeError(err, "ctx/listConversations")}`);
      return;
    }
    if (!list.length) {
      void vscode.window.showInformationMessage(`ctx: no conversation came through the gateway (${gateway.listening}) yet.`);
      return;
    }
    const pick = await vscode.window.showQuickPick(conversationPicks(list, Date.now() / 1000), {
      title: "ctx: Select Conversation",
      placeHolder: "The conversations the gateway served, newest first. Pins and the Context view follow the active one.",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!pick) return;
    try {
      await gateway.setActive(pick.session);
    } catch (err) {
      void vscode.window.showErrorMessage(`ctx: select conversation failed: ${describeError(err, "ctx/setActiveConversation")}`);
      return;
    }
    vscode.window.setStatusBarMessage(`$(arrow-swap) ctx: active conversation ${pick.session}`, 4000);
    const session = getSettings().session;
    if (session) {
      void vscode.window.showWarningMessage(
        `ctx: “ctx.session” is set to “${session}”: the editor's pins and plans go to that session, not to the active conversation. Clear it to follow the assistant.`,
      );
    }
  };

  /** The review an editor-title button or a palette command is about. */
  const review = (decision: Decision) => (uri?: unknown) => {
    const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    return reviews.decide(reviewIdOf(target), decision);
  };

  const reg = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, fn);
  return [
    reg("ctx.selectConversation", selectConversation),
    reg("ctx.showSentRequest", () => (gateway.listening ? preview.showSent() : notRunning())),
    reg("ctx.review.send", review("send")),
    reg("ctx.review.replan", review("replan")),
    reg("ctx.review.cancel", review("cancel")),
  ];
}
