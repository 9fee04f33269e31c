// The gateway's words (src/gatewayModel.ts) on answers of a real server running it: the status
// bar item, the conversations picker, the sent-request and review documents, the settings.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ago,
  baseUrls,
  conversationPicks,
  countdown,
  gatewaySettings,
  gatewayText,
  gatewayTooltip,
  outcomeMessage,
  requestTitle,
  reviewBanner,
  reviewMarkdown,
  sentMarkdown,
} from "../../src/gatewayModel";
import * as fx from "./fixtures";

describe("the gateway settings sent to the server", () => {
  const from = (values: Record<string, unknown>) => (key: string) => values[key];
  test("nothing set: no gateway object (the workspace's ctx.toml [gateway] stays)", () => {
    assert.equal(gatewaySettings(from({})), undefined);
  });
  test("the set values, trimmed; empty strings, wrong types and non-positive timeouts left out", () => {
    const got = gatewaySettings(
      from({ listen: " 127.0.0.1:8787 ", openaiUpstream: "", anthropicUpstream: 3, review: true, reviewTimeout: 0, contextCost: "" }),
    );
    assert.deepEqual(got, { listen: "127.0.0.1:8787", review: true });
    assert.deepEqual(gatewaySettings(from({ contextCost: "always" })), { contextCost: "always" });
  });
  test("over a gateway object of ctx.server.settings", () => {
    const got = gatewaySettings(from({ review: false, reviewTimeout: 30 }), { listen: "127.0.0.1:0", contextBudget: 4000 });
    assert.deepEqual(got, { listen: "127.0.0.1:0", contextBudget: 4000, review: false, reviewTimeout: 30 });
  });
  test("a ctx.server.settings gateway that is not an object is ignored", () => {
    assert.equal(gatewaySettings(from({}), "127.0.0.1:8787"), undefined);
  });
});

