"""The language server over stdio: every ctx/ method, with a happy path and bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from ctx_lsp.memory.store import MemoryStore
from ctx_lsp.sessions import DEFAULT_SESSION
from tests.lsp.conftest import SESSION, server_command, start
from tests.waiting import eventually
from tests.workspaces import copy_sample

QUERY = "how is the invoice total calculated with tax?"


def ns(value):
    """Results arrive as namedtuples, except dicts inside lists: make them all attribute-style."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: ns(v) for k, v in value.items()})
    if isinstance(value, list):
        return [ns(v) for v in value]
    return value


async def req(client: LanguageClient, method: str, params: dict):
    return ns(await client.protocol.send_request_async(method, params))


async def error_of(client: LanguageClient, method: str, params) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async(method, params)
    return err.value


def line_of(root: Path, rel: str, needle: str) -> tuple[int, int]:
    for n, line in enumerate((root / rel).read_text().splitlines()):
        if needle in line:
            return n, line.index(needle) + 1
    raise AssertionError(f"{needle!r} not in {rel}")


async def test_plan_meter_and_notifications(client: LanguageClient):
    plan = await req(client, "ctx/planContext", {"query": QUERY})
    assert plan.totals.tokens <= plan.promptBudget
    rag = [i for i in plan.included if i.section == "rag"]
    assert rag and rag[0].symbol and rag[0].path.endswith(".py")
    await eventually(lambda: {"ctx/planChanged", "ctx/budgetChanged"} <= {m for m, _ in client.notifications})
    meter = await req(client, "ctx/showBudget", {})
    assert meter.planId == plan.planId and meter.used == plan.totals.tokens
    assert meter.text.startswith("ctx ") and meter.session == SESSION
    assert {s.name for s in meter.sections} == {"system", "conversation", "rag"}


async def test_render_prompt_formats(client: LanguageClient):
    plan = await req(client, "ctx/planContext", {"query": QUERY})
    rendered = await req(client, "ctx/renderPrompt", {"planId": plan.planId, "format": "openai"})
    assert rendered.planId == plan.planId
    assert rendered.messages[-1].content == QUERY and rendered.tokens <= plan.totals.tokens
    text = await req(client, "ctx/renderPrompt", {"format": "text"})  # latest plan by default
    assert text.text.startswith("### system")
    err = await error_of(client, "ctx/renderPrompt", {"planId": "plan-nope"})
    assert err.code == -32002 and "plan-nope" in str(err)
    err = await error_of(client, "ctx/renderPrompt", {"format": "yaml"})
    assert err.code == -32602 and "format" in str(err)


