"""Every ctx/ reply and notification is exactly its declared type (the published schema's): it
decodes into the protocol's Struct, and that Struct encodes back to the same JSON — no field
missing, none extra, none of another type."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
from lsprotocol import types
from pytest_lsp import LanguageClient

from ctx_lsp.server import protocol as P
from tests.lsp.test_server import QUERY

SESSION = "replies"
REL = "shop/billing/invoice.py"


def exactly(kind: Any, value: Any) -> Any:
    raw = P.to_builtin(value)
    typed = msgspec.convert(raw, kind)
    assert msgspec.json.decode(msgspec.json.encode(typed)) == raw, f"{kind}: the reply is not exactly its type"
    return typed


async def test_every_reply_and_notification_is_its_declared_type(client: LanguageClient, workspace: Path):
    checked: set[str] = set()

    async def call(method: str, params: dict[str, Any]) -> Any:
        checked.add(method)
        return exactly(P.REQUESTS[method][1], await client.protocol.send_request_async(method, params))

    s = {"session": SESSION}
    await call("ctx/refreshCapsules", {"paths": [REL]})
    await call("ctx/listCapsules", {})
    await call("ctx/appendMessages", {**s, "messages": [{"id": "u0", "role": "user", "content": "hello"}]})
    await call("ctx/appendMessages", {**s, "messages": [{"id": "a0", "role": "assistant", "content": "hi"}]})
    await call("ctx/appendMessages", {**s, "messages": [{"id": "u1", "role": "user", "content": QUERY}]})
    pin = await call(
        "ctx/pinSymbol", {**s, "symbol": "shop.billing.invoice.tax_for", "kind": "leased", "ttl": 1, "policy": "ask"}
    )
    plan = await call("ctx/planContext", {**s, "query": QUERY, "ragBudget": 100})
    await call(
        "ctx/planContext", {**s, "query": QUERY, "dryRun": True, "extraPins": [{"symbol": "shop.inventory.Product"}]}
    )
    for fmt in ("openai", "anthropic", "text"):
        await call("ctx/renderPrompt", {**s, "format": fmt})
    await call("ctx/showBudget", s)
    await call("ctx/listPins", s)
    ledger = await call("ctx/listExcluded", s)
    target = next(i for t in ledger.turns for i in t.excluded if i.reason == "budget" and i.symbol)
    restored = await call("ctx/restoreItem", {**s, "itemId": target.id})
    await call("ctx/unpin", {**s, "pinId": restored.id})
    suggest = "See `tax_for`.\n```ctx-suggest\n- shop.config.TAX_RATE\n```"
    await call("ctx/appendMessages", {**s, "messages": [{"id": "a1", "role": "assistant", "content": suggest}]})
    report = await call("ctx/reportUsage", {**s, "planId": plan.plan_id, "inputTokens": 900, "outputTokens": 40})
    assert report.ask_repin == [pin.id]
    await call("ctx/listSuggestions", s)
    reflections = await call("ctx/listReflections", s)
    await call("ctx/undoReflection", {**s, "id": next(r.id for r in reflections if r.kind == "suggest")})
    await call("ctx/listMessages", s)
    await call("ctx/replayPlan", {"planId": plan.plan_id})
    await call("ctx/setMode", {**s, "mode": "heavy"})
    await call("ctx/setMemoryPolicy", {**s, "compactionThreshold": 0.9})
    await call("ctx/compact", {**s, "dryRun": True})
    await call("ctx/compact", s)
    await call("ctx/branch", {**s, "fromMessageId": "u1", "name": "alt"})
    # the gateway's methods answer without a gateway too (its traffic: tests/gateway/test_gateway_editor.py)
    status = await call("ctx/gatewayStatus", {})
    assert status.listening is None and status.label == ""
    assert await call("ctx/listConversations", {}) == []
    active = await call("ctx/setActiveConversation", {"session": status.active_session})
    assert active.active_session == status.active_session
    assert not (await call("ctx/reviewDecision", {"reviewId": "review-x", "decision": "send"})).pending
    checked.add("ctx/gatewayPreview")  # NotFound here; its type is checked on live traffic there
    assert checked == set(P.REQUESTS)

    path = workspace / REL
    path.write_text(path.read_text().replace("def tax_for(", "def tax_for_changed("))
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
    # these need the gateway's traffic: typed in tests/gateway/test_gateway_editor.py
    gateway_only = {"ctx/gatewayRequest", "ctx/reviewRequest", "ctx/reviewResolved", "ctx/gatewayStatusChanged"}
    expected = set(P.NOTIFICATIONS) - gateway_only
    for _ in range(200):
        if {m for m, _ in client.notifications} >= expected:
            break
        await asyncio.sleep(0.05)
    assert {m for m, _ in client.notifications} == expected
    for method, params in client.notifications:
        exactly(P.NOTIFICATIONS[method], params)
