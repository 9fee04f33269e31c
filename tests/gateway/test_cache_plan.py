"""The provider's cache is ours to keep (issue 32, DESIGN §6): through a whole agent loop, with
tool results that change every step, each forwarded request repeats the one before byte for
byte and appends — the per-turn block is computed once per user turn and stays where it was
sent; the prefix changes only at a compaction step. Real gateway on loopback, the fake
upstream, the real anthropic and openai SDK clients."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import anthropic
import openai
import pytest

from ctx_lsp.core.render import CONTEXT_HEADER
from tests.gateway.fake_upstream import cacheable
from tests.gateway.harness import KEY, PAID_CONTEXT, running_gateway
from tests.workspaces import copy_sample

TASKS = ("How is stock reserved in the inventory?", "And how are invoices rounded?")
STEPS = 5  # tool exchanges per user turn


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)  # light mode, the context added whatever it costs
    return ws


def _result(turn: int, step: int) -> str:
    """A tool output that differs every step (as a real agent's reads and test runs do)."""
    return "\n".join(f"src/mod{turn}_{step}.py:{n}: value = {n * (step + 3)}" for n in range(60))


def _appends(api: str, bodies: list[dict]) -> list[int]:
    """The requests (by index) whose cacheable bytes do not start with the previous request's,
    its closing brackets left off: where the provider's cached prefix would break."""
    broken = []
    for n, (before, after) in enumerate(itertools.pairwise(bodies), start=1):
        head = cacheable(api, before).rstrip(b"]}")
        if not cacheable(api, after).startswith(head):
            broken.append(n)
    return broken


def _blocks(text: str) -> list[str]:
    """Each per-turn block a body holds (up to the end of its text)."""
    out = []
    start = 0
    while (i := text.find(CONTEXT_HEADER, start)) >= 0:
        end = text.find('"', i)
        out.append(text[i:end])
        start = end
    return out


# An agent's system prompt with the client's own breakpoint, and one tool, as Claude Code sends them
AGENT_SYSTEM = [{"type": "text", "text": "You are an agent. " * 40, "cache_control": {"type": "ephemeral"}}]
AGENT_TOOLS = [{"name": "Read", "description": "Reads a file.", "input_schema": {"type": "object"}}]


async def test_an_anthropic_agent_loop_only_appends_and_keeps_each_turns_block(ws: Path) -> None:
    http_client = anthropic.DefaultAsyncHttpxClient()
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0, http_client=http_client) as client,
    ):
        messages: list[dict] = []
        for turn, task in enumerate(TASKS):
            messages.append({"role": "user", "content": [{"type": "text", "text": task}]})
            for step in range(STEPS + 1):
                for m in messages:  # Claude Code marks the newest block only
                    for block in m["content"] if isinstance(m["content"], list) else []:
                        block.pop("cache_control", None)
                messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
                await client.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=1024,
                    system=AGENT_SYSTEM,
                    tools=AGENT_TOOLS,
                    messages=messages,
                )
                if step == STEPS:
                    break
                tid = f"toolu_{turn}_{step}"
                messages.append(
                    {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read", "input": {}}]}
                )
                messages.append(
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tid, "content": _result(turn, step)}],
                    }
                )
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
        bodies = [r.json for r in gw.up.model_requests]
    assert len(bodies) == len(TASKS) * (STEPS + 1)
    assert _appends("messages", bodies) == []  # every request repeats the one before and appends
    first_turn = [_blocks(json.dumps(b["messages"], ensure_ascii=False)) for b in bodies[: STEPS + 1]]
    assert first_turn[0] and all(blocks == first_turn[0] for blocks in first_turn)  # once per turn
    later = _blocks(json.dumps(bodies[-1]["messages"], ensure_ascii=False))
    assert later[0] == first_turn[0][0] and len(later) == 2  # the first turn's block stays where it was


