"""Calibration through the real gateway (fake upstream reporting usage, the anthropic SDK as the
client): screenshots cannot poison the estimator, not even across a restart; the factor is
shown by ``ctx-lsp report`` and can be reset."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import anthropic
import pytest

from ctx_lsp.core import calibration, media
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis.anthropic import Anthropic
from ctx_lsp.gateway.apis.chat import Chat
from ctx_lsp.gateway.apis.responses import Responses
from ctx_lsp.gateway.kept import Resent
from tests.gateway.harness import KEY, PAID_CONTEXT, TINY_MODEL, running_gateway
from tests.workspaces import copy_sample

MODEL = "claude-sonnet-4-5"
WORDS = "the invoice total is rounded per line before tax is applied to each of the items "


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)
    return ws


def png(width: int, height: int, size: int) -> str:
    """A screenshot as base64: a real PNG header of ``width`` x ``height``, then ``size`` bytes
    (the fake upstream counts a request's bytes, so the image weighs as much as a real one)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return base64.b64encode(head + bytes(range(256)) * (size // 256)).decode()


def _ant(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0)


def conversation(n: int, topic: str) -> list[dict]:
    messages: list[dict] = []
    for i in range(n):
        messages.append({"role": "user", "content": f"{topic} question {i}: " + WORDS * 12})
        messages.append({"role": "assistant", "content": f"answer {i}: " + WORDS * 12})
    messages.append({"role": "user", "content": f"{topic}: and now?"})
    return messages


async def _text_conversation(client: anthropic.AsyncAnthropic, gw, topic: str, n: int) -> tuple[int, int]:
    """Sends an ``n``-turn text conversation; returns (messages sent, messages the upstream got)."""
    messages = conversation(n, topic)
    await client.messages.create(model=MODEL, max_tokens=256, messages=messages)
    return len(messages), len(gw.up.model_requests[-1].json["messages"])


def test_image_tokens_the_providers_way() -> None:
    assert media.image_size(base64.b64decode(png(1568, 1000, 0))) == (1568, 1000)
    assert media.anthropic_image_tokens(1000, 1000) == 1334  # 1000*1000/750
    assert media.anthropic_image_tokens(3000, 2000) <= 1600  # scaled down first
    assert media.openai_image_tokens(1024, 1024) == 85 + 170 * 4  # 768x768: 2x2 tiles
    assert media.openai_image_tokens(1024, 1024, "low") == 85
    assert media.base64_size("data:image/png;base64," + png(640, 480, 10)) == (640, 480)
    assert media.base64_size("not base64 at all!") is None
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(1000, 1000, 50)}}
    assert b.media_tokens([block, {"type": "text", "text": "see"}], "anthropic") == 1334
    nested = [{"type": "tool_result", "tool_use_id": "t", "content": [block]}]
    assert b.media_tokens(nested, "anthropic") == 1334
    url = {"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}}
    assert b.media_tokens([url], "openai") == media.UNKNOWN_IMAGE_TOKENS


def test_the_factor_is_a_clamped_median_of_the_latest_reports() -> None:
    assert calibration.factor([]) is None
    # two outliers of five: the factor is at most the largest ordinary ratio
    assert calibration.factor([1.1, 1.2, 1.15, 90.0, 95.0]) == 1.2
    assert calibration.factor([90.0] * 5) == calibration.CEILING
    assert calibration.factor([0.01] * 5) == calibration.FLOOR


def test_the_anthropic_parse_cache_is_bounded_in_bytes() -> None:
    api = Anthropic()
    api._parsed.max_bytes = 1_000_000
    for i in range(50):
        fields = b.obj(b.raw({"model": MODEL, "messages": [{"role": "user", "content": f"{i} " + "x" * 100_000}]}))
        api.parse(fields)
    assert api._parsed.bytes <= 1_000_000 and len(api._parsed) < 11


@pytest.mark.parametrize("api", [Anthropic(), Chat(), Responses()], ids=["anthropic", "chat", "responses"])
def test_a_request_is_compared_in_place_with_its_conversations_previous_one_and_an_edit_is_parsed_anew(api) -> None:
    """Messages the conversation's previous request sent at the same place are taken as read
    then; from the first one that differs (an edited or rewound history), each is read again."""
    turns = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"} for n in range(6)]

    def parse(messages: list[dict]) -> list[str]:
        key = "input" if api.name == "responses" else "messages"
        fields = b.obj(b.raw({"model": MODEL, key: messages}))
        return [m.content for ms in api.parse(fields).messages for m in ms]

    assert parse(turns) == [f"turn {n}" for n in range(6)]
    assert parse([*turns, {"role": "user", "content": "turn 6"}]) == [f"turn {n}" for n in range(7)]
    edited = [*turns[:2], {"role": "user", "content": "turn 2, edited"}, *turns[3:]]
    assert parse(edited) == ["turn 0", "turn 1", "turn 2, edited", "turn 3", "turn 4", "turn 5"]
    assert parse(turns[:3]) == ["turn 0", "turn 1", "turn 2"]  # rewound: the original turn 2 again
    # the conversation as it went on, its edit and its rewind, side by side (each may go on)
    assert len(api._previous) == 3


def test_conversations_that_open_alike_each_find_their_own_previous_request() -> None:
    """Sub-agents open with the same system prompt: each request is compared with its own
    conversation's previous one (the one it repeats furthest), not with whichever came last."""
    made: list[bytes] = []

    def make(n: int, item: bytes) -> bytes:
        made.append(item)
        return item.upper()

    resent: Resent[bytes] = Resent()
    a = [b'"system"', b'"task a"']
    c = [b'"system"', b'"task c"']
    for turn in range(5):  # the two agents' loops interleave, each appending a tool exchange a turn
        a, c = [*a, b'"a %d"' % turn], [*c, b'"c %d"' % turn]
        made.clear()
        assert (resent.made(a, make) == [x.upper() for x in a] and made == [a[-1]] * (turn > 0)) or turn == 0
        made.clear()
        assert resent.made(c, make) == [x.upper() for x in c]
        assert made == ([c[-1]] if turn > 0 else c[1:])  # only what it appended; the first, from a's
    assert len(resent) == 2
    made.clear()
    resent.made([b'"system"'], make)  # a third one, shorter than both: made from their shared start
    assert made == [] and len(resent) == 3


async def test_screenshots_do_not_compact_later_text_conversations(ws: Path) -> None:
    """Six text requests calibrate the model; four with a 1.5 MB screenshot each, which the
    upstream counts at ~400k tokens (what a provider counting something we do not see looks like),
    follow. A later text conversation of ~12k tokens must go through whole — before, the factor
    was the 90th percentile of all ratios (one of the screenshots': ~40x) and compacted it away —
    and still after a restart."""
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        for i in range(6):
            sent, got = await _text_conversation(client, gw, f"warm-up {i}", 3)
            assert sent == got
        source = {"type": "base64", "media_type": "image/png", "data": png(1568, 980, 1 << 20)}
        shot = {"type": "image", "source": source}
        for i in range(4):
            content = [shot, {"type": "text", "text": f"what is wrong in screenshot {i}?"}]
            await client.messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": content}])
        rows = await gw.call(
            gw.sessions.store._read, "SELECT raw_estimate, media FROM usage ORDER BY seq DESC LIMIT 4", ()
        )
        # the images counted the provider's way, apart from the text the factor is learned from
        assert all(r[1] == media.anthropic_image_tokens(1568, 980) and 0 < r[0] < r[1] for r in rows), rows
        stats = await gw.call(gw.sessions.store.usage_stats, MODEL)
        assert stats.reports >= 10 and stats.p90 is not None and stats.p90 > 10  # the outliers are there
        assert stats.calibration is not None and stats.calibration < 2
        sent, got = await _text_conversation(client, gw, "billing", 14)
        assert got == sent, "a text conversation was compacted after screenshots"
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        sent, got = await _text_conversation(client, gw, "billing after restart", 14)
        assert got == sent, "the screenshots' ratio came back with the restart"


def _ctx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=120, check=False
    )


