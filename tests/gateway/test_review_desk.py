"""Review before send on the gateway's side (``gateway/review.py``) and the gateway's typed
events (``gateway/events.py``), heard by a listener that is not an editor: a real gateway over
loopback HTTP, the real SDK client, the fake upstream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai

from ctx_lsp.gateway.events import GatewayEvent, RequestDone, ReviewAsked, ReviewResolved
from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import Gateway
from tests.gateway.harness import KEY, running_gateway
from tests.waiting import eventually

QUESTION = [{"role": "system", "content": "Agent"}, {"role": "user", "content": "How is stock reserved?"}]


async def test_held_requests_wait_for_the_listener_and_the_events_say_what_happened(ws: Path) -> None:
    (ws / "ctx.toml").write_text("[gateway]\nreview_timeout = 0.5\n")
    heard: list[GatewayEvent] = []
    shown: list[str] = []

    def listener(event: GatewayEvent):
        heard.append(event)
        if isinstance(event, ReviewAsked):

            async def show() -> None:  # the wait starts once this is done: it cannot eat the timeout
                await asyncio.sleep(0.6)
                shown.append(event.review_id)

            return show()
        return None

    async with running_gateway(ws) as gw:
        options = GatewayOptions(
            host="127.0.0.1", port=0, openai_upstream=gw.up.openai_url, anthropic_upstream=gw.up.anthropic_url
        )
        held = Gateway(gw.sessions, options, gw.gateway.run, listener, review=True)
        url = await held.start()
        try:
            assert held.snapshot().review and held.snapshot().requests == 0
            async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as oai:
                # 1. decided "send"
                sent = asyncio.create_task(oai.chat.completions.create(model="gpt-4o", messages=QUESTION))
                (asked,) = await eventually(lambda: [e for e in heard if isinstance(e, ReviewAsked)])
                assert asked.session and asked.plan is not None and asked.sent.plan_id == asked.plan.plan_id
                assert asked.timeout == 0.5 and b"stock reserved" in asked.sent.body
                await eventually(lambda: shown)
                assert held.desk is not None and held.desk.decide(asked.review_id, "send")
                await sent
                assert not held.desk.decide(asked.review_id, "send")  # nothing waits under it any more
                # 2. no answer in time: sent as planned, after the request was shown and the timeout ran
                await oai.chat.completions.create(model="gpt-4o", messages=QUESTION)
                # 3. cancelled
                third = asyncio.create_task(oai.chat.completions.create(model="gpt-4o", messages=QUESTION))
                await eventually(lambda: len(shown) == 3)
                held.desk.decide(heard[-1].review_id, "cancel")  # type: ignore[union-attr]
                try:
                    await third
                    raise AssertionError("a cancelled request was sent")
                except openai.BadRequestError as err:
                    assert "cancelled in the editor" in str(err)
        finally:
            await held.close()
    kinds = [type(e).__name__ for e in heard]
    assert kinds == [
        "ReviewAsked",
        "ReviewResolved",
        "RequestDone",
        "ReviewAsked",
        "ReviewResolved",
        "RequestDone",
        "ReviewAsked",
        "ReviewResolved",
    ]
    outcomes = [e.outcome for e in heard if isinstance(e, ReviewResolved)]
    assert outcomes == ["sent", "timeout", "cancelled"]
    done = [e.record for e in heard if isinstance(e, RequestDone)]
    assert done[1].note == "sent as planned: the review timed out"
    snapshot = held.snapshot()
    assert (snapshot.requests, snapshot.planned) == (2, 2) and snapshot.last == done[-1]


async def test_closing_the_desk_sends_what_waits(ws: Path) -> None:
    async with running_gateway(ws) as gw:
        options = GatewayOptions(
            host="127.0.0.1", port=0, openai_upstream=gw.up.openai_url, anthropic_upstream=gw.up.anthropic_url
        )
        heard: list[GatewayEvent] = []
        held = Gateway(gw.sessions, options, gw.gateway.run, heard.append, review=True)
        url = await held.start()
        try:
            async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as oai:
                waiting = asyncio.create_task(oai.chat.completions.create(model="gpt-4o", messages=QUESTION))
                await eventually(lambda: heard)
                assert held.desk is not None
                held.desk.close()  # the editor went away
                reply = await waiting
                assert reply.choices[0].message.content
                await oai.chat.completions.create(model="gpt-4o", messages=QUESTION)  # not held any more
        finally:
            await held.close()
    assert [type(e).__name__ for e in heard] == ["ReviewAsked", "ReviewResolved", "RequestDone", "RequestDone"]
