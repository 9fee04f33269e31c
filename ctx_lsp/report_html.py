"""The gateway report as one self-contained HTML page (``ctx-lsp report --html`` and the gateway's
``GET /ctx/report``): the one-line verdict; per run (an assistant's conversation with its side
requests folded in), its label (assistant, model, start, the user's first line), what ctx_lsp
added or why nothing, and — where there is a series, two requests or more — input tokens per
request (direct vs forwarded vs the provider's count) and the cache share per request; every
request in a table with what ctx_lsp added to it; a totals table per run and overall. Nothing
loads from anywhere (a Content-Security-Policy says so to the browser); every string from the
store is escaped."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from pathlib import PurePath

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.report import GatewayReport, RequestPoint, RunReport
from ctx_lsp.core.savings import Totals
from ctx_lsp.core.verdict import context_clause, request_context, run_label
from ctx_lsp.report_svg import MAX_POINTS, Chart, Series, line_chart

# No script may run and nothing may load: a stored session id that escaped its escaping still
# could not do anything, and the page works offline.
CSP = "default-src 'none'; style-src 'unsafe-inline'"

STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --grid: #d1d9e0;
  --rule: #d1d9e0; --direct: #bc4c00; --forwarded: #0969da; --billed: #1a7f37; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --grid: #3d444d; --rule: #3d444d;
    --direct: #f0883e; --forwarded: #58a6ff; --billed: #3fb950; }
}
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 2rem auto;
  max-width: 84rem; padding: 0 1rem; }
a { color: var(--forwarded); }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; } h2 { font-size: 1.2rem; margin-top: 2.2rem; }
.sub, figcaption, .notes, summary { color: var(--muted); }
code { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid var(--rule); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
tr.total th, tr.total td { font-weight: 600; border-top: 2px solid var(--fg); }
figure { margin: 1.2rem 0; } svg.chart { width: 100%; height: auto; display: block; }
.verdict { font-size: 1.1rem; font-weight: 600; margin: 0.6rem 0; }
.asked { font-size: 1.05rem; margin: 0.2rem 0; } .muted, .context { color: var(--muted); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(26rem, 1fr)); gap: 0 1.5rem; }
.charts figure { margin: 0.6rem 0; }
svg .grid { stroke: var(--grid); stroke-width: 1; } svg .axis { stroke: var(--muted); stroke-width: 1; }
svg text { fill: var(--fg); font-size: 12px; } svg .tick { fill: var(--muted); font-size: 11px; }
svg .line { fill: none; stroke-width: 1.8; stroke-linejoin: round; }
svg .dot { stroke: none; }
svg .s-direct { stroke: var(--direct); } svg .dot.s-direct { fill: var(--direct); }
svg .s-forwarded { stroke: var(--forwarded); } svg .dot.s-forwarded { fill: var(--forwarded); }
svg .s-billed { stroke: var(--billed); } svg .dot.s-billed { fill: var(--billed); }
details { margin-top: 0.4rem; } details table, table.totals { font-size: 13px; }
table.totals th:first-child { white-space: normal; overflow-wrap: anywhere; min-width: 12rem; max-width: 20rem; }
table.totals thead th { white-space: normal; vertical-align: bottom; min-width: 3.5rem; }
table.totals th, table.totals td { padding: 0.25rem 0.45rem; }
td.note { white-space: normal; min-width: 6rem; text-align: left; color: var(--muted); }
table.requests td.note { min-width: 14rem; }
figure svg.chart, figure figcaption { max-width: 48rem; }
"""

# (Totals field, column heading, its title: what the number is)
TOKEN_COLUMNS = (
    ("requests", "requests", "requests through the gateway"),
    ("client_tokens", "client sent", "input tokens the client's requests held (ctx_lsp's count): sent direct"),
    ("forwarded_tokens", "forwarded", "input tokens ctx_lsp sent upstream (ctx_lsp's count)"),
    ("input_tokens", "provider input", "input tokens as the provider counted them"),
    ("cached_tokens", "cache read", "of the provider input, tokens read from its prompt cache"),
    ("shed", "shed", "history left out by compaction or the window"),
    ("masked", "masked", "old tool results replaced by a one-line stub"),
    ("shrunk", "shrunk", "big tool outputs shortened once"),
    ("injected", "+ctx", "what ctx_lsp's own blocks (pins, retrieval) added"),
)


