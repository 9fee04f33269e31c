"""The gateway report as one self-contained HTML page (``ctx-lsp report --html`` and the gateway's
``GET /ctx/report``): per session, input tokens per request (direct vs forwarded vs the provider's
count) and the cache share per request, each chart with its numbers in a table; a totals table per
session and overall. Nothing loads from anywhere (a Content-Security-Policy says so to the
browser); every string from the store is escaped."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from pathlib import PurePath

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.report import GatewayReport, SessionReport
from ctx_lsp.core.savings import Totals
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
svg .grid { stroke: var(--grid); stroke-width: 1; } svg .axis { stroke: var(--muted); stroke-width: 1; }
svg text { fill: var(--fg); font-size: 12px; } svg .tick { fill: var(--muted); font-size: 11px; }
svg .line { fill: none; stroke-width: 1.8; stroke-linejoin: round; }
svg .dot { stroke: none; }
svg .s-direct { stroke: var(--direct); } svg .dot.s-direct { fill: var(--direct); }
svg .s-forwarded { stroke: var(--forwarded); } svg .dot.s-forwarded { fill: var(--forwarded); }
svg .s-billed { stroke: var(--billed); } svg .dot.s-billed { fill: var(--billed); }
details { margin-top: 0.4rem; } details table, table.totals { font-size: 13px; }
table.totals th:first-child { white-space: normal; overflow-wrap: anywhere; min-width: 9rem; max-width: 18rem; }
table.totals thead th { white-space: normal; vertical-align: bottom; min-width: 3.5rem; }
table.totals th, table.totals td { padding: 0.25rem 0.45rem; }
td.note { white-space: normal; min-width: 6rem; text-align: left; color: var(--muted); }
figure svg.chart, figure figcaption { max-width: 64rem; }
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
    if not report.sessions:
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
    t = report.total
    body = [
        "<h1>Gateway report</h1>",
        f'<p class="sub">workspace <code>{escape(workspace)}</code> · {t.requests:,} requests in '
        f"{len(report.sessions):,} session{'s' if len(report.sessions) != 1 else ''} · {_span(report)}</p>",
        "<h2>Totals</h2>",
        _totals_table(report),
        *_notes(report),
    ]
    for n, s in enumerate(report.sessions, 1):
        body.extend(_session(n, s))
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
        f'<th scope="col">session</th>{head}'
        '<th scope="col" title="cache read / provider input">cache share</th>'
        '<th scope="col" title="the share of the client\'s input the provider would have cached sent direct">'
        "direct cache share</th>"
        '<th scope="col" title="US dollars at the model\'s prices, cache reads and writes included">'
        "cost through ctx_lsp</th>"
        '<th scope="col" title="the same requests sent direct, cache-weighted">cost direct</th>'
        '<th scope="col" title="cost through ctx_lsp / cost direct: below 1 is cheaper">ratio</th>'
        "</tr></thead><tbody>",
    ]
    for n, s in enumerate(report.sessions, 1):
        name = f'<a href="#s{n}"><code>{escape(s.session)}</code></a>'
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


# ---- one session -------------------------------------------------------------------------------


def _session(n: int, s: SessionReport) -> list[str]:
    reqs = s.requests
    models = ", ".join(s.models) or "unknown"
    t = s.totals
    summary = (
        f"{t.requests:,} requests · model {escape(models)} · {_when(reqs[0].created)} to {_when(reqs[-1].created)}"
        f" · client sent {format_tokens(t.client_tokens)}, forwarded {format_tokens(t.forwarded_tokens)}"
    )
    tokens = line_chart(
        chart_id=f"s{n}-tokens",
        kind="tokens",
        title=f"Input tokens per request, session {s.session}",
        desc=f"{len(reqs)} requests in order. For each: the input tokens the client sent (what going direct "
        "sends), what ctx_lsp forwarded, and the provider's own count of the input.",
        x_label="request in the session (1 = first)",
        y_label="input tokens per request",
        series=[
            Series("direct", "direct: what the client sent", [r.direct for r in reqs], "dashed"),
            Series("forwarded", "forwarded by ctx_lsp", [r.forwarded for r in reqs]),
            Series("billed", "provider's count", [r.billed or None for r in reqs], "dotted"),
        ],
        y_format=lambda v: format_tokens(round(v)),
    )
    cache = line_chart(
        chart_id=f"s{n}-cache",
        kind="cache",
        title=f"Cache share per request, session {s.session}",
        desc=f"{len(reqs)} requests in order. For each: the share of its input the provider read from its prompt "
        "cache through ctx_lsp, and the share it would have read had the client's request gone direct.",
        x_label="request in the session (1 = first)",
        y_label="input read from cache (%)",
        series=[
            Series("direct", "direct (would have been cached)", [r.direct_cache_share for r in reqs], "dashed"),
            Series("forwarded", "through ctx_lsp (cache read / input)", [r.cache_share for r in reqs]),
        ],
        y_format=lambda v: f"{v:.0%}",
        y_max=1.0,
        combine=lambda vs: sum(vs) / len(vs),
    )
    unreported = sum(1 for r in reqs if r.cache_share is None)
    token_rows = [
        [str(r.n), _when(r.created), escape(r.model), f"{r.direct:,}", f"{r.forwarded:,}", f"{r.billed:,}"]
        for r in reqs
    ]
    cache_rows = [
        [str(r.n), _pct(r.direct_cache_share), _pct(r.cache_share), f"{r.billed:,}", f"{r.direct:,}"] for r in reqs
    ]
    return [
        f'<section class="session" id="s{n}">',
        f"<h2>Session <code>{escape(s.session)}</code></h2>",
        f'<p class="sub">{summary}</p>',
        _figure(
            tokens,
            len(reqs),
            "largest",
            "Input tokens per request: what the client sent (dashed), what ctx_lsp forwarded (solid) and what the "
            "provider counted (dotted).",
            ["request", "time (UTC)", "model", "client sent", "forwarded", "provider input"],
            token_rows,
        ),
        _figure(
            cache,
            len(reqs),
            "mean",
            "Share of each request's input read from the provider's prompt cache: through ctx_lsp (solid) against "
            "sending the client's request direct (dashed)."
            + (f" {unreported} request(s) without a usage report are not drawn." if unreported else ""),
            ["request", "direct cache share", "cache share through ctx_lsp", "provider input", "client sent"],
            cache_rows,
        ),
        "</section>",
    ]


def _figure(chart: Chart, requests: int, how: str, caption: str, head: list[str], rows: list[list[str]]) -> str:
    if chart.bucket > 1:
        caption += (
            f" {requests:,} requests drawn as {chart.points:,} points (above {MAX_POINTS:,} a chart is thinned): each "
            f"point is the {how} of {chart.bucket} consecutive requests. The table lists every request."
        )
    else:
        caption += f" Every one of the {requests:,} requests is drawn."
    th = "".join(f'<th scope="col">{h}</th>' for h in head)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f"<figure>{chart.svg}\n<figcaption>{caption}</figcaption>\n"
        f"<details><summary>The numbers ({requests:,} requests)</summary>\n"
        f'<div class="wide"><table><thead><tr>{th}</tr></thead><tbody>\n{body}\n</tbody></table></div>'
        "</details></figure>"
    )


def _how_counted() -> str:
    return (
        '<h2>How it is counted</h2><p class="notes">Cost through ctx_lsp: the provider\'s own counts (input, '
        "cache read, cache write, output) at the model's prices. Cost direct: the client's own requests, where "
        "what repeats its previous request is what the provider would have served from its cache — "
        "cache-weighted, never “tokens removed”. The same numbers as <code>ctx-lsp stats</code>.</p>"
    )


def _span(report: GatewayReport) -> str:
    times = [r.created for s in report.sessions for r in s.requests]
    return f"{_when(min(times))} to {_when(max(times))}"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1%}"


def _quote(path: str) -> str:
    return path if path and all(c.isalnum() or c in "/._-" for c in path) else "'" + path.replace("'", "'\\''") + "'"
