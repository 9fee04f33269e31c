"""The gateway's accounting in the sessions engine (``sessions/ledger.py``): the typed record of
a request, made from its plan and what the gateway saw, through the real SQLite store and back;
the one conversation list, the same from the LSP face, the statusline and the engine."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import msgspec
import openai

from ctx_lsp.core.items import Message
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.runs import client_conversation
from ctx_lsp.engine import Engine
from ctx_lsp.server import protocol as P
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.exchanges import Exchange
from ctx_lsp.sessions.ledger import Forwarded, GatewayRequest
from ctx_lsp.sessions.values import Usage
from tests.gateway.fake_upstream import FakeUpstream
from tests.gateway.harness import KEY
from tests.gateway.test_gateway_editor import _editor, _notes
from tests.lsp.test_replies import exactly
from tests.waiting import eventually
from tests.workspaces import copy_sample

SECRET = "AKIAIOSFODNN7EXAMPLE"  # an AWS key of the documented example shape
QUESTION = f"How is stock reserved in the inventory? My key is {SECRET}"


def test_a_request_record_round_trips_through_the_store(ws: Path) -> None:
    sessions = SessionEngine(Engine(ws))
    try:
        messages = [Message(id="", role="user", content=QUESTION)]
        plan = sessions.plan_exchange(Exchange(session="ledger", model="gpt-4o", system="Agent", messages=messages))
        usage = Usage(input_tokens=1000, output_tokens=20, cached_input_tokens=600, cache_write_tokens=100)
        sent = Forwarded(
            model="gpt-4o",
            usage=usage,
            client="Claude Code 2.1.197",
            named=None,
            client_session="0b8a-session",
            messages=messages,
            tools=(),
            repeated=0.5,
            sent=time.time() - 120,  # went upstream two minutes ago: a long reply ended only now
            cache_ttl=3600,
        )
        made = sessions.account_exchange(plan, sent)
        imported = {"session": "old", "model": "gpt-4o", "client_tokens": 50, "as_sent": 1, "one_shot": 0}
        sessions.record_gateway_request(imported)  # a row by column names, as an import has it
    finally:
        sessions.close()
    p = plan.outcome.result.plan
    assert (made.session, made.plan_id, made.model) == ("ledger", p.plan_id, "gpt-4o")
    assert (made.input_tokens, made.cached_tokens, made.cache_write_tokens, made.output_tokens) == (1000, 600, 100, 20)
    assert made.forwarded_tokens == p.totals.tokens and made.client_tokens == plan.client_tokens
    # the client's own prompt went as sent: what direct repeats is what the provider cached
    shared = 0.6 if made.as_sent else 0.5
    assert made.direct_cached == round(plan.client_tokens * shared)
    assert made.run and made.run.startswith("client:") and made.one_shot
    assert made.title and SECRET not in made.title and "[secret masked" in made.title
    assert made.created is None  # the store's clock sets it

    again = SessionEngine(Engine(ws))  # a new process's view: read back from the SQLite file
    try:
        stored, old = again.gateway_requests()
        assert again.gateway_requests("old") == [old]
        # the provider's cache was last used when the request went up, not when its row was kept
        assert again.store.last_gateway_request("ledger") == sent.sent
    finally:
        again.close()
    assert isinstance(stored, GatewayRequest) and stored.created is not None
    assert msgspec.structs.replace(stored, created=None) == made
    assert (stored.sent, stored.cache_ttl, stored.cache_used) == (sent.sent, 3600, sent.sent)
    assert old.cache_used == old.created and old.cache_ttl is None  # kept before ``sent`` was
    assert old == GatewayRequest(session="old", model="gpt-4o", client_tokens=50, as_sent=True, created=old.created)


async def test_one_conversation_list_for_the_editor_the_statusline_and_the_engine(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "ws")
    claude = "7f3c2a9e-1d4b-4c8e-9a21-5b6d7e8f9a0b"
    async with FakeUpstream() as up:
        client, base = await _editor(root, up)
        try:
            async with (
                openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0) as oai,
                anthropic.AsyncAnthropic(base_url=base.removesuffix("/v1"), api_key=KEY, max_retries=0) as ant,
            ):
                user_id = json.dumps({"session_id": claude})
                said: list = [{"role": "user", "content": "Where are discounts applied?"}]
                for more in ("And where are they rounded?", None):
                    await ant.messages.create(
                        model="claude-sonnet-4-5",
                        max_tokens=100,
                        system="You are Claude Code.",
                        metadata={"user_id": user_id},
                        messages=said,
                    )
                    said = [*said, {"role": "assistant", "content": "ok"}, {"role": "user", "content": more}]
                chat = [{"role": "system", "content": "Agent"}, {"role": "user", "content": "How is stock reserved?"}]
                await oai.chat.completions.create(model="gpt-4o", messages=chat)
                await eventually(lambda: len(_notes(client, "ctx/gatewayRequest")) == 3)
            listed = exactly(
                list[P.GatewayConversation], await client.protocol.send_request_async("ctx/listConversations", {})
            )
            line = subprocess.run(
                [sys.executable, "-m", "ctx_lsp", "statusline", "--workspace", str(root)],
                input=json.dumps({"session_id": claude}),
                capture_output=True,
                text=True,
                timeout=60,
            )
        finally:
            await client.shutdown_session()
    sessions = SessionEngine(Engine(root))
    try:
        engine_list = sessions.gateway_conversations()
        run = sessions.gateway_run("anthropic", claude)
    finally:
        sessions.close()
    shape = lambda c: (c.session, c.title, c.model, c.messages, c.requests, c.last_activity)  # noqa: E731
    assert [shape(c) for c in listed] == [shape(c) for c in engine_list]
    assert [c.requests for c in listed] == [1, 2] and listed[0].model == "gpt-4o" and listed[0].active
    # the statusline stands where the list says the Claude conversation is
    assert run is not None and run.last.session.startswith(client_conversation("anthropic", claude))
    mine = next(c for c in listed if c.session == run.last.session)
    assert mine.last_activity == run.last.created and run.totals.requests == mine.requests == 2
    used = run.last.input_tokens or run.last.forwarded_tokens
    assert line.returncode == 0 and line.stdout.startswith(f"ctx {format_tokens(used)}/"), line.stdout
