"""Savings you can trust: the input cost of requests through the gateway, as the provider
reported it (cache reads and writes included), against the same requests sent direct — where
the provider would have served from its cache what repeats the client's previous request. Never
"tokens removed": a rewrite that defeats the cache can remove tokens and still cost more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ctx_lsp.core.models import Prices


class Totals(msgspec.Struct, kw_only=True):
    requests: int = 0
    client_tokens: int = 0  # what the client's requests held
    forwarded_tokens: int = 0  # what went upstream (our count)
    input_tokens: int = 0  # what the provider counted
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    direct_cached: int = 0  # of client_tokens, what the provider would have cached sent direct
    shed: int = 0
    masked: int = 0
    shrunk: int = 0
    injected: int = 0
    context_added: int = 0  # requests ctx_lsp added context to
    unchanged: int = 0  # requests forwarded as the client sent them
    # of the requests without added context, how many for each reason (``core.verdict``)
    no_context: dict[str, int] = msgspec.field(default_factory=dict)
    cost: float | None = None  # through ctx_lsp, US dollars (None: a model without prices)
    direct_cost: float | None = None  # the same requests sent direct

    @property
    def cache_share(self) -> float:
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def direct_cache_share(self) -> float:
        """The share of the client's own input the provider would have served from its cache."""
        return self.direct_cached / self.client_tokens if self.client_tokens else 0.0

    @property
    def ratio(self) -> float | None:
        if self.cost is None or not self.direct_cost:
            return None
        return self.cost / self.direct_cost


def totals(rows: Iterable[Mapping[str, Any]], prices: Mapping[str, Prices | None]) -> Totals:
    """Rows of ``gateway_requests`` summed; money counted for the rows whose model has prices."""
    t = Totals()
    priced = False
    cost = direct = 0.0
    for r in rows:
        t.requests += 1
        for field in (
            "client_tokens",
            "forwarded_tokens",
            "input_tokens",
            "cached_tokens",
            "cache_write_tokens",
            "output_tokens",
            "direct_cached",
            "shed",
            "masked",
            "shrunk",
            "injected",
        ):
            setattr(t, field, getattr(t, field) + (r.get(field) or 0))
        t.unchanged += 1 if r.get("as_sent") else 0
        if r.get("context_items") or (r.get("context") is None and r.get("injected")):  # or an earlier version's
            t.context_added += 1
        else:
            why = r.get("context") or "unrecorded"
            t.no_context[why] = t.no_context.get(why, 0) + 1
        p = prices.get(r.get("model") or "")
        if p is None or not r.get("input_tokens"):
            continue
        priced = True
        inp, read, write, out = (
            r["input_tokens"],
            r["cached_tokens"] or 0,
            r["cache_write_tokens"] or 0,
            r["output_tokens"] or 0,
        )
        cost += p.cost(inp - read - write, read, write, out)
        if r.get("as_sent"):  # the provider got the client's own prompt: sent direct, it costs the same
            direct += p.cost(inp - read - write, read, write, out)
            continue
        # direct: the client's own tokens, scaled to the provider's count of ours; what repeats its
        # previous request read from the cache, the rest written to it when the provider charges writes
        scale = inp / r["forwarded_tokens"] if r.get("forwarded_tokens") else 1.0
        d_in = round((r.get("client_tokens") or 0) * scale)
        d_read = min(d_in, round((r.get("direct_cached") or 0) * scale))
        d_write = d_in - d_read if write else 0
        direct += p.cost(d_in - d_read - d_write, d_read, d_write, out)
    if priced:
        t.cost, t.direct_cost = round(cost, 6), round(direct, 6)
    return t


# A model without prices is weighed with the providers' usual ratios: cache reads at a tenth of
# the input price, cache writes at 1.25× (Anthropic's premium; the dearer case)
RELATIVE_PRICES = Prices(input=1.0, output=0.0, cache_read=0.1, cache_write=1.25)


def saved_tokens(rows: Iterable[Mapping[str, Any]], prices: Mapping[str, Prices | None], model: str) -> int:
    """What the gateway has saved a conversation so far, in tokens of ``model`` at its full input
    price: the same requests sent direct minus through ctx_lsp, cache-weighted (negative when it
    cost more). Output costs the same both ways and cancels out."""
    weighed = {name: p or RELATIVE_PRICES for name, p in prices.items()}
    rows = [r for r in rows if r.get("model") in weighed]
    t = totals(rows, weighed)
    if t.cost is None or t.direct_cost is None:
        return 0
    unit = (weighed.get(model) or RELATIVE_PRICES).input / 1e6
    return int((t.direct_cost - t.cost) / unit)
