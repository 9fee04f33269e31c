"""A tool result of several megabytes through the real server: the append is answered, plans
show it as a stub with its message id and stay within budget, the store keeps it whole, replay
is identical, and a restarted server plans the session without reading it. (How long any of
this takes is measured by benchmarks/large_messages.py, not asserted here.)"""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import server_command, start
from tests.lsp.test_server import error_of, req

MB = 1_000_000


def log(size: int, tag: str) -> str:
    line = f"{tag} ERROR worker-3 GET /api/v1/items status=500 latency_ms=912 retry=3\n"
    return (line * (size // len(line) + 1))[:size]


async def fresh(ws: Path, session: str) -> LanguageClient:
    client = await ClientServerConfig(server_command=server_command()).start()
    await start(client, ws, session=session)
    return client


async def test_a_huge_tool_result_is_a_stub_in_plans_and_whole_in_the_store(ws: Path):
    big = log(6 * MB, "run-1")  # over the counting limit: it is never tokenized
    turn = [
        {"id": "u1", "role": "user", "content": "Read the server log and tell me what failed."},
        {
            "id": "a1",
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c1", "name": "read_file", "arguments": '{"path": "logs/server.log"}'}],
        },
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": big},
    ]
    client = await fresh(ws, "huge")
    try:
        appended = await req(client, "ctx/appendMessages", {"messages": turn})
        assert appended.appended == 3 and appended.messages == 3
        plan = await req(client, "ctx/planContext", {"query": "What failed in the log?"})
        assert plan.totals.tokens <= plan.promptBudget
        episode = next(i for i in plan.included if i.kind == "tool_episode")
        assert "message t1" in episode.detail and "masked" in episode.detail and episode.tokens < 200
        prompt = await req(client, "ctx/renderPrompt", {"planId": plan.planId, "format": "openai"})
        result = next(m for m in prompt.messages if m.role == "tool")
        assert result.tool_call_id == "c1" and "message t1" in result.content and len(result.content) < 300
        assert prompt.tokens <= plan.promptBudget
        listed = await req(client, "ctx/listMessages", {})
        assert [m.id for m in listed.messages] == ["u1", "a1", "t1"]
        assert listed.messages[2].content == big  # the store keeps it whole
        replay = await req(client, "ctx/replayPlan", {"planId": plan.planId})
        assert replay.identical and replay.replayedPlanId == plan.planId
        # the agent loop's next call: the result is the pending exchange, shown as its stub
        pending = await req(client, "ctx/planContext", {"query": ""})
        exchange = next(i for i in pending.included if i.kind == "tool_episode")
        assert exchange.reason == "required" and "message t1" in exchange.detail
        assert pending.totals.tokens <= pending.promptBudget
        # a user message that alone is over the budget cannot be masked: a clear overflow
        paste = {"id": "paste", "role": "user", "content": log(5 * MB, "paste")}
        await req(client, "ctx/appendMessages", {"messages": [paste]})
        err = await error_of(client, "ctx/planContext", {"query": ""})
        assert err.code == -32001 and "message paste (5.0 MB)" in str(err)
        await req(client, "ctx/appendMessages", {"messages": [{"id": "u2", "role": "user", "content": "Sorry."}]})
    finally:
        await client.shutdown_session()
    client = await fresh(ws, "huge")  # a restart: the stored counts are used, the texts not read
    try:
        again = await req(client, "ctx/planContext", {"query": "What failed in the log?"})
        assert again.totals.tokens <= again.promptBudget
        # the huge turns were compacted (they reached the threshold): the summary says what they were
        assert any(i.reason == "summary" for i in again.included)
        text = (await req(client, "ctx/renderPrompt", {"planId": again.planId, "format": "text"})).text
        assert "read_file" in text and "6,000,000 bytes" in text
        assert len(text) < 100_000  # at most a head of the log, as older history matching the question
        listed = await req(client, "ctx/listMessages", {"includeArchived": True})
        assert [m.id for m in listed.messages] == ["u1", "a1", "t1", "paste", "u2"]
        assert listed.messages[2].content == big and len(listed.messages[3].content) == 5 * MB
        assert listed.messages[2].archived and listed.messages[3].archived
        replay = await req(client, "ctx/replayPlan", {"planId": plan.planId})  # a plan of the last run
        assert replay.identical
    finally:
        await client.shutdown_session()
