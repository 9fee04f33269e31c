"""The gateway with the official SDKs as clients, a fake upstream behind it, real HTTP on
loopback, the real engine and store (tests/gateway/harness.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import subprocess
import sys
import zlib
from pathlib import Path

import aiohttp
import anthropic
import openai
import pytest

from ctx_lsp.config import GatewayConfig
from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import UserError
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis.responses import Responses
from ctx_lsp.gateway.options import resolve
from ctx_lsp.gateway.translate import tool_names
from ctx_lsp.sessions import NotFound
from tests.gateway.fake_upstream import Reply
from tests.gateway.harness import KEY, PAID_CONTEXT, TINY_MODEL, running_gateway
from tests.waiting import eventually
from tests.workspaces import copy_sample

TOOL = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
READ = {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The sample workspace, its context paid for whatever it costs: these tests are about where
    the context goes (test_gateway_cost.py: what pays for it by default)."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)
    return ws


def _oai(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)


def _ant(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0)


async def test_passthrough_is_byte_identical_in_mode_off(ws: Path) -> None:
    raw = (
        '{"model": "gpt-4o",  "messages": [{"role": "user", "content": "caf\\u00e9 \u00e9 ok"}],'
        ' "x_future_field": {"keep": [1, 2.50, "me"]}, "temperature": 0.0}'
    ).encode()
    async with running_gateway(ws, mode="off") as gw, aiohttp.ClientSession() as http:
        async with http.post(
            gw.openai_url + "/chat/completions",
            data=raw,
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        ) as r:
            assert r.status == 200
            reply = await r.json()
        sent = gw.up.model_requests[-1]
        assert sent.body == raw
        assert sent.headers["authorization"] == f"Bearer {KEY}"
        assert reply["choices"][0]["message"]["content"] == gw.up.default.content


async def test_chat_stream_tool_round_trip_carries_context_and_records_the_conversation(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        gw.up.queue(Reply.tool_call("read_file", {"path": "shop/billing/invoice.py"}), Reply.text("Rounded half up."))
        messages: list[dict] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "How are invoice totals rounded to cents?"},
        ]
        stream = await client.chat.completions.create(model="gpt-4o", messages=messages, tools=[TOOL], stream=True)
        calls: dict[int, dict] = {}
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            for c in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                slot = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = c.id or slot["id"]
                slot["name"] += c.function.name or ""
                slot["arguments"] += c.function.arguments or ""
        assert all(c.choices for c in chunks), "the usage chunk the gateway asked for reached the client"
        call = calls[0]
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": dict(name=call["name"], arguments=call["arguments"]),
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "def _round_cents(amount): ..."},
        ]
        second = await client.chat.completions.create(model="gpt-4o", messages=messages, tools=[TOOL])
        assert second.choices[0].message.content == "Rounded half up."

        first_sent, second_sent = (r.json for r in gw.up.model_requests)
        assert first_sent["stream_options"] == {"include_usage": True}
        assert first_sent["messages"][0] == messages[0]  # the client's system prompt, unchanged
        assert first_sent["messages"][1]["content"].startswith(STABLE_HEADER)
        context, latest = first_sent["messages"][-2:]
        assert latest == messages[1]  # the user's message as sent, the context in a message of its own before it
        assert context["role"] == "user" and context["content"].startswith(CONTEXT_HEADER)
        assert "_round_cents" in context["content"]  # retrieval found the code the question is about
        assert second_sent["tools"] == [TOOL]
        session = gw.gateway.status.last.session
        transcript = await gw.call(gw.sessions.messages, session)
        assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "assistant"]
        assert transcript.branch == "main"  # the resent reply matched the one read from the stream
        assert all(CONTEXT_HEADER not in m.content for m in transcript.messages)  # injected blocks are not stored


async def test_anthropic_keeps_thinking_signatures_and_unknown_blocks_byte_for_byte(ws: Path) -> None:
    assistant = (
        '{"role":"assistant","content":[{"type":"thinking","thinking":"Let me look.","signature":"EqQBCkYIBx=="},'
        '{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"shop/inventory.py"}}]}'
    )
    results = (
        '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"class Inventory: ..."},'
        '{"type":"future_block","payload":{"z":1,"a":[true,null]}}]}'
    )
    raw = (
        '{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are Claude Code.",'
        '"cache_control":{"type":"ephemeral"}}],"tools":[' + json.dumps(READ) + '],"messages":['
        '{"role":"user","content":"Where is stock reserved?"},' + assistant + "," + results + "]}"
    ).encode()
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        async with http.post(
            gw.url + "/v1/messages?beta=true",
            data=raw,
            headers={"x-api-key": KEY, "anthropic-version": "2023-06-01", "anthropic-beta": "interleaved-thinking"},
        ) as r:
            assert r.status == 200, await r.text()
        sent = gw.up.model_requests[-1]
        assert sent.path == "/v1/messages?beta=true"
        assert sent.headers["anthropic-beta"] == "interleaved-thinking" and sent.headers["x-api-key"] == KEY
        assert assistant.encode() in sent.body
        assert b'{"type":"future_block","payload":{"z":1,"a":[true,null]}}' in sent.body
        assert sent.json["system"][0] == {
            "type": "text",
            "text": "You are Claude Code.",
            "cache_control": {"type": "ephemeral"},
        }
        assert sent.json["system"][1]["text"].startswith(STABLE_HEADER)
        assert sent.json["tools"] == [READ]


async def test_anthropic_stream_with_tool_call_and_usage_feeds_calibration(ws: Path) -> None:
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        gw.up.queue(
            Reply.tool_call("read_file", {"path": "shop/inventory.py"}), Reply.text("Here."), Reply.text("More.")
        )
        messages: list[dict] = [{"role": "user", "content": "Where is stock reserved?"}]
        async with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=512, messages=messages, tools=[READ]
        ) as s:
            final = await s.get_final_message()
        use = next(b for b in final.content if b.type == "tool_use")
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "def reserve(): ..."}],
            },
        ]
        async with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=512, messages=messages, tools=[READ]
        ) as s:
            text = await s.get_final_text()
        assert text == "Here."
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "and releases?"}]
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=messages)
        session = gw.gateway.status.last.session
        transcript = await gw.call(gw.sessions.messages, session)
        assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        assert transcript.branch == "main"
        stats = await gw.call(gw.sessions.store.usage_stats, "claude-sonnet-4-5", session)
        assert stats.reports == 3 and stats.last_actual == gw.gateway.status.last.input_tokens
        assert gw.gateway.status.last.input_tokens and gw.gateway.status.last.input_tokens > 0


async def test_responses_stream_through_the_gateway(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        stream = await client.responses.create(
            model="gpt-4o",
            input=[
                {"type": "message", "role": "developer", "content": "You are Codex."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "How is stock reserved?"}],
                },
            ],
            prompt_cache_key="codex-session-1",
            stream=True,
        )
        done = [e async for e in stream if e.type == "response.completed"]
        assert done and done[0].response.output_text == gw.up.default.content
        sent = gw.up.model_requests[-1].json
        assert sent["input"][0] == {"type": "message", "role": "developer", "content": "You are Codex."}
        assert sent["input"][1]["role"] == "developer" and sent["input"][1]["content"][0]["text"].startswith(
            STABLE_HEADER
        )
        assert sent["input"][2]["content"][0]["text"].startswith(CONTEXT_HEADER)
        assert sent["input"][3]["content"] == [{"type": "input_text", "text": "How is stock reserved?"}]
        assert gw.gateway.status.last.session.startswith("codex-")
        assert gw.gateway.status.last.input_tokens


async def test_responses_newer_codex_shape_keeps_its_instructions_first(ws: Path) -> None:
    """Codex's newer models send no ``instructions``: an ``additional_tools`` item and developer
    messages open ``input``. They are the client's system prompt: our block goes after them, the
    unknown item passes byte for byte, and the namespaced tools count as the request's tools."""
    tools_item = {
        "type": "additional_tools",
        "id": "at_1",
        "role": "developer",
        "tools": [
            {
                "type": "namespace",
                "name": "functions",
                "description": "",
                "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
            }
        ],
    }
    head = [
        tools_item,
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
    ]
    question = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "How is stock reserved?"}],
    }
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        await client.responses.create(model="gpt-6.1-sol", input=[*head, question], prompt_cache_key="codex-2")
        sent = gw.up.model_requests[-1].json
        assert sent["input"][:3] == head
        assert sent["input"][3]["role"] == "developer"
        assert sent["input"][3]["content"][0]["text"].startswith(STABLE_HEADER)
        assert sent["input"][4]["content"][0]["text"].startswith(CONTEXT_HEADER)
        assert sent["input"][5] == question
        assert "instructions" not in sent
        assert gw.gateway.status.last.input_tokens


