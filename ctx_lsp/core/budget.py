"""Section budgets: shares of the prompt budget, with unused share flowing to sections that
still have demand (docs/budget.md), and the shares of a prompt sized around a client's own
(``ClientPrompt``). Pure arithmetic, so a budget is deterministic."""

from __future__ import annotations

import msgspec

from ctx_lsp.core.items import SECTIONS, Section, Shares

# of the room a client's system prompt and tools leave: a turn's block of retrieved code at most (it
# stays in the prompt until the next compaction step, so what it takes brings that step sooner)
TURN_BLOCK_SHARE = 0.05


class ClientPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt a client brings whole (the gateway: its system prompt, tools and conversation),
    in tokens as the planner counts them: the budget is sized around it (``client_shares``)."""

    system: int  # its system prompt and tools, and ctx_lsp's blocks it carries already: required
    conversation: int  # what its conversation needs in the conversation section (framing, summary)
    searches: bool  # this request asks retrieval (a new turn's question); else retrieval gets nothing


def client_shares(prompt_budget: int, shares: Shares, client: ClientPrompt, cap: int) -> tuple[Shares, int]:
    """The shares and the fixed rag budget of a prompt sized around ``client``'s: its system
    prompt is the system section, the conversation gets everything else, and retrieval only what
    the conversation leaves — at most its configured share, ``cap`` tokens, and a share of the
    room the system prompt leaves (``TURN_BLOCK_SHARE``). A request that fits goes out as sent."""
    prompt = max(1, prompt_budget)
    room = min(int(prompt * shares.rag), cap, int((prompt - client.system) * TURN_BLOCK_SHARE))
    rag = max(0, min(room, prompt - client.system - client.conversation)) if client.searches else 0
    system = min(1.0, client.system / prompt)
    return Shares(system, 1.0 - system, 0.0), rag


# Priority order of sections, used when floors (required items and pins) eat into the shares of
# other sections: retrieval gives way first, then conversation (the selection order, docs/budget.md).
GIVE_WAY_ORDER: tuple[Section, ...] = ("rag", "conversation", "system")


def allocate(
    available: int,
    floors: dict[Section, int],
    demands: dict[Section, int],
    shares: Shares,
    fixed: dict[Section, int] | None = None,
) -> dict[Section, int]:
    """Split ``available`` tokens between the sections.

    - A section never gets less than its floor (what it must hold: required items, pins).
    - Each section's target is its share, capped by its demand (no point reserving budget for
      nothing); floors above the share are taken from other sections in ``GIVE_WAY_ORDER``.
    - Whatever is left flows to sections whose demand is not yet met, in proportion to their
      shares (water-filling).
    - ``fixed`` pins a section's budget (``--rag-budget``); it neither gives nor receives.
    """
    fixed = fixed or {}
    alloc: dict[Section, int] = {}
    floating = [s for s in SECTIONS if s not in fixed]
    rest = available
    for s, amount in fixed.items():
        room = available - sum(floors[f] for f in floating)
        alloc[s] = max(floors[s], min(amount, max(0, room)))
        rest -= alloc[s]
    weight_total = sum(shares.of(s) for s in floating) or 1.0
    for s in floating:
        target = int(rest * shares.of(s) / weight_total)
        alloc[s] = max(floors[s], min(target, demands[s]))
    over = sum(alloc[s] for s in floating) - rest
    for s in GIVE_WAY_ORDER:
        if over <= 0:
            break
        if s in fixed:
            continue
        cut = min(over, alloc[s] - floors[s])
        alloc[s] -= cut
        over -= cut
    surplus = rest - sum(alloc[s] for s in floating)
    while surplus > 0:
        hungry = [s for s in floating if demands[s] > alloc[s]]
        if not hungry:
            break
        weights = sum(shares.of(s) for s in hungry) or 1.0
        given = 0
        for s in hungry:
            give = min(int(surplus * shares.of(s) / weights), demands[s] - alloc[s])
            alloc[s] += give
            given += give
        if given == 0:  # rounding left a few tokens: the first hungry section takes them
            s = hungry[0]
            give = min(surplus, demands[s] - alloc[s])
            alloc[s] += give
            given = give
        surplus -= given
    return alloc
