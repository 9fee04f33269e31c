"""``ctx-lsp stats``: what the gateway sent, saved and cost, per session and in total — the
provider's own counts, cache reads and writes included, against the same requests sent direct.
``ctx-lsp report --html``: the same as a page, with each session's requests charted."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.savings import Totals
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.shared import NotFound


def gateway_totals(
    workspace: Path | Engine, session: str | None = None, since: float | None = None
) -> tuple[dict[str, Totals], Totals]:
    """The recorded gateway requests of ``workspace`` (of one session; created at or after
    ``since``), summed per session and in all, money at each model's prices."""
    sessions = SessionEngine(workspace if isinstance(workspace, Engine) else Engine(workspace))
    try:
        report = sessions.gateway_report(session, since)
    except NotFound:  # no request of that session: nothing to sum
        return {}, Totals()
    finally:
        sessions.close()
    return {s.session: s.totals for s in report.sessions}, report.total


def stats(workspace: Path, session: str | None, as_json: bool, out: Callable[[str], None] = print) -> int:
    each, total = gateway_totals(workspace, session)
    rows = total.requests
    if as_json:
        out(json.dumps({"sessions": msgspec.to_builtins(each), "total": msgspec.to_builtins(total)}, indent=2))
        return 0
    if not rows:
        out("no requests through the gateway in this workspace yet (ctx-lsp wrap claude, or ctx-lsp gateway)")
        return 0
    out(
        f"{'session':<36} {'req':>5} {'sent → forwarded':>18} {'shed':>7} {'masked':>7} {'shrunk':>7} "
        f"{'+ctx':>7} {'cache':>6} {'cost':>10} {'direct':>10} {'ratio':>6}"
    )
    for name, t in [*each.items(), ("total", total)]:
        out(_line(name, t))
    return 0


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
        f"{name[:36]:<36} {t.requests:>5} {moved:>18} {format_tokens(t.shed):>7} {format_tokens(t.masked):>7} "
        f"{format_tokens(t.shrunk):>7} {format_tokens(t.injected):>7} {t.cache_share:>6.0%} "
        f"{money(t.cost):>10} {money(t.direct_cost):>10} {ratio:>6}"
    )