def test_tool_names_read_responses_namespaces_and_additional_tools() -> None:
    body = {
        "model": "gpt-6.1-sol",
        "tools": [{"type": "web_search"}],
        "input": [
            {
                "type": "additional_tools",
                "role": "developer",
                "tools": [
                    {"type": "namespace", "name": "functions", "tools": [{"type": "function", "name": "exec_command"}]},
                    {"type": "namespace", "name": "mcp__ctx", "tools": [{"type": "function", "name": "expand"}]},
                ],
            },
            {"type": "message", "role": "user", "content": "hi"},
        ],
    }
    parsed = Responses().parse(b.obj(json.dumps(body).encode()))
    assert tool_names(parsed.tools) == ("web_search", "exec_command", "mcp__ctx__expand")
    assert [bytes(r) for r in parsed.head] and len(parsed.items) == 1


def _agent_conversation(turns: int, result_tokens: int) -> list[dict]:
    filler = " ".join(f"line{n} value={n * 7}" for n in range(result_tokens // 4))
    messages: list[dict] = []
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"Step {t}: check the inventory module for stock reservation."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{t}", "name": "read_file", "input": {"path": f"f{t}.py"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": f"output {t}: {filler}"}],
            },
            {"role": "assistant", "content": f"Step {t} looked fine."},
        ]
    messages.append({"role": "user", "content": "Now, where is stock reserved? Answer briefly."})
    return messages


