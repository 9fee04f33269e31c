"""Property-based tests: the planner's invariants (DESIGN.md §7) over random inputs."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from ctx_lsp.core.items import ContextOverflow
from ctx_lsp.core.planner import FRAMING_TOKENS, plan
from ctx_lsp.core.render import render
from tests.planning import COUNTER, conversation, item, pinned, plan_input, sym

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "parse", "token", "budget", "x" * 40])


@st.composite
def messages(draw):
    out: list[dict] = []
    n_turns = draw(st.integers(1, 6))
    call = 0
    for t in range(n_turns):
        out.append({"role": "user", "content": " ".join(draw(st.lists(words, min_size=1, max_size=80)))})
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{call + k}" for k in range(draw(st.integers(1, 2)))]
            call += len(ids)
            out.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "run", "arguments": "{}"}} for i in ids
                    ],
                }
            )
            for i in ids:
                size = draw(st.integers(1, 400))
                out.append({"role": "tool", "tool_call_id": i, "content": "out " * size})
        if t < n_turns - 1 or draw(st.booleans()):
            out.append({"role": "assistant", "content": " ".join(draw(st.lists(words, max_size=60)))})
    return out


@st.composite
def inputs(draw):
    n = draw(st.integers(0, 40))
    candidates = tuple(
        sym(
            f"pkg.m{i % 5}.f{i}",
            draw(st.integers(1, 800)),
            score=draw(st.floats(0, 20, allow_nan=False)),
            path=f"pkg/m{i % 5}.py",
            line=i * 7,
            stale=draw(st.booleans()) and i % 9 == 0,
        )
        for i in range(n)
    )
    pins = tuple(
        pinned(
            sym(f"pkg.p{i}", draw(st.integers(1, 1500)), score=0, path=f"pkg/p{i}.py"),
            f"pin{i}",
            kind=draw(st.sampled_from(["sticky", "leased", "ephemeral"])),
            policy=draw(st.sampled_from(["automatic", "ask", "unlimited"])),
            ttl_remaining=draw(st.one_of(st.none(), st.integers(-2, 5))),
            priority=draw(st.integers(0, 3)),
            seq=i,
        )
        for i in range(draw(st.integers(0, 6)))
    )
    scaffold = tuple(item(f"scaf{i}", draw(st.integers(1, 300)), section="system", kind="scaffold") for i in range(2))
    required = (item("sys", draw(st.integers(1, 1500)), section="system", kind="system_prompt"),)
    return plan_input(
        context_length=draw(st.integers(2_000, 30_000)),
        max_completion=draw(st.integers(0, 1_500)),
        safety=draw(st.integers(0, 300)),
        required=required,
        pins=pins,
        candidates=candidates,
        scaffold=scaffold,
        conv=conversation(draw(messages())),
        mode=draw(st.sampled_from(["off", "light", "heavy"])),
        rag_budget=draw(st.one_of(st.none(), st.integers(0, 5_000))),
    )


def _required_tokens(inp, available: int) -> int:
    last = inp.conversation.turns[-1].atoms
    latest_user = [a for a in last if a.messages[0].role == "user"][-1]
    pending = [a for t in inp.conversation.turns for a in t.atoms if a.pending]
    total = sum(i.tokens for i in inp.required) + latest_user.tokens + sum(a.tokens for a in pending)
    for a in pending:  # a pending exchange too large to fit is required with its results masked
        if total > available and a.masked_tokens is not None and a.masked_tokens < a.tokens:
            total -= a.tokens - a.masked_tokens
    return total


@settings(max_examples=250, deadline=None)
@given(inputs())
def test_invariants(inp):
    available = inp.budget.prompt_budget - FRAMING_TOKENS
    required = _required_tokens(inp, available)
    try:
        result = plan(inp)
    except ContextOverflow as err:
        assert required > available
        assert err.over_by == required + FRAMING_TOKENS - inp.budget.prompt_budget
        return
    assert required <= available
    p = result.plan
    # never over the prompt budget, nor a section over its budget
    assert p.totals.tokens <= p.prompt_budget
    assert sum(s.budget for s in p.sections) <= available
    for s in p.sections:
        assert s.used <= s.budget, s
    if inp.budget.rag_budget is not None:
        assert next(s for s in p.sections if s.name == "rag").used <= inp.budget.rag_budget
    # the latest user message is always included
    assert any(i.reason == "latest_user" for i in p.included)
    # every input item is explained exactly once
    all_ids = (
        [i.id for i in inp.required]
        + [x.item.id for x in inp.pins]
        + [i.id for i in inp.scaffold]
        + [i.id for i in inp.candidates]
        + [a.id for t in inp.conversation.turns for a in t.atoms]
    )
    explained = [i.id for i in (*p.included, *p.excluded)]
    assert sorted(explained) == sorted(all_ids)
    # atoms are never split: every tool call in the prompt has its result, and vice versa
    rendered = render(result, "openai", COUNTER)
    calls = {t["id"] for m in rendered.messages for t in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in rendered.messages if m["role"] == "tool"}
    assert calls == results
    # deterministic: same inputs, same bytes
    assert msgspec.json.encode(plan(inp).plan) == msgspec.json.encode(p)
    # retrieved items are whole: an included item is charged its full (or masked) tokens
    tokens = {i.id: i.tokens for i in inp.candidates}
    for i in p.included:
        if i.section == "rag":
            assert i.tokens == tokens[i.id]