async def test_pin_by_position_and_by_name_then_unpin(client: LanguageClient, workspace: Path):
    rel = "shop/billing/invoice.py"
    line, col = line_of(workspace, rel, "def calculate_invoice_total")
    uri = (workspace / rel).as_uri()
    pin = await req(
        client,
        "ctx/pinSymbol",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": col + 5}, "kind": "leased", "ttl": 2},
    )
    assert pin.symbol == "shop.billing.invoice.calculate_invoice_total"
    assert pin.kind == "leased" and pin.ttlRemaining == 2 and pin.uri == uri
    by_name = await req(client, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
    pins = await req(client, "ctx/listPins", {})
    assert {p.id for p in pins} >= {pin.id, by_name.id}
    plan = await req(client, "ctx/planContext", {"query": QUERY})
    pinned = {i.symbol for i in plan.included if i.reason == "pinned"}
    assert pinned >= {"shop.billing.invoice.calculate_invoice_total", "shop.inventory.Product"}
    # what the pin covers is not retrieved again
    dup = [i for i in plan.excluded if i.reason == "duplicate"]
    assert any(i.symbol == "shop.billing.invoice.calculate_invoice_total" for i in dup)
    removed = await req(client, "ctx/unpin", {"pinId": by_name.id})
    assert removed.status == "removed"
    assert by_name.id not in {p.id for p in await req(client, "ctx/listPins", {})}
    # a position with no symbol, an unknown name, an unknown pin: clear errors
    blank, _ = line_of(workspace, rel, '"""')
    err = await error_of(
        client, "ctx/pinSymbol", {"textDocument": {"uri": uri}, "position": {"line": blank, "character": 0}}
    )
    assert err.code == -32002 and "no symbol at" in str(err)
    err = await error_of(client, "ctx/pinSymbol", {"symbol": "shop.nothing.Here"})
    assert err.code == -32002 and "no symbol 'shop.nothing.Here'" in str(err)
    err = await error_of(client, "ctx/unpin", {"pinId": "pin:nope"})
    assert err.code == -32002
    err = await error_of(client, "ctx/pinSymbol", {"kind": "sticky"})
    assert err.code == -32602 and "symbol" in str(err)
    await req(client, "ctx/unpin", {"pinId": pin.id})


async def test_what_if_changes_nothing(client: LanguageClient):
    before = await req(client, "ctx/planContext", {"query": QUERY, "ragBudget": 200})
    what_if = await req(
        client,
        "ctx/planContext",
        {"query": QUERY, "ragBudget": 200, "dryRun": True, "extraPins": [{"symbol": "shop.storage.StockRepository"}]},
    )
    assert any(i.symbol == "shop.storage.StockRepository" and i.reason == "pinned" for i in what_if.included)
    assert what_if.planId != before.planId
    assert not any(p.symbol == "shop.storage.StockRepository" for p in await req(client, "ctx/listPins", {}))
    meter = await req(client, "ctx/showBudget", {})
    assert meter.planId == before.planId  # the session's plan did not change
    dropped = await req(
        client,
        "ctx/planContext",
        {"query": QUERY, "ragBudget": 200, "dryRun": True, "dropItems": [before.included[-1].id]},
    )
    assert before.included[-1].id not in {i.id for i in dropped.included}


async def test_dropped_ledger_and_restore(client: LanguageClient):
    plan = await req(client, "ctx/planContext", {"query": QUERY, "ragBudget": 100})
    ledger = await req(client, "ctx/listExcluded", {})
    assert ledger.turns[0].planId == plan.planId
    budget_dropped = [i for i in ledger.turns[0].excluded if i.reason == "budget" and i.symbol]
    assert budget_dropped
    target = budget_dropped[0]
    pin = await req(client, "ctx/restoreItem", {"itemId": target.id})
    assert pin.symbol == target.symbol
    meter = await req(client, "ctx/showBudget", {})  # re-planned after the pin, with the same ragBudget
    assert meter.planId != plan.planId
    assert next(s for s in meter.sections if s.name == "rag").budget == 100
    after = await req(client, "ctx/planContext", {"query": QUERY, "ragBudget": 100})
    assert any(i.symbol == target.symbol and i.reason == "pinned" for i in after.included)
    await req(client, "ctx/unpin", {"pinId": pin.id})
    err = await error_of(client, "ctx/restoreItem", {"itemId": "card:nope"})
    assert err.code == -32002


async def test_turn_lifecycle_ttl_usage_and_ask_repin(client: LanguageClient):
    session = "lifecycle"
    pin = await req(
        client, "ctx/pinSymbol", {"session": session, "symbol": "shop.billing.invoice.tax_for", "kind": "leased",
                                  "ttl": 1, "policy": "ask"},
    )  # fmt: skip
    await req(client, "ctx/appendMessages", {"session": session, "messages": [{"role": "user", "content": QUERY}]})
    plan = await req(client, "ctx/planContext", {"session": session, "query": QUERY})
    appended = await req(
        client,
        "ctx/appendMessages",
        {
            "session": session,
            "messages": [
                {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [{"id": "c1", "name": "read_file", "arguments": '{"path": "shop/config.py"}'}],
                },
                {"role": "tool", "toolCallId": "c1", "content": "TAX_RATE = 0.2"},
                {"role": "assistant", "content": "The total adds tax at TAX_RATE."},
            ],
        },
    )
    assert appended.appended == 3 and appended.messages == 4 and appended.budget.session == session
    client.notifications.clear()
    report = await req(
        client, "ctx/reportUsage", {"session": session, "planId": plan.planId, "inputTokens": plan.totals.tokens + 40,
                                    "outputTokens": 30},
    )  # fmt: skip
    assert report.turn == 1 and report.error == 40
    assert report.askRepin == [pin.id]  # TTL ran out under `ask`: kept one more turn, the user is asked
    asks = await eventually(lambda: [p for m, p in client.notifications if m == "ctx/askRepin"])
    assert asks[0].pins[0].id == pin.id
    assert any(m == "ctx/budgetChanged" for m, _ in client.notifications)
    meter = await req(client, "ctx/showBudget", {"session": session})
    assert meter.lastActual == plan.totals.tokens + 40 and meter.lastEstimate == plan.totals.tokens
    plan2 = await req(client, "ctx/planContext", {"session": session, "query": "and discounts?"})
    tool = [i for i in plan2.included if i.kind == "tool_episode"]
    assert tool, "the tool call and its result are one atom in the plan"
    grace = next(i for i in plan2.included if i.pinId == pin.id)
    assert "re-pin" in grace.detail
    await req(client, "ctx/reportUsage", {"session": session, "planId": plan2.planId, "inputTokens": 500,
                                          "outputTokens": 10})  # fmt: skip
    assert pin.id not in {p.id for p in await req(client, "ctx/listPins", {"session": session})}
    messages = await req(client, "ctx/listMessages", {"session": session})
    assert [m.role for m in messages.messages] == ["user", "assistant", "tool", "assistant"]
    err = await error_of(client, "ctx/reportUsage", {"session": session, "planId": "plan-x", "inputTokens": 1,
                                                     "outputTokens": 1})  # fmt: skip
    assert err.code == -32002
    err = await error_of(client, "ctx/reportUsage", {"planId": plan.planId, "inputTokens": "many", "outputTokens": 1})
    assert err.code == -32602 and "inputTokens" in str(err)
    err = await error_of(client, "ctx/appendMessages", {"messages": [{"role": "tool", "content": "orphan"}]})
    assert err.code == -32602 and "tool_call_id" in str(err)


async def test_branch_copies_pins_and_forks_the_path(client: LanguageClient):
    session = "branching"
    await req(client, "ctx/appendMessages", {"session": session, "messages": [
        {"id": "u1", "role": "user", "content": "first question"},
        {"id": "a1", "role": "assistant", "content": "first answer"},
        {"id": "u2", "role": "user", "content": "second question"},
    ]})  # fmt: skip
    await req(client, "ctx/pinSymbol", {"session": session, "symbol": "shop.inventory.Product"})
    branch = await req(client, "ctx/branch", {"session": session, "fromMessageId": "a1", "name": "alt"})
    assert branch.name == "alt" and branch.active
    await req(client, "ctx/appendMessages", {"session": session, "messages": [
        {"id": "u2b", "role": "user", "content": "a different second question"}]})  # fmt: skip
    path = await req(client, "ctx/listMessages", {"session": session})
    assert [m.id for m in path.messages] == ["u1", "a1", "u2b"] and path.branch == "alt"
    main = await req(client, "ctx/listMessages", {"session": session, "branch": "main"})
    assert [m.id for m in main.messages] == ["u1", "a1", "u2"]
    pins = await req(client, "ctx/listPins", {"session": session})
    assert [p.symbol for p in pins] == ["shop.inventory.Product"]
    err = await error_of(client, "ctx/branch", {"session": session, "fromMessageId": "nope"})
    assert err.code == -32002
    err = await error_of(client, "ctx/branch", {"session": session, "fromMessageId": "a1", "name": "alt"})
    assert "already exists" in str(err)


async def test_a_plan_is_answered_first_and_replayable_at_once(client: LanguageClient, workspace: Path):
    """The plan is kept for replay after its reply is written: the next request, here or in
    another process, still finds it; the notifications about it follow the reply."""
    client.notifications.clear()
    plan = await req(client, "ctx/planContext", {"query": QUERY, "mode": "heavy"})
    replay = await req(client, "ctx/replayPlan", {"planId": plan.planId})
    assert replay.identical and replay.plan.totals.items == plan.totals.items
    rendered = await req(client, "ctx/renderPrompt", {"planId": plan.planId, "format": "text"})
    assert rendered.planId == plan.planId

    def latest_changed() -> bool:
        changed = [p for m, p in client.notifications if m == "ctx/planChanged"]
        return bool(changed) and changed[-1].planId == plan.planId

    await eventually(latest_changed)
    store = MemoryStore(workspace / ".ctx" / "memory.sqlite3")  # another process's view of the store
    try:
        assert store.plan_row(plan.planId, SESSION)["query"] == QUERY
    finally:
        store.close()


async def test_set_mode_and_replay(client: LanguageClient):
    mode = await req(client, "ctx/setMode", {"mode": "off"})
    assert mode.mode == "off"
    plan = await req(client, "ctx/planContext", {"query": QUERY})
    assert not [i for i in plan.included if i.section == "rag"]
    assert plan.mode == "off"
    await req(client, "ctx/setMode", {"mode": "light"})
    replay = await req(client, "ctx/replayPlan", {"planId": plan.planId})
    assert replay.identical and replay.replayedPlanId == plan.planId
    err = await error_of(client, "ctx/setMode", {"mode": "turbo"})
    assert err.code == -32602 and "mode" in str(err)
    err = await error_of(client, "ctx/replayPlan", {"planId": "plan-unknown"})
    assert err.code == -32002


async def test_overflow_is_a_ctx_error_and_server_keeps_serving(client: LanguageClient):
    err = await error_of(
        client, "ctx/planContext", {"query": "word " * 400, "contextLength": 300, "maxCompletionTokens": 10,
                                    "safetyBuffer": 0},
    )  # fmt: skip
    assert err.code == -32001 and "over" in str(err)
    assert (await req(client, "ctx/showBudget", {})).session == SESSION


async def test_code_lenses_and_commands(client: LanguageClient, workspace: Path):
    rel = "shop/billing/invoice.py"
    uri = (workspace / rel).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=(workspace / rel).read_text())
        )
    )
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    assert lenses and all(lens.command is None for lens in lenses)
    decorated = next(lens for lens in lenses if lens.data["symbol"].endswith(".tax_for"))
    assert decorated.range.start.line == line_of(workspace, rel, "def tax_for")[0]  # below its decorator
    target = next(lens for lens in lenses if lens.data["symbol"].endswith("calculate_invoice_total"))
    resolved = await client.code_lens_resolve_async(target)
    assert resolved.command.title.endswith("Pin to context") and resolved.command.command == "ctx.pinSymbol"
    pin = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ctx.pinSymbol", arguments=resolved.command.arguments)
    )
    assert pin["symbol"].endswith("calculate_invoice_total")
    again = await client.code_lens_resolve_async(target)
    assert again.command.title.startswith("📌 Pinned") and again.command.command == "ctx.unpin"
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ctx.unpin", arguments=again.command.arguments)
    )


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("ctx/planContext", {}),
        ("ctx/planContext", {"query": 42}),
        ("ctx/planContext", {"query": "x", "focus": {"position": {"line": 1}}}),
        ("ctx/renderPrompt", {"format": 3}),
        ("ctx/showBudget", {"session": ["a"]}),
        ("ctx/pinSymbol", {"symbol": "x", "ttl": "soon"}),
        ("ctx/unpin", {}),
        ("ctx/listPins", {"session": 1}),
        ("ctx/appendMessages", {"messages": "hello"}),
        ("ctx/appendMessages", {"messages": [{"role": "robot", "content": "x"}]}),
        ("ctx/reportUsage", {"planId": "p"}),
        ("ctx/listMessages", {"includeArchived": "yes"}),
        ("ctx/listExcluded", {"turns": "all"}),
        ("ctx/replayPlan", {}),
        ("ctx/setMode", {}),
        ("ctx/branch", {"name": "x"}),
        ("ctx/restoreItem", {}),
    ],
)
async def test_malformed_params_get_invalid_params_and_server_keeps_serving(client: LanguageClient, method, params):
    err = await error_of(client, method, params)
    assert err.code == -32602, err
    assert "invalid params" in str(err) or "must" in str(err)
    assert "Traceback" not in str(err)
    assert (await req(client, "ctx/listPins", {})) is not None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"contextLength": 0}, "contextLength must be greater than 0, got 0"),
        ({"contextLength": -5}, "contextLength must be greater than 0, got -5"),
        ({"maxCompletionTokens": 0}, "maxCompletionTokens must be greater than 0, got 0"),
        ({"safetyBuffer": -1}, "safetyBuffer must be 0 or more, got -1"),
        ({"ragBudget": -1}, "ragBudget must be 0 or more, got -1"),
    ],
)
async def test_zero_or_negative_budget_numbers_are_invalid_params(client: LanguageClient, params, message):
    """0 is not "the default" (null is): the same rule and words as the CLI's options."""
    err = await error_of(client, "ctx/planContext", {"query": QUERY, **params})
    assert err.code == -32602 and message in str(err), err
    err = await error_of(client, "ctx/planContext", {"query": QUERY, "dryRun": True, **params})
    assert err.code == -32602 and message in str(err), err
    plan = await req(client, "ctx/planContext", {"query": QUERY, "contextLength": None, "maxCompletionTokens": None})
    assert plan.contextLength == 128000  # null: the model's default


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("ctx/planContext", {"query": QUERY, "maxCompletionTokens": 10**30}, "$.maxCompletionTokens"),
        ("ctx/planContext", {"query": QUERY, "contextLength": -(2**64)}, "$.contextLength"),
        (
            "ctx/planContext",
            {"query": QUERY, "dryRun": True, "extraPins": [{"symbol": "x", "ttl": 2**53}]},
            "$.extraPins[0].ttl",
        ),
        ("ctx/pinSymbol", {"symbol": "shop.inventory.Product", "priority": 10**30}, "$.priority"),
        ("ctx/reportUsage", {"planId": "p", "inputTokens": 10**40, "outputTokens": 1}, "$.inputTokens"),
        ("ctx/undoReflection", {"id": 10**30}, "$.id"),
        (
            "ctx/appendMessages",
            {"messages": [{"role": "user", "content": "x", "usage": {"total": 10**30}}]},
            "$.messages[0].usage.total",
        ),
    ],
)
async def test_out_of_range_numbers_are_invalid_params_naming_the_field(client: LanguageClient, method, params, field):
    err = await error_of(client, method, params)
    assert err.code == -32602, err
    assert "out of range" in str(err) and f"`{field}`" in str(err), err
    assert (await req(client, "ctx/listPins", {})) is not None