def _check_tool_pairs(messages: list[dict]) -> None:
    for n, m in enumerate(messages):
        if m["role"] != "assistant" or isinstance(m["content"], str):
            continue
        uses = {b["id"] for b in m["content"] if b.get("type") == "tool_use"}
        if uses:
            nxt = messages[n + 1]["content"]
            assert {b["tool_use_id"] for b in nxt if b.get("type") == "tool_result"} == uses
    for n, m in enumerate(messages):
        if m["role"] == "user" and not isinstance(m["content"], str):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    prev = messages[n - 1]["content"]
                    assert any(p.get("id") == b["tool_use_id"] for p in prev if isinstance(p, dict))


async def test_over_budget_agent_conversation_is_shed_within_the_window(ws: Path) -> None:
    (ws / "ctx.toml").write_text(TINY_MODEL.replace("6000", "12000"))
    messages = _agent_conversation(turns=14, result_tokens=700)
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        reply = await client.messages.create(model="tiny-model", max_tokens=500, messages=messages, system="Agent.")
        assert reply.content[0].text == gw.up.default.content
        sent = gw.up.model_requests[-1].json
        record = gw.gateway.status.last
        plan = await gw.call(gw.sessions.outcome, record.session, record.plan_id)
        assert plan.result.plan.totals.tokens <= plan.result.plan.prompt_budget
        counter = counter_for("cl100k_base")
        text = json.dumps(sent["messages"]) + json.dumps(sent["system"])
        assert counter.count(text) <= 12000 - 500
        assert len(sent["messages"]) < len(messages)
        _check_tool_pairs(sent["messages"])
        assert sent["messages"][0]["role"] == "user"
        latest = sent["messages"][-1]["content"]
        latest = latest if isinstance(latest, str) else latest[-1]["text"]
        assert latest == messages[-1]["content"]  # the latest question, kept
        stable = sent["system"][-1]["text"]
        assert stable.startswith(STABLE_HEADER) and "Step 0" in stable  # the compaction summary stands in
        transcript = await gw.call(gw.sessions.messages, record.session)
        stored = len(transcript.messages)
        assert stored >= len(messages)  # nothing the client sent is lost: archived, not deleted
        assert any(m.archived_by for m in transcript.messages)
        identical, _ = await gw.call(gw.sessions.replay, record.plan_id)
        assert identical  # the plan rebuilds from what is stored
        row = await gw.call(gw.sessions.store.plan_row, record.plan_id)
        tool_output = next(b["content"] for b in sent["messages"][-3]["content"] if b["type"] == "tool_result")
        assert tool_output.encode()[:200] not in zlib.decompress(row["inputs"])  # referenced by message id, not copied


