"""The gateway report's numbers: each session's requests in order (what the client sent, what
went upstream, what the provider counted and served from its cache) and the totals of
``core.savings`` per session and overall. Pure: rows of ``gateway_requests`` and the models'
prices in, a value out; the HTML page and ``ctx-lsp stats`` only show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ctx_lsp.core.models import Prices
from ctx_lsp.core.savings import Totals, totals


class RequestPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One request through the gateway, as a chart plots it."""

    n: int  # 1 = the session's first request
    created: float  # seconds since the epoch
    model: str
    direct: int  # what the client sent (ctx_lsp's count)
    forwarded: int  # what ctx_lsp sent upstream (ctx_lsp's count)
    billed: int  # input tokens as the provider counted them; 0 without a usage report
    # cached / billed; None without a usage report (0 would read as "a cache miss")
    cache_share: float | None
    # of what the client sent, the share the provider would have cached sent direct
    direct_cache_share: float | None


class SessionReport(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    requests: list[RequestPoint]
    totals: Totals
    models: list[str]  # in order of first use
    unpriced: list[str]  # of ``models``, those without prices: their requests count no money


class GatewayReport(msgspec.Struct, frozen=True, kw_only=True):
    sessions: list[SessionReport]  # in order of each session's first request
    total: Totals
    unpriced: list[str]


def build_report(rows: Iterable[Mapping[str, Any]], prices: Mapping[str, Prices | None]) -> GatewayReport:
    """Rows of ``gateway_requests`` in the order they were recorded, grouped by session."""
    by_session: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_session.setdefault(r["session"], []).append(r)
    sessions = [_session(name, rs, prices) for name, rs in by_session.items()]
    every = [r for rs in by_session.values() for r in rs]
    models = _models(every)
    return GatewayReport(
        sessions=sessions,
        total=totals(every, prices),
        unpriced=[m for m in models if prices.get(m) is None],
    )


def _session(name: str, rows: list[Mapping[str, Any]], prices: Mapping[str, Prices | None]) -> SessionReport:
    models = _models(rows)
    return SessionReport(
        session=name,
        requests=[_point(n, r) for n, r in enumerate(rows, 1)],
        totals=totals(rows, prices),
        models=models,
        unpriced=[m for m in models if prices.get(m) is None],
    )


def _point(n: int, r: Mapping[str, Any]) -> RequestPoint:
    direct = r.get("client_tokens") or 0
    billed = r.get("input_tokens") or 0
    return RequestPoint(
        n=n,
        created=r.get("created") or 0.0,
        model=r.get("model") or "",
        direct=direct,
        forwarded=r.get("forwarded_tokens") or 0,
        billed=billed,
        cache_share=(r.get("cached_tokens") or 0) / billed if billed else None,
        direct_cache_share=min(1.0, (r.get("direct_cached") or 0) / direct) if direct else None,
    )


def _models(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["model"] for r in rows if r.get("model")))
