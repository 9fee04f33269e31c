// A compaction's summary in a Markdown editor (or its JSON, when it has none).
import * as vscode from "vscode";
import type { CompactionResult } from "../protocol.generated";

export async function showSummary(p: Partial<CompactionResult>): Promise<void> {
  const summary =
    typeof p.summary === "string" && p.summary.trim()
      ? p.summary
      : "```json\n" + JSON.stringify(p, null, 2) + "\n```";
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: `# Compaction summary\n\n${summary}\n` });
  await vscode.window.showTextDocument(doc, { preview: true });
}
