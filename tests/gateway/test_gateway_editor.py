"""The editor on live gateway traffic (`ctx-lsp serve` running the gateway): conversations and
the active one, the exact body last sent, review before send, capsule staleness."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import anthropic
import openai
import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from ctx_lsp.server import protocol as P
from ctx_lsp.trust import record
from tests.gateway.fake_upstream import FakeUpstream, Reply
from tests.gateway.harness import KEY
from tests.lsp.conftest import server_command, start
from tests.lsp.test_replies import exactly
from tests.waiting import eventually
from tests.workspaces import copy_sample

QUESTION = "How is stock reserved in the inventory?"
PINNED = "@abc.abstractmethod"  # a line only DiscountRule's whole body shows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# the context is added whatever it costs: these tests look for it in the upstream's bodies
PAID = 'context_cost = "always"\n'


async def _editor(root: Path, up: FakeUpstream, extra: str = ""):
    port = _free_port()
    (root / "ctx.toml").write_text(
        f'[gateway]\nlisten = "127.0.0.1:{port}"\nopenai_upstream = "{up.openai_url}"\n'
        f'anthropic_upstream = "{up.anthropic_url}"\n{extra}'
    )
    record(root, (root / "ctx.toml").read_bytes())  # the user trusts it: it opens a port
    client = await ClientServerConfig(server_command=server_command()).start()
    client.seen = []  # type: ignore[attr-defined]
    for method in ("ctx/gatewayRequest", "ctx/reviewRequest", "ctx/reviewResolved", "ctx/gatewayStatusChanged"):

        @client.feature(method)
        def _collect(params, method=method):
            client.seen.append((method, params))  # type: ignore[attr-defined]

    await start(client, root, session=None)
    status = await eventually(lambda: True)
    for _ in range(200):
        status = await client.protocol.send_request_async("ctx/gatewayStatus", {})
        if status.listening:
            break
        await asyncio.sleep(0.05)
    assert status.listening == f"http://127.0.0.1:{port}"
    started = await eventually(lambda: _notes(client, "ctx/gatewayStatusChanged"))
    assert exactly(P.GatewayStatus, started[0]).listening == status.listening  # told, not only polled
    return client, f"http://127.0.0.1:{port}/v1"


def _notes(client, method: str) -> list:
    return [p for m, p in client.seen if m == method]


async def test_conversations_active_one_and_the_exact_body_sent(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "ws")
    async with FakeUpstream() as up:
        client, base = await _editor(root, up, PAID)
        try:
            async with openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0) as oai:
                messages = [{"role": "system", "content": "Agent"}, {"role": "user", "content": QUESTION}]
                await oai.chat.completions.create(model="gpt-4o", messages=messages)
                await eventually(lambda: _notes(client, "ctx/gatewayRequest"))
                note = _notes(client, "ctx/gatewayRequest")[0]
                exactly(P.GatewayRequest, note)
                assert note.label.startswith("⇄ 1 · ") and "/" in note.label
                status = exactly(P.GatewayStatus, await client.protocol.send_request_async("ctx/gatewayStatus", {}))
                assert status.requests == 1 and status.active_session == note.session  # it follows the traffic
                assert status.cache.startswith("warm 4m") or status.cache.startswith("warm 5m")  # just sent
                convs = exactly(
                    list[P.GatewayConversation], await client.protocol.send_request_async("ctx/listConversations", {})
                )
                assert [(c.session, c.title, c.active) for c in convs] == [(note.session, QUESTION, True)]
                shown = exactly(P.GatewayPreview, await client.protocol.send_request_async("ctx/gatewayPreview", {}))
                sent = up.model_requests[-1].json
                assert shown.plan_id == note.planId and shown.api == "chat"
                assert [p.role for p in shown.parts] == [m["role"] for m in sent["messages"]]
                assert [p.injected for p in shown.parts] == [False, True, True, False]
                assert shown.parts[1].text.startswith(STABLE_HEADER) and shown.parts[2].text.startswith(CONTEXT_HEADER)
                assert all(p.tokens > 0 for p in shown.parts)
                # a gutter pin goes to the active conversation: its next request carries the code
                doc = (root / "shop" / "billing" / "discounts.py").as_uri()
                await client.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="ctx.pinSymbol", arguments=[doc, "shop.billing.discounts.DiscountRule"]
                    )
                )
                messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "and discounts?"}]
                await oai.chat.completions.create(model="gpt-4o", messages=messages)
                assert "class DiscountRule" in up.model_requests[-1].json["messages"][1]["content"]
                await asyncio.sleep(0.5)
                status = exactly(P.GatewayStatus, await client.protocol.send_request_async("ctx/gatewayStatus", {}))
                assert status.saved.startswith(("saved $", "cost +$"))  # gpt-4o has prices
        finally:
            await client.shutdown_session()


async def test_the_meter_counts_the_cache_down_and_says_what_was_saved(tmp_path: Path) -> None:
    """After a request: the active conversation's cache is warm until about now + the provider's
    5-minute TTL (a timestamp, so a status bar can count down), and what it saved is told — in a
    ctx/gatewayStatusChanged once the request's usage is summed, not only when asked."""
    root = copy_sample(tmp_path / "ws")
    async with FakeUpstream() as up:
        client, base = await _editor(root, up)
        try:
            before = exactly(P.GatewayStatus, await client.protocol.send_request_async("ctx/gatewayStatus", {}))
            assert (before.cache, before.cache_warm_until, before.saved) == ("", None, "")  # no request yet
            assert before.cache_ttl_seconds == 300
            told = len(_notes(client, "ctx/gatewayStatusChanged"))
            async with openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0) as oai:
                messages = [{"role": "system", "content": "Agent"}, {"role": "user", "content": QUESTION}]
                await oai.chat.completions.create(model="gpt-4o", messages=messages)
            sent = time.time()
            changed = await eventually(lambda: _notes(client, "ctx/gatewayStatusChanged")[told:])
            note = exactly(P.GatewayStatus, changed[0])
            assert note.requests == 1 and note.saved.startswith(("saved $", "cost +$")), note  # gpt-4o has prices
            status = exactly(P.GatewayStatus, await client.protocol.send_request_async("ctx/gatewayStatus", {}))
            for st in (note, status):
                assert st.cache_warm_until is not None
                assert (sent + 290) * 1000 <= st.cache_warm_until <= (sent + 301) * 1000, st.cache_warm_until
                assert st.cache.startswith(("warm 4m", "warm 5m"))
                assert st.cache_read_price == "half the input price ($1.25 vs $2.50 per million tokens)"
            assert status.saved == note.saved and status.active_session == note.active_session
        finally:
            await client.shutdown_session()


