// The client's commands. Server-side executeCommand commands (ctx.pinSymbol, ctx.unpin, ctx.plan,
// used by the code lenses) are registered by vscode-languageclient itself: ours have other ids.
import * as vscode from "vscode";
import type { Controller } from "./controller";
import { getLog, log } from "./common/log";
import { describeError } from "./common/protocol";
import type { ServerManager } from "./common/server";
import type { Mode } from "./common/settings";
import type { CompactParams, PlanItem } from "./protocol.generated";
import { choosePinTarget } from "./pinTarget";
import { promotionsByPin, undoable } from "./reflections";
import { location, type TreeNode } from "./treeItems";
import { whatIfSummary } from "./whatIf";
import { formatTokens } from "./meter";
import { showSummary } from "./views/compactionSummary";
import type { PinDecorations } from "./views/pinDecorations";
import type { PromptPreview } from "./views/preview";
import { VIEW_ID } from "./views/contextTree";

interface Deps {
  controller: Controller;
  server: ServerManager;
  decorations: PinDecorations;
  preview: PromptPreview;
}

/** How long "Pin Symbol at Cursor" waits for the definition providers (a language server still loading). */
const DEFINITION_TIMEOUT_MS = 3000;

/** The editor's definition providers at a position (every extension's: rust-analyzer, tsserver, gopls …). */
async function definitionsAt(uri: vscode.Uri, position: vscode.Position): Promise<(vscode.Location | vscode.LocationLink)[] | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>("vscode.executeDefinitionProvider", uri, position),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => {
          log.info(`no definition within ${DEFINITION_TIMEOUT_MS} ms: pinning at the cursor`);
          resolve(undefined);
        }, DEFINITION_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    log.debug(`no definition at the cursor: ${describeError(err, "vscode.executeDefinitionProvider")}`);
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function flash(text: string): void {
  vscode.window.setStatusBarMessage(text, 4000);
}

/** Open a workspace-relative path at a 0-based range. */
export async function openAt(path: string, range: PlanItem["range"]): Promise<void> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) return;
  const uri = vscode.Uri.joinPath(root, path);
  const selection = range
    ? new vscode.Range(range.start.line, range.start.character, range.start.line, range.start.character)
    : undefined;
  const editor = await vscode.window.showTextDocument(uri, { selection, preserveFocus: false, preview: true });
  if (range) {
    editor.revealRange(
      new vscode.Range(range.start.line, 0, range.end.line, range.end.character),
      vscode.TextEditorRevealType.InCenterIfOutsideViewport,
    );
  }
}

