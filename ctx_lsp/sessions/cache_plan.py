"""The provider's cache is ours to keep (DESIGN §6): per gateway conversation, what ctx_lsp adds
to the prompt is frozen between compaction steps, so that between steps each request repeats the
one before byte for byte and appends.

- The stable block (scaffold, capsules, the compaction summary), right after the client's system
  prompt: as first sent in an epoch (the requests between two compaction steps, in one mode).
- The per-turn block (retrieval for the user's question): computed once, at a turn's first
  request, and sent ahead of that user message byte for byte through the whole agent loop — a
  tool result does not start a turn, a new user message does. When the next turn starts, the
  block stays where it was (removing it would rewrite everything the agent did since): it goes
  at the next compaction step, with the history it sits in.

A compaction step (the store's count of compactions changes) starts a new epoch: the prefix is
rebuilt there once, in one go. A request that would have to change the frozen prefix anyway (an
old tool result masked, a message shed, a stable block that no longer fits) is not sent that
way: it takes a step instead (``CachePlan.holds``). When a step is taken and how far down it goes
is the money's call (``step_sizes``). The plan lives in memory: after a restart the provider's
cache is cold anyway."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ctx_lsp.core.items import Mode
from ctx_lsp.core.models import Prices
from ctx_lsp.core.render import Placement

Epoch = tuple[int, Mode]  # (compaction steps so far, mode)


@dataclass(slots=True)
class CachePlan:
    epoch: Epoch
    stable: str | None = None  # the stable block as first sent in this epoch
    # what the user changed that the stable block shows (pins, capsules' code): a change of it is
    # theirs to see at once, and changes the block there
    inputs: str = ""
    blocks: dict[str, str] = field(default_factory=dict)  # user message id → its per-turn block ("" none)
    sent: dict[str, str] = field(default_factory=dict)  # message id → its text as last sent in this epoch

    def turn_block(self, user_id: str | None) -> str | None:
        """The per-turn block the turn of ``user_id`` was given (None: its first request)."""
        return self.blocks.get(user_id) if user_id is not None else None

    def carried(self, ids: set[str]) -> dict[str, str]:
        """The blocks this conversation still holds (their user messages are in ``ids``)."""
        return {uid: text for uid, text in self.blocks.items() if text and uid in ids}

    def next_epoch(self, epoch: Epoch, user_id: str | None) -> CachePlan:
        """After a compaction step: earlier turns' blocks go with the history rebuilt; the current
        turn's stays (its agent loop goes on)."""
        kept = {user_id: self.blocks[user_id]} if user_id in self.blocks and user_id is not None else {}
        return CachePlan(epoch=epoch, blocks=kept)

    def holds(self, placement: Placement, ids: set[str], slack: int, count: Callable[[str], int]) -> str | None:
        """Whether ``placement`` only appends to what this epoch sent (None), or why not: a message
        the client still sends that went whole is masked or left out now, or the frozen stable
        block no longer fits the ``slack`` the plan leaves. Either rewrites the cached prefix from
        there on: that is a compaction step's to do, in one go."""
        for mid, text in self.sent.items():
            if mid not in ids:
                continue  # the client rewound or forked: its own change
            shown = placement.shown.get(mid)
            if shown is None:
                return "history shed"
            if shown.content != text:
                return "tool result masked"
        stable = placement.stable
        if self.stable is not None and stable != self.stable and count(self.stable) - count(stable) > slack:
            return "stable block does not fit"
        return None

    def lay(
        self, placement: Placement, user_id: str | None, slack: int, count: Callable[[str], int], inputs: str = ""
    ) -> Placement:
        """``placement`` (a plan laid over the conversation) with this epoch's frozen blocks: the
        turn's own block as first computed, earlier turns' where they were, the stable block as
        first sent — unless a different one is planned now and the frozen one would not fit the
        ``slack`` the plan leaves (tokens, counted with ``count``): then the prefix changes here,
        and the new one is frozen. Records what this request fixes for the rest of the epoch."""
        per_turn = self.turn_block(user_id)
        if per_turn is None:
            per_turn = placement.per_turn
            if user_id is not None:
                self.blocks[user_id] = per_turn
        earlier = {uid: t for uid, t in self.blocks.items() if t and uid != user_id and uid in placement.shown}
        stable = placement.stable
        changed = inputs != self.inputs
        if self.stable is None or changed or (stable != self.stable and count(self.stable) - count(stable) > slack):
            self.stable, self.inputs = stable, inputs
        self.sent = {mid: m.content for mid, m in placement.shown.items()}
        return Placement(
            stable=self.stable,
            per_turn=per_turn,
            shown=placement.shown,
            latest_user_id=placement.latest_user_id,
            earlier=earlier,
        )