async def test_the_same_task_started_again_after_a_compaction_goes_on_in_a_session_of_its_own(ws: Path) -> None:
    """A conversation that leaves its stored history inside a compaction's archived turns (here
    the same task from its first message again: the same session id) would have started a branch
    whose first turns are archived under a summary of turns that are not on it, and every request
    failed open. It goes on in ``<session>.2``; the compacted session stays as it was."""
    (ws / "ctx.toml").write_text(PAID_CONTEXT + TINY_MODEL.replace("6000", "12000"))
    messages = _agent_conversation(turns=14, result_tokens=700)
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        await client.messages.create(model="tiny-model", max_tokens=500, messages=messages, system="Agent.")
        first = gw.gateway.status.last.session
        before = await gw.call(gw.sessions.messages, first)
        assert any(m.archived_by for m in before.messages)
        with pytest.raises(UserError, match="compaction 1") as refused:  # the editor's ctx/branch: a bad request
            await gw.call(gw.sessions.branch, first, before.messages[0].id, None)
        assert not isinstance(refused.value, NotFound)  # the message exists
        for n in (1, 3, 5):  # the task again, a tool exchange at a time
            await client.messages.create(model="tiny-model", max_tokens=500, messages=messages[:n], system="Agent.")
            record = gw.gateway.status.last
            assert record.session == f"{first}.2" and record.plan_id and record.note is None
            sent = gw.up.model_requests[-1].json["messages"]
            assert messages[0]["content"] in json.dumps(sent[0])  # the task is in the prompt
            assert len(sent) == n
        again = await gw.call(gw.sessions.messages, f"{first}.2")
        roles = ["user", "assistant", "tool", "assistant", "user", "assistant"]  # the last: the reply
        assert [m.role for m in again.messages] == roles
        assert not any(m.archived_by for m in again.messages)
        assert await gw.call(gw.sessions.messages, first) == before  # nothing of the first run changed


async def test_next_request_repeats_the_previous_one_up_to_the_per_turn_block(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
        for question in ("How is stock reserved?", "And how are invoices rounded?", "What do discounts do?"):
            messages.append({"role": "user", "content": question})
            r = await client.chat.completions.create(model="gpt-4o", messages=messages)
            messages.append({"role": "assistant", "content": r.choices[0].message.content})
        bodies = [r.json["messages"] for r in gw.up.model_requests]
        for before, after in itertools.pairwise(bodies):
            assert after[: len(before)] == before  # an earlier turn's block stays where it was sent
            assert before[-2]["content"].startswith(CONTEXT_HEADER)


async def test_upstream_errors_reach_the_client_unchanged(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client, _ant(gw.url) as ant:
        gw.up.queue(Reply.error(429, "slow down, fake"), Reply.error(500, "fake exploded"))
        with pytest.raises(openai.RateLimitError) as rate:
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert "slow down, fake" in str(rate.value)
        with pytest.raises(openai.InternalServerError) as boom:
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert "fake exploded" in str(boom.value)
        gw.up.queue(Reply.error(429, "anthropic says wait"), api="messages")
        with pytest.raises(anthropic.RateLimitError, match="anthropic says wait"):
            await ant.messages.create(
                model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )


async def test_fail_open_forwards_the_clients_bytes(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:

        def broken(*_: object) -> None:
            raise RuntimeError("engine bug")

        monkeypatch.setattr(gw.sessions, "plan_exchange", broken)
        r = await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi there"}])
        assert r.choices[0].message.content == gw.up.default.content
        assert gw.up.model_requests[-1].json["messages"] == [{"role": "user", "content": "hi there"}]
        assert gw.gateway.status.counts["fail_open"] == 1
        assert "engine bug" in gw.gateway.status.last.note


async def test_bad_input_gets_the_apis_error_shape(ws: Path) -> None:
    (ws / "ctx.toml").write_text(TINY_MODEL)
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http, _ant(gw.url) as ant:
        async with http.post(gw.url + "/v1/messages", data=b"{not json", headers={"x-api-key": KEY}) as r:
            assert r.status == 400
            assert (await r.json())["type"] == "error"
        async with http.post(gw.openai_url + "/chat/completions", data=b"[1,") as r:
            assert r.status == 400 and "error" in await r.json()
        huge = "word " * 9000
        with pytest.raises(anthropic.BadRequestError, match="context overflow"):
            await ant.messages.create(model="tiny-model", max_tokens=100, messages=[{"role": "user", "content": huge}])
        assert not gw.up.model_requests  # nothing over the window was forwarded
        async with http.head(gw.url + "/") as r:
            assert r.status == 200


async def test_unreachable_upstream_is_a_502(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        await gw.up.stop()
        with pytest.raises(openai.APIStatusError) as err:
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502 and "unreachable" in str(err.value)


async def test_client_disconnect_mid_stream_stores_no_partial_reply(ws: Path) -> None:
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        gw.up.queue(Reply.text("a long answer " * 40, delay=0.05))
        body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "tell me a story"}]}
        async with http.post(gw.openai_url + "/chat/completions", json=body) as r:
            await r.content.readany()
        for _ in range(100):
            if gw.gateway.status.counts["client_gone"]:
                break
            await asyncio.sleep(0.05)
        assert gw.gateway.status.counts["client_gone"] == 1
        sessions = await gw.call(gw.sessions.store.ensure_session, "x")  # the store still answers
        assert sessions is not None
        names = [
            s for s in await gw.call(lambda: [r[0] for r in gw.sessions.store._read("SELECT id FROM sessions", ())])
        ]
        chat = next(n for n in names if n.startswith("chat-"))
        transcript = await gw.call(gw.sessions.messages, chat)
        assert [m.role for m in transcript.messages] == ["user"]


async def test_a_client_that_leaves_after_the_replys_last_event_still_has_it_stored(ws: Path) -> None:
    """Codex closes its connection once it has read the reply's end, before the stream's last
    bytes (the usage chunk, ``[DONE]``): the reply is whole, so it is stored, and the next request
    continues the conversation (before: the handler was cancelled first and the reply was lost)."""
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        gw.up.queue(Reply.text("the answer", delay=0.5))  # half a second between events
        body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "what is the answer?"}]}
        async with http.post(gw.openai_url + "/chat/completions", json=body) as r:
            async for line in r.content:
                if b'"finish_reason":"stop"' in line.replace(b" ", b""):
                    break  # the end of the reply: leave now, as Codex does
        assert await eventually(lambda: gw.gateway.status.counts["client_gone"]) == 1
        chat = await gw.call(
            lambda: next(
                r[0] for r in gw.sessions.store._read("SELECT id FROM sessions", ()) if r[0].startswith("chat-")
            )
        )
        transcript = await eventually(lambda: _roles_when(gw, chat, 2), what="the reply stored after the client left")
        assert transcript == ["user", "assistant"]


