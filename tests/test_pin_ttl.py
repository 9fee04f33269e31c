"""The pin TTL rule (ctx_lsp.core.pins): ticks, grace and expiry by policy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctx_lsp.core.pins import pin_state, tick

policies = st.sampled_from(["automatic", "ask", "unlimited"])
ttls = st.one_of(st.none(), st.integers(-3, 50))


def states_until_expired(policy: str, ttl: int, turns: int) -> list[str]:
    out = []
    for _ in range(turns):
        ttl, state = tick(policy, ttl)  # type: ignore[arg-type]
        out.append(state)
    return out


def test_automatic_expires_when_no_turn_is_left():
    assert states_until_expired("automatic", 2, 3) == ["live", "expired", "expired"]
    assert pin_state("automatic", 0) == "expired"


def test_ask_gets_one_grace_turn_then_expires():
    assert states_until_expired("ask", 2, 4) == ["live", "grace", "expired", "expired"]
    assert pin_state("ask", 0) == "grace" and pin_state("ask", -1) == "expired"


def test_unlimited_and_no_ttl_never_tick():
    assert tick("unlimited", 1) == (1, "live")
    assert tick("automatic", None) == (None, "live")
    assert tick("ask", None) == (None, "live")


@given(policies, ttls)
def test_a_tick_takes_one_turn_away_unless_the_pin_never_expires(policy, ttl):
    left, state = tick(policy, ttl)
    if policy == "unlimited" or ttl is None:
        assert (left, state) == (ttl, "live")
    else:
        assert left == ttl - 1 and state == pin_state(policy, left)


@given(policies, st.integers(1, 50), st.integers(0, 60))
def test_a_pin_with_n_turns_is_live_for_n_minus_one_ticks_and_only_ask_has_a_grace_turn(policy, n, turns):
    states = states_until_expired(policy, n, turns)
    if policy == "unlimited":
        assert set(states) <= {"live"}
        return
    expected = ["live"] * (n - 1) + (["grace"] if policy == "ask" else []) + ["expired"] * turns
    assert states == expected[:turns]


@given(policies, ttls, st.integers(1, 10))
def test_expired_stays_expired(policy, ttl, turns):
    state = pin_state(policy, ttl)
    for _ in range(turns):
        ttl, after = tick(policy, ttl)
        if state == "expired":
            assert after == "expired"
        state = after