def render(report: GatewayReport, workspace: str) -> str:
    """The page. With no requests recorded, a page that says how to start the gateway."""
    if not report.runs:
        body = [
            "<h1>Gateway report</h1>",
            f'<p class="sub">workspace <code>{escape(workspace)}</code></p>',
            "<p>No requests through the gateway are recorded in this workspace yet.</p>",
            "<p>Run your assistant through the gateway from the workspace, and this page fills as it works:</p>",
            f"<pre><code>cd {escape(_quote(workspace))}\n"
            "ctx-lsp wrap claude    # or codex, aider, or -- any command on the openai / anthropic SDKs</code></pre>",
            f"<p>Or start the gateway on its own, <code>ctx-lsp gateway {escape(_quote(workspace))}</code>, and "
            "point your assistant at the address it prints (docs/gateway.md in ctx_lsp).</p>",
        ]
        return _page(_title(workspace), body)
    body = [
        "<h1>Gateway report</h1>",
        f'<p class="verdict">{escape(report.verdict)}</p>',
        f'<p class="sub">workspace <code>{escape(workspace)}</code> · {_span(report)}</p>',
        "<h2>Totals</h2>",
        _totals_table(report),
        *_notes(report),
    ]
    for n, s in enumerate(report.runs, 1):
        body.extend(_run(n, s))
    body.append(_how_counted())
    return _page(_title(workspace), body)


def error_page(message: str) -> str:
    return _page("ctx_lsp gateway report", ["<h1>Gateway report</h1>", f"<p>{escape(message)}</p>"])


def _title(workspace: str) -> str:
    return f"ctx_lsp gateway report · {PurePath(workspace).name or workspace}"


