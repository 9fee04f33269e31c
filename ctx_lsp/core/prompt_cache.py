"""The provider's prompt cache and the money of a conversation, in the words every face shows
(the editors' meters, ``ctx-lsp statusline``): whether the cache is still warm and until when,
what reading the cached prefix costs, and what ctx_lsp saved so far. Pure: the caller passes
the clock."""

from __future__ import annotations

from ctx_lsp.core.models import Prices
from ctx_lsp.core.savings import Totals

# The providers' default prompt-cache lifetime (Anthropic: 5 minutes, refreshed on each hit;
# OpenAI: 5–10 minutes of inactivity). The shorter one: a meter that says "warm" must be right.
CACHE_TTL_SECONDS = 300
# Anthropic's extended lifetime, asked for per breakpoint (``"cache_control": {"type":
# "ephemeral", "ttl": "1h"}``): a conversation marked so stays cached an hour after a request
LONG_CACHE_TTL_SECONDS = 3600


def warm_until(last_request: float | None, now: float, ttl: int = CACHE_TTL_SECONDS) -> float | None:
    """When the cache of a conversation whose latest request went upstream at ``last_request`` goes
    cold (epoch seconds; ``ttl`` the lifetime it asked for), or None when it is cold already or
    no request is known."""
    if last_request is None:
        return None
    until = last_request + ttl
    return until if until > now else None


def cache_label(last_request: float | None, now: float, ttl: int = CACHE_TTL_SECONDS) -> str:
    """``warm 4m12s``, ``cold``, or "" when no request is known: a snapshot, for one-shot output
    (a status bar counts down from ``warm_until`` instead)."""
    if last_request is None:
        return ""
    until = warm_until(last_request, now, ttl)
    if until is None:
        return "cold"
    left = until - now
    return f"warm {int(left // 60)}m{int(left % 60):02d}s"


def cache_read_price(prices: Prices | None) -> str:
    """What the provider charges for the prefix it serves from its cache, against fresh input:
    ``a tenth of the input price ($0.30 vs $3.00 per million tokens)``; "" without prices."""
    if prices is None or prices.input <= 0:
        return ""
    share = prices.cache_read / prices.input
    words = {0.1: "a tenth of", 0.25: "a quarter of", 0.5: "half"}.get(round(share, 3), f"{share:.0%} of")
    read, fresh = _per_million(prices.cache_read), _per_million(prices.input)
    return f"{words} the input price ({read} vs {fresh} per million tokens)"


def _per_million(x: float) -> str:
    """A list price: ``$2.50``, and the tenths of a cent small models have (``$0.075``)."""
    s = f"{x:,.3f}"
    return f"${s[:-1] if s.endswith('0') else s}"


def savings_label(t: Totals, with_share: bool = False) -> str:
    """``saved $1.20`` (``saved $1.20 (38%)`` with the share), or ``cost +$0.03`` when the
    requests cost more through ctx_lsp than direct; "" when no request had prices. Cache-weighted
    against sending the same requests direct (``core.savings``)."""
    if t.cost is None or not t.direct_cost:
        return ""
    saved = t.direct_cost - t.cost
    if saved < 0:
        return f"cost +{dollars(-saved)}"
    return f"saved {dollars(saved)}" + (f" ({saved / t.direct_cost:.0%})" if with_share else "")


def dollars(x: float) -> str:
    """``$1,234.50``; under a cent to a hundredth of one (``$0.0043``), where cents alone would
    say ``cost +$0.00`` after a conversation's first requests."""
    if 0.0001 <= abs(x) < 0.01:
        return f"${x:.4f}"
    return f"${x:,.2f}"