async def test_report_shows_the_factor_and_reset_forgets_it(ws: Path) -> None:
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        for i in range(4):
            await _text_conversation(client, gw, f"topic {i}", 2)
    out = _ctx("report", str(ws))
    assert out.returncode == 0, out.stderr
    assert f"{MODEL}" in out.stdout and "from the latest 4 of 4 reports" in out.stdout
    out = _ctx("report", str(ws), "--reset-calibration", MODEL)
    assert out.returncode == 0, out.stderr
    assert "calibration reset: 4 usage reports" in out.stdout
    assert "none: the registry's factors are used" in out.stdout


def _screenshot_conversation(turns: int) -> list[dict]:
    """``turns`` user messages, each a 1000x1000 screenshot (1,334 tokens as Anthropic counts it,
    ~10 as text) and a question, with short answers between."""
    messages: list[dict] = []
    for i in range(turns):
        source = {"type": "base64", "media_type": "image/png", "data": png(1000, 1000, 4096 + i)}
        content = [{"type": "image", "source": source}, {"type": "text", "text": f"what is wrong in screenshot {i}?"}]
        messages.append({"role": "user", "content": content})
        if i < turns - 1:
            messages.append({"role": "assistant", "content": f"in screenshot {i} the total is off by one cent."})
    return messages


