"""The pin TTL rule, in one place for the planner (which pins a plan may include) and the store
(what a finished turn does to them).

A pin with a TTL has ``ttl_remaining`` turns left; each finished turn takes one away. What
happens when it runs out is the pin's policy:

- ``automatic``: the pin is expired as soon as no turn is left (``ttl_remaining <= 0``);
- ``ask``: at 0 it gets one grace turn (still in the prompt; the user is asked to re-pin or
  drop it), and it expires the turn after;
- ``unlimited``: never expires, and its TTL does not tick.

A pin without a TTL (``ttl_remaining is None``) never expires either.
"""

from __future__ import annotations

from typing import Literal

from ctx_lsp.core.items import PinPolicy

PinState = Literal["live", "grace", "expired"]


def pin_state(policy: PinPolicy, ttl_remaining: int | None) -> PinState:
    """Whether a pin with ``ttl_remaining`` turns left is live, in its ``ask`` grace turn, or
    expired."""
    if policy == "unlimited" or ttl_remaining is None or ttl_remaining > 0:
        return "live"
    if policy == "ask" and ttl_remaining == 0:
        return "grace"
    return "expired"


def tick(policy: PinPolicy, ttl_remaining: int | None) -> tuple[int | None, PinState]:
    """A turn ended: the pin's turns left after it, and its state then."""
    if policy == "unlimited" or ttl_remaining is None:
        return ttl_remaining, "live"
    left = ttl_remaining - 1
    return left, pin_state(policy, left)
