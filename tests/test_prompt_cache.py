"""The prompt cache's and the savings' words, shared by the editors' meters and `ctx-lsp statusline`."""

from __future__ import annotations

from ctx_lsp.core.models import PRICES, Prices
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, cache_label, cache_read_price, savings_label, warm_until
from ctx_lsp.core.savings import Totals

NOW = 1_700_000_000.0


def test_warm_for_the_providers_ttl_after_the_latest_request() -> None:
    assert CACHE_TTL_SECONDS == 300
    assert warm_until(NOW - 48, NOW) == NOW - 48 + 300
    assert cache_label(NOW - 48, NOW) == "warm 4m12s"
    assert cache_label(NOW, NOW) == "warm 5m00s"
    assert cache_label(NOW - 299.5, NOW) == "warm 0m00s"  # still warm: half a second left


def test_cold_at_the_ttl_and_unknown_without_a_request() -> None:
    assert warm_until(NOW - 300, NOW) is None and cache_label(NOW - 300, NOW) == "cold"
    assert warm_until(NOW - 3600, NOW) is None and cache_label(NOW - 3600, NOW) == "cold"
    assert warm_until(None, NOW) is None and cache_label(None, NOW) == ""


def test_cache_read_price_in_words_and_dollars() -> None:
    assert cache_read_price(PRICES["gpt-4o"]) == "half the input price ($1.25 vs $2.50 per million tokens)"
    tenth = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert cache_read_price(tenth) == "a tenth of the input price ($0.30 vs $3.00 per million tokens)"
    quarter = Prices(input=2.0, output=8.0, cache_read=0.5, cache_write=2.0)
    assert cache_read_price(quarter).startswith("a quarter of the input price")
    odd = Prices(input=1.0, output=2.0, cache_read=0.4, cache_write=1.0)
    assert cache_read_price(odd).startswith("40% of the input price")
    mini = cache_read_price(PRICES["gpt-4o-mini"])
    assert mini == "half the input price ($0.075 vs $0.15 per million tokens)"
    assert cache_read_price(None) == ""
    assert cache_read_price(Prices(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)) == ""


def test_savings_cache_weighted_against_direct() -> None:
    assert savings_label(Totals(cost=0.80, direct_cost=2.00)) == "saved $1.20"
    assert savings_label(Totals(cost=0.80, direct_cost=2.00), with_share=True) == "saved $1.20 (60%)"
    assert savings_label(Totals(cost=0.13, direct_cost=0.10)) == "cost +$0.03"
    assert savings_label(Totals(cost=1234.5, direct_cost=2345.6)) == "saved $1,111.10"
    assert savings_label(Totals(cost=0.0143, direct_cost=0.01)) == "cost +$0.0043"  # not "cost +$0.00"
    assert savings_label(Totals(cost=0.1, direct_cost=0.10004)) == "saved $0.00"
    assert savings_label(Totals()) == ""  # no request with prices
    assert savings_label(Totals(cost=0.0, direct_cost=0.0)) == ""