export function registerCommands({ controller, server, decorations, preview }: Deps): vscode.Disposable[] {
  const c = controller;
  const state = controller.state;
  const reg = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, fn);

  const planForQuery = async (query?: unknown) => {
    let q = typeof query === "string" ? query : undefined;
    if (q === undefined) {
      q = await vscode.window.showInputBox({
        title: "ctx: Plan for a Query",
        prompt: "The question to plan the prompt for: what goes in, what is left out, and why.",
        placeHolder: "e.g. how is the invoice total calculated?",
        value: state.query ?? "",
        ignoreFocusOut: true,
        validateInput: (v) => (v.trim() ? undefined : "Type a question."),
      });
    }
    if (!q || !q.trim()) return;
    const plan = await vscode.window.withProgress(
      { location: { viewId: VIEW_ID }, title: "Planning…" },
      () => c.guard("plan", () => c.planFor(q!.trim()), "ctx/planContext"),
    );
    if (plan) {
      flash(`$(dashboard) ctx: ${plan.totals.items} items, ${formatTokens(plan.totals.tokens)} tok; ${plan.totals.excluded} excluded`);
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    }
  };

  const switchMode = async (mode?: unknown) => {
    let m = typeof mode === "string" ? (mode as Mode) : undefined;
    if (!m) {
      const current = state.meter?.mode ?? state.plan?.mode;
      const picks: (vscode.QuickPickItem & { mode: Mode })[] = [
        { mode: "off", label: "off", detail: "No retrieved code: system prompt, pins and conversation only." },
        { mode: "light", label: "light", detail: "Symbol cards: signatures, docstrings, first lines." },
        { mode: "heavy", label: "heavy", detail: "Full bodies of the most relevant symbols." },
      ];
      for (const p of picks) if (p.mode === current) p.description = "current";
      const pick = await vscode.window.showQuickPick(picks, { title: "ctx: Switch Mode", placeHolder: `Retrieval mode (now ${current ?? "unknown"})` });
      m = pick?.mode;
    }
    if (!m) return;
    const out = await c.guard("switch mode", () => c.setMode(m!), "ctx/setMode");
    if (out) flash(`$(settings) ctx: mode ${out}`);
  };

  const pinAtCursor = async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const at = { uri: editor.document.uri, position: editor.selection.active };
    // At a use site, the definition the user's language servers find (in the workspace); the
    // server decides which symbol is at that position.
    const target = choosePinTarget(at, await definitionsAt(at.uri, at.position), vscode.workspace.workspaceFolders?.[0]?.uri);
    if (target.from === "definition") {
      log.info(`pin at cursor ${at.uri.toString()}:${at.position.line + 1}:${at.position.character + 1} -> its definition ${target.uri}:${target.position.line + 1}:${target.position.character + 1}`);
    }
    const pin = await c.guard("pin", () => c.pin({ textDocument: { uri: target.uri }, position: target.position }), "ctx/pinSymbol");
    if (pin) flash(`$(pin) ctx: pinned ${pin.title}${pin.tokens ? ` (${formatTokens(pin.tokens)} tok)` : ""}`);
  };

  const unpinAtCursor = async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const pin = decorations.pinAt(editor.document.uri, editor.selection.active.line);
    if (!pin) {
      void vscode.window.showInformationMessage("ctx: no pinned symbol at the cursor.");
      return;
    }
    const out = await c.guard("unpin", () => c.unpin(pin.id), "ctx/unpin");
    if (out) flash(`$(pinned) ctx: unpinned ${out.title}`);
  };

  const nodeItem = (node: TreeNode | undefined): PlanItem | undefined => node?.item;

  const whatIf = async (node?: TreeNode) => {
    const item = nodeItem(node);
    if (!item) return;
    const w = await c.guard("what-if", () => c.whatIf(item), "ctx/planContext");
    if (!w) return;
    type Pick = vscode.QuickPickItem & { act?: "pin" | "open"; item?: PlanItem };
    const picks: Pick[] = [
      { label: `$(pin) Pin ${item.title}`, description: whatIfSummary(w), act: "pin" },
      { label: "would evict", kind: vscode.QuickPickItemKind.Separator },
      ...(w.evicted.length
        ? w.evicted.map((i): Pick => ({
            label: `$(circle-slash) ${i.title}`,
            description: `${i.tokens} tok · ${i.section} · now ${i.reason}`,
            detail: location(i),
            act: i.path ? "open" : undefined,
            item: i,
          }))
        : [{ label: "$(check) nothing: it fits" } as Pick]),
    ];
    if (w.replaced.length) {
      picks.push({ label: "covered by the pin", kind: vscode.QuickPickItemKind.Separator });
      for (const i of w.replaced) picks.push({ label: `$(pass) ${i.title}`, description: `${i.tokens} tok`, item: i, act: i.path ? "open" : undefined });
    }
    const pick = await vscode.window.showQuickPick(picks, {
      title: `What if you pin ${item.title}? (dry run ${w.planId})`,
      placeHolder: whatIfSummary(w),
      matchOnDescription: true,
    });
    if (pick?.act === "pin" && item.symbol) {
      const pin = await c.guard("pin", () => c.pin({ symbol: item.symbol }), "ctx/pinSymbol");
      if (pin) flash(`$(pin) ctx: pinned ${pin.title}`);
    } else if (pick?.act === "open" && pick.item?.path) await openAt(pick.item.path, pick.item.range);
  };

  const capsules = async () => {
    try {
      const out = await c.listCapsules();
      const list = Array.isArray(out) ? out : [];
      if (!list.length) {
        void vscode.window.showInformationMessage("ctx: no capsules yet.");
        return;
      }
      const pick = await vscode.window.showQuickPick(
        list.map((cap) => ({
          label: `${cap.stale || state.stalePaths.has(cap.path) ? "$(warning) " : "$(package) "}${cap.path}`,
          description: [cap.module, cap.stale || state.stalePaths.has(cap.path) ? "stale" : "current", cap.source]
            .filter(Boolean)
            .join(" · "),
          cap,
        })),
        { title: "ctx: Capsules" },
      );
      if (pick) await openAt(pick.cap.path, null);
    } catch (err) {
      void vscode.window.showErrorMessage(`ctx: list capsules failed: ${describeError(err, "ctx/listCapsules")}`);
    }
  };

  const refreshCapsules = async (paths?: unknown) => {
    const list = Array.isArray(paths) ? paths.filter((p): p is string => typeof p === "string") : undefined;
    await c.guard(
      "refresh capsules",
      async () => {
        await c.refreshCapsules(list);
        flash("$(refresh) ctx: capsules refreshed");
      },
      "ctx/refreshCapsules",
    );
  };

  const compact = async () => {
    const pick = await vscode.window.showQuickPick(
      [
        { label: "summary", detail: "Summarise older turns into one message; the originals are archived, not deleted." },
        { label: "trim", detail: "Archive the oldest turns without a summary." },
      ],
      { title: "ctx: Compact Conversation" },
    );
    if (!pick) return;
    const strategy = pick.label as NonNullable<CompactParams["strategy"]>;
    // A dry run first: show what would be archived and the summary, then apply on request.
    const proposal = await c.guard("compact", () => c.compact({ strategy, dryRun: true }), "ctx/compact");
    if (!proposal) return;
    const archived = proposal.archivedIds?.length ?? 0;
    if (!archived) {
      void vscode.window.showInformationMessage(`ctx: nothing to compact${proposal.note ? `: ${proposal.note}` : "."}`);
      return;
    }
    const action = await vscode.window.showInformationMessage(
      `Compact the conversation: archive ${archived} messages, ${proposal.tokensBefore ?? "?"} → ${proposal.tokensAfter ?? "?"} tokens?`,
      { modal: true, detail: proposal.summary ? `Summary:\n\n${proposal.summary.slice(0, 1500)}` : undefined },
      "Apply",
      "Show Summary",
    );
    if (action === "Show Summary") {
      await showSummary(proposal);
      return;
    }
    if (action !== "Apply") return;
    const out = await c.guard("compact", () => c.compact({ strategy }), "ctx/compact");
    if (out) {
      flash(`$(fold) ctx: compacted ${out.archivedIds?.length ?? archived} messages`);
      await c.afterChange();
    }
  };

  const undoAuto = async (node?: TreeNode) => {
    if (!node?.pinId) return;
    let id = node.reflectionId;
    if (id === undefined) {
      const list = await c.guard("undo", () => c.listReflections(), "ctx/listReflections");
      id = list && promotionsByPin(list).get(node.pinId)?.id;
    }
    if (id === undefined) {
      void vscode.window.showInformationMessage(`ctx: no promotion to undo for ${node.item?.title ?? node.pinId}; unpin it instead.`);
      return;
    }
    const out = await c.guard("undo", () => c.undoReflection(id!), "ctx/undoReflection");
    if (out) flash(`$(discard) ctx: undid the automatic pin on ${out.item}`);
  };

  const undoReflection = async () => {
    const list = await c.guard("undo", () => c.listReflections(), "ctx/listReflections");
    if (!list) return;
    const candidates = undoable(list);
    if (!candidates.length) {
      void vscode.window.showInformationMessage("ctx: no automatic pin change to undo.");
      return;
    }
    const pick = await vscode.window.showQuickPick(
      candidates.map((r) => ({
        label: `${r.kind === "promote" ? "$(sparkle) pinned" : "$(circle-slash) lease ended"}: ${r.item}`,
        description: `turn ${r.turn} · #${r.id}`,
        detail: r.reason,
        r,
      })),
      { title: "ctx: Undo an Automatic Pin Change", placeHolder: "The server's promotions and demotions, newest first", matchOnDetail: true },
    );
    if (!pick) return;
    const out = await c.guard("undo", () => c.undoReflection(pick.r.id), "ctx/undoReflection");
    if (out) flash(`$(discard) ctx: undid the ${out.kind} of ${out.item}`);
  };

  return [
    reg("ctx.planForQuery", planForQuery),
    reg("ctx.switchMode", switchMode),
    reg("ctx.showPreview", () => preview.show()),
    reg("ctx.showContext", () => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
    reg("ctx.refresh", () => c.guard("refresh", () => c.refreshAll())),
    reg("ctx.pinAtCursor", pinAtCursor),
    reg("ctx.unpinAtCursor", unpinAtCursor),
    reg("ctx.item.pin", async (node?: TreeNode) => {
      const item = nodeItem(node);
      if (!item?.symbol) return;
      const pin = await c.guard("pin", () => c.pin({ symbol: item.symbol }), "ctx/pinSymbol");
      if (pin) flash(`$(pin) ctx: pinned ${pin.title}`);
    }),
    reg("ctx.item.unpin", async (node?: TreeNode) => {
      if (!node?.pinId) return;
      const pin = await c.guard("unpin", () => c.unpin(node.pinId!), "ctx/unpin");
      if (pin) flash(`$(pinned) ctx: unpinned ${pin.title}`);
    }),
    reg("ctx.item.restore", async (node?: TreeNode) => {
      const item = nodeItem(node);
      if (!item) return;
      const pin = await c.guard("restore", () => c.restore(item.id, node?.planId), "ctx/restoreItem");
      if (pin) flash(`$(history) ctx: restored ${pin.title} (pinned)`);
    }),
    reg("ctx.item.whatIf", whatIf),
    reg("ctx.item.undoAuto", undoAuto),
    reg("ctx.undoReflection", undoReflection),
    reg("ctx.suggestion.pin", async (node?: TreeNode) => {
      const item = node?.suggestion?.item;
      if (!item) return;
      const pin = await c.guard("pin", () => c.pinSuggestion(item), "ctx/pinSymbol");
      if (pin) flash(`$(pin) ctx: pinned ${pin.title} (suggested by the model)`);
    }),
    reg("ctx.suggestion.dismiss", async (node?: TreeNode) => {
      const item = node?.suggestion?.item;
      if (!item) return;
      const out = await c.guard("dismiss", () => c.dismissSuggestion(item), "ctx/undoReflection");
      if (out) flash(`$(close) ctx: dismissed the suggestion of ${item}`);
    }),
    reg("ctx.item.open", async (node?: TreeNode) => {
      if (node?.open) await openAt(node.open.path, node.open.range);
    }),
    reg("ctx.compact", compact),
    reg("ctx.listCapsules", capsules),
    reg("ctx.refreshCapsules", refreshCapsules),
    reg("ctx.restartServer", async () => {
      await server.restart();
    }),
    reg("ctx.showOutput", () => getLog()?.show(true)),
  ];
}
