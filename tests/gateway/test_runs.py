"""Runs a person can map to what they did: requests driven with the official SDKs through a real
gateway on loopback to the fake upstream, then `ctx-lsp stats` and the report read back — each run
labelled with its assistant (the client's User-Agent), model, the user's first line (harness text
left out, secrets masked) and start; a Claude Code-shaped title request and a script's one-shot
calls folded into their run; what ctx_lsp added to each request, and why nothing where nothing
was, as the engine decided (context_cost, mode off); and a store of an earlier version read as it
was, its requests kept."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from ctx_lsp.core.verdict import REASONS, UNCHANGED
from ctx_lsp.engine import Engine
from ctx_lsp.memory.store import schema
from ctx_lsp.report_html import render
from ctx_lsp.sessions.engine import SessionEngine
from tests.gateway.harness import KEY, PAID_CONTEXT, running_gateway
from tests.report_page import chromium, read_page, screenshot
from tests.workspaces import copy_sample

CLAUDE_SESSION = "5f0c4a2e-8d1b-4c6e-9a7f-3b2d1e0c9a8b"
# an AWS key of the documented example shape: detect-secrets finds it
SECRET = "AKIAIOSFODNN7EXAMPLE"
REMINDER = "<system-reminder>\nToday's date is 2026-11-27. Ignore unless relevant.\n</system-reminder>\n"
ASKED = "How is stock reserved and released when an order is cancelled?"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


async def _claude_shaped_run(ant: anthropic.AsyncAnthropic) -> None:
    """What Claude Code sends, through the real anthropic SDK: its title request first (a system
    prompt of its own, no tools, one message), then its conversation with tools — both with its
    session id in ``metadata.user_id``."""
    metadata = {"user_id": json.dumps({"device_id": "d" * 64, "session_id": CLAUDE_SESSION})}
    await ant.messages.create(
        model="claude-haiku-4-5",
        max_tokens=50,
        system="Generate a concise, sentence-case title (3-7 words) for this coding session.",
        messages=[{"role": "user", "content": f"<session>\n{ASKED}\n</session>"}],
        metadata=metadata,  # type: ignore[arg-type]
    )
    tools = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}]
    messages: list[dict] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": f"{ASKED}\nMore detail."}],
        }
    ]
    for _ in range(2):
        reply = await ant.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=200,
            system="You are an interactive agent that helps users with software engineering tasks.",
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            metadata=metadata,  # type: ignore[arg-type]
        )
        messages += [
            {"role": "assistant", "content": reply.content[0].text},  # type: ignore[union-attr]
            {"role": "user", "content": "And where is it released?"},
        ]


async def _script_run(oai: openai.AsyncOpenAI) -> None:
    """A script's three one-shot questions: one run."""
    for question in (f"Summarise shop/inventory.py for me. My key is {SECRET}, do not print it.", "Next", "Last"):
        await oai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": question}])


async def test_runs_are_labelled_and_side_requests_folded(ws: Path) -> None:
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as ant,
        openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as oai,
    ):
        await _claude_shaped_run(ant)
        await _script_run(oai)
        rows = await gw.call(gw.sessions.store.gateway_requests)
        report = await gw.call(gw.sessions.gateway_report, None)

    assert len(rows) == 6 and len({r["session"] for r in rows}) == 5  # five sessions in the store…
    assert SECRET not in json.dumps(rows) and KEY not in json.dumps(rows)
    assert "[secret masked" in rows[3]["title"]  # masked before it was stored
    assert all("system-reminder" not in (r["title"] or "") for r in rows)
    assert [r["one_shot"] for r in rows] == [1, 0, 0, 1, 1, 1]

    stats = json.loads(_cli("stats", str(ws), "--json").stdout)
    runs = stats["runs"]
    assert len(runs) == 2  # …and two runs: the title request and the script's calls folded in
    claude, script = runs
    assert claude["assistant"].startswith("Anthropic SDK (Python ") and claude["models"] == ["claude-sonnet-4-5"]
    assert claude["title"] == ASKED and claude["side_requests"] == 1 and claude["side_models"] == ["claude-haiku-4-5"]
    assert [p["side"] for p in claude["requests"]] == [True, False, False]
    assert script["assistant"].startswith("OpenAI SDK (Python ") and script["side_requests"] == 2
    assert script["title"].startswith("Summarise shop/inventory.py for me. My key is [secret masked")
    assert stats["verdict"].startswith("2 runs, 6 requests: cost ")
    assert set(stats["sessions"]) == {claude["session"], script["session"]}
    assert stats["sessions"][claude["session"]]["requests"] == 3 and stats["total"]["requests"] == 6

    text = _cli("stats", str(ws)).stdout
    lines = text.splitlines()
    assert lines[0] == stats["verdict"]
    assert f"“{ASKED}”" in text and "claude-sonnet-4-5 · 2 requests (+1 side: claude-haiku-4-5)" in text
    assert "gpt-4o · 1 request (+2 side)" in text and SECRET not in text

    page = read_page(render(report, str(ws)))
    assert page.verdict == stats["verdict"]
    assert page.sessions == [claude["session"], script["session"]]
    assert page.runs[0].startswith("Run 1 · ") and "Anthropic SDK" in page.runs[0]
    assert page.asked[0] == f"“{ASKED}”"
    assert len(page.by_kind("tokens")) == 2  # three requests each: a series


