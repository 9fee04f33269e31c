// Wiring only (as in ruff-vscode): the log, the server manager, the session state, the
// controller, the notification handlers, the views and the commands; then start the server
// without holding up activation.
import * as vscode from "vscode";
import { registerCommands } from "./commands";
import { registerE2eCommands } from "./e2eCommands";
import { Controller } from "./controller";
import { createLog, log } from "./common/log";
import { describeError } from "./common/protocol";
import { ServerManager } from "./common/server";
import { gatewayChanged, getSettings, initializationOptions, needsRestart } from "./common/settings";
import { GatewayClient } from "./gateway";
import { registerGatewayCommands } from "./gatewayCommands";
import { registerNotifications } from "./notifications";
import { SessionState } from "./session";
import { ContextTree } from "./views/contextTree";
import { GatewayStatusItem } from "./views/gatewayStatus";
import { PinDecorations } from "./views/pinDecorations";
import { PromptPreview } from "./views/preview";
import { ReviewPrompts } from "./views/review";
import { MeterStatus } from "./views/statusBar";

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const channel = createLog();
  context.subscriptions.push(channel);
  log.info(`ctx ${context.extension.packageJSON.version} activating`);

  // The controller needs the manager (for the client) and the manager needs the notification
  // handlers, which need the controller: the hooks close over `controller`, assigned right below.
  let controller: Controller;
  let gateway: GatewayClient;
  server = new ServerManager({
    configure: (client) => [...registerNotifications(client, controller), ...gateway.register(client)],
    middleware: {
      workspace: {
        // The server pulls the section "ctx": answer with its settings only (ctx.server.settings,
        // ctx.model, ctx.mode, ctx.gateway), not the client's own (command, session, preview, trace).
        configuration: async (params, token, next) => {
          const answer = await next(params, token);
          if (!Array.isArray(answer)) return answer;
          return params.items.map((item, i) =>
            item.section === "ctx" ? initializationOptions(getSettings()).settings : answer[i],
          );
        },
      },
      // Code lens clicks run the server's ctx.pinSymbol / ctx.unpin: show failures, then re-plan.
      executeCommand: async (command, args, next) => {
        try {
          const result = await controller.ours(async () => {
            const r = await next(command, args);
            if (command === "ctx.pinSymbol" || command === "ctx.unpin") await controller.afterChange();
            return r;
          });
          return result;
        } catch (err) {
          void vscode.window.showErrorMessage(`ctx: ${command} failed: ${describeError(err, command)}`);
          return undefined;
        }
      },
    },
  });
  const state = new SessionState();
  controller = new Controller(server, state);
  gateway = new GatewayClient(server, controller);
  // With the gateway and no ctx.session, plans are the assistant's: the server's re-plans are shown.
  controller.followsServer = () => !!gateway.listening && !state.session;
  const decorations = new PinDecorations(context, state);
  const preview = new PromptPreview(controller, gateway);
  const reviews = new ReviewPrompts(gateway, preview);
  context.subscriptions.push(
    server,
    state,
    controller,
    new MeterStatus(state, server),
    new ContextTree(state, server),
    decorations,
    gateway,
    new GatewayStatusItem(gateway),
    preview,
    reviews,
    ...registerCommands({ controller, server, decorations, preview }),
    ...registerGatewayCommands({ gateway, preview, reviews }),
    ...registerE2eCommands(controller),
    server.onDidStart(() => void controller.refreshAll().catch((err) => log.warn(`refresh: ${describeError(err, "ctx/showBudget")}`))),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (needsRestart(e)) {
        log.info("settings changed: restarting ctx-lsp");
        void server?.restart();
      } else if (gatewayChanged(e)) {
        // The gateway starts with the server only: offer the restart (it ends held reviews).
        void vscode.window
          .showInformationMessage("ctx: the gateway settings take effect when the server restarts.", "Restart Server")
          .then((a) => a && server?.restart());
      } else if (e.affectsConfiguration("ctx.mode")) {
        const mode = getSettings().mode;
        if (mode && server?.client) void controller.guard("switch mode", () => controller.setMode(mode), "ctx/setMode");
      } else if (e.affectsConfiguration("ctx.ragBudget") && server?.client) {
        void controller.afterChange().catch(() => undefined);
      }
    }),
    // trusted now: the workspace's own settings apply (src/trust.ts), with a new server
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      log.info("workspace trusted: restarting ctx-lsp with the workspace's settings");
      void server?.restart();
    }),
  );
  setImmediate(() => void server?.restart());
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
