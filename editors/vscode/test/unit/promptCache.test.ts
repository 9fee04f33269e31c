// The prompt cache's countdown (src/promptCache.ts): from the server's cacheWarmUntil (epoch ms)
// to "cache warm 4:12", then "cache cold" at that time, and when the text changes next.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cacheState, cacheText, cacheTooltip, clock, duration, nextTickMs, savedTooltip } from "../../src/promptCache";

const UNTIL = 1_795_586_280_430;
const warm = { cache: "warm 5m00s", cacheWarmUntil: UNTIL, cacheTtlSeconds: 300, cacheReadPrice: "a tenth of the input price ($0.30 vs $3.00 per million tokens)" };

describe("the countdown", () => {
  test("m:ss, rounded up to the second: 0:01 in the last one", () => {
    assert.equal(clock(300_000), "5:00");
    assert.equal(clock(252_000), "4:12");
    assert.equal(clock(251_001), "4:12");
    assert.equal(clock(251_000), "4:11");
    assert.equal(clock(59_999), "1:00");
    assert.equal(clock(1), "0:01");
    assert.equal(clock(0), "0:00");
    assert.equal(clock(-5), "0:00");
  });
  test("the tooltip's words", () => {
    assert.equal(duration(252_000), "4 min 12 s");
    assert.equal(duration(120_000), "2 min");
    assert.equal(duration(40_000), "40 s");
    assert.equal(duration(300), "1 s");
  });
  test("warm until the server's time, then cold; unknown when the server knows no request", () => {
    assert.deepEqual(cacheState(warm, UNTIL - 252_000), { kind: "warm", leftMs: 252_000 });
    assert.deepEqual(cacheState(warm, UNTIL), { kind: "cold" });
    assert.deepEqual(cacheState({ cache: "cold", cacheWarmUntil: null }, UNTIL), { kind: "cold" });
    assert.deepEqual(cacheState({ cache: "", cacheWarmUntil: null }, UNTIL), { kind: "unknown" });
    assert.equal(cacheText(warm, UNTIL - 252_000), "cache warm 4:12");
    assert.equal(cacheText(warm, UNTIL - 1), "cache warm 0:01");
    assert.equal(cacheText(warm, UNTIL), "cache cold");
    assert.equal(cacheText({ cache: "", cacheWarmUntil: null }, UNTIL), "");
  });
  test("the next step lands on the second the text changes, and none once cold", () => {
    assert.equal(nextTickMs(warm, UNTIL - 252_000), 1_005);
    assert.equal(nextTickMs(warm, UNTIL - 251_700), 705);
    const now = UNTIL - 251_700;
    assert.notEqual(cacheText(warm, now), cacheText(warm, now + (nextTickMs(warm, now) as number)));
    assert.equal(cacheText(warm, UNTIL - 400 + (nextTickMs(warm, UNTIL - 400) as number)), "cache cold");
    assert.equal(nextTickMs(warm, UNTIL), undefined);
    assert.equal(nextTickMs({ cache: "", cacheWarmUntil: null }, UNTIL), undefined);
  });
});

describe("the tooltip's sentences", () => {
  test("warm: time left, the TTL, the price of a cache read in the server's words", () => {
    assert.equal(
      cacheTooltip(warm, UNTIL - 252_000),
      "The provider's prompt cache for this conversation: **warm** for 4 min 12 s more (5-minute TTL) — " +
        "the next request reads the repeated prefix at a tenth of the input price ($0.30 vs $3.00 per million tokens).",
    );
    assert.match(cacheTooltip({ ...warm, cacheReadPrice: "" }, UNTIL - 1000), /reads the repeated prefix at the provider's lower price for cached input\.$/);
  });
  test("cold, and nothing when unknown", () => {
    assert.match(cacheTooltip(warm, UNTIL + 5), /^The provider's prompt cache for this conversation: \*\*cold\*\* \(no request within its 5-minute TTL\)/);
    assert.equal(cacheTooltip({ ...warm, cache: "", cacheWarmUntil: null }, UNTIL), "");
  });
  test("savings, cache-weighted against sending direct", () => {
    assert.match(savedTooltip("saved $1.20"), /^\*\*saved \$1\.20\*\* in this conversation so far: .*cache-weighted against sending the same requests direct\.$/);
    assert.equal(savedTooltip(""), "");
  });
});