async def test_an_hour_long_cache_is_counted_down_from_when_the_request_went_upstream(tmp_path: Path) -> None:
    """Breakpoints that ask for Anthropic's hour-long cache (``"ttl": "1h"``): the meter counts an
    hour, not five minutes, and from when the request went upstream (the provider read its cache
    then), not from when a slow reply ended."""
    root = copy_sample(tmp_path / "ws")
    async with FakeUpstream() as up:
        client, base = await _editor(root, up)
        try:
            up.queue(Reply.text("slow", initial_delay=2.0))  # a reply that takes two seconds
            hour = {"type": "ephemeral", "ttl": "1h"}
            async with anthropic.AsyncAnthropic(base_url=base.removesuffix("/v1"), api_key=KEY, max_retries=0) as ant:
                started = time.time()
                await ant.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=100,
                    system=[{"type": "text", "text": "Agent", "cache_control": hour}],
                    messages=[{"role": "user", "content": QUESTION}],
                )
                ended = time.time()
            assert ended - started > 1.5  # the reply took its time
            status = await eventually(lambda: _status_with_request(client))
            assert status.cache_ttl_seconds == 3600
            assert status.cache.startswith("warm 59m"), status.cache
            assert status.cache_warm_until is not None
            assert (started + 3600) * 1000 <= status.cache_warm_until < (ended - 1 + 3600) * 1000, (
                started,
                ended,
                status.cache_warm_until,
            )
        finally:
            await client.shutdown_session()