async def _roles_when(gw, session: str, n: int) -> list[str] | None:
    roles = [m.role for m in (await gw.call(gw.sessions.messages, session)).messages]
    return roles if len(roles) >= n else None


async def test_two_conversations_at_once_and_a_restart_in_between(ws: Path) -> None:
    first = [{"role": "system", "content": "Agent A"}, {"role": "user", "content": "How is stock reserved?"}]
    second = [{"role": "system", "content": "Agent B"}, {"role": "user", "content": "How are invoices rounded?"}]
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        a, b = await asyncio.gather(
            client.chat.completions.create(model="gpt-4o", messages=first),
            client.chat.completions.create(model="gpt-4o", messages=second),
        )
        assert a.choices[0].message.content and b.choices[0].message.content
        assert gw.gateway.status.counts["planned"] == 2
        ids = await gw.call(lambda: [r[0] for r in gw.sessions.store._read("SELECT id FROM sessions", ())])
        assert len([i for i in ids if i.startswith("chat-")]) == 2
    first.append({"role": "assistant", "content": a.choices[0].message.content})
    first.append({"role": "user", "content": "And released?"})
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:  # a restart: a new process, the same store
        await client.chat.completions.create(model="gpt-4o", messages=first)
        session = gw.gateway.status.last.session
        transcript = await gw.call(gw.sessions.messages, session)
        assert [m.role for m in transcript.messages] == ["user", "assistant", "user", "assistant"]
        assert transcript.branch == "main"


