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


def step_sizes(
    room: int,
    threshold: float,
    growth: float,
    prices: Prices | None,
    summary: int = 0,
    cold: bool = False,
    carried: int = 0,
) -> StepSizes:
    """When to take a compaction step and how far down, for a conversation ``room`` (tokens),
    its ``threshold`` share, ``growth`` tokens appended per request and the model's ``prices``
    (None: none known — the threshold, cache prices as Anthropic's). ``cold``: the provider's
    cache of the conversation has expired (idle past its TTL): the next request writes its whole
    prompt anyway, a step's rewrite costs nothing extra, so it is taken from the floor on.

    ``carried``: tokens of ctx_lsp's own blocks in the prompt, which ``room`` is net of. The step
    is sized on the room without them — the one mode off has — and only the window's limit
    counts them: otherwise each turn's block brings every step forward a little, and over a
    long session the default mode takes a step more than mode off (measured: 11 against 10 in
    200 Codex-shaped requests, a third of what the default mode cost more)."""
    own = room + max(0, carried)
    keep = int(own * KEEP_SHARE)
    limit = int(room * threshold)
    if cold:
        return StepSizes(trigger=min(limit, int(own * TRIGGER_FLOOR)), keep=keep, limit=limit)
    r, w = _rates(prices)
    if r <= 0 or w <= r or growth <= 0:
        return StepSizes(trigger=limit, keep=keep, limit=limit)
    best = keep + summary + math.sqrt(2 * (w - r) * (keep + summary) * growth / r)
    return StepSizes(trigger=int(min(limit, max(own * TRIGGER_FLOOR, best))), keep=keep, limit=limit)


def turn_start_trigger(sizes: StepSizes, turn_growth: float) -> int:
    """The step size at a user turn's first request: a turn expected to grow by ``turn_growth``
    tokens that would reach ``sizes.trigger`` anyway steps at its start, once there is more than
    the kept share to shed. There a step keeps the new user message and the newest whole turns
    that fit the kept share — the turns it sheds a step inside the loop would shed too — not the
    last quarter of a running agent loop: the cheapest rewrite, and the loop then runs without a
    step in its middle."""
    if turn_growth <= 0:
        return sizes.trigger
    return min(sizes.trigger, max(sizes.keep, int(sizes.trigger - turn_growth)))


def step_pays(conversation: int, keep: int, remaining: float, prices: Prices | None, cold: bool = False) -> bool:
    """Whether a step now (``conversation`` tokens down to ``keep``) is paid back by the
    ``remaining`` requests expected: each reads the shed part at the read price; the step writes
    what it keeps once at the write price — where a read would have done, unless the cache is
    ``cold`` (the next request writes its whole prompt anyway: a step then costs nothing extra)."""
    r, w = _rates(prices)
    premium = 0.0 if cold else max(0.0, w - r) * keep
    return conversation > keep and r * (conversation - keep) * remaining >= premium


# The context a turn adds, chosen by the money. A turn's block (retrieved code) is written once and
# read by every request it stays in: the turn's own requests, and after the turn until the next
# compaction step (removing it sooner would rewrite everything after it). Per token, with r and w
# the read and write prices as shares of the input price:
#
#     w + r·life,  life = max(turn, (cycle + turn)/2)
#
# with turn the requests of a user turn and cycle the requests from one step to the next (no step
# yet: the turn): a step comes at a turn's start when the turn would reach it anyway
# (``turn_start_trigger``), so a block lives at least its turn, and on average until the middle of
# the cycle after it. The automatic context of a turn (its block, and the layout a step adds again)
# costs at most CONTEXT_SHARE of what the turn's requests cost: the default mode then costs about
# that much more than mode off, whatever the conversation has saved. Claude Code's shape in a 48k
# window (a request about 4k tokens' worth, 13 requests a turn, a step every 15): about 1,000
# tokens. Before this rule a turn's block took a twentieth of the room (700 tokens there, 1,500 for
# Codex's shape) whatever it cost, and light cost 8–11% more than off at 200 turns. The layout a
# step adds stays in every request until the next step: it counts in each turn's share, not only
# in the first turn's after the step (``turn_allowance``; before, the Rust tree's layout, ~500
# tokens, rode free in later turns, and light cost 11% more than off in Codex's shape, 4.4% now).
CONTEXT_SHARE = 0.05


def context_tokens(request_cost: float, turn: float, cycle: float | None, prices: Prices | None) -> int:
    """The most tokens a user turn's automatic context may take: ``request_cost`` is what a request
    of this conversation costs on average (tokens at the full input price, cache reads and writes
    weighed), ``turn`` its requests per user turn, ``cycle`` its requests per compaction step (None:
    no step yet)."""
    r, w = _rates(prices)
    turn = max(1.0, turn)
    life = max(turn, (cycle + turn) / 2) if cycle else turn
    return int(CONTEXT_SHARE * turn * max(0.0, request_cost) / (w + r * life))


def turn_allowance(context: int, scaffold: int, kept_block: int | None) -> int:
    """Tokens the automatic context of a request may take, given ``context`` for a turn
    (``context_tokens``, or what the conversation saved), the ``scaffold`` it carries since the
    last step (tokens; 0 when the step is now: the layout is chosen again, within ``context``), and
    the turn's block when kept (``kept_block`` tokens: a request after the turn's first, paid
    already; None: the turn's first request). A turn's first request gets what the layout it
    carries leaves of ``context``; the layout itself stays, whatever is left."""
    if kept_block is None:
        return max(context, scaffold)  # the planner takes the layout first (``planner._allowances``)
    return context + scaffold + kept_block


def _rates(prices: Prices | None) -> tuple[float, float]:
    """The cache read and write prices as shares of the input price."""
    if prices is None or prices.input <= 0:
        return DEFAULT_RATES
    return prices.cache_read / prices.input, prices.cache_write / prices.input
