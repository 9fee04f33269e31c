"""The cache plan's rules (``sessions.cache_plan``, issue 32). Step sizes chosen by the money: a
compaction step goes as deep as the kept share allows, and is taken where the cycle from one step
to the next costs least per request — within the working history's floor and the window's
threshold. Between steps a request only appends, or it takes a step."""

from __future__ import annotations

import pytest

from ctx_lsp.core.items import Message
from ctx_lsp.core.models import Prices
from ctx_lsp.core.render import Placement
from ctx_lsp.gateway.status import GatewayRecord
from ctx_lsp.sessions.cache_plan import (
    CONTEXT_SHARE,
    KEEP_SHARE,
    TRIGGER_FLOOR,
    CachePlan,
    context_tokens,
    step_pays,
    step_sizes,
    turn_allowance,
    turn_start_trigger,
)

ANTHROPIC = Prices(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
OPENAI = Prices(input=1.25, output=10.0, cache_read=0.125, cache_write=1.25)
GROWTH = 900  # tokens a request appends (a tool call and its result)


def per_request(keep: int, at: int, prices: Prices) -> float:
    """What a request costs on average over one cycle (shares of the input price): the prefix
    read, and the step's rewrite of what it kept spread over the requests until the next."""
    r, w = prices.cache_read / prices.input, prices.cache_write / prices.input
    return r * (keep + at) / 2 + (w - r) * keep * GROWTH / (at - keep)


@pytest.mark.parametrize("prices", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_in_a_large_room_the_step_comes_where_a_cycle_costs_least(prices: Prices) -> None:
    s = step_sizes(150_000, 0.85, GROWTH, prices)
    assert s.keep == int(150_000 * KEEP_SHARE) and s.limit == int(150_000 * 0.85)
    assert 150_000 * TRIGGER_FLOOR <= s.trigger < s.limit  # sooner than the window forces
    grid = range(s.keep + 500, s.limit, 250)
    cheapest = min(grid, key=lambda at: per_request(s.keep, at, prices))
    assert abs(s.trigger - max(cheapest, 150_000 * TRIGGER_FLOOR)) <= 250
    # and it is cheaper than waiting for the threshold, as the rule promises
    assert per_request(s.keep, s.trigger, prices) < per_request(s.keep, s.limit, prices)


def test_a_small_room_or_unknown_growth_steps_at_the_threshold() -> None:
    small = step_sizes(14_000, 0.85, GROWTH, ANTHROPIC)
    assert small.trigger == small.limit  # the cheapest cycle lies beyond the window's limit
    assert step_sizes(150_000, 0.85, 0, ANTHROPIC).trigger == int(150_000 * 0.85)
    unknown = step_sizes(150_000, 0.85, GROWTH, None)  # no prices: Anthropic's shares
    assert unknown.trigger == step_sizes(150_000, 0.85, GROWTH, ANTHROPIC).trigger


def test_a_step_before_the_threshold_must_be_paid_back_by_the_requests_to_come() -> None:
    # 70k down to 37.5k: the write premium on 37.5k is 43k tokens' worth; each later request saves 3.25k
    assert not step_pays(70_000, 37_500, 5, ANTHROPIC)
    assert step_pays(70_000, 37_500, 20, ANTHROPIC)
    assert not step_pays(38_000, 37_500, 50, ANTHROPIC)  # almost nothing shed


def test_a_cold_cache_makes_a_step_free_so_it_comes_from_the_floor() -> None:
    """Idle past the provider's TTL the next request writes its whole prompt anyway: no write
    premium for the step, which is then taken from half the room rather than at the threshold."""
    warm, cold = step_sizes(14_000, 0.85, GROWTH, ANTHROPIC), step_sizes(14_000, 0.85, GROWTH, ANTHROPIC, cold=True)
    assert warm.trigger == warm.limit and cold.trigger == int(14_000 * TRIGGER_FLOOR) < warm.trigger
    assert cold.keep == warm.keep and cold.limit == warm.limit  # as deep, and the same window
    assert not step_pays(8_000, 3_500, 5, ANTHROPIC) and step_pays(8_000, 3_500, 5, ANTHROPIC, cold=True)
    assert not step_pays(3_000, 3_500, 50, ANTHROPIC, cold=True)  # nothing to shed


def _turn_cost(start: int, keep: int, turn: int, step_at: int | None, prices: Prices) -> float:
    """A turn of ``turn`` requests from a conversation of ``start`` tokens, each appending GROWTH,
    with a step (down to ``keep``) before request ``step_at``: what its requests cost (shares of the
    input price), every request reading what the one before sent and writing what it appends."""
    r, w = prices.cache_read / prices.input, prices.cache_write / prices.input
    size, cost = start, 0.0
    for n in range(turn):
        if n == step_at:
            size = keep
            cost += w * size  # the rebuilt prefix written once
        else:
            cost += r * size
        size += GROWTH
        cost += w * GROWTH
    return cost


@pytest.mark.parametrize("prices", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_a_turn_that_would_reach_the_step_size_is_cheaper_stepped_at_its_start(prices: Prices) -> None:
    s = step_sizes(14_000, 0.85, GROWTH, prices)
    turn = 10  # requests: 9k appended, most of the room
    at = turn_start_trigger(s, turn * GROWTH)
    assert s.keep <= at < s.trigger and turn_start_trigger(s, 0) == s.trigger
    start = at + 500  # a turn starts here: it would reach the step size in its loop
    mid = next(n for n in range(turn) if start + n * GROWTH >= s.trigger)
    # at its start a step keeps the new user message (and the summary); in the loop, the kept share
    first = _turn_cost(start, 600, turn, 0, prices)
    later = _turn_cost(start, s.keep, turn, mid, prices)
    assert first < later
    assert 600 + turn * GROWTH < s.limit  # and the turn then runs without another step


def test_a_turns_context_costs_a_share_of_what_its_requests_cost() -> None:
    """Priced over its life in the prompt — written once, read by each request it stays in —
    a turn's context costs at most CONTEXT_SHARE of what the turn's requests cost."""
    r, w = 0.1, 1.25
    n = context_tokens(4_000, 13, 15, ANTHROPIC)
    life = max(13, (15 + 13) / 2)
    assert n * (w + r * life) == pytest.approx(CONTEXT_SHARE * 13 * 4_000, rel=0.01)
    assert context_tokens(4_000, 13, 60, ANTHROPIC) < n  # a longer cycle: the block is read longer
    assert context_tokens(4_000, 13, None, ANTHROPIC) > n  # no step yet: its turn
    assert context_tokens(8_000, 13, 15, ANTHROPIC) == pytest.approx(2 * n, abs=1)  # dearer requests
    assert context_tokens(4_000, 13, 15, OPENAI) > n  # no write premium
    assert context_tokens(0, 13, 15, ANTHROPIC) == 0


def _placement(shown: dict[str, str], stable: str = "") -> Placement:
    return Placement(stable=stable, shown={i: Message(id=i, role="tool", content=t) for i, t in shown.items()})


def test_a_request_that_would_rewrite_what_the_epoch_sent_does_not_hold() -> None:
    """Between steps a request only appends: an old result masked, a message shed or a stable
    block that no longer fits is a step's to do (the gateway then takes one)."""
    count = len
    plan = CachePlan(epoch=(1, "light"))
    plan.lay(_placement({"a": "result a", "b": "result b"}, "stable"), None, 100, count)
    ids = {"a", "b", "c"}
    assert plan.holds(_placement({"a": "result a", "b": "result b", "c": "new"}, "stable"), ids, 0, count) is None
    assert plan.holds(_placement({"a": "[masked]", "b": "result b"}, "stable"), ids, 0, count) == "tool result masked"
    assert plan.holds(_placement({"b": "result b"}, "stable"), ids, 0, count) == "history shed"
    assert plan.holds(_placement({"b": "result b"}, "stable"), {"b"}, 0, count) is None  # the client rewound
    smaller = _placement({"a": "result a", "b": "result b"}, "st")  # the frozen block is 4 longer
    assert plan.holds(smaller, ids, 2, count) == "stable block does not fit"
    assert plan.holds(smaller, ids, 4, count) is None  # it still fits


def test_the_meter_says_when_a_request_rebuilt_the_prefix() -> None:
    rec = GatewayRecord(time=0.0, requests=41, input_tokens=20_000, cached_input_tokens=4_000)
    assert rec.label() == "⇄ 41 · 20% cached"
    rec.rebuilt = "compaction step, instead of: tool result masked"
    assert rec.label() == "⇄ 41 · 20% cached · prefix rebuilt: compaction step"  # why the share dropped
    assert "prefix rebuilt: compaction step, instead of: tool result masked" in rec.text_line()


def test_a_turns_share_pays_for_the_layout_it_carries_as_well_as_its_block() -> None:
    """The layout a step adds stays in every request until the next step: each turn's first
    request gets what it leaves of the turn's share, and the layout itself is never squeezed out;
    a request later in the turn keeps what the turn chose (its block, paid already)."""
    assert turn_allowance(1_200, 0, None) == 1_200  # a step now: the layout is chosen within the share
    assert turn_allowance(1_200, 500, None) == 1_200  # a later turn: 500 of it are the layout's, 700 the block's
    assert turn_allowance(400, 500, None) == 500  # the layout stays, the block gets nothing
    assert turn_allowance(1_200, 0, 800) == 2_000  # a step inside a turn: its block is kept, paid already


@pytest.mark.parametrize("prices", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_ctx_lsps_own_blocks_do_not_bring_a_step_forward_only_the_window_counts_them(prices: Prices) -> None:
    """The conversation's room is net of the blocks the gateway adds; the step is sized on the
    room without them, as in mode off, while the window's limit still counts them."""
    off = step_sizes(150_000, 0.85, GROWTH, prices)
    light = step_sizes(147_000, 0.85, GROWTH, prices, carried=3_000)
    assert (light.trigger, light.keep) == (off.trigger, off.keep)
    assert light.limit == int(147_000 * 0.85) < off.limit
    small = step_sizes(14_000, 0.85, GROWTH, prices, carried=3_000)
    assert small.trigger == small.limit == int(14_000 * 0.85)  # where the window binds, it decides
