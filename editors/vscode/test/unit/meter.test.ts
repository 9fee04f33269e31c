import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  bar,
  estVsActual,
  estimatorText,
  formatTokens,
  meterLabel,
  meterText,
  meterTooltip,
  serverStateText,
  severityOf,
} from "../../src/meter";
import * as fx from "./fixtures";

describe("formatTokens (same words as ctx_lsp.core.meter.format_tokens)", () => {
  const cases: [number, string][] = [
    [0, "0"],
    [999, "999"],
    [1000, "1k"],
    [1012, "1.0k"],
    [12345, "12.3k"],
    [41234, "41.2k"],
    [99999, "100.0k"],
    [120000, "120k"],
    [121856, "122k"],
    [1048576, "1.05M"],
  ];
  for (const [n, want] of cases) test(`${n} -> ${want}`, () => assert.equal(formatTokens(n), want));
});

describe("meter text", () => {
  test("uses the server's text with the dashboard codicon", () => {
    const m = fx.meter();
    assert.equal(m.text, "ctx 503 / 122k");
    assert.equal(meterText(m), "$(dashboard) ctx 503 / 122k");
  });
  test("falls back to the numbers when the server sent no text", () => {
    assert.equal(meterLabel({ used: 41234, promptBudget: 120000, text: "" }), "ctx 41.2k / 120k");
    assert.equal(meterText({ used: 41234, promptBudget: 120000 }), "$(dashboard) ctx 41.2k / 120k");
  });
  test("server states", () => {
    assert.match(serverStateText("starting"), /sync~spin/);
    assert.match(serverStateText("failed"), /\$\(error\)/);
  });
});

describe("severity thresholds", () => {
  test("ok below 80%, warning from 80%, error from 95%", () => {
    assert.equal(severityOf(0.4), "ok");
    assert.equal(severityOf(79.9), "ok");
    assert.equal(severityOf(80), "warning");
    assert.equal(severityOf(94.9), "warning");
    assert.equal(severityOf(95), "error");
    assert.equal(severityOf(130), "error");
  });
});

describe("tooltip", () => {
  test("per-section usage, estimator, est vs actual, session and plan", () => {
    const md = meterTooltip(fx.meter());
    assert.match(md, /\| system \| 174 \| 174 \| 2 \| 100% \|/);
    assert.match(md, /\| conversation \| 13 \| 13 \| 1 \| 100% \|/);
    assert.match(md, /\| rag \| 285 \| 300 \| 5 \| 95% \|/);
    assert.match(md, /\*\*total\*\* \| \*\*503\*\* \| \*\*121,856\*\*/);
    assert.match(md, /Estimator: cl100k \(est\.\) · not calibrated yet/);
    assert.match(md, /Last request: no usage reported yet/);
    assert.match(md, /gpt-4o · mode light · context 128,000/);
    assert.match(md, /plan `plan-0618180cfe975eae6e6c`/);
  });
  test("est vs actual after a usage report", () => {
    assert.equal(estVsActual({ lastEstimate: 1000, lastActual: 1050 }), "est 1,000 vs actual 1,050 (+5%)");
    assert.equal(estVsActual({ lastEstimate: 2000, lastActual: 1900 }), "est 2,000 vs actual 1,900 (-5%)");
    assert.equal(estVsActual({ lastEstimate: null, lastActual: 5 }), undefined);
    const md = meterTooltip({ ...fx.meter(), lastEstimate: 503, lastActual: 520 });
    assert.match(md, /Last request: est 503 vs actual 520 \(\+3\.4%\)/);
  });
  test("calibrated estimator", () => {
    assert.equal(
      estimatorText({ encoding: "o200k_base", exact: true, calibration: 1.08, spread: 0.042, reports: 3 }),
      "o200k ×1.08 ±4.2% · 3 usage reports",
    );
  });
  test("bar", () => {
    assert.equal(bar(0, 100), "▱▱▱▱▱▱▱▱▱▱");
    assert.equal(bar(50, 100), "▰▰▰▰▰▱▱▱▱▱");
    assert.equal(bar(500, 100), "▰▰▰▰▰▰▰▰▰▰");
    assert.equal(bar(5, 0), "▱▱▱▱▱▱▱▱▱▱");
  });
});