async def test_pin_command_with_a_bad_position_is_invalid_params(client: LanguageClient, workspace: Path):
    uri = (workspace / "shop/billing/invoice.py").as_uri()
    for target in ({"line": 3}, {"line": 10**30, "character": 0}, {"line": "x", "character": 0}):
        with pytest.raises(JsonRpcException) as err:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ctx.pinSymbol", arguments=[uri, target])
            )
        assert err.value.code == -32602, err.value


async def test_huge_query_is_served(client: LanguageClient):
    plan = await req(client, "ctx/planContext", {"query": "invoice " * 50_000, "contextLength": 1_000_000})
    assert plan.totals.tokens <= plan.promptBudget


async def test_pins_and_conversation_survive_restart(workspace: Path):
    session = "restart"
    config = ClientServerConfig(server_command=server_command())
    first = await config.start()
    await start(first, workspace, session=session)
    pin = await req(first, "ctx/pinSymbol", {"symbol": "shop.inventory.Product", "kind": "sticky"})
    await req(first, "ctx/appendMessages", {"messages": [{"id": "r1", "role": "user", "content": "remember me"}]})
    plan = await req(first, "ctx/planContext", {"query": "remember me"})
    await first.shutdown_session()
    second = await config.start()
    await start(second, workspace, session=session)
    try:
        pins = await req(second, "ctx/listPins", {})
        assert [p.id for p in pins] == [pin.id]
        messages = await req(second, "ctx/listMessages", {})
        assert [m.id for m in messages.messages] == ["r1"]
        replay = await req(second, "ctx/replayPlan", {"planId": plan.planId})
        assert replay.identical
        rendered = await req(second, "ctx/renderPrompt", {"planId": plan.planId})
        assert rendered.planId == plan.planId
    finally:
        await second.shutdown_session()


