"""The gateway report's numbers: the requests grouped into runs (``core.runs``: an assistant's
conversation with its side requests folded in), each labelled with the assistant, model, the
user's first line and its start; each run's requests in order (what the client sent, what went
upstream, what the provider counted and served from its cache, what ctx_lsp added and why); the
totals of ``core.savings`` per run and overall; and the one-line verdict (``core.verdict``).
Pure: rows of ``gateway_requests`` and the models' prices in, a value out; the HTML page and
``ctx-lsp stats`` only show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ctx_lsp.core.models import Prices
from ctx_lsp.core.runs import Run, runs
from ctx_lsp.core.savings import Totals, totals
from ctx_lsp.core.verdict import verdict


class RequestPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One request through the gateway, as a chart plots it and a table lists it."""

    n: int  # 1 = the run's first request
    created: float  # seconds since the epoch
    model: str
    session: str  # the session it was recorded in
    side: bool  # a side request of its run (not the run's conversation)
    title: str  # the first line the user wrote in it (masked, trimmed); "" when unknown
    direct: int  # what the client sent (ctx_lsp's count)
    forwarded: int  # what ctx_lsp sent upstream (ctx_lsp's count)
    billed: int  # input tokens as the provider counted them; 0 without a usage report
    # cached / billed; None without a usage report (0 would read as "a cache miss")
    cache_share: float | None
    # of what the client sent, the share the provider would have cached sent direct
    direct_cache_share: float | None
    plan_id: str | None
    injected: int  # tokens of ctx_lsp's own blocks
    context_items: int  # items in them
    context: str  # why (``core.verdict``): "added", "cost", "off"…
    prefix: str = ""  # why the prefix the provider caches was rebuilt here ("": it appended)


class RunReport(msgspec.Struct, frozen=True, kw_only=True):
    session: str  # the session that is the run's conversation
    side_sessions: list[str]  # sessions folded into it as side requests (titles, quota checks, sub-agents)
    assistant: str  # "Claude Code 2.1.197"; "" when the client did not say
    title: str  # the first line the user wrote in the conversation; "" when unknown
    started: float
    requests: list[RequestPoint]  # in order, side requests included
    side_requests: int
    totals: Totals
    models: list[str]  # of the conversation, in order of first use
    side_models: list[str]  # of the side requests, those the conversation did not use
    unpriced: list[str]  # of all its models, those without prices: their requests count no money


class GatewayReport(msgspec.Struct, frozen=True, kw_only=True):
    runs: list[RunReport]  # in order of each run's first request
    total: Totals
    unpriced: list[str]
    verdict: str  # one line: runs, requests, cost against direct, cache, context added or why not


def build_report(rows: Iterable[Mapping[str, Any]], prices: Mapping[str, Prices | None]) -> GatewayReport:
    """Rows of ``gateway_requests`` in the order they were recorded, grouped into runs."""
    every = list(rows)
    made = [_run(run, prices) for run in runs(every)]
    total = totals(every, prices)
    return GatewayReport(
        runs=made,
        total=total,
        unpriced=[m for m in _models(every) if prices.get(m) is None],
        verdict=verdict(len(made), total),
    )


def _run(run: Run, prices: Mapping[str, Prices | None]) -> RunReport:
    own = [r for r in run.rows if r["session"] == run.conversation]
    models = _models(own)
    every = _models(run.rows)
    first = next((r.get("title") for r in own if r.get("title")), None)
    return RunReport(
        session=run.conversation,
        side_sessions=run.side,
        assistant=next((r.get("client") for r in run.rows if r.get("client")), ""),
        title=first or next((r.get("title") for r in run.rows if r.get("title")), ""),
        started=run.rows[0].get("created") or 0.0,
        requests=[_point(n, r, r["session"] != run.conversation) for n, r in enumerate(run.rows, 1)],
        side_requests=len(run.rows) - len(own),
        totals=totals(run.rows, prices),
        models=models,
        side_models=[m for m in every if m not in models],
        unpriced=[m for m in every if prices.get(m) is None],
    )


def _point(n: int, r: Mapping[str, Any], side: bool) -> RequestPoint:
    direct = r.get("client_tokens") or 0
    billed = r.get("input_tokens") or 0
    items = r.get("context_items") or 0
    why = r.get("context") or ("added" if r.get("injected") else "unrecorded")
    return RequestPoint(
        n=n,
        created=r.get("created") or 0.0,
        model=r.get("model") or "",
        session=r["session"],
        side=side,
        title=r.get("title") or "",
        direct=direct,
        forwarded=r.get("forwarded_tokens") or 0,
        billed=billed,
        cache_share=(r.get("cached_tokens") or 0) / billed if billed else None,
        direct_cache_share=min(1.0, (r.get("direct_cached") or 0) / direct) if direct else None,
        plan_id=r.get("plan_id"),
        injected=r.get("injected") or 0,
        context_items=items,
        context=why,
        prefix=r.get("prefix") or "",
    )


def _models(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["model"] for r in rows if r.get("model")))