describe("the status bar item", () => {
  // The fixture's status was taken just after a request: its cache warm until cacheWarmUntil.
  const until = fx.gatewayStatus().cacheWarmUntil as number;
  const cold = { cache: "", cacheWarmUntil: null, saved: "" };
  test("shows the server's label, the cache counting down to its time, and the savings", () => {
    const s = fx.gatewayStatus();
    assert.equal(s.label, "⇄ 2 · 1.7k/122k · 0% cached");
    assert.match(s.saved, /^cost \+\$0\.\d+$/); // gpt-4o-mini: the first requests cost a little more
    assert.equal(gatewayText(s, until - 252_000), `ctx ⇄ 2 · 1.7k/122k · 0% cached · cache warm 4:12 · ${s.saved}`);
    assert.equal(gatewayText(s, until - 251_400), `ctx ⇄ 2 · 1.7k/122k · 0% cached · cache warm 4:12 · ${s.saved}`);
    assert.equal(gatewayText(s, until - 900), `ctx ⇄ 2 · 1.7k/122k · 0% cached · cache warm 0:01 · ${s.saved}`);
    assert.equal(gatewayText({ ...s, saved: "saved $1.20" }, until - 1000), "ctx ⇄ 2 · 1.7k/122k · 0% cached · cache warm 0:01 · saved $1.20");
  });
  test("at the cache's time, cold: no request to the server needed", () => {
    const s = fx.gatewayStatus();
    assert.equal(gatewayText(s, until), `ctx ⇄ 2 · 1.7k/122k · 0% cached · cache cold · ${s.saved}`);
    assert.equal(gatewayText(s, until + 3_600_000), `ctx ⇄ 2 · 1.7k/122k · 0% cached · cache cold · ${s.saved}`);
    assert.equal(gatewayText({ ...s, cache: "cold", cacheWarmUntil: null, saved: "" }, until), "ctx ⇄ 2 · 1.7k/122k · 0% cached · cache cold");
  });
  test("no request of the active conversation yet: the label alone; no label yet: the arrows", () => {
    assert.equal(gatewayText({ ...cold, label: fx.gatewayRequests()[0].label }, until), "ctx ⇄ 1 · 2.4k/122k · 0% cached");
    assert.equal(gatewayText({ ...cold, label: "" }, until), "ctx ⇄");
    assert.equal(gatewayText({ ...cold, label: "⇄ 0" }, until), "ctx ⇄ 0");
  });
  test("base URLs of the listening address", () => {
    assert.deepEqual(baseUrls("http://127.0.0.1:8787/"), { openai: "http://127.0.0.1:8787/v1", anthropic: "http://127.0.0.1:8787" });
  });
  test("tooltip: the URL, the latest request's numbers as the server sent them, the active conversation", () => {
    const s = fx.gatewayStatus();
    const md = gatewayTooltip(s, s.latest, until - 252_000);
    assert.match(md, new RegExp(`listening on \`${s.listening}\``));
    assert.match(md, new RegExp(`OpenAI base URL \`${s.listening}/v1\``));
    assert.match(md, /2 requests · 2 planned · 0 sent as the client sent them/);
    assert.match(md, /Latest request\*\* · `chat-ba8288aa96aa` · gpt-4o-mini/);
    assert.match(md, /\| estimated input \| 1,644 \|/);
    assert.match(md, /\| input \(provider\) \| 1,700 \|/);
    assert.match(md, /\| cached input \| 0 \|/);
    assert.match(md, /\| prompt budget \| 121,856 \|/);
    assert.match(md, /\| messages sent \/ from the client \| 1 \/ 1 \|/);
    assert.match(md, /\| dropped · masked · ctx blocks \| 0 · 0 · 23 \|/);
    assert.match(md, /Plan `plan-\w+`/);
    assert.match(md, /Active conversation `chat-ba8288aa96aa`/);
    assert.match(md, /Review before send: off/);
    assert.match(md, /Click to select the active conversation/);
  });
  test("tooltip: what the warm cache and the savings mean, in the server's words", () => {
    const s = fx.gatewayStatus();
    const md = gatewayTooltip(s, s.latest, until - 252_000);
    assert.ok(
      md.includes(
        "The provider's prompt cache for this conversation: **warm** for 4 min 12 s more (5-minute TTL) — " +
          "the next request reads the repeated prefix at half the input price ($0.075 vs $0.15 per million tokens).",
      ),
      md,
    );
    assert.ok(md.includes(`**${s.saved}** in this conversation so far: its requests at the provider's prices, cache-weighted against sending the same requests direct.`), md);
    assert.ok(md.indexOf("**warm**") < md.indexOf("**Latest request**"), "the cache before the latest request's numbers");
  });
  test("tooltip: cold at the cache's time; nothing of the cache or savings when the server knows none", () => {
    const s = fx.gatewayStatus();
    assert.match(gatewayTooltip(s, s.latest, until + 1), /prompt cache for this conversation: \*\*cold\*\* \(no request within its 5-minute TTL\) — the next request pays the full input price/);
    const none = gatewayTooltip({ ...s, cache: "", cacheWarmUntil: null, saved: "" }, s.latest, until);
    assert.ok(!/prompt cache for this conversation|in this conversation so far/.test(none), none);
  });
  test("tooltip: before the first request, and with requests waiting for review", () => {
    const s = { ...fx.gatewayStatus(), requests: 0, planned: 0, review: true, latest: null };
    const md = gatewayTooltip(s, null, until, 2);
    assert.match(md, /No request yet: point your assistant at the base URL above/);
    assert.match(md, /Review before send: on · \*\*2 requests waiting\*\*/);
  });
  test("a note says why a request went as the client sent it", () => {
    const r = { ...fx.gatewayRequests()[0], note: "fail open: unreadable body" };
    assert.match(gatewayTooltip(fx.gatewayStatus(), r, until), /_fail open: unreadable body_/);
  });
});

describe("the conversations picker", () => {
  test("ago", () => {
    assert.equal(ago(100, 102), "just now");
    assert.equal(ago(100, 142), "42 s ago");
    assert.equal(ago(0, 330), "5 min ago");
    assert.equal(ago(0, 3 * 3600 + 5), "3 h ago");
    assert.equal(ago(0, 86400), "1 day ago");
    assert.equal(ago(10, 0), "just now");
  });
  test("one row per conversation, in the server's order, the active one marked", () => {
    const list = fx.conversations();
    const now = list[0].lastActivity + 90;
    const picks = conversationPicks(list, now);
    assert.deepEqual(
      picks.map((p) => [p.label, p.description, p.session, p.active]),
      [
        ["$(circle-filled) how is the invoice total calculated with tax?", "active · gpt-4o-mini · 2 messages · 1 request", "chat-ba8288aa96aa", true],
        ["$(circle-outline) How is stock reserved in the inventory?", "gpt-4o · 2 messages · 1 request", "chat-f24f086632ce", false],
      ],
    );
    assert.equal(picks[0].detail, "chat-ba8288aa96aa · last activity 1 min ago");
  });
  test("a conversation without a title shows its session", () => {
    const c = { ...fx.conversations()[0], title: " ", model: null };
    const [p] = conversationPicks([c], c.lastActivity);
    assert.equal(p.label, `$(circle-filled) ${c.session}`);
    assert.equal(p.description, "active · 2 messages · 1 request");
  });
});

