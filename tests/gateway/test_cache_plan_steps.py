"""When a compaction step is taken (issue 32): at a user turn's first request when the turn would
reach the step size anyway — the step there keeps the new user message, not the last quarter of a
running agent loop, and the loop runs without a step in its middle — and, once the provider's
cache has expired (the conversation idle past its TTL), at the next request, where the whole
prompt is written anyway. Real gateway on loopback, the fake upstream, the real anthropic SDK."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anthropic

from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, LONG_CACHE_TTL_SECONDS
from tests.gateway.harness import KEY, Running, running_gateway
from tests.workspaces import copy_sample

# a window small enough that a short agent loop takes several steps (the model's own name: its
# prices, which the step rule reads, stay the built-in ones)
SMALL_WINDOW = """
[[models]]
name = "claude-sonnet-4-5"
context_length = 9000
max_output = 1000
"""
SYSTEM = [{"type": "text", "text": "You are an agent. " * 40, "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "Read", "description": "Reads a file.", "input_schema": {"type": "object"}}]
STEP = re.compile(r"\[Compaction #(\d+)")


def _step(body: dict) -> int:
    """The compaction step a forwarded body is in (0: none yet)."""
    return max(map(int, STEP.findall(json.dumps(body, ensure_ascii=False))), default=0)


def _result(turn: int, step: int) -> str:
    return "\n".join(f"src/mod{turn}_{step}.py:{n}: value = {n * (step + 3)}" for n in range(40))


class Agent:
    """An agent loop as Claude Code sends it: the whole history each request, the newest block marked."""

    def __init__(self, gw: Running, client: anthropic.AsyncAnthropic, ttl: str | None = None) -> None:
        self.gw, self.client, self.messages = gw, client, []
        self.marker = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        self.starts: list[int] = []  # the index of each turn's first request

    async def send(self) -> None:
        for m in self.messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        self.messages[-1]["content"][-1]["cache_control"] = dict(self.marker)
        await self.client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1000, system=SYSTEM, tools=TOOLS, messages=self.messages
        )

    async def ask(self, text: str) -> None:
        if self.messages:
            self.messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
        self.messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
        self.starts.append(len(self.gw.up.model_requests))
        await self.send()

    async def tool(self, turn: int, step: int) -> None:
        tid = f"toolu_{turn}_{step}"
        self.messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read", "input": {}}]}
        )
        self.messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": _result(turn, step)}]}
        )
        await self.send()


async def _loop(gw: Running, client: anthropic.AsyncAnthropic, turns: int, steps: int, **kw) -> Agent:
    agent = Agent(gw, client, kw.get("ttl"))
    for turn in range(turns):
        await agent.ask(f"Task {turn}: how is stock reserved? {kw.get('tag', '')}")
        for step in range(steps):
            if (turn, step) == kw.get("idle_before"):  # the user was away: the ledger's clock says so
                await gw.call(_age, gw, kw.get("away", CACHE_TTL_SECONDS + 60))
            await agent.tool(turn, step)
    return agent


def _age(gw: Running, seconds: float) -> None:
    """Every request recorded so far, ``seconds`` further back (as if the user had been away)."""
    with gw.sessions.store.write() as conn:
        conn.execute("UPDATE gateway_requests SET created = created - ?, sent = sent - ?", (seconds, seconds))


async def test_a_turn_that_would_reach_the_step_size_steps_at_its_first_request(tmp_path: Path) -> None:
    """An agent loop of five turns in a small window: each turn grows the conversation by about
    what the step size leaves, so after the first turn each steps at its first request (keeping
    the new user message) — never in the middle of its agent loop, where a step would keep the
    loop's last quarter and write it again."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(SMALL_WINDOW)
    async with (
        running_gateway(ws, mode="off") as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as client,
    ):
        agent = await _loop(gw, client, turns=5, steps=8)
        bodies = [r.json for r in gw.up.model_requests]
        rows = await gw.call(gw.sessions.store.gateway_requests)
    steps = [_step(b) for b in bodies]
    stepped = [n for n in range(1, len(steps)) if steps[n] > steps[n - 1]]
    assert stepped == agent.starts[1:], (stepped, agent.starts)
    assert [n for n, r in enumerate(rows) if r["prefix"]] == stepped  # the ledger says so, at each
    # what a step there keeps is the summary and the new user message: the request shrinks to a fraction
    sizes = [len(r.body) for r in gw.up.model_requests]
    assert all(sizes[n] < sizes[n - 1] / 2 for n in stepped)


async def test_a_conversation_idle_past_the_cache_ttl_steps_at_its_next_request(tmp_path: Path) -> None:
    """The provider's cache lives 5 minutes after a request: a conversation idle longer is written
    whole at its next request anyway, so a step costs nothing extra there and is taken from half the
    room on — where a warm one goes on to the window's limit. The ledger says why."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(SMALL_WINDOW)
    async with (
        running_gateway(ws, mode="off") as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as client,
    ):
        await _loop(gw, client, turns=1, steps=10, tag="warm")
        warm = [_step(r.json) for r in gw.up.model_requests]
        start = len(gw.up.model_requests)
        await _loop(gw, client, turns=1, steps=10, tag="idle", idle_before=(0, 7))
        cold = [_step(r.json) for r in gw.up.model_requests[start:]]
        rows = await gw.call(gw.sessions.store.gateway_requests)
    assert warm == [0] * 11  # warm, the loop stays under the step size
    assert cold == [0] * 8 + [1] * 3  # idle before its 8th request: the step is taken there
    assert rows[start + 8]["prefix"] == "compaction step: the provider's cache had expired (idle over 5 minutes)"
    assert all(r["prefix"] is None for n, r in enumerate(rows) if n != start + 8)


async def test_a_conversation_on_the_hour_long_cache_is_warm_after_six_minutes(tmp_path: Path) -> None:
    """Breakpoints that ask for Anthropic's hour-long cache (``"ttl": "1h"``): six minutes away
    leaves the cache warm, so no step is taken; past the hour the step is taken, and the ledger
    names the hour."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(SMALL_WINDOW)
    async with (
        running_gateway(ws, mode="off") as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as client,
    ):
        await _loop(gw, client, turns=1, steps=10, tag="six", idle_before=(0, 7), ttl="1h")
        six = [_step(r.json) for r in gw.up.model_requests]
        start = len(gw.up.model_requests)
        away = LONG_CACHE_TTL_SECONDS + 60
        await _loop(gw, client, turns=1, steps=10, tag="hour", idle_before=(0, 7), ttl="1h", away=away)
        hour = [_step(r.json) for r in gw.up.model_requests[start:]]
        rows = await gw.call(gw.sessions.store.gateway_requests)
    assert '"ttl": "1h"' in json.dumps(gw.up.model_requests[0].json)  # the marker went through as sent
    assert six == [0] * 11  # six minutes away: warm for an hour-long cache
    assert hour == [0] * 8 + [1] * 3  # past the hour: cold, the step is taken there
    assert rows[start + 8]["prefix"] == "compaction step: the provider's cache had expired (idle over 60 minutes)"
