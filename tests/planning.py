"""Builders for planner inputs, shared by the planner's unit and property tests."""

from __future__ import annotations

from ctx_lsp.core.conversation import build_turns, parse_messages
from ctx_lsp.core.items import (
    BudgetSpec,
    Conversation,
    EstimatorInfo,
    Item,
    PinnedItem,
    PinSpec,
    PlanInput,
    Range,
)
from ctx_lsp.core.tokens import counter_for

COUNTER = counter_for("cl100k_base")
EST = EstimatorInfo(encoding="cl100k_base", exact=True)


def item(id: str, tokens: int, section: str = "rag", **kw) -> Item:
    kw.setdefault("kind", "symbol_card")
    kw.setdefault("title", id)
    return Item(id=id, section=section, tokens=tokens, **kw)


def sym(name: str, tokens: int, score: float, path: str = "pkg/mod.py", line: int = 0, **kw) -> Item:
    return item(f"sym:{name}", tokens, score=score, symbol=name, path=path, range=Range.lines(line, line + 5), **kw)


def pinned(it: Item, pin_id: str, **kw) -> PinnedItem:
    return PinnedItem(PinSpec(pin_id=pin_id, **kw), it)


def conversation(messages: list[dict]) -> Conversation:
    return Conversation(turns=build_turns(parse_messages(messages), COUNTER))


def plan_input(
    context_length: int = 10_000,
    max_completion: int = 1_000,
    safety: int = 0,
    required: tuple[Item, ...] = (),
    pins: tuple[PinnedItem, ...] = (),
    candidates: tuple[Item, ...] = (),
    scaffold: tuple[Item, ...] = (),
    conv: Conversation | None = None,
    mode: str = "light",
    rag_budget: int | None = None,
    allowance: int | None = None,
) -> PlanInput:
    return PlanInput(
        model="test-model",
        budget=BudgetSpec(
            context_length=context_length,
            max_completion_tokens=max_completion,
            safety_buffer=safety,
            rag_budget=rag_budget,
        ),
        estimator=EST,
        mode=mode,
        required=required,
        pins=pins,
        scaffold=scaffold,
        conversation=conv or conversation([{"role": "user", "content": "what does f do?"}]),
        candidates=candidates,
        allowance=allowance,
    )