async def _status_with_request(client) -> P.GatewayStatus | None:
    st = exactly(P.GatewayStatus, await client.protocol.send_request_async("ctx/gatewayStatus", {}))
    return st if st.cache_warm_until is not None else None


async def test_review_before_send_replan_send_cancel_and_timeout(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "ws")
    async with FakeUpstream() as up:
        client, base = await _editor(root, up, "review = true\nreview_timeout = 2\n")
        try:
            async with openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0) as oai:
                messages = [{"role": "user", "content": QUESTION}]
                call = asyncio.ensure_future(oai.chat.completions.create(model="gpt-4o", messages=messages))
                first = await eventually(lambda: _notes(client, "ctx/reviewRequest"))
                review = exactly(P.ReviewRequest, first[0])
                assert not up.model_requests  # held
                assert PINNED not in review.preview.text
                doc = (root / "shop" / "billing" / "discounts.py").as_uri()
                await client.protocol.send_request_async(
                    "ctx/pinSymbol",
                    {
                        "session": review.session,
                        "textDocument": {"uri": doc},
                        "symbol": "shop.billing.discounts.DiscountRule",
                    },
                )
                answer = await client.protocol.send_request_async(
                    "ctx/reviewDecision", {"reviewId": review.review_id, "decision": "replan"}
                )
                assert answer.pending
                again = await eventually(lambda: _notes(client, "ctx/reviewRequest")[1:])
                assert again[0].reviewId == review.review_id and PINNED in again[0].preview.text
                await client.protocol.send_request_async(
                    "ctx/reviewDecision", {"reviewId": review.review_id, "decision": "send"}
                )
                reply = await call
                assert reply.choices[0].message.content == up.default.content
                assert PINNED in str(up.model_requests[-1].json)
                assert exactly(P.ReviewResolved, _notes(client, "ctx/reviewResolved")[-1]).outcome == "sent"

                messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "now cancel me"}]
                call = asyncio.ensure_future(oai.chat.completions.create(model="gpt-4o", messages=messages))
                pending = await eventually(lambda: _notes(client, "ctx/reviewRequest")[2:])
                await client.protocol.send_request_async(
                    "ctx/reviewDecision", {"reviewId": pending[0].reviewId, "decision": "cancel"}
                )
                with pytest.raises(openai.BadRequestError, match="cancelled in the editor"):
                    await call
                assert len(up.model_requests) == 1

                await oai.chat.completions.create(model="gpt-4o", messages=messages)  # nobody answers: 2 s
                assert _notes(client, "ctx/reviewResolved")[-1].outcome == "timeout"
                assert len(up.model_requests) == 2
                late = await client.protocol.send_request_async(
                    "ctx/reviewDecision", {"reviewId": pending[0].reviewId, "decision": "send"}
                )
                assert not late.pending
        finally:
            await client.shutdown_session()


async def test_a_saved_capsule_change_reaches_the_next_request(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "ws")
    async with FakeUpstream() as up:
        client, base = await _editor(root, up, PAID)
        try:
            async with openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0) as oai:
                messages = [{"role": "user", "content": QUESTION}]
                await oai.chat.completions.create(model="gpt-4o", messages=messages)
                before = up.model_requests[-1].json["messages"][0]["content"]
                assert "shop/inventory.py" in before
                path = root / "shop" / "inventory.py"
                path.write_text(path.read_text() + "\n\ndef restock_all(inventory):\n    return inventory\n")
                client.text_document_did_save(
                    types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri()))
                )
                await asyncio.sleep(0.5)
                messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "and now?"}]
                await oai.chat.completions.create(model="gpt-4o", messages=messages)
                after = up.model_requests[-1].json["messages"][0]["content"]
                assert after != before  # the stale capsule's text is not sent again as it was
        finally:
            await client.shutdown_session()