# Step sizes chosen by the money. Between steps each request reads the frozen prefix at the
# cache-read price and writes only what it appends; a step writes the rebuilt prefix once (at the
# cache-write price, where a read would have done) and then every request reads less. Per request,
# over the cycle from one step to the next, with k the tokens a step keeps (the summary with it),
# C the conversation when the step is taken, g the tokens a request appends, r and w the read and
# write prices as shares of the input price:
#
#     cost(k, C) = r·(k + C)/2 + (w − r)·k·g/(C − k)
#
# It grows with k whatever C is: a step goes as deep as the kept-turn floor allows (KEEP_SHARE of
# the room). For that k it is least at C* = k + √(2·(w − r)·k·g / r): sooner, the step is not paid
# back; later, every request reads the history it could have shed. C* is bounded below by
# TRIGGER_FLOOR of the room (the model keeps a working history) and above by the threshold (the
# window). Anthropic (r 0.1, w 1.25), a 20k room, g 900: k 5k, C* 16.5k — against the threshold's
# 17k; a 150k room: k 37.5k, C* 65k rather than 127k. A step below the threshold is taken only
# when the requests still expected (as many again as the conversation has had) pay it back.
KEEP_SHARE = 0.25
DEFAULT_RATES = (0.1, 1.25)  # a model without known prices: read and write as Anthropic bills them
TRIGGER_FLOOR = 0.5


@dataclass(frozen=True, slots=True)
class StepSizes:
    trigger: int  # the conversation (tokens) at which a step is taken
    keep: int  # what a step keeps of the newest turns (tokens)
    limit: int  # the threshold: a step here whatever it costs (the window)


def step_sizes(room: int, threshold: float, growth: float, prices: Prices | None, summary: int = 0) -> StepSizes:
    """When to take a compaction step and how far down, for a conversation ``room`` (tokens),
    its ``threshold`` share, ``growth`` tokens appended per request and the model's ``prices``
    (None: none known — the threshold, cache prices as Anthropic's)."""
    keep = int(room * KEEP_SHARE)
    limit = int(room * threshold)
    r, w = _rates(prices)
    if r <= 0 or w <= r or growth <= 0:
        return StepSizes(trigger=limit, keep=keep, limit=limit)
    best = keep + summary + math.sqrt(2 * (w - r) * (keep + summary) * growth / r)
    return StepSizes(trigger=int(min(limit, max(room * TRIGGER_FLOOR, best))), keep=keep, limit=limit)


def step_pays(conversation: int, keep: int, remaining: float, prices: Prices | None) -> bool:
    """Whether a step now (``conversation`` tokens down to ``keep``) is paid back by the
    ``remaining`` requests expected: each reads the shed part at the read price; the step writes
    what it keeps once at the write price."""
    r, w = _rates(prices)
    return r * max(0, conversation - keep) * remaining >= max(0.0, w - r) * keep


def _rates(prices: Prices | None) -> tuple[float, float]:
    """The cache read and write prices as shares of the input price."""
    if prices is None or prices.input <= 0:
        return DEFAULT_RATES
    return prices.cache_read / prices.input, prices.cache_write / prices.input