async def test_the_key_is_nowhere_in_the_store_or_the_log(ws: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client, _ant(gw.url) as ant:
        await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        await ant.messages.create(
            model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        gw.up.queue(Reply.error(401, "bad key"))
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "again"}])
    leaked = [p for p in (ws / ".ctx").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert KEY not in caplog.text
    assert "gateway" in caplog.text  # the per-request lines were logged


async def test_a_token_guards_the_gateway_and_non_loopback_needs_one(ws: Path) -> None:
    with pytest.raises(UserError, match="not a loopback address"):
        resolve(GatewayConfig(), listen="0.0.0.0:8787")
    assert resolve(GatewayConfig(), listen="0.0.0.0:8787", token="t").token == "t"
    async with running_gateway(ws, token="gw-token") as gw, aiohttp.ClientSession() as http:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        async with http.post(gw.openai_url + "/chat/completions", json=body) as r:
            assert r.status == 401
        async with http.post(gw.openai_url + "/chat/completions", json=body, headers={"X-Ctx-Token": "gw-token"}) as r:
            assert r.status == 200
        assert "x-ctx-token" not in gw.up.model_requests[-1].headers


async def test_other_paths_are_forwarded_and_gzip_is_relayed_as_sent(ws: Path) -> None:
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client, aiohttp.ClientSession() as http:
        models = await client.models.list()
        assert [m.id async for m in models]
        async with http.post(
            gw.url + "/v1/messages/count_tokens",
            json={"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]},
            headers={"anthropic-version": "2023-06-01"},
        ) as r:
            assert (await r.json())["input_tokens"] > 0
        gw.up.queue(Reply.text("zipped", gzip=True))
        r = await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert r.choices[0].message.content == "zipped"
        transcript = await gw.call(gw.sessions.messages, gw.gateway.status.last.session)
        assert transcript.messages[-1].content == "zipped"  # the copy was read through its encoding


async def test_an_upstream_that_breaks_off_mid_stream_fails_the_request(ws: Path) -> None:
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        gw.up.queue(Reply.text("half of an answer " * 20, cut_after=4, cut="drop"))
        with pytest.raises(Exception, match=r"incomplete|peer closed|onnection"):
            async with client.messages.stream(
                model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "go"}]
            ) as s:
                await s.get_final_message()
        assert gw.gateway.status.counts["upstream_cut"] == 1
        reply = await client.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "again"}]
        )
        assert reply.content[0].text == gw.up.default.content  # and it keeps serving


async def test_a_body_of_many_megabytes_passes_with_its_image_byte_for_byte(ws: Path) -> None:
    image = (
        '{"type":"image","source":{"type":"base64","media_type":"image/png","data":"'
        + "iVBORw0KGgo" * 1_500_000
        + '"}}'
    )
    raw = (
        '{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[' + image + ","
        '{"type":"text","text":"What does this diagram of the inventory show?"}]}]}'
    ).encode()
    assert len(raw) > 16_000_000
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        async with http.post(gw.url + "/v1/messages", data=raw, headers={"x-api-key": KEY}) as r:
            assert r.status == 200, await r.text()
        sent = gw.up.model_requests[-1].body
        assert image.encode() in sent and CONTEXT_HEADER.encode() in sent


async def test_anthropic_count_tokens_calibrates_the_model(ws: Path) -> None:
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        for n in range(3):
            counted = await client.messages.count_tokens(
                model="claude-sonnet-4-5", messages=[{"role": "user", "content": f"how is stock reserved? {n}" * 40}]
            )
            assert counted.input_tokens > 0
        stats = await gw.call(gw.sessions.store.usage_stats, "claude-sonnet-4-5")
        assert stats.reports == 3 and stats.factor is not None


def _pytest_log(tmp_path: Path) -> str:
    """A real pytest run: 300 passing tests and one planted failure."""
    proj = tmp_path / "proj"
    proj.mkdir()
    tests = [f"def test_ok_{n}():\n    assert {n} + 1 == {n + 1}\n" for n in range(300)]
    tests.append(
        "def test_reserve_stock():\n    stock = {'widget': 1}\n    assert stock['widget'] - 2 >= 0, 'oversold widget'\n"
    )
    (proj / "test_stock.py").write_text("\n".join(tests))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_stock.py"],
        cwd=proj,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