def _page(title: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


# ---- totals ------------------------------------------------------------------------------------


def _totals_table(report: GatewayReport) -> str:
    head = "".join(f'<th scope="col" title="{escape(tip)}">{escape(h)}</th>' for _, h, tip in TOKEN_COLUMNS)
    rows = [
        '<div class="wide"><table class="totals">',
        "<thead><tr>"
        f'<th scope="col">run</th>{head}'
        '<th scope="col" title="cache read / provider input">cache share</th>'
        '<th scope="col" title="the share of the client\'s input the provider would have cached sent direct">'
        "direct cache share</th>"
        '<th scope="col" title="US dollars at the model\'s prices, cache reads and writes included">'
        "cost through ctx_lsp</th>"
        '<th scope="col" title="the same requests sent direct, cache-weighted">cost direct</th>'
        '<th scope="col" title="cost through ctx_lsp / cost direct: below 1 is cheaper">ratio</th>'
        "</tr></thead><tbody>",
    ]
    for n, s in enumerate(report.runs, 1):
        what = " · ".join(x for x in (s.assistant, ", ".join(s.models)) if x)
        name = f'<a href="#s{n}">Run {n}</a> <small>{escape(what)}</small>'
        if s.title:
            name += f'<br><small class="muted">“{escape(s.title)}”</small>'
        rows.append(_totals_row(s.totals, name, s.session, s.unpriced))
    rows.append(_totals_row(report.total, "total", None, report.unpriced))
    rows.append("</tbody></table></div>")
    return "\n".join(rows)


def _totals_row(t: Totals, name: str, session: str | None, unpriced: list[str]) -> str:
    key = f' data-session="{escape(session)}"' if session is not None else ""
    cls = ' class="total"' if session is None else ""
    cells = [f'<th scope="row">{name}</th>']
    cells += [_num(field, getattr(t, field)) for field, _, _ in TOKEN_COLUMNS]
    cells.append(_share("cache_share", t.cache_share if t.input_tokens else None))
    cells.append(_share("direct_cache_share", t.direct_cache_share if t.client_tokens else None))
    if t.cost is None:
        cells.append(f'<td class="note" data-k="cost" data-v="">{escape(_no_prices(unpriced))}</td>')
        cells.append('<td data-k="direct_cost" data-v="">—</td><td data-k="ratio" data-v="">—</td>')
    else:
        cells.append(_money("cost", t.cost))
        cells.append(_money("direct_cost", t.direct_cost))
        ratio = t.ratio
        words = "—" if ratio is None else f"{ratio:.2f}<br><small>{_cheaper(ratio)}</small>"
        cells.append(f'<td data-k="ratio" data-v="{"" if ratio is None else f"{ratio:.6f}"}">{words}</td>')
    return f"<tr{cls}{key}>{''.join(cells)}</tr>"


def _notes(report: GatewayReport) -> list[str]:
    out = []
    if report.unpriced and report.total.cost is not None:
        out.append(
            f'<p class="notes">Money counts only the requests of models with prices: '
            f"{escape(_no_prices(report.unpriced))}. Set them in <code>[[models]]</code> of ctx.toml "
            "(<code>input_price</code>, <code>output_price</code>, <code>cache_read_price</code>, "
            "<code>cache_write_price</code>).</p>"
        )
    elif report.unpriced:
        out.append(
            f'<p class="notes">{escape(_no_prices(report.unpriced))}: no money is counted. Set prices in '
            "<code>[[models]]</code> of ctx.toml.</p>"
        )
    return out


def _no_prices(models: list[str]) -> str:
    if not models:
        return "no usage reported"
    return f"no prices for model{'s' if len(models) > 1 else ''} {', '.join(models)}"


def _cheaper(ratio: float) -> str:
    if abs(ratio - 1) < 0.005:
        return "the same"
    return f"{abs(1 - ratio):.0%} {'cheaper' if ratio < 1 else 'dearer'}"


def _num(key: str, v: int) -> str:
    if key == "requests":
        return f'<td data-k="{key}" data-v="{v}">{v:,}</td>'
    # short so the table fits a screen; the exact count on hover
    return f'<td data-k="{key}" data-v="{v}" title="{v:,} tokens">{format_tokens(v)}</td>'


def _share(key: str, v: float | None) -> str:
    return f'<td data-k="{key}" data-v="{"" if v is None else f"{v:.6f}"}">{"—" if v is None else f"{v:.1%}"}</td>'


def _money(key: str, v: float | None) -> str:
    if v is None:
        return f'<td data-k="{key}" data-v="">—</td>'
    shown = f"${v:,.2f}" if v >= 1 else f"${v:,.4f}"  # cents, or what a short test session costs
    return f'<td data-k="{key}" data-v="{v:.6f}" title="${v:,.6f}">{shown}</td>'


# ---- one run ------------------------------------------------------------------------------------


def _run(n: int, s: RunReport) -> list[str]:
    reqs = s.requests
    t = s.totals
    side = (
        f" · {len(s.side_sessions)} side session{'s' if len(s.side_sessions) != 1 else ''} folded in"
        if s.side_sessions
        else ""
    )
    out = [
        f'<section class="run" id="s{n}">',
        f'<h2 data-session="{escape(s.session)}">{escape(_heading(n, s))}</h2>',
        f'<p class="asked">{_asked(s.title)}</p>',
    ]
    if len(reqs) == 1:  # nothing to chart or list: the request's numbers on one line
        (r,) = reqs
        out.append(
            f'<p class="sub">session <code>{escape(s.session)}</code> · {_when(r.created)} · client sent '
            f"{r.direct:,}, forwarded {r.forwarded:,}, provider input {r.billed:,}, cache share {_pct(r.cache_share)}"
            "</p>"
        )
        out.append(f'<p class="context" data-ctx="{escape(r.context)}">{escape(request_context(r))}</p>')
        out.append("</section>")
        return out
    summary = (
        f"session <code>{escape(s.session)}</code>{side} · {_when(s.started)} to {_when(reqs[-1].created)}"
        f" · client sent {format_tokens(t.client_tokens)}, forwarded {format_tokens(t.forwarded_tokens)}"
    )
    out.append(f'<p class="sub">{summary}</p>')
    out.append(f'<p class="context">{escape(context_clause(t))}</p>')
    charts = _charts(n, s)
    if charts:
        out.append(f'<div class="charts">{"".join(charts)}</div>')
    out.append(_requests_table(s, open_=not charts))
    out.append("</section>")
    return out


def _heading(n: int, s: RunReport) -> str:
    return f"Run {n} · {run_label(s)}"


def _asked(title: str) -> str:
    if not title:
        return '<span class="muted">(no words of the user recorded)</span>'
    return f"“{escape(title)}”"


def _charts(n: int, s: RunReport) -> list[str]:
    """The run's charts, where there is a series to draw: two requests or more; the cache chart
    only when the provider reported usage for two of them."""
    reqs = s.requests
    if len(reqs) < 2:
        return []
    label = s.title or s.session
    tokens = line_chart(
        chart_id=f"s{n}-tokens",
        kind="tokens",
        title=f"Input tokens per request, run {n}: {label}",
        desc=f"{len(reqs)} requests in order. For each: the input tokens the client sent (what going direct "
        "sends), what ctx_lsp forwarded, and the provider's own count of the input.",
        x_label="request in the run (1 = first)",
        y_label="input tokens per request",
        series=[
            Series("direct", "direct: what the client sent", [r.direct for r in reqs], "dashed"),
            Series("forwarded", "forwarded by ctx_lsp", [r.forwarded for r in reqs]),
            Series("billed", "provider's count", [r.billed or None for r in reqs], "dotted"),
        ],
        y_format=lambda v: format_tokens(round(v)),
    )
    out = [
        _figure(
            tokens,
            len(reqs),
            "largest",
            "Input tokens per request: what the client sent (dashed), what ctx_lsp forwarded (solid) and what the "
            "provider counted (dotted).",
        )
    ]
    reported = sum(1 for r in reqs if r.cache_share is not None)
    if reported < 2:
        return out
    cache = line_chart(
        chart_id=f"s{n}-cache",
        kind="cache",
        title=f"Cache share per request, run {n}: {label}",
        desc=f"{len(reqs)} requests in order. For each: the share of its input the provider read from its prompt "
        "cache through ctx_lsp, and the share it would have read had the client's request gone direct.",
        x_label="request in the run (1 = first)",
        y_label="input read from cache (%)",
        series=[
            Series("direct", "direct (would have been cached)", [r.direct_cache_share for r in reqs], "dashed"),
            Series("forwarded", "through ctx_lsp (cache read / input)", [r.cache_share for r in reqs]),
        ],
        y_format=lambda v: f"{v:.0%}",
        y_max=1.0,
        combine=lambda vs: sum(vs) / len(vs),
    )
    unreported = len(reqs) - reported
    rebuilt = [r for r in reqs if r.prefix]
    out.append(
        _figure(
            cache,
            len(reqs),
            "mean",
            "Share of each request's input read from the provider's prompt cache: through ctx_lsp (solid) against "
            "sending the client's request direct (dashed)."
            + (f" {unreported} request(s) without a usage report are not drawn." if unreported else "")
            + (f" ctx_lsp rebuilt the cached prefix at {_rebuilt(rebuilt)}." if rebuilt else ""),
        )
    )
    return out


def _rebuilt(requests: list[RequestPoint], shown: int = 6) -> str:
    """Where and why ctx_lsp rebuilt the prefix: "request 41 (compaction step: …), …"."""
    named = ", ".join(f"request {r.n} ({r.prefix})" for r in requests[:shown])
    return named + (f" and {len(requests) - shown} more (the table lists them)" if len(requests) > shown else "")


def _figure(chart: Chart, requests: int, how: str, caption: str) -> str:
    if chart.bucket > 1:
        caption += (
            f" {requests:,} requests drawn as {chart.points:,} points (above {MAX_POINTS:,} a chart is thinned): each "
            f"point is the {how} of {chart.bucket} consecutive requests. The table lists every request."
        )
    else:
        caption += f" Every one of the {requests:,} requests is drawn."
    return f"<figure>{chart.svg}\n<figcaption>{caption}</figcaption></figure>"


REQUEST_HEAD = (
    "request",
    "time (UTC)",
    "model",
    "client sent",
    "forwarded",
    "provider input",
    "cache share",
    "direct cache share",
    "what ctx_lsp added",
    "prefix rebuilt",
    "the user's line",
)


def _requests_table(s: RunReport, open_: bool) -> str:
    """Every request of the run: its numbers, what ctx_lsp added to it (plan, items) or why
    nothing, and the user's line in it; side requests marked."""
    th = "".join(f'<th scope="col">{h}</th>' for h in REQUEST_HEAD)
    rows = []
    for r in s.requests:
        side = ' <small class="muted">side</small>' if r.side else ""
        asked = escape(r.title) if r.title else "—"
        cells = [
            f"{r.n}{side}",
            escape(_when(r.created)),
            escape(r.model),
            f"{r.direct:,}",
            f"{r.forwarded:,}",
            f"{r.billed:,}",
            _pct(r.cache_share),
            _pct(r.direct_cache_share),
        ]
        row = "".join(f"<td>{c}</td>" for c in cells)
        row += f'<td class="note" data-ctx="{escape(r.context)}">{escape(request_context(r))}</td>'
        row += f'<td class="note prefix">{escape(r.prefix) if r.prefix else "—"}</td>'
        row += f'<td class="note">{asked}</td>'
        rows.append(f'<tr class="request{" side" if r.side else ""}">{row}</tr>')
    n = len(s.requests)
    return (
        f"<details{' open' if open_ else ''}><summary>The requests ({n:,}): numbers, and what ctx_lsp added to each"
        "</summary>\n"
        f'<div class="wide"><table class="requests"><thead><tr>{th}</tr></thead><tbody>\n'
        + "\n".join(rows)
        + "\n</tbody></table></div></details>"
    )


def _how_counted() -> str:
    return (
        '<h2>How it is counted</h2><p class="notes">Cost through ctx_lsp: the provider\'s own counts (input, '
        "cache read, cache write, output) at the model's prices. Cost direct: the client's own requests, where "
        "what repeats its previous request is what the provider would have served from its cache — "
        "cache-weighted, never “tokens removed”. The same numbers as <code>ctx-lsp stats</code>.</p>"
    )


def _span(report: GatewayReport) -> str:
    times = [r.created for s in report.runs for r in s.requests]
    return f"{_when(min(times))} to {_when(max(times))}"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1%}"


def _quote(path: str) -> str:
    return path if path and all(c.isalnum() or c in "/._-" for c in path) else "'" + path.replace("'", "'\\''") + "'"
