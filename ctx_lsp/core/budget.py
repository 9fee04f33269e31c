"""Section budgets: shares of the prompt budget, with unused share flowing to sections that
still have demand (docs/budget.md). Pure integer arithmetic, so allocation is deterministic."""

from __future__ import annotations

from ctx_lsp.core.items import SECTIONS, Section, Shares

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
