"""What pays for the context the gateway adds. By default (light mode) only what the gateway has
saved the conversation so far, cache-weighted against sending direct: a conversation that fits,
with nothing to shrink, goes upstream as the client sent it — it costs what it would direct."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from tests.gateway.fake_upstream import Reply
from tests.gateway.harness import KEY, running_gateway
from tests.workspaces import copy_sample

QUESTION = "How is stock reserved in the inventory?"


def _client(url: str, sent: list[bytes]) -> openai.AsyncOpenAI:
    async def keep(request) -> None:  # the SDK's own HTTP client: the bytes it sends
        sent.append(request.content)

    http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [keep]})
    return openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, http_client=http)


async def test_a_conversation_that_fits_goes_as_the_client_sent_it_and_the_plan_says_why(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    sent: list[bytes] = []
    async with running_gateway(ws) as gw, _client(gw.openai_url, sent) as client:
        messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
        for question in (QUESTION, "And how are invoices rounded?"):
            messages.append({"role": "user", "content": question})
            r = await client.chat.completions.create(model="gpt-4o", messages=messages)
            messages.append({"role": "assistant", "content": r.choices[0].message.content})
        assert [r.body for r in gw.up.model_requests] == sent  # byte for byte
        record = gw.gateway.status.last
        plan = (await gw.call(gw.sessions.outcome, record.session, record.plan_id)).result.plan
        report = await gw.call(gw.sessions.gateway_report, record.session)
    # what the stats say: the same cost as sent direct, not an estimate of "direct" that differs
    t = report.total
    assert t.requests == 2 and t.cost and t.cost == t.direct_cost and t.cache_share == t.direct_cache_share
    # nothing automatic: the layout is kept out by its cost, and no search was made for what the
    # plan would have left out the same way (it ranked and read the workspace for nothing)
    assert not [i for i in plan.included if i.section == "rag" or i.kind == "scaffold"]
    out = {i.reason for i in plan.excluded if i.section == "rag" or i.kind == "scaffold"}
    assert out <= {"cost"} and not [i for i in plan.excluded if i.section == "rag"], out
    assert any("paid from what the gateway has saved" in n for n in plan.notes), plan.notes


async def test_savings_from_a_shrunk_tool_output_buy_the_next_turn_its_context(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    log = "\n".join(f"tests/test_stock.py::test_ok_{n} PASSED [{n % 100:>3}%]" for n in range(600))
    log += "\nFAILED tests/test_stock.py::test_reserve - AssertionError: oversold widget\n1 failed, 600 passed"
    sent: list[bytes] = []
    async with running_gateway(ws) as gw, _client(gw.openai_url, sent) as client:
        gw.up.queue(Reply.tool_call("bash", {"command": "pytest"}), Reply.text("One test fails."))
        messages: list[dict] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run the tests."},
        ]
        r = await client.chat.completions.create(model="gpt-4o", messages=messages)
        call = r.choices[0].message.tool_calls[0]
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call.id, "type": "function", "function": dict(name="bash", arguments="{}")}],
            },
            {"role": "tool", "tool_call_id": call.id, "content": log},
        ]
        r = await client.chat.completions.create(model="gpt-4o", messages=messages)
        shrunk = gw.up.model_requests[-1].body.decode()
        assert "shortened" in json.dumps(gw.up.model_requests[-1].json["messages"][-1])
        messages += [{"role": "assistant", "content": r.choices[0].message.content}]
        messages.append({"role": "user", "content": QUESTION})
        await client.chat.completions.create(model="gpt-4o", messages=messages)
        body = gw.up.model_requests[-1].body.decode()
        record = gw.gateway.status.last
        plan = (await gw.call(gw.sessions.outcome, record.session, record.plan_id)).result.plan
    # nothing was saved yet when the shrinking request was planned: it added nothing
    assert STABLE_HEADER not in shrunk and CONTEXT_HEADER not in shrunk
    assert CONTEXT_HEADER in body and "shop/inventory.py" in body
    assert any(i.reason == "relevant" for i in plan.included)


def test_the_repeated_share_of_a_request_is_its_first_difference() -> None:
    """Sending direct, a provider caches what a request repeats of the previous one: the bytes
    before the first difference, wherever it falls (inside or at the edge of a compared block)."""
    from ctx_lsp.gateway.direct import PREFIX_BLOCK, shared_prefix

    body = bytes(range(256)) * (3 * PREFIX_BLOCK // 256)
    for at in (0, 1, PREFIX_BLOCK - 1, PREFIX_BLOCK, PREFIX_BLOCK + 1, 2 * PREFIX_BLOCK + 77, len(body) - 1):
        changed = body[:at] + bytes([(body[at] + 1) % 256]) + body[at + 1 :]
        assert shared_prefix(body, changed) == shared_prefix(changed, body) == at
    assert shared_prefix(body, body + b"more") == len(body)  # a longer request: all of this one repeats
    assert shared_prefix(body, body[:1000]) == 1000 and shared_prefix(b"", body) == 0


def test_a_resent_conversation_is_made_canonical_once_with_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What sending direct would have repeated is measured on canonical bytes with the
    ``cache_control`` markers left out; made only where a conversation's request differs from its
    previous one (an agent resends all of it each request), and the same bytes as the whole body
    made canonical: a marker that moved, a client that escapes non-ASCII (Python's json) or not
    (JSON.stringify), a conversation that went back and on again."""
    from ctx_lsp.gateway import direct

    def whole(api: str, raw: bytes) -> bytes:  # the fields decoded, unmarked and encoded, all of them
        try:
            data = json.loads(raw)
        except ValueError:
            return raw
        if not isinstance(data, dict):
            return raw

        def strip(v: object) -> object:
            if isinstance(v, dict):
                return {k: strip(x) for k, x in v.items() if k != "cache_control"}
            return [strip(x) for x in v] if isinstance(v, list) else v

        return json.dumps(
            [strip(data.get(k)) for k in direct.ORDER[api]], ensure_ascii=False, separators=(",", ":")
        ).encode()

    def body(turns: int, marker_at: int) -> dict:
        messages = []
        for i in range(turns):
            result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"ré {i}\n" * 40}
            messages.append({"role": "user", "content": [result]})
            use = {"type": "tool_use", "id": f"t{i + 1}", "name": "Read", "input": {"n": 1.5}}
            messages.append({"role": "assistant", "content": [use]})
        messages[marker_at]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        system = [
            {"type": "text", "text": "You are an agent \u2028", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ]
        tools = [{"name": "Read", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
        return {"model": "m", "max_tokens": 9, "system": system, "tools": tools, "messages": messages}

    made = direct.Cacheable()
    decoded: list[int] = []
    decode = direct._ANY.decode
    monkeypatch.setattr(direct, "_ANY", type("D", (), {"decode": lambda self, d: decoded.append(1) or decode(d)})())
    for dumps in (json.dumps, lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))):
        first, later, back = (dumps(body(n, -1)).encode() for n in (10, 11, 6))
        assert made("anthropic", first) == whole("anthropic", first)
        decoded.clear()
        key = made("anthropic", later)
        assert key == whole("anthropic", later)
        assert len(decoded) == 3  # the two new messages, and the one that lost its marker
        assert direct.shared_prefix(whole("anthropic", first), key) > 0.9 * len(key) * 10 / 11
        assert made("anthropic", back) == whole("anthropic", back)  # it went back
        assert made("anthropic", later) == key  # and on again
    for api, raw in (
        ("chat", b'{"tools": [], "messages": [{"role": "user", "content": "hi"}]}'),
        ("responses", b'{"input": "x", "instructions": "y"}'),
        ("anthropic", b"not json"),
        ("anthropic", b"[1, 2]"),
        ("anthropic", b'{"messages": 5}'),
    ):
        assert made(api, raw) == made(api, raw) == whole(api, raw)