async def test_default_session_is_stable_across_restarts(tmp_path: Path):
    """A client that names no session (any plain LSP client, code lenses) gets the workspace's
    default session: its pins are there again after a restart."""
    root = tmp_path / "ws"
    copy_sample(root)
    config = ClientServerConfig(server_command=server_command())
    first = await config.start()
    await start(first, root, session=None)
    try:
        pin = await req(first, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
        uri = (root / "shop/billing/invoice.py").as_uri()
        lens_pin = ns(
            await first.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="ctx.pinSymbol", arguments=[uri, "shop.billing.invoice.calculate_invoice_total"]
                )
            )
        )
        assert (await req(first, "ctx/showBudget", {})).session == DEFAULT_SESSION
    finally:
        await first.shutdown_session()
    second = await config.start()
    await start(second, root, session=None)
    try:
        pins = await req(second, "ctx/listPins", {})
        assert sorted(p.id for p in pins) == sorted([pin.id, lens_pin.id])
        named = await req(second, "ctx/listPins", {"session": DEFAULT_SESSION})
        assert sorted(p.id for p in named) == sorted([pin.id, lens_pin.id])
        assert await req(second, "ctx/listPins", {"session": "someone-else"}) == []
    finally:
        await second.shutdown_session()


async def test_two_servers_on_one_workspace_lose_nothing(workspace: Path):
    """Two editors, two server processes, one store: 2 × 200 operations, nothing lost."""
    config = ClientServerConfig(server_command=server_command())
    clients = []
    for n in range(2):
        c = await config.start()
        await start(c, workspace, session=f"shared-{n}")
        clients.append(c)
    symbols = [
        "shop.inventory.Product",
        "shop.billing.invoice.tax_for",
        "shop.config.TAX_RATE",
        "shop.storage.StockRepository",
    ]

    async def work(n: int, c: LanguageClient) -> None:
        for k in range(100):
            await req(c, "ctx/appendMessages", {"session": "shared", "messages": [
                {"id": f"c{n}-m{k}", "role": "user", "content": f"client {n} message {k}"}]})  # fmt: skip
            await req(c, "ctx/pinSymbol", {"session": f"own-{n}", "symbol": symbols[k % len(symbols)],
                                           "priority": k})  # fmt: skip

    try:
        await asyncio.gather(*(work(n, c) for n, c in enumerate(clients)))
        messages = await req(clients[0], "ctx/listMessages", {"session": "shared"})
        ids = {m.id for m in messages.messages}
        assert len(ids) == 200 and all(f"c{n}-m{k}" in ids for n in range(2) for k in range(100))
        for n in range(2):
            pins = await req(clients[1 - n], "ctx/listPins", {"session": f"own-{n}"})
            assert sorted(p.symbol for p in pins) == sorted(symbols)
    finally:
        for c in clients:
            await c.shutdown_session()
