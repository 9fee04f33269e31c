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
rebuilt there once, in one go. The plan lives in memory: after a restart the provider's cache
is cold anyway."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ctx_lsp.core.items import Mode
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
        return Placement(
            stable=self.stable,
            per_turn=per_turn,
            shown=placement.shown,
            latest_user_id=placement.latest_user_id,
            earlier=earlier,
        )