describe("the sent-request document", () => {
  test("title: the latest user message's first line", () => {
    assert.equal(requestTitle(fx.gatewayPreview()), "How is stock reserved in the inventory?");
    assert.equal(requestTitle(fx.reviewReplanned().preview), "Which products run low on stock?");
    assert.equal(requestTitle(fx.gatewayPreview(), 10), "How is st…");
    assert.equal(requestTitle({ ...fx.gatewayPreview(), parts: [] }), "chat-f24f086632ce");
  });
  test("the server's text as it is, under the numbers it sent", () => {
    const p = fx.gatewayPreview();
    const md = sentMarkdown(p);
    assert.ok(md.startsWith("# ctx sent request\n"));
    assert.match(md, /\| conversation \| `chat-f24f086632ce` \|/);
    assert.match(md, new RegExp(`\\| plan \\| \`${p.planId}\` \\|`));
    assert.match(md, /\| model \| gpt-4o · chat API \|/);
    assert.match(md, /\| tokens \| 2,2\d\d in 4 parts, 2 added by ctx_lsp \|/);
    assert.ok(md.includes(p.text.trimEnd()), "the body's text verbatim");
    assert.match(md, /## system \(context, \d+ tokens\) · added by ctx_lsp/);
  });
});

describe("the review document", () => {
  test("waiting: the banner says what to do and when it goes anyway", () => {
    const r = fx.reviewRequest();
    const md = reviewMarkdown(r, "waiting");
    assert.ok(md.startsWith("# ctx review before send — Which products run low on stock?\n"));
    assert.match(md, /\*\*Waiting for you\.\*\*.*\*\*Send\*\*, \*\*Re-plan\*\*.*\*\*Cancel\*\*.*after 30 s/s);
    assert.match(md, new RegExp(`\\| review \\| \`${r.reviewId}\` \\|`));
    assert.ok(md.includes(r.preview.text.trimEnd()));
  });
  test("a re-plan of the same review replaces the body: the pinned code is in it", () => {
    const before = fx.reviewRequest();
    const after = fx.reviewReplanned();
    const decision = fx.reviewDecision();
    assert.deepEqual([decision.reviewId, decision.decision, decision.pending], [before.reviewId, "replan", true]);
    assert.equal(after.reviewId, before.reviewId);
    assert.ok(!reviewMarkdown(before, "waiting").includes("@abc.abstractmethod"));
    assert.ok(reviewMarkdown(after, "waiting").includes("@abc.abstractmethod"));
  });
  test("each state's banner", () => {
    assert.match(reviewBanner("replanning", 30), /Re-planning/);
    assert.match(reviewBanner("sent", 30), /^\*\*Sent\.\*\*/);
    assert.match(reviewBanner("cancelled", 30), /Cancelled.*HTTP 400/);
    assert.match(reviewBanner("timeout", 30), /Sent after the timeout\*\* \(30 s without an answer\)/);
    assert.match(reviewBanner("gone", 30), /No longer waiting/);
  });
  test("the outcome's message", () => {
    const r = fx.reviewResolved();
    assert.equal(r.outcome, "sent");
    assert.equal(outcomeMessage(r.outcome, "Which products…"), "ctx: sent — “Which products…”.");
    assert.match(outcomeMessage("cancelled", "x"), /^ctx: cancelled — “x”: the assistant got an error \(HTTP 400\)\.$/);
    assert.match(outcomeMessage("timeout", "x"), /^ctx: sent after the timeout — “x” went as planned\.$/);
  });
  test("the notification's countdown", () => {
    assert.equal(countdown(29.2), "Send, Re-plan or Cancel (editor title) · sent as planned in 30 s");
    assert.equal(countdown(-3), "Send, Re-plan or Cancel (editor title) · sent as planned in 0 s");
  });
});