async def test_a_big_test_log_goes_shrunk_once_with_its_failure_and_the_original_is_kept(
    ws: Path, tmp_path: Path
) -> None:
    log = _pytest_log(tmp_path)
    assert "oversold widget" in log and len(log) > 20_000
    use = {"type": "tool_use", "id": "toolu_t", "name": "Bash", "input": {"command": "pytest -v"}}
    messages: list[dict] = [
        {"role": "user", "content": "Why does the stock test fail?"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": log}]},
    ]
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=messages)
        first = gw.up.model_requests[-1].json["messages"][2]["content"][0]["content"]
        assert first.startswith("[ctx_lsp shortened this test log output")
        assert "`ctx-lsp expand g-" in first and "with the ctx tools" not in first  # it has a shell, not our tools
        assert "oversold widget" in first and "test_reserve_stock" in first
        assert len(first) < len(log) / 4
        messages += [{"role": "assistant", "content": "It oversells."}, {"role": "user", "content": "Fix it."}]
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=messages)
        again = gw.up.model_requests[-1].json["messages"][2]["content"][0]["content"]
        assert again == first  # the same bytes in every later request: the provider's cache keeps hitting
        session = gw.gateway.status.last.session
        transcript = await gw.call(gw.sessions.messages, session)
        tool = next(m for m in transcript.messages if m.role == "tool")
        original = await gw.call(gw.sessions.original, tool.id)
        assert original is not None and original[2] == log and original[1] == "test_log"


async def test_a_file_printed_by_cat_reaches_the_model_whole_and_a_log_from_any_command_tool_is_shrunk(
    ws: Path,
) -> None:
    """The OpenAI face, a tool of the client's own naming: a file read through ``cat`` is what the
    model reads (never cut); a long log from a call with a ``cmd`` argument is command output."""
    source = "\n".join(f"def helper_{n}(x):\n    return x * {n} + {n % 7}\n" for n in range(900))
    log = [
        f"2026-11-27T07:{n // 60 % 60:02d}:{n % 60:02d}Z INFO request id=r{n} path=/api/items status=200 ms={n % 40}"
        for n in range(3000)
    ]
    log.insert(1700, "2026-11-27T07:28:20Z ERROR request id=r1700 path=/api/checkout status=500 KeyError: 'currency'")
    cat = json.dumps({"cmd": ["bash", "-lc", "cat src/helpers.py"]})
    journal = json.dumps({"cmd": "journalctl -u shop --since today"})
    calls = [
        {"id": "call_cat", "type": "function", "function": {"name": "run", "arguments": cat}},
        {"id": "call_log", "type": "function", "function": {"name": "run", "arguments": journal}},
    ]
    messages: list[dict] = [
        {"role": "user", "content": "Why did checkout fail with a 500?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_cat", "content": source},
        {"role": "tool", "tool_call_id": "call_log", "content": "\n".join(log)},
    ]
    async with running_gateway(ws) as gw, _oai(gw.url) as client:
        await client.chat.completions.create(model="gpt-4o", messages=messages)
        sent = {m.get("tool_call_id"): m["content"] for m in gw.up.model_requests[-1].json["messages"]}
        assert sent["call_cat"] == source  # whole, byte for byte
        shrunk = sent["call_log"]
        assert shrunk.startswith("[ctx_lsp shortened this command output") and len(shrunk) < len("\n".join(log)) / 5
        assert "status=500 KeyError: 'currency'" in shrunk and " lines …" in shrunk


async def test_codex_reading_a_file_with_cat_gets_it_whole_and_a_long_test_run_shrunk(ws: Path) -> None:
    """The Responses face as Codex speaks it: its ``shell`` tool with ``["bash", "-lc", …]``."""
    source = "\n".join(f"fn helper_{n}(x: u64) -> u64 {{\n    x * {n}\n}}\n" for n in range(800))
    run = ["running 2501 tests", *(f"test tests::case_{n} ... ok" for n in range(2500))]
    run.append("test result: FAILED. 2500 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out")
    run[1400:1400] = [
        "test tests::ledger_balance ... FAILED",
        "---- tests::ledger_balance stdout ----",
        "thread 'tests::ledger_balance' panicked at src/ledger.rs:88:9:",
        "assertion `left == right` failed",
        "  left: 1040",
        " right: 1000",
    ]

    def call(cid: str, command: str) -> dict:
        arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": "/w"})
        return {"type": "function_call", "call_id": cid, "name": "shell", "arguments": arguments}

    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Why is the balance off?"}]},
        call("c_cat", "cat src/ledger.rs"),
        {"type": "function_call_output", "call_id": "c_cat", "output": source},
        call("c_test", "cargo test"),
        {"type": "function_call_output", "call_id": "c_test", "output": "\n".join(run)},
    ]
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        await client.responses.create(model="gpt-4o", input=items, prompt_cache_key="codex-cat")
        sent = {i.get("call_id"): i["output"] for i in gw.up.model_requests[-1].json["input"] if "output" in i}
        assert sent["c_cat"] == source
        assert sent["c_test"].startswith("[ctx_lsp shortened this test log output")
        assert "  left: 1040" in sent["c_test"] and " right: 1000" in sent["c_test"]


