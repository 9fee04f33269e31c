// The Context view: the plan tree (treeModel.ts builds it; this turns nodes into TreeItems).
import * as vscode from "vscode";
import type { ServerManager } from "../common/server";
import type { SessionState } from "../session";
import type { TreeNode } from "../treeItems";
import { buildTree } from "../treeModel";

export const VIEW_ID = "ctx.plan";

export class ContextTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private roots: TreeNode[] = [];
  private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  readonly view: vscode.TreeView<TreeNode>;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly state: SessionState,
    private readonly server: ServerManager,
  ) {
    this.view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.subs.push(
      this.view,
      state.onDidChange((c) => c !== "meter" && this.rebuild()),
      server.onDidChangeState(() => this.updateMessage()),
    );
    this.rebuild();
  }

  rebuild(): void {
    const c = this.state;
    this.roots = buildTree({
      plan: c.plan,
      query: c.query,
      ledger: c.ledger,
      pins: c.pins,
      stalePaths: c.stalePaths,
      suggestions: c.suggestions,
      reflections: c.reflections,
    });
    this.updateMessage();
    this.emitter.fire(undefined);
  }

  private updateMessage(): void {
    const server = this.server.state;
    this.view.message =
      server === "failed"
        ? `ctx-lsp failed to start: ${this.server.lastError ?? "see the output"}`
        : server === "stopped"
          ? "ctx-lsp is stopped."
          : server === "starting" && !this.roots.length
            ? "ctx-lsp is starting…"
            : undefined;
    const plan = this.state.plan;
    this.view.description = plan ? `${plan.model} · ${plan.mode}${plan.clusterId ? ` · task ${plan.clusterId}` : ""}` : undefined;
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const state =
      node.collapse === "expanded"
        ? vscode.TreeItemCollapsibleState.Expanded
        : node.collapse === "collapsed"
          ? vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, state);
    item.id = node.id;
    item.description = node.description;
    if (node.tooltip) {
      const md = new vscode.MarkdownString(node.tooltip, true);
      md.isTrusted = false;
      item.tooltip = md;
    }
    if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon, node.iconColor ? new vscode.ThemeColor(node.iconColor) : undefined);
    item.contextValue = node.contextValue;
    if (node.accessibilityLabel) item.accessibilityInformation = { label: node.accessibilityLabel };
    if (node.open) item.command = { command: "ctx.item.open", title: "Open", arguments: [node] };
    return item;
  }

  getChildren(node?: TreeNode): TreeNode[] {
    return node ? (node.children ?? []) : this.roots;
  }

  getParent(node: TreeNode): TreeNode | undefined {
    const find = (list: TreeNode[], parent?: TreeNode): TreeNode | undefined => {
      for (const n of list) {
        if (n === node) return parent;
        const hit = n.children && find(n.children, n);
        if (hit) return hit;
      }
      return undefined;
    };
    return find(this.roots);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
  }
}
