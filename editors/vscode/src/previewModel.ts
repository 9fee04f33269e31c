// The prompt preview document's Markdown. PURE: no vscode import (unit-tested under node:test).
import type { ContextPlan, RenderedPromptResult } from "./protocol.generated";
import { groupDigits } from "./meter";

/** A code fence longer than any backtick run in the text, so the prompt shows verbatim. */
export function fence(text: string, lang = ""): string {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const ticks = "`".repeat(Math.max(3, longest + 1));
  return `${ticks}${lang}\n${text}${text.endsWith("\n") ? "" : "\n"}${ticks}`;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    // content blocks ({type: "text", text}) -> their text; anything else as JSON
    return content
      .map((b) =>
        b && typeof b === "object" && typeof (b as { text?: unknown }).text === "string"
          ? (b as { text: string }).text
          : JSON.stringify(b, null, 2),
      )
      .join("\n\n");
  }
  return content === undefined || content === null ? "" : JSON.stringify(content, null, 2);
}

export interface PreviewInput {
  rendered: RenderedPromptResult;
  plan?: ContextPlan;
  query?: string;
}

export function previewMarkdown({ rendered, plan, query }: PreviewInput): string {
  const out: string[] = ["# ctx prompt preview", ""];
  out.push("| | |", "|:--|:--|");
  out.push(`| plan | \`${rendered.planId}\` |`);
  if (query) out.push(`| query | ${query.replace(/\|/g, "\\|").replace(/\n/g, " ")} |`);
  if (plan && plan.planId === rendered.planId) {
    out.push(
      `| planned | ${groupDigits(plan.totals.tokens)} tokens of ${groupDigits(plan.promptBudget)} ` +
        `(${plan.totals.items} items, ${plan.totals.excluded} excluded) |`,
    );
    out.push(`| model | ${plan.model} · mode ${plan.mode} |`);
  }
  out.push(`| rendered | ${groupDigits(rendered.tokens)} tokens as \`${rendered.format}\` |`);
  out.push("", "_Read-only; refreshes when the plan changes._", "");
  if (typeof rendered.text === "string") {
    out.push(fence(rendered.text, "text"));
  } else {
    if (typeof rendered.system === "string") out.push("## system", "", fence(rendered.system, "text"), "");
    for (const [n, m] of (rendered.messages ?? []).entries()) {
      const msg = m as Record<string, unknown>;
      const role = typeof msg.role === "string" ? msg.role : `message ${n + 1}`;
      out.push(`## ${role}`, "", fence(contentText(msg.content), "text"), "");
      const rest = Object.fromEntries(Object.entries(msg).filter(([k]) => k !== "role" && k !== "content"));
      if (Object.keys(rest).length) out.push(fence(JSON.stringify(rest, null, 2), "json"), "");
    }
  }
  return out.join("\n").replace(/\n*$/, "\n");
}

export function previewPlaceholder(reason: string): string {
  return `# ctx prompt preview\n\n${reason}\n`;
}
