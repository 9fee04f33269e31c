"""GET /ctx/report on a real gateway: requests driven with the official SDKs through loopback to the
fake upstream, then the page read back — a chart per session, a point per request, the totals of
`ctx-lsp stats --json`, store strings escaped, nothing loaded from the network, the token rule of
/ctx/status — and `ctx-lsp report --html -o` on the same workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import anthropic
import openai
import pytest

from ctx_lsp.engine import Engine
from ctx_lsp.sessions import SessionEngine
from tests.gateway.harness import KEY, running_gateway
from tests.report_page import Page, read_page

HOSTILE = "<script>alert('gw')</script>"
TOTAL_FIELDS = (
    "requests",
    "client_tokens",
    "forwarded_tokens",
    "input_tokens",
    "cached_tokens",
    "shed",
    "masked",
    "shrunk",
    "injected",
)


async def _chat(client: openai.AsyncOpenAI, session: str, model: str, turns: int) -> None:
    messages: list[dict] = [{"role": "system", "content": "You help with the shop's code."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"Question {n}: how is stock reserved and released?"})
        reply = await client.chat.completions.create(
            model=model, messages=messages, extra_headers={"X-Ctx-Session": session}
        )
        messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})


async def _messages(client: anthropic.AsyncAnthropic, session: str, turns: int) -> None:
    messages: list[dict] = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"Turn {n}: how are invoice totals rounded to cents?"})
        reply = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system="You review invoices.",
            messages=messages,  # type: ignore[arg-type]
            extra_headers={"X-Ctx-Session": session},
        )
        messages.append({"role": "assistant", "content": reply.content[0].text})  # type: ignore[union-attr]


def _stats(ws: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "stats", str(ws), "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _check_totals(page: Page, stats: dict) -> None:
    """Every number of the totals table is the one `ctx-lsp stats --json` gives."""
    expected = {**stats["sessions"], None: stats["total"]}
    assert set(page.totals) == set(expected)
    for session, t in expected.items():
        row = page.totals[session]
        for name in TOTAL_FIELDS:
            assert int(row[name]) == t[name], (session, name)
        for name in ("cost", "direct_cost"):
            if t[name] is None:
                assert row[name] == ""
            else:
                assert float(row[name]) == pytest.approx(t[name], abs=1e-6), (session, name)


async def test_the_report_page_of_a_running_gateway(ws: Path, tmp_path: Path) -> None:
    async with (
        running_gateway(ws) as gw,
        openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0) as oai,
        anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=0) as ant,
        aiohttp.ClientSession() as http,
    ):
        async with http.get(gw.url + "/ctx/report") as r:  # nothing yet: a page that says how to start
            assert r.status == 200 and "No requests through the gateway" in await r.text()
        await _chat(oai, "report-chat", "gpt-4o", 3)
        await _messages(ant, "report-claude", 2)
        await _chat(oai, "report-unpriced", "fake-model", 1)
        # no request header can name a session like this one; a store can hold it (an old version, a hand edit)
        await gw.call(
            gw.sessions.record_gateway_request,
            {"session": HOSTILE, "model": f"{HOSTILE}-model", "client_tokens": 50, "forwarded_tokens": 60},
        )
        async with http.get(gw.url + "/ctx/report") as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == "text/html; charset=utf-8"
            assert "default-src 'none'" in r.headers["Content-Security-Policy"]
            html = await r.text()
        async with http.get(gw.url + "/ctx/report", params={"session": "report-claude"}) as r:
            assert r.status == 200
            one = read_page(await r.text())
        async with http.get(gw.url + "/ctx/report", params={"session": HOSTILE + "x"}) as r:
            assert r.status == 404 and r.headers["Content-Type"] == "text/html; charset=utf-8"
            missing = await r.text()

    page = read_page(html)
    requests = {"report-chat": 3, "report-claude": 2, "report-unpriced": 1, HOSTILE: 1}
    assert page.sessions == list(requests)  # a session the client named is a run of its own
    drawn = {s: n for s, n in requests.items() if n > 1}  # a chart only where there is a series
    assert len(page.by_kind("tokens")) == len(page.by_kind("cache")) == len(drawn)
    for chart, n in zip(page.by_kind("tokens"), drawn.values(), strict=True):
        assert chart.points["direct"] == chart.points["forwarded"] == chart.points["billed"] == n
    for chart, n in zip(page.by_kind("cache"), drawn.values(), strict=True):
        assert chart.points["forwarded"] == n  # the fake upstream reports usage for every request
    assert [len(c) for c in page.contexts] == list(requests.values())  # every request in its run's table
    assert page.details_tables == len(drawn)  # a run of one request says its numbers in a line
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#x27;gw&#x27;)&lt;/script&gt;" in html
    assert "no prices for model fake-model" in page.text
    _check_totals(page, _stats(ws))
    assert float(page.totals[None]["cost"]) > 0 and float(page.totals["report-claude"]["ratio"]) > 0

    assert one.sessions == ["report-claude"] and one.by_kind("tokens")[0].points["forwarded"] == 2
    assert "<script>alert" not in missing and "no requests through the gateway in session" in missing

    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "report", "--html", str(ws), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == str(out.resolve()), done.stderr
    from_cli = read_page(out.read_text(encoding="utf-8"))
    assert from_cli.sessions == page.sessions and from_cli.totals == page.totals

    # the status line's and the gateway's totals are the sessions engine's, priced as the report prices
    sessions = SessionEngine(Engine(ws))
    try:
        for session in ("report-chat", "report-claude", "report-unpriced"):
            rows = sessions.store.gateway_requests(session)
            total = sessions.gateway_report(session).total
            assert sessions.gateway_totals(rows=rows) == sessions.gateway_totals(session) == total
            assert (total.cost is None) == (session == "report-unpriced")
    finally:
        sessions.close()


async def test_the_report_keeps_the_token_rule_of_the_status_page(ws: Path) -> None:
    async with running_gateway(ws, token="gw-token") as gw, aiohttp.ClientSession() as http:
        for path in ("/ctx/status", "/ctx/report"):
            async with http.get(gw.url + path) as r:
                assert r.status == 401, path
                assert "<html" not in await r.text()
            async with http.get(gw.url + path, headers={"X-Ctx-Token": "gw-token"}) as r:
                assert r.status == 200, path
