"""Context only where it can help, through the real gateway (official SDKs and raw HTTP as
clients, the fake upstream behind it, the real engine and store): the query is what the user
asked, side requests get none, code already in the conversation is not added again, and
ctx_lsp's own MCP tools are counted as ours."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import anthropic
import openai
import pytest

from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from tests.gateway.harness import KEY, PAID_CONTEXT, running_gateway
from tests.workspaces import copy_sample

FIXTURES = Path(__file__).parents[1] / "fixtures" / "harness"
READ = {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}
# one of ctx_lsp's MCP tools, as Claude Code sends it when `ctx-lsp wrap claude` registered the server
CTX_TOOL = {
    "name": "mcp__ctx__get_symbol",
    "description": "Read one function, class, method or variable by name: its code, file, lines, tokens and "
    "whether it is pinned; cheaper than the whole file.",
    "input_schema": {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "a qualified name or a short one"}},
        "required": ["name"],
    },
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)  # added whatever it costs: the tests look for it
    return ws


def _ant(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0)


def _oai(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)


async def _plan(gw, session: str):
    plan_id = gw.gateway.status.last.plan_id
    return (await gw.call(gw.sessions.outcome, session, plan_id)).result.plan


async def test_a_system_reminder_does_not_drive_retrieval(ws: Path) -> None:
    """Claude Code's shape: a reminder block ahead of the prompt in the same user message. Its
    words (voucher codes, discounts) would rank the discount helpers first; the question is
    about tax."""
    reminder = (
        "<system-reminder>\nAs you answer the user's questions, you can use the following context: "
        "voucher codes and percent discounts.\n</system-reminder>\n\n"
    )
    question = "How is an invoice's tax computed?"
    content = [{"type": "text", "text": reminder}, {"type": "text", "text": question}]
    async with running_gateway(ws) as gw, _ant(gw.url) as client:
        await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=512,
            system="You are a coding agent.",
            tools=[READ],
            messages=[{"role": "user", "content": content}],
        )
        session = gw.gateway.status.last.session
        plans = await gw.call(gw.sessions.store.session_plans, session)
        assert plans[-1]["query"] == question  # the query the plan records, and retrieval used
        plan = await _plan(gw, session)
        ranked = [i.symbol for i in (*plan.included, *plan.excluded) if i.section == "rag" and i.symbol]
        assert "shop.billing.invoice.tax_for" in ranked[:5], ranked
        # the helper the reminder's words rank first (``ctx-lsp plan`` with them in the query) is not there
        assert "shop.billing.discounts.parseVoucherCode_v2" not in ranked, ranked
        sent = gw.up.model_requests[-1].json
        assert sent["messages"][0]["content"][-1]["text"] == question  # the client's message, unchanged


async def test_claude_codes_title_request_goes_as_sent(ws: Path) -> None:
    """The title request Claude Code 2.1.197 sent (tests/fixtures/harness/): no tools, a short
    system prompt asking for a title. It gets no context, its bytes go upstream unchanged; the
    same question as a conversation of its own gets context."""
    raw = (FIXTURES / "claude_code_2.1.197_title.json").read_bytes()
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        async with http.post(
            gw.url + "/v1/messages?beta=true",
            data=raw,
            headers={"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"},
        ) as r:
            assert r.status == 200
            await r.read()
        assert gw.up.model_requests[-1].body == raw
        record = gw.gateway.status.last
        assert record.note == "side request (title): no context added"
        rows = await gw.call(gw.sessions.store.gateway_requests, record.session)
        assert rows[-1]["injected"] == 0 and rows[-1]["as_sent"] == 1

        question = json.loads(raw)["messages"][0]["content"][0]["text"]
        async with _ant(gw.url) as client:
            await client.messages.create(
                model="claude-opus-4-8",
                max_tokens=512,
                system="You are a coding agent.",
                messages=[{"role": "user", "content": question}],
            )
        assert CONTEXT_HEADER in gw.up.model_requests[-1].body.decode()


async def test_code_the_user_added_to_the_chat_is_not_injected_again(ws: Path) -> None:
    """aider's shape: the file listing in a user message, then the question. The functions of
    that file are in the conversation already: retrieval leaves them out (``in_conversation``)
    and brings what is elsewhere."""
    invoice = (ws / "shop/billing/invoice.py").read_text()
    listing = (
        "I have *added these files to the chat* so you can go ahead and edit them.\n\n"
        "*Trust this message as the true contents of these files!*\n\n"
        f"shop/billing/invoice.py\n```\n{invoice}```\n"
    )
    messages = [
        {"role": "system", "content": "Act as an expert software developer."},
        {"role": "user", "content": listing},
        {"role": "assistant", "content": "Ok, any changes I propose will be to those files."},
        {"role": "user", "content": "How are invoice totals rounded to cents?"},
    ]
    async with running_gateway(ws) as gw, _oai(gw.openai_url) as client:
        await client.chat.completions.create(model="gpt-4o", messages=messages)
        plan = await _plan(gw, gw.gateway.status.last.session)
        present = [i for i in plan.excluded if i.reason == "in_conversation"]
        assert any(i.symbol == "shop.billing.invoice._round_cents" for i in present), plan.excluded
        assert all(i.path == "shop/billing/invoice.py" for i in present)
        added = {i.symbol for i in plan.included if i.section == "rag"}
        assert not added & {f"shop.billing.invoice.{n}" for n in ("_round_cents", "tax_for", "Invoice")}, added
        sent = gw.up.model_requests[-1].json
        blocks = [m["content"] for m in sent["messages"] if CONTEXT_HEADER in str(m["content"])]
        assert blocks and "def _round_cents" not in blocks[0]
        assert sent["messages"][1:] == messages[1:] or STABLE_HEADER in str(sent["messages"])

        # the same question without the listing: that code is what retrieval brings
        await client.chat.completions.create(model="gpt-4o", messages=[messages[0], messages[-1]])
        blocks = [m["content"] for m in gw.up.model_requests[-1].json["messages"] if CONTEXT_HEADER in str(m)]
        assert "def _round_cents" in blocks[0]


async def test_ctx_tools_are_counted_as_ours(ws: Path) -> None:
    """Two requests alike but for ctx_lsp's MCP tool in the list: the client's own tokens (what
    sending direct would hold) are the same, and the tool's tokens count as added by ctx_lsp."""
    rows = {}
    async with running_gateway(ws, mode="off") as gw, _ant(gw.url) as client:
        for name, tools in (("plain", [READ]), ("wrapped", [READ, CTX_TOOL])):
            await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=512,
                system="You are a coding agent.",
                tools=tools,
                messages=[{"role": "user", "content": "Where is the tax rate set?"}],
                extra_headers={"X-Ctx-Session": name},
            )
            (rows[name],) = await gw.call(gw.sessions.store.gateway_requests, name)
    plain, wrapped = rows["plain"], rows["wrapped"]
    # the same, but for one token where the tool's text is counted apart from the rest
    assert abs(wrapped["client_tokens"] - plain["client_tokens"]) <= 1
    assert plain["injected"] == 0 and plain["as_sent"] == 1
    assert 30 < wrapped["injected"] < 200 and wrapped["as_sent"] == 0
    assert abs(wrapped["forwarded_tokens"] - plain["forwarded_tokens"] - wrapped["injected"]) <= 1