def _images(messages: list[dict]) -> list[str]:
    return [
        block["source"]["data"]
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "image"
    ]


async def test_screenshots_count_in_the_window_as_the_provider_counts_them(ws: Path) -> None:
    """Eight screenshots, ~10.7k tokens as Anthropic counts them, in a 6,000-token window: the
    plan counts each at 1,334 (not as the text ``[image]``), so older turns are compacted and what
    is forwarded fits the window as the provider counts it. Before, the request went whole (the
    estimate ~200 tokens) and the provider would refuse it. Images kept are forwarded byte for
    byte; the latest one is always kept."""
    (ws / "ctx.toml").write_text(TINY_MODEL)
    messages = _screenshot_conversation(8)
    per_image = media.anthropic_image_tokens(1000, 1000)
    assert per_image * len(_images(messages)) > 6000  # over the window as the provider counts it
    async with running_gateway(ws, mode="off") as gw, _ant(gw.url) as client:
        await client.messages.create(model="tiny-model", max_tokens=500, messages=messages)
        got = gw.up.model_requests[-1].json["messages"]
    kept = _images(got)
    assert kept and kept[-1] == _images(messages)[-1]  # the question's own screenshot
    assert set(kept) <= set(_images(messages))  # kept ones unaltered
    text = sum(len(json.dumps(m)) for m in got) - sum(len(k) for k in kept)  # all but the images' base64
    assert per_image * len(kept) + text // 3 <= 6000 - 500, f"{len(kept)} images forwarded"


def test_each_api_puts_an_items_media_on_its_message() -> None:
    """Chat and Responses too: the plan counts an image with the message that carries it."""
    data = "data:image/png;base64," + png(1024, 1024, 100)
    tokens = media.openai_image_tokens(1024, 1024)
    chat = {"type": "image_url", "image_url": {"url": data}}
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [chat]}]}
    parsed = Chat().parse(b.obj(b.raw(body)))
    assert [[m.media_tokens for m in ms] for ms in parsed.messages] == [[tokens]]
    image = {"type": "input_image", "image_url": data}
    body = {"model": "gpt-4o", "input": [{"role": "user", "content": [image]}, {"role": "user", "content": "hi"}]}
    parsed = Responses().parse(b.obj(b.raw(body)))
    assert [[m.media_tokens for m in ms] for ms in parsed.messages] == [[tokens], [0]]
