"""Promotion: retrieved symbols the model keeps using become leased pins; the most specific wins."""

from __future__ import annotations

from ctx_lsp.memory.reflection import PROMOTE_AT, PROMOTE_MIN_MODEL_MENTIONS, Activation, promotions


def test_the_most_specific_named_symbol_is_promoted_not_its_module() -> None:
    hot = Activation(score=PROMOTE_AT + 1, model=PROMOTE_MIN_MODEL_MENTIONS)
    scores = {"shop.pricing": hot, "shop.pricing.round_price": hot}
    retrieved = {"shop.pricing", "shop.pricing.round_price"}
    named = {"shop.pricing", "shop.pricing.round_price"}  # the path and the function's name
    assert [k for k, _ in promotions(scores, set(), set(), retrieved, named)] == ["shop.pricing.round_price"]
    # the module alone named: the module is promoted
    assert [k for k, _ in promotions(scores, set(), set(), retrieved, {"shop.pricing"})] == ["shop.pricing"]