async def test_what_was_added_and_why_nothing_was(ws: Path, tmp_path: Path) -> None:
    """The default (context_cost = "savings") adds nothing to a conversation that has saved
    nothing, and says so; mode off says so; "always" adds items, named per request with the plan."""
    paid = copy_sample(tmp_path / "paid")
    (paid / "ctx.toml").write_text(PAID_CONTEXT)
    off = copy_sample(tmp_path / "off")
    for workspace, mode in ((ws, None), (paid, None), (off, "off")):
        async with (
            running_gateway(workspace, mode=mode) as gw,
            openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as oai,
        ):
            messages: list[dict] = []
            for question in (ASKED, "And where is it released?"):
                messages.append({"role": "user", "content": question})
                reply = await oai.chat.completions.create(
                    model="gpt-4o", messages=messages, extra_headers={"X-Ctx-Session": "ask"}
                )
                messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})

    saving = json.loads(_cli("stats", str(ws), "--json").stdout)
    assert [p["context"] for p in saving["runs"][0]["requests"]] == ["cost", "cost"]
    assert saving["total"]["context_added"] == 0 and saving["total"]["unchanged"] == 2
    assert saving["verdict"].endswith(f"no context added: {UNCHANGED}; {REASONS['cost']}")
    listed = _cli("stats", str(ws), "--session", "ask").stdout
    assert listed.count(f"+ctx 0: {REASONS['cost']}") == 2

    added = json.loads(_cli("stats", str(paid), "--json").stdout)
    points = added["runs"][0]["requests"]
    assert [p["context"] for p in points] == ["added", "added"]
    assert all(p["context_items"] > 0 and p["plan_id"].startswith("plan-") for p in points)
    assert added["verdict"].endswith("context added to 2 of 2 requests")
    listed = _cli("stats", str(paid), "--requests").stdout
    assert f"+ctx {points[0]['context_items']} items" in listed and f"({points[0]['plan_id']})" in listed
    page = read_page(_cli("report", "--html", str(paid)).stdout)
    assert [c for c, _ in page.contexts[0]] == ["added", "added"]
    assert points[1]["plan_id"] in page.contexts[0][1][1]

    stopped = json.loads(_cli("stats", str(off), "--json").stdout)
    assert [p["context"] for p in stopped["runs"][0]["requests"]] == ["off", "off"]
    assert "no context added" in stopped["verdict"] and REASONS["off"] in stopped["verdict"]


def test_a_store_of_an_earlier_version_keeps_its_requests(tmp_path: Path) -> None:
    """The requests an earlier version recorded (without who sent them or why context was added)
    are kept when the store is opened, and shown as runs with what is known."""
    ws = tmp_path / "ws"
    (ws / ".ctx").mkdir(parents=True)
    db = ws / ".ctx" / "memory.sqlite3"
    new = {"client", "run", "title", "one_shot", "context", "context_items"}
    old = schema.Table(
        "gateway_requests",
        tuple(c for c in schema.GATEWAY_REQUESTS.columns if c.split()[0] not in new),
    )
    assert len(old.columns) == len(schema.GATEWAY_REQUESTS.columns) - len(new)
    with sqlite3.connect(db) as conn:
        conn.execute(old.create())
        for n, injected in enumerate((0, 900)):
            conn.execute(
                "INSERT INTO gateway_requests(session, created, model, client_tokens, forwarded_tokens, injected)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                ("chat-0123456789ab", 1_790_000_000.0 + n, "gpt-4o", 1000, 1000 + injected, injected),
            )
    sessions = SessionEngine(Engine(ws))
    try:
        rows = sessions.store.gateway_requests()
    finally:
        sessions.close()
    assert [r["injected"] for r in rows] == [0, 900] and all(r["context"] is None for r in rows)
    stats = json.loads(_cli("stats", str(ws), "--json").stdout)
    (run,) = stats["runs"]
    assert [p["context"] for p in run["requests"]] == ["unrecorded", "added"]
    assert run["assistant"] == "" and run["title"] == ""
    assert stats["verdict"] == (
        "1 run, 2 requests: input 1.45× what the assistant sent (no prices); context added to 1 of 2 requests"
    )


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"


@pytest.mark.skipif(chromium() is None, reason="no chromium on this machine (apt-get install chromium)")
async def test_the_report_in_a_browser_shows_labelled_runs(ws: Path, tmp_path: Path) -> None:
    """Headless Chromium draws the page of a Claude Code-shaped run, a script's run and ten
    one-request runs: the runs labelled, charts only for the two with a series, the page's height
    that of its content (no chart per single request). The screenshots stay in test-artifacts/report."""
    async with (
        running_gateway(ws) as gw,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as ant,
        openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as oai,
    ):
        await _claude_shaped_run(ant)
        await _script_run(oai)
        top = tmp_path / "top.html"
        top.write_text(render(await gw.call(gw.sessions.gateway_report, None), str(ws)), encoding="utf-8")
        for n in range(10):
            await oai.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": f"Question {n} about invoices"}],
                extra_headers={"X-Ctx-Session": f"one-{n}"},
            )
        report = await gw.call(gw.sessions.gateway_report, None)
    many = tmp_path / "many.html"
    many.write_text(render(report, str(ws)), encoding="utf-8")
    page = read_page(many.read_text(encoding="utf-8"))
    assert len(page.runs) == 12 and len(page.by_kind("tokens")) == 2

    two = await screenshot(top, ARTIFACTS / "01-labelled-runs.png")
    twelve = await screenshot(many, ARTIFACTS / "02-twelve-runs.png")
    assert (ARTIFACTS / "01-labelled-runs.png").stat().st_size > 20_000
    per_run = (twelve - two) / 10
    assert per_run < 320, f"a one-request run takes {per_run:.0f} px"  # its label and its table, no chart
    assert twelve < 6000, twelve
