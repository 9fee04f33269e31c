"""``ctx-lsp stats``: what the gateway sent, saved and cost, per run and in total — the
provider's own counts, cache reads and writes included, against the same requests sent direct —
under a one-line verdict, each run labelled with its assistant, model, the user's first line and
its start, and what ctx_lsp added (or why nothing). ``ctx-lsp report --html``: the same as a page,
with each run's requests charted."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.report import GatewayReport, RequestPoint, build_report
from ctx_lsp.core.savings import Totals
from ctx_lsp.core.verdict import context_clause, request_context, run_label
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.shared import NotFound


def gateway_totals(
    workspace: Path | Engine, session: str | None = None, since: float | None = None
) -> tuple[dict[str, Totals], Totals]:
    """The recorded gateway requests of ``workspace`` (of one session; created at or after
    ``since``), summed per run (by its conversation's session) and in all, money at each model's
    prices."""
    report = gateway_report(workspace, session, since)
    return {r.session: r.totals for r in report.runs}, report.total


def gateway_report(workspace: Path | Engine, session: str | None = None, since: float | None = None) -> GatewayReport:
    sessions = SessionEngine(workspace if isinstance(workspace, Engine) else Engine(workspace))
    try:
        return sessions.gateway_report(session, since)
    except NotFound:  # no request of that session: nothing to sum
        return build_report([], {})
    finally:
        sessions.close()


def stats(
    workspace: Path, session: str | None, as_json: bool, out: Callable[[str], None] = print, requests: bool = False
) -> int:
    """The verdict, each run labelled (when, assistant, model, the user's first line, what was
    added or why not), the numbers per run and in total; with ``requests`` (or one session), each
    request with what ctx_lsp added to it."""
    report = gateway_report(workspace, session)
    total = report.total
    if as_json:
        out(
            json.dumps(
                {
                    "verdict": report.verdict,
                    "runs": msgspec.to_builtins(report.runs),
                    "sessions": {r.session: msgspec.to_builtins(r.totals) for r in report.runs},
                    "total": msgspec.to_builtins(total),
                },
                indent=2,
            )
        )
        return 0
    if not total.requests:
        out("no requests through the gateway in this workspace yet (ctx-lsp wrap claude, or ctx-lsp gateway)")
        return 0
    out(report.verdict)
    for n, run in enumerate(report.runs, 1):
        out("")
        out(f"#{n:<3} {run_label(run)}")
        if run.title:
            out(f"     “{run.title}”")
        out(f"     session {run.session}" + (f" + {len(run.side_sessions)} folded" if run.side_sessions else ""))
        out(f"     {context_clause(run.totals)}")
        if requests or session is not None:
            for p in run.requests:
                out("     " + _request_line(p))
    out("")
    out(
        f"{'run':<6} {'req':>5} {'sent → forwarded':>18} {'shed':>7} {'masked':>7} {'shrunk':>7} "
        f"{'+ctx':>7} {'cache':>6} {'cost':>10} {'direct':>10} {'ratio':>6}"
    )
    for name, t in [*((f"#{n}", r.totals) for n, r in enumerate(report.runs, 1)), ("total", total)]:
        out(_line(name, t))
    return 0


def _request_line(p: RequestPoint) -> str:
    when = time.strftime("%H:%M:%S", time.gmtime(p.created))
    side = " side" if p.side else ""
    moved = f"{format_tokens(p.direct)} → {format_tokens(p.forwarded)}"
    return f"{p.n:>4} {when}{side:<5} {p.model[:24]:<24} {moved:>15}  {request_context(p)}"


def html_report(workspace: Path, session: str | None, output: Path | None, out: Callable[[str], None] = print) -> int:
    """The page on stdout, or written to ``output`` (its path printed). An unknown session is a
    NotFound (a user error: exit 2); an empty store a page that says how to start the gateway."""
    from ctx_lsp.report_html import render

    sessions = SessionEngine(Engine(workspace))
    try:
        sessions.require_memory()
        report = sessions.gateway_report(session)
        root = str(sessions.engine.root)
    finally:
        sessions.close()
    page = render(report, root)
    if output is None:
        sys.stdout.write(page)
        return 0
    try:
        output.write_text(page, encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot write {output}: {err.strerror or err}") from None
    out(str(output.resolve()))
    return 0


def _money(v: float | None) -> str:
    return "—" if v is None else f"${v:,.4f}"


def _line(name: str, t: Totals) -> str:
    money = _money
    ratio = "—" if t.ratio is None else f"{t.ratio:.2f}"
    moved = f"{format_tokens(t.client_tokens)} → {format_tokens(t.forwarded_tokens)}"
    return (
        f"{name[:6]:<6} {t.requests:>5} {moved:>18} {format_tokens(t.shed):>7} {format_tokens(t.masked):>7} "
        f"{format_tokens(t.shrunk):>7} {format_tokens(t.injected):>7} {t.cache_share:>6.0%} "
        f"{money(t.cost):>10} {money(t.direct_cost):>10} {ratio:>6}"
    )
