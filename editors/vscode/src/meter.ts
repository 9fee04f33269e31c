// The status bar meter's words and numbers. PURE: no vscode import (unit-tested under node:test).
// Every number comes from the server's BudgetMeter; this module only formats it.
import type { BudgetMeter } from "./protocol.generated";

export type Severity = "ok" | "warning" | "error";

/** The percent at which the meter turns to a warning / error background. */
export const WARNING_PERCENT = 80;
export const ERROR_PERCENT = 95;

/** 12345 → "12.3k"; 120000 → "120k"; 1048576 → "1.05M" (as ctx_lsp.core.meter.format_tokens). */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) {
    const k = n / 1000;
    return k >= 100 || k === Math.trunc(k) ? `${k.toFixed(0)}k` : `${k.toFixed(1)}k`;
  }
  return `${(n / 1_000_000).toFixed(2)}M`;
}

/** 1234567 → "1,234,567" (tooltips, exact numbers). */
export function groupDigits(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function severityOf(percent: number): Severity {
  if (percent >= ERROR_PERCENT) return "error";
  if (percent >= WARNING_PERCENT) return "warning";
  return "ok";
}

/** The server's own short text ("ctx 41.2k / 120k") when it sent one, else the same from the numbers. */
export function meterLabel(m: Pick<BudgetMeter, "used" | "promptBudget" | "text">): string {
  return m.text && m.text.trim() ? m.text.trim() : `ctx ${formatTokens(m.used)} / ${formatTokens(m.promptBudget)}`;
}

/** Status bar text: "$(dashboard) ctx 41.2k / 120k". */
export function meterText(m: Pick<BudgetMeter, "used" | "promptBudget" | "text">): string {
  return `$(dashboard) ${meterLabel(m)}`;
}

export function bar(used: number, budget: number, width = 10): string {
  const frac = budget <= 0 ? 0 : Math.min(1, Math.max(0, used / budget));
  const filled = Math.round(frac * width);
  return "▰".repeat(filled) + "▱".repeat(width - filled);
}

export function encodingLabel(encoding: string, exact: boolean): string {
  const short = encoding.endsWith("_base") ? encoding.slice(0, -"_base".length) : encoding;
  return exact ? short : `${short} (est.)`;
}

/** "cl100k (est.) ×1.08 ±4% · 3 reports" */
export function estimatorText(e: BudgetMeter["estimator"]): string {
  let s = encodingLabel(e.encoding, e.exact);
  if (e.calibration !== 1) s += ` ×${trimNumber(e.calibration, 3)}`;
  if (e.spread !== undefined && e.spread !== null) s += ` ±${trimNumber(e.spread * 100, 1)}%`;
  const reports = e.reports ?? 0;
  s += reports ? ` · ${reports} usage report${reports === 1 ? "" : "s"}` : " · not calibrated yet";
  return s;
}

/** "est 1,012 vs actual 1,050 (+3.8%)" or undefined when the client never reported usage. */
export function estVsActual(m: Pick<BudgetMeter, "lastEstimate" | "lastActual">): string | undefined {
  const est = m.lastEstimate;
  const act = m.lastActual;
  if (est === undefined || est === null || act === undefined || act === null) return undefined;
  const diff = act - est;
  const pct = est > 0 ? ` (${diff >= 0 ? "+" : ""}${trimNumber((100 * diff) / est, 1)}%)` : "";
  return `est ${groupDigits(est)} vs actual ${groupDigits(act)}${pct}`;
}

function trimNumber(x: number, digits: number): string {
  return String(Number(x.toFixed(digits)));
}

function pct(used: number, budget: number): string {
  return budget > 0 ? `${trimNumber((100 * used) / budget, 1)}%` : "–";
}

/** The tooltip, as Markdown: per-section usage, the estimator, est vs actual of the last request. */
export function meterTooltip(m: BudgetMeter): string {
  const lines: string[] = [];
  lines.push(`**${meterLabel(m)}** · ${trimNumber(m.percent, 1)}% of the prompt budget`);
  lines.push("");
  lines.push(`\`${bar(m.used, m.promptBudget, 20)}\``);
  lines.push("");
  lines.push("| section | used | budget | items | |");
  lines.push("|:--|--:|--:|--:|--:|");
  for (const s of m.sections) {
    lines.push(`| ${s.name} | ${groupDigits(s.used)} | ${groupDigits(s.budget)} | ${s.count} | ${pct(s.used, s.budget)} |`);
  }
  lines.push(`| **total** | **${groupDigits(m.used)}** | **${groupDigits(m.promptBudget)}** | | |`);
  lines.push("");
  lines.push(
    `${m.model} · mode ${m.mode} · context ${groupDigits(m.contextLength)} · ` +
      `prompt budget ${groupDigits(m.promptBudget)}`,
  );
  lines.push("");
  lines.push(`Estimator: ${estimatorText(m.estimator)}`);
  lines.push("");
  lines.push(`Last request: ${estVsActual(m) ?? "no usage reported yet"}`);
  lines.push("");
  lines.push(`Session \`${m.session}\` · turn ${m.turn ?? 0}${m.planId ? ` · plan \`${m.planId}\`` : " · no plan yet"}`);
  lines.push("");
  lines.push("_Click to open the Context view._");
  return lines.join("\n");
}

/** What the status item shows while there is no meter (starting, stopped, failed). */
export function serverStateText(state: "starting" | "running" | "stopped" | "failed"): string {
  switch (state) {
    case "starting":
      return "$(sync~spin) ctx";
    case "running":
      return "$(dashboard) ctx";
    case "stopped":
      return "$(debug-disconnect) ctx";
    case "failed":
      return "$(error) ctx";
  }
}