async def test_a_linters_lines_inside_the_function_asked_about_are_kept_by_the_index(ws: Path) -> None:
    """mypy names files and lines, not functions: the index knows ``tax_for`` is lines 76–78 of
    shop/billing/invoice.py, so the diagnostics there are what a question about it keeps."""
    report = []
    for n in range(600):
        path = "shop/billing/invoice.py" if n % 3 == 0 else f"shop/module_{n % 40}.py"
        line = 5 + n % 60  # never 76–78
        report.append(f"{path}:{line}: error: Function is missing a type annotation  [no-untyped-def]")
    report.insert(377, "shop/billing/invoice.py:78: error: Returning Any from function declared to return Decimal")
    report.append("Found 601 errors in 41 files (checked 44 source files)")
    use = {"type": "tool_use", "id": "toolu_m", "name": "Bash", "input": {"command": "mypy --strict shop"}}
    messages: list[dict] = [
        {"role": "user", "content": "What does mypy say about tax_for?"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_m", "content": "\n".join(report)}]},
    ]
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=messages)
        shrunk = gw.up.model_requests[-1].json["messages"][2]["content"][0]["content"]
        assert shrunk.startswith("[ctx_lsp shortened this test log output")
        kept = shrunk.splitlines()
        assert "shop/billing/invoice.py:78: error: Returning Any from function declared to return Decimal" in kept
        assert len(kept) < len(report) / 3  # without the index that line is cut (test_shrink.py)


async def test_nothing_is_shrunk_that_the_model_could_not_bring_back(ws: Path) -> None:
    """A big JSON answer from a tool that runs no commands: kept whole for a client without
    ctx_lsp's expand tool; shortened, with the way back named, for one that has it."""
    packages = [{"name": f"pkg-{n}", "version": f"1.{n}.0", "license": "MIT"} for n in range(900)]
    packages[612] = {"name": "leftpad", "version": "0.0.1", "license": "WTFPL", "deprecated": "use String.padStart"}
    dump = json.dumps({"packages": packages}, indent=2)
    use = {"type": "tool_use", "id": "toolu_j", "name": "registry_lookup", "input": {"scope": "all"}}
    messages: list[dict] = [
        {"role": "user", "content": "Which of our packages is deprecated?"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_j", "content": dump}]},
    ]
    lookup = {"name": "registry_lookup", "description": "packages", "input_schema": {"type": "object"}}
    expand = {"name": "mcp__ctx__expand", "description": "expand", "input_schema": {"type": "object"}}
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=messages, tools=[lookup])
        assert gw.up.model_requests[-1].json["messages"][2]["content"][0]["content"] == dump
        other = [
            {**m, "content": m["content"].replace("Which", "Tell me which")} if n == 0 else m
            for n, m in enumerate(messages)
        ]  # another conversation
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=other, tools=[lookup, expand])
        shrunk = gw.up.model_requests[-1].json["messages"][2]["content"][0]["content"]
        assert shrunk.startswith("[ctx_lsp shortened this json output") and "with the ctx tools" in shrunk
        assert "ctx-lsp expand" not in shrunk  # this tool runs no commands: no shell to name
        assert '"deprecated": "use String.padStart"' in shrunk and len(shrunk) < len(dump) / 5


def test_an_upstream_named_only_by_the_workspace_must_be_a_known_provider(ws: Path) -> None:
    from ctx_lsp.config import load_workspace_config

    (ws / "ctx.toml").write_text('[gateway]\nanthropic_upstream = "https://keys.example.net"\n')
    config, _ = load_workspace_config(ws)
    with pytest.raises(UserError, match=r"keys\.example\.net, which is not a known provider"):
        resolve(config.gateway, workspace=config.gateway)
    confirmed = resolve(config.gateway, workspace=config.gateway, anthropic_upstream="https://keys.example.net")
    assert confirmed.anthropic_upstream == "https://keys.example.net"
    (ws / "ctx.toml").write_text('[gateway]\nopenai_upstream = "http://127.0.0.1:11434/v1"\n')  # a local server
    config, _ = load_workspace_config(ws)
    assert resolve(config.gateway, workspace=config.gateway).openai_upstream == "http://127.0.0.1:11434/v1"
