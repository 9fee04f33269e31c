"""The gateway report: its numbers (core.report), the page (report_html, report_svg) and
`ctx-lsp report --html` over a real store — hostile names escaped, hundreds of requests drawn
point for point, thousands thinned and said so, an empty store and an unknown session — and the
runs it is made of (core.runs): the assistant's name, the user's line, side requests folded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ctx_lsp.core.items import Message
from ctx_lsp.core.models import Prices
from ctx_lsp.core.report import build_report
from ctx_lsp.core.runs import RUN_GAP, TITLE_CHARS, assistant_of, runs, trimmed, user_line
from ctx_lsp.core.savings import totals
from ctx_lsp.engine import Engine
from ctx_lsp.report_html import render
from ctx_lsp.report_svg import MAX_POINTS, _ticks, _x_ticks
from ctx_lsp.sessions.engine import SessionEngine
from tests.report_page import read_page

PRICES = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
HOSTILE = "<script>alert('x')</script>&\"q\""


def _row(session: str, n: int, model: str = "priced", usage: bool = True) -> dict[str, Any]:
    client = 1000 + 500 * n
    forwarded = min(client, 4000)
    return {
        "session": session,
        "plan_id": None,
        "created": 1_700_000_000.0 + n,
        "model": model,
        "client_tokens": client,
        "forwarded_tokens": forwarded,
        "direct_cached": client - 500 if n else 0,
        "input_tokens": forwarded + 10 if usage else 0,
        "cached_tokens": forwarded - 600 if usage and n else 0,
        "cache_write_tokens": 300 if usage else 0,
        "output_tokens": 40 if usage else 0,
        "shed": client - forwarded,
        "masked": 7 * n,
        "shrunk": 3,
        "injected": 200,
    }


def test_build_report_groups_by_session_in_order_with_the_savings_totals() -> None:
    rows = [_row("a", 0), _row("b", 0, model="unpriced"), _row("a", 1), _row("a", 2, usage=False)]
    prices = {"priced": PRICES, "unpriced": None}
    report = build_report(rows, prices)
    assert [s.session for s in report.runs] == ["a", "b"]
    a = report.runs[0]
    assert [p.n for p in a.requests] == [1, 2, 3]
    assert [p.direct for p in a.requests] == [1000, 1500, 2000]
    assert a.requests[1].cache_share == pytest.approx((1500 - 600) / 1510)
    assert a.requests[1].direct_cache_share == pytest.approx(1000 / 1500)
    assert a.requests[2].cache_share is None and a.requests[2].billed == 0  # no usage report: not a cache miss
    assert a.requests[0].direct_cache_share == 0.0
    assert a.totals == totals([rows[0], rows[2], rows[3]], prices)
    assert report.total == totals(rows, prices)
    assert report.runs[1].unpriced == ["unpriced"] and report.runs[1].totals.cost is None
    assert report.unpriced == ["unpriced"] and report.total.cost is not None


def test_the_page_escapes_store_strings_and_loads_nothing() -> None:
    rows = [_row(HOSTILE, 0, model=f"m{HOSTILE}"), _row(HOSTILE, 1, model=f"m{HOSTILE}"), _row("plain", 0)]
    html = render(build_report(rows, {"priced": PRICES}), f"/ws/{HOSTILE}")
    assert "<script" not in html and "alert('x')</" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&quot;q&quot;" in html
    page = read_page(html)  # well-formed, no resource, no script, no handler
    assert page.sessions == [HOSTILE, "plain"]  # read back as text, exactly the stored id
    assert set(page.totals) == {HOSTILE, "plain", None}
    assert page.by_kind("tokens")[0].title == f"Input tokens per request, run 1: {HOSTILE}"
    assert f"no prices for model m{HOSTILE}" in page.text
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_charts_where_there_is_a_series_a_point_per_request_and_every_request_in_a_table() -> None:
    rows = [_row("long", n) for n in range(520)] + [_row("one", 0)]
    rows[7]["input_tokens"] = 0  # a request without a usage report: a gap in its cache share, not a 0
    page = read_page(render(build_report(rows, {"priced": PRICES}), "/ws"))
    tokens, cache = page.by_kind("tokens"), page.by_kind("cache")
    assert len(tokens) == len(cache) == 1  # a run of one request has no series to draw: its table only
    assert tokens[0].points == {"direct": 520, "forwarded": 520, "billed": 519}
    assert cache[0].points == {"direct": 520, "forwarded": 519}
    assert page.details_tables == 1 and [len(c) for c in page.contexts] == [520, 1]  # one request: one line
    assert all("Every one of the" in c for c in page.captions)
    assert "1 request(s) without a usage report are not drawn" in page.captions[1]
    assert page.totals["long"]["requests"] == "520" and page.totals[None]["requests"] == "521"


def test_thousands_of_requests_are_thinned_and_the_caption_says_so() -> None:
    n = 2 * MAX_POINTS + 500
    page = read_page(render(build_report([_row("big", i) for i in range(n)], {"priced": PRICES}), "/ws"))
    chart = page.by_kind("tokens")[0]
    assert chart.points["forwarded"] == -(-n // 3)  # buckets of 3 requests
    assert f"{n:,} requests drawn as {-(-n // 3):,} points" in page.captions[0]
    assert "each point is the largest of 3 consecutive requests" in page.captions[0]
    assert "the mean of 3" in page.captions[1]


def test_axis_ticks_are_round_and_cover_the_data() -> None:
    assert _ticks(0) == [0.0, 1.0]
    assert _ticks(1.0) == [0, 0.25, 0.5, 0.75, 1.0]
    assert _ticks(63_000) == [0, 20_000, 40_000, 60_000, 80_000]
    assert _ticks(10_000) == [0, 2500, 5000, 7500, 10_000]
    assert _x_ticks(1) == [1] and _x_ticks(3) == [1, 2, 3]
    assert _x_ticks(600) == [1, 100, 200, 300, 400, 500, 600]


def test_an_empty_store_says_how_to_start_the_gateway() -> None:
    page = read_page(render(build_report([], {}), "/my ws"))
    assert page.charts == [] and "No requests through the gateway" in page.text
    assert "ctx-lsp wrap claude" in page.text and "ctx-lsp gateway '/my ws'" in page.text


# ---- the command, over a real store -------------------------------------------------------------


def _store(ws: Path, rows: list[dict[str, Any]]) -> None:
    sessions = SessionEngine(Engine(ws))
    try:
        for r in rows:
            sessions.record_gateway_request({k: v for k, v in r.items() if k != "created"})
    finally:
        sessions.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=120)


def test_the_command_writes_the_page_or_prints_it_and_refuses_an_unknown_session(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    empty = _cli("report", "--html", str(ws))
    assert empty.returncode == 0 and "No requests through the gateway" in empty.stdout
    _store(ws, [_row("s-1", n, model="gpt-4o") for n in range(501)] + [_row(HOSTILE, 0, model="fake-model")])
    out = tmp_path / "report.html"
    done = _cli("report", "--html", str(ws), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out.resolve())
    page = read_page(out.read_text(encoding="utf-8"))
    assert page.sessions == ["s-1", HOSTILE]
    assert page.by_kind("tokens")[0].points["forwarded"] == 501
    stats = msgspec.json.decode(_cli("stats", str(ws), "--json").stdout)
    assert page.totals[None]["input_tokens"] == str(stats["total"]["input_tokens"])
    assert float(page.totals[None]["cost"]) == pytest.approx(stats["total"]["cost"], abs=1e-6)
    assert "no prices for model fake-model" in page.text

    one = _cli("report", "--html", str(ws), "--session", "s-1")
    assert one.returncode == 0 and read_page(one.stdout).sessions == ["s-1"]
    unknown = _cli("report", "--html", str(ws), "--session", "nope")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "no requests through the gateway in session 'nope'" in unknown.stderr and "s-1" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    stray = _cli("report", str(ws), "-o", str(out))
    assert stray.returncode == 2 and "--html" in stray.stderr
    unwritable = _cli("report", "--html", str(ws), "-o", str(tmp_path / "no" / "such" / "dir.html"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr


# ---- runs: labels and the side-request rule (core.runs) ---------------------------------------------


def test_the_assistant_is_named_from_its_user_agent() -> None:
    # the User-Agents the real clients sent the fake upstream (tests/gateway/test_assistants.py)
    assert assistant_of("claude-cli/2.1.197 (external, sdk-cli)") == "Claude Code 2.1.197"
    assert assistant_of("codex_exec/0.169.0 (Debian 12.0.0; x86_64) dumb", "codex_exec") == "Codex 0.169.0"
    assert assistant_of("OpenAI/Python 2.20.0") == "OpenAI SDK (Python 2.20.0)"  # aider, through litellm
    assert assistant_of("AsyncAnthropic/Python 2.14.0") == "Anthropic SDK (Python 2.14.0)"
    assert assistant_of("curl/8.1.2") == "curl 8.1.2" and assistant_of("") == ""


def test_the_users_line_leaves_harness_text_out() -> None:
    said = [
        Message(id="1", role="user", content="<environment_context>\n<cwd>/ws</cwd>\n</environment_context>"),
        Message(id="2", role="assistant", content="ok"),
        Message(
            id="3", role="user", content="<system-reminder>\ndate\n</system-reminder>\n\n  Why does it fail?\nDetail"
        ),
        Message(id="4", role="user", content="<system-reminder>only a reminder</system-reminder>"),
    ]
    assert user_line(said) == "Why does it fail?"
    assert trimmed("x" * 200) == "x" * 79 + "…" and len(trimmed("x" * 200)) == TITLE_CHARS


def _at(session: str, t: float, *, run: str | None = None, one_shot: bool = False, client: str = "c") -> dict:
    return {"session": session, "created": t, "run": run, "one_shot": int(one_shot), "client": client}


def test_side_requests_fold_into_their_run() -> None:
    rows = [
        _at("title", 0, run="client:abc", one_shot=True),  # Claude Code's title request comes first
        _at("main", 1, run="client:abc"),
        _at("main", 2, run="client:abc"),
        _at("sub-agent", 3, run="client:abc"),
        _at("weak", 4, one_shot=True),  # no id: joins the open run of its assistant
        _at("other-client", 5, one_shot=True, client="d"),  # another assistant: a run of its own
        _at("named", 6, run="named:x"),
        _at("after-named", 7, one_shot=True),  # a named run is never joined…
        _at("late", 1000, one_shot=True),  # …nor a run closed RUN_GAP ago
    ]
    found = runs(rows)
    assert [(r.conversation, r.side) for r in found] == [
        ("main", ["title", "sub-agent", "weak", "after-named"]),
        ("other-client", []),
        ("named", []),
        ("late", []),
    ]
    assert [r["session"] for r in found[0].rows] == ["title", "main", "main", "sub-agent", "weak", "after-named"]
    report = build_report([{**r, "model": "m"} for r in rows], {})
    assert report.runs[0].side_requests == 4 and [p.side for p in report.runs[0].requests][:2] == [True, False]
    assert report.verdict.startswith("4 runs, 9 requests") and RUN_GAP < 1000 - 7


def test_the_page_says_where_and_why_ctx_lsp_rebuilt_the_cached_prefix() -> None:
    rows = [_row("loop", n) for n in range(12)]
    rows[5]["prefix"] = "compaction step: the conversation reached its step size"
    rows[9]["prefix"] = "compaction step, instead of: tool result masked"
    report = build_report(rows, {"priced": PRICES})
    assert [p.prefix for p in report.runs[0].requests if p.prefix] == [rows[5]["prefix"], rows[9]["prefix"]]
    page = read_page(render(report, "/ws"))
    assert (
        "ctx_lsp rebuilt the cached prefix at request 6 (compaction step: the conversation reached its step size), "
        "request 10 (compaction step, instead of: tool result masked)." in page.captions[1]
    )
    assert "prefix rebuilt" in page.text and page.text.count("instead of: tool result masked") == 2  # caption, table