async def test_an_openai_agent_loop_only_appends(ws: Path) -> None:
    async with (
        running_gateway(ws) as gw,
        openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as client,
    ):
        messages: list[dict] = [{"role": "system", "content": "You are a coding agent. " * 40}]
        for turn, task in enumerate(TASKS):
            messages.append({"role": "user", "content": task})
            for step in range(STEPS + 1):
                await client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
                if step == STEPS:
                    break
                cid = f"call_{turn}_{step}"
                call = {"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
                messages.append({"role": "tool", "tool_call_id": cid, "content": _result(turn, step)})
            messages.append({"role": "assistant", "content": "Done."})
        bodies = [r.json for r in gw.up.model_requests]
    assert _appends("chat", bodies) == []
    blocks = [_blocks(json.dumps(b["messages"], ensure_ascii=False)) for b in bodies]
    assert blocks[0] and all(b[0] == blocks[0][0] for b in blocks)  # computed once, resent byte for byte


# a window small enough that a short agent loop takes several compaction steps (the model's own
# name: its prices, which the step rule reads, stay the built-in ones)
SMALL_WINDOW = """
[[models]]
name = "claude-sonnet-4-5"
context_length = 9000
max_output = 1000
"""
STEP = re.compile(r"\[Compaction #(\d+)")


def _step(body: dict) -> int:
    """The compaction step a forwarded body is in (0: none yet)."""
    found = STEP.findall(json.dumps(body, ensure_ascii=False))
    return max(map(int, found), default=0)


async def test_through_compaction_steps_the_prefix_changes_only_at_a_step(tmp_path: Path) -> None:
    """A long agent loop in a small window, tool results different every step: the gateway takes
    compaction steps, and between two steps every forwarded request repeats the one before byte
    for byte and appends — no tool result masked, no message shed, no stable block changed a
    little at a time. Each step is taken in one go."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT + SMALL_WINDOW)
    http_client = anthropic.DefaultAsyncHttpxClient()
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0, http_client=http_client) as client,
    ):
        messages: list[dict] = []
        for turn in range(3):
            messages.append({"role": "user", "content": [{"type": "text", "text": f"{TASKS[turn % 2]} (task {turn})"}]})
            for step in range(12):
                for m in messages:  # Claude Code marks the newest block only
                    for block in m["content"] if isinstance(m["content"], list) else []:
                        block.pop("cache_control", None)
                messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
                await client.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=1000,
                    system=AGENT_SYSTEM,
                    tools=AGENT_TOOLS,
                    messages=messages,
                )
                tid = f"toolu_{turn}_{step}"
                messages.append(
                    {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read", "input": {}}]}
                )
                messages.append(
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tid, "content": _result(turn, step)}],
                    }
                )
        bodies = [r.json for r in gw.up.model_requests]
        rows = await gw.call(gw.sessions.store.gateway_requests)  # after the replies' records, queued first
    steps = [_step(b) for b in bodies]
    assert steps[-1] >= 3  # the loop outgrew the window several times
    for n in _appends("messages", bodies):
        assert steps[n] > steps[n - 1], f"request {n} rewrote the prefix between steps"
    # the ledger says where the prefix was rebuilt, and why: at each step, nowhere else
    assert len(rows) == len(bodies)
    stepped = [n for n in range(1, len(steps)) if steps[n] > steps[n - 1]]
    assert [n for n, r in enumerate(rows) if r["prefix"]] == stepped
    assert all(r["prefix"].startswith("compaction step") for r in rows if r["prefix"])


async def test_a_conversation_the_client_asked_the_provider_to_compact_goes_as_sent(ws: Path) -> None:
    """Anthropic's context editing and server-side compaction, OpenAI's Responses compaction: the
    provider manages that conversation, so the gateway neither compacts it again nor adds to it —
    and says so. Clearing old thinking only (as Claude Code asks) leaves the conversation to us."""
    http_client = anthropic.DefaultAsyncHttpxClient()
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0, http_client=http_client) as ant,
        openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as oai,
    ):

        async def ask(edits: list[dict]) -> str:
            await ant.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=512,
                system="You are a coding agent.",
                messages=[{"role": "user", "content": f"{TASKS[0]} ({edits[0]['type']})"}],
                extra_body={"context_management": {"edits": edits}},
            )
            return gw.up.model_requests[-1].body.decode()

        assert CONTEXT_HEADER not in await ask([{"type": "clear_tool_uses_20250919"}])
        assert "clear_tool_uses_20250919): forwarded as sent" in (gw.gateway.status.last.note or "")
        assert CONTEXT_HEADER not in await ask([{"type": "compact_20260112"}])
        assert CONTEXT_HEADER in await ask([{"type": "clear_thinking_20251015", "keep": "all"}])  # ours to plan
        await oai.responses.create(
            model="gpt-5",
            input=TASKS[1],
            extra_body={"context_management": [{"type": "compaction", "compact_threshold": 200_000}]},
        )
        assert CONTEXT_HEADER not in gw.up.model_requests[-1].body.decode()
        assert "(compaction): forwarded as sent" in (gw.gateway.status.last.note or "")


async def test_the_providers_own_cache_diagnostics_are_read_and_shown(ws: Path) -> None:
    """A client that asks Anthropic for cache diagnostics (``diagnostics.previous_message_id``) gets
    them through the gateway, and the gateway reads them: where the client's own request diverged
    from the one before goes into the ledger and the status when ctx_lsp had no reason of its own."""
    http_client = anthropic.DefaultAsyncHttpxClient()
    async with (
        running_gateway(ws, mode="off") as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0, http_client=http_client) as client,
    ):
        messages: list[dict] = [{"role": "user", "content": TASKS[0]}]
        previous = None
        for system in ("You are an agent. " * 300, "You are an agent. " * 300, "You are a careful agent. " * 300):
            reply = await client.messages.with_raw_response.create(
                model="claude-sonnet-4-5",
                max_tokens=512,
                system=system,
                messages=messages,
                extra_body={"diagnostics": {"previous_message_id": previous}},
            )
            body = json.loads(reply.http_response.text)
            previous = body["id"]
            messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
        rows = await gw.call(gw.sessions.store.gateway_requests)
        last = gw.gateway.status.last
    assert body["diagnostics"]["cache_miss_reason"]["type"] == "system_changed"  # relayed as the provider sent it
    assert [r["prefix"] for r in rows[:2]] == [None, None]  # the second request appended: no miss
    assert rows[2]["prefix"].startswith("provider: system_changed (") and "tokens after it)" in rows[2]["prefix"]
    assert last.cache_miss is not None and "provider cache miss: system_changed" in last.text_line()


async def test_breakpoints_for_a_client_that_places_none_never_for_one_that_does(ws: Path) -> None:
    """A script on the SDK places no cache_control: once its conversation is resent, the gateway
    marks the growing tail and the end of the system prompt (two of the four allowed). A client
    with its own markers (Claude Code) keeps exactly those: none added, none moved."""
    http_client = anthropic.DefaultAsyncHttpxClient()
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0, http_client=http_client) as client,
    ):

        async def loop(system: list[dict], task: str) -> list[dict]:
            messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": task}]}]
            sent = []
            for step in range(3):
                await client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=512, system=system, messages=messages
                )
                sent.append(gw.up.model_requests[-1].json)
                messages += [
                    {"role": "assistant", "content": [{"type": "text", "text": f"step {step}"}]},
                    {"role": "user", "content": [{"type": "text", "text": f"go on ({step})"}]},
                ]
            return sent

        plain = await loop([{"type": "text", "text": "You are a script's assistant. " * 40}], TASKS[0])
        own = AGENT_SYSTEM
        marked = await loop(own, TASKS[1])

    def marks(body: dict) -> list[str]:
        where = [f"system.{n}" for n, x in enumerate(body["system"]) if "cache_control" in x]
        for n, m in enumerate(body["messages"]):
            blocks = m["content"] if isinstance(m["content"], list) else []
            where += [f"messages.{n}.{k}" for k, x in enumerate(blocks) if "cache_control" in x]
        return where

    assert CONTEXT_HEADER in json.dumps(plain[0])  # rewritten (light, context paid), yet the first goes unmarked
    assert marks(plain[0]) == []
    for body in plain[1:]:
        last = len(body["messages"]) - 1
        assert marks(body) == [
            f"system.{len(body['system']) - 1}",
            f"messages.{last}.{len(body['messages'][last]['content']) - 1}",
        ]
    assert all(marks(body) == ["system.0"] for body in marked)  # the client's own, where it put it
