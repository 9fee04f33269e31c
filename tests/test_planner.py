"""The planner's rules (DESIGN.md §3), one test per rule."""

from __future__ import annotations

import msgspec
import pytest

from ctx_lsp.core.items import ContextOverflow, Item, Range
from ctx_lsp.core.planner import FRAMING_TOKENS, InvalidBudget, plan, select_retrieved
from tests.planning import conversation, item, pinned, plan_input, sym

SYSTEM = item("sys", 100, section="system", kind="system_prompt")


def reasons(result) -> dict[str, str]:
    p = result.plan
    return {i.id: i.reason for i in (*p.included, *p.excluded)}


def test_budget_formula_and_default_shares():
    result = plan(plan_input(context_length=10_000, max_completion=1_000, safety=500))
    p = result.plan
    assert p.prompt_budget == 8_500
    budgets = {s.name: s.budget for s in p.sections}
    # no demand: each section keeps what it must hold
    assert budgets["rag"] == 0
    assert sum(budgets.values()) <= p.prompt_budget - FRAMING_TOKENS


def test_shares_are_15_55_30_when_every_section_has_demand():
    many = tuple(sym(f"s{i}", 50, score=1.0, line=i * 10) for i in range(500))
    scaffold = tuple(item(f"scaf{i}", 50, section="system", kind="scaffold") for i in range(100))
    msgs = []
    for i in range(200):
        msgs += [
            {"role": "user", "content": f"question {i} " * 30},
            {"role": "assistant", "content": "answer " * 40},
        ]
    result = plan(plan_input(candidates=many, scaffold=scaffold, conv=conversation(msgs)))
    budgets = {s.name: s.budget for s in result.plan.sections}
    available = result.plan.prompt_budget - FRAMING_TOKENS
    # shares of the available budget; whole items leave a few tokens that flow on (< one item)
    for name, share in (("system", 0.15), ("conversation", 0.55), ("rag", 0.30)):
        assert abs(budgets[name] - available * share) < 50, name
    assert sum(budgets.values()) <= available


def test_unused_share_flows_to_sections_with_demand():
    # no conversation history and no scaffold: retrieval may use the conversation's share
    many = tuple(sym(f"s{i}", 100, score=100 - i, line=i * 10) for i in range(200))
    result = plan(plan_input(candidates=many))
    rag = next(s for s in result.plan.sections if s.name == "rag")
    assert rag.used > int((result.plan.prompt_budget - FRAMING_TOKENS) * 0.30)
    assert result.plan.totals.tokens <= result.plan.prompt_budget


def test_rag_budget_is_fixed_when_given():
    many = tuple(sym(f"s{i}", 100, score=100 - i, line=i * 10) for i in range(200))
    result = plan(plan_input(candidates=many, rag_budget=1_000))
    rag = next(s for s in result.plan.sections if s.name == "rag")
    assert rag.budget == 1_000
    assert rag.used <= 1_000
    assert rag.count == 10


def test_an_allowance_caps_the_automatic_context_scaffold_first_and_says_it_was_the_cost():
    """The gateway pays for automatic context from its savings: the scaffold (the stable part)
    takes the allowance first, retrieval what it leaves; what the allowance keeps out is
    excluded for its cost, not for the budget, although the budget had room."""
    scaffold = (item("scaffold", 300, section="system", kind="scaffold"),)
    many = tuple(sym(f"s{i}", 100, score=100 - i, line=i * 10) for i in range(20))
    free = plan(plan_input(candidates=many, scaffold=scaffold, rag_budget=3_000))
    assert reasons(free)["scaffold"] == "scaffold"
    assert sum(r == "relevant" for r in reasons(free).values()) == 20

    capped = plan(plan_input(candidates=many, scaffold=scaffold, rag_budget=3_000, allowance=750))
    r = reasons(capped)
    assert r["scaffold"] == "scaffold"
    assert [k for k, v in r.items() if v == "relevant"] == ["sym:s0", "sym:s1", "sym:s2", "sym:s3"]
    assert {v for k, v in r.items() if k.startswith("sym:s") and v != "relevant"} == {"cost"}
    out = next(i for i in capped.plan.excluded if i.id == "sym:s4")
    assert "paid from what the gateway saved" in out.detail and "750 tokens" in out.detail

    nothing = reasons(plan(plan_input(candidates=many, scaffold=scaffold, rag_budget=3_000, allowance=0)))
    assert nothing["scaffold"] == "cost" and "relevant" not in nothing.values()
    assert plan(plan_input(candidates=many, allowance=0)).plan.plan_id != plan(plan_input(candidates=many)).plan.plan_id


def test_required_always_included_and_overflow_raises():
    big = item("sys", 9_500, section="system", kind="system_prompt", title="system prompt")
    with pytest.raises(ContextOverflow) as err:
        plan(plan_input(context_length=10_000, max_completion=1_000, required=(big,)))
    assert err.value.over_by > 0
    assert "system prompt" in str(err.value)
    assert "over" in str(err.value)


def test_non_positive_budget_is_rejected():
    with pytest.raises(InvalidBudget, match="must be positive"):
        plan(plan_input(context_length=1_000, max_completion=1_000))


def test_latest_user_message_is_always_in():
    conv = conversation(
        [
            {"role": "user", "content": "old " * 2000},
            {"role": "assistant", "content": "reply " * 2000},
            {"role": "user", "content": "the latest question"},
        ]
    )
    result = plan(plan_input(context_length=3_000, max_completion=500, conv=conv))
    by_reason = reasons(result)
    assert "latest_user" in by_reason.values()
    latest = next(i for i in result.plan.included if i.reason == "latest_user")
    assert "latest question" in latest.title
    # the older turn does not fit and is dropped whole
    assert sorted(r for r in by_reason.values() if r == "budget") == ["budget", "budget"]


def test_ttl_policies():
    a = sym("a.f", 50, score=0)
    b = sym("b.f", 50, score=0)
    c = sym("c.f", 50, score=0)
    d = sym("d.f", 50, score=0)
    pins = (
        pinned(a, "p-auto", kind="leased", ttl_remaining=0, policy="automatic"),
        pinned(b, "p-ask", kind="leased", ttl_remaining=0, policy="ask"),
        pinned(c, "p-ask-late", kind="leased", ttl_remaining=-1, policy="ask"),
        pinned(d, "p-unl", kind="leased", ttl_remaining=-5, policy="unlimited"),
    )
    r = reasons(plan(plan_input(pins=pins)))
    assert r["sym:a.f"] == "ttl_expired"
    assert r["sym:b.f"] == "pinned"  # one more turn under `ask`
    assert r["sym:c.f"] == "ttl_expired"
    assert r["sym:d.f"] == "pinned"


def test_pins_sticky_first_then_priority_then_newest_and_lowest_dropped():
    pins = (
        pinned(sym("low", 3_000, score=0, path="a.py"), "p1", kind="leased", priority=0, seq=1),
        pinned(sym("high", 3_000, score=0, path="b.py"), "p2", kind="leased", priority=5, seq=2),
        pinned(sym("sticky", 3_000, score=0, path="c.py"), "p3", kind="sticky", priority=0, seq=3),
    )
    r = reasons(plan(plan_input(context_length=8_000, max_completion=500, pins=pins)))
    assert r["sym:sticky"] == "pinned"
    assert r["sym:high"] == "pinned"
    assert r["sym:low"] == "budget"


def test_retrieved_item_covered_by_pin_is_duplicate():
    cls = sym("pkg.mod.Invoice", 200, score=0, line=0)
    method = sym("pkg.mod.Invoice.total", 50, score=9.0, line=2)
    other = sym("pkg.mod.other", 50, score=1.0, line=40)
    nested = sym("pkg.mod.Invoice.Line.amount", 50, score=2.0, path="elsewhere.py", line=40)  # by name alone
    lookalike = sym("pkg.mod.InvoiceLine", 50, score=3.0, line=60)  # a longer name, not inside it
    candidates = (method, other, nested, lookalike)
    r = reasons(plan(plan_input(pins=(pinned(cls, "p"),), candidates=candidates)))
    assert r["sym:pkg.mod.Invoice.total"] == r["sym:pkg.mod.Invoice.Line.amount"] == "duplicate"
    assert r["sym:pkg.mod.other"] == r["sym:pkg.mod.InvoiceLine"] == "relevant"


def test_retrieval_whole_items_by_score_never_truncated():
    cands = (
        sym("best", 600, score=3.0),
        sym("mid", 500, score=2.0, line=10),
        sym("small", 100, score=1.0, line=20),
    )
    result = plan(plan_input(candidates=cands, rag_budget=700))
    r = reasons(result)
    assert r == {**r, "sym:best": "relevant", "sym:mid": "budget", "sym:small": "relevant"}
    for it in result.plan.included:
        if it.id == "sym:best":
            assert it.tokens == 600


def code(name: str, kind: str, tokens: int, score: float, lines: tuple[int, int], path: str = "pkg/mod.py") -> Item:
    """A retrieved form of symbol ``name``: its card or its body, over ``lines``."""
    return item(f"{kind}:{name}", tokens, kind=kind, score=score, symbol=name, path=path, range=Range.lines(*lines))


def test_light_mode_packs_the_best_bodies_then_cards_then_upgrades():
    # four symbols, each offered as a card (20 tokens) and a body
    sizes = {"a": 300, "b": 300, "c": 100, "d": 700}
    cands = []
    for n, (name, body) in enumerate(sizes.items()):
        score = 5.0 - n
        cands += [code(name, "symbol_card", 20, score, (n * 50, n * 50 + 40))]
        cands += [code(name, "symbol_body", body, score, (n * 50, n * 50 + 40))]
    result = plan(plan_input(candidates=tuple(cands), rag_budget=1000, mode="light"))
    r = reasons(result)
    packed = {i.symbol: i.kind for i in result.plan.included if i.section == "rag"}
    # depth: the best hit's code; breadth: every symbol in one form; upgrades: bodies while room is left
    assert packed["a"] == "symbol_body" and set(packed) == {"a", "b", "c", "d"}
    assert sum(k == "symbol_body" for k in packed.values()) == 3
    assert r["symbol_card:d"] == "relevant" and r["symbol_body:d"] == "budget"
    assert all(r[f"symbol_card:{s}"] == "duplicate" for s in "abc")  # one form per symbol
    used = next(s.used for s in result.plan.sections if s.name == "rag")
    assert 1000 - used < sizes["d"] - 20  # the room left is less than the one upgrade left


def test_heavy_mode_keeps_room_for_cards_and_shows_a_long_body_whole():
    # twelve symbols in twelve files, each offered as a card (100 tokens) and a body (300)
    cands = []
    for n in range(12):
        lines, path = (0, 40), f"pkg/m{n}.py"
        cands += [code(f"x{n}", "symbol_card", 100, 9.0 - n / 2, lines, path)]
        cands += [code(f"x{n}", "symbol_body", 300, 9.0 - n / 2, lines, path)]
    small = plan(plan_input(candidates=tuple(cands), rag_budget=2000, mode="heavy"))
    packed = {i.symbol: i.kind for i in small.plan.included if i.section == "rag"}
    # DEPTH_SHARE: the bodies take at most 70% of the room, so every file still gets a card
    # (with 85% of the room for bodies, five bodies would leave room for five cards: ten files);
    # four bodies from the depth pass, the eight other files' cards in the 800 tokens left
    assert len(packed) == 12
    assert [s for s, k in packed.items() if k == "symbol_body"] == ["x0", "x1", "x2", "x3"]
    # DEPTH_ITEM_SHARE: a body of 60% of the room is shown whole in heavy mode (up to the depth
    # share, 70%); light mode caps one body at half the room and shows it as a card — unless it
    # is the best hit's, which may fill the depth share in either mode
    kinds: dict[tuple[str, float], dict[str, str]] = {}
    for score in (8.7, 20.0):  # the second hit, then the best
        big = (
            code("big", "symbol_card", 30, score, (0, 200), "pkg/big.py"),
            code("big", "symbol_body", 2400, score, (0, 200), "pkg/big.py"),
        )
        for mode in ("heavy", "light"):
            roomy = plan(plan_input(candidates=(*big, *cands), rag_budget=4000, mode=mode))
            kinds[mode, score] = {i.symbol: i.kind for i in roomy.plan.included if i.section == "rag"}
    assert kinds["heavy", 8.7]["big"] == "symbol_body" and kinds["light", 8.7]["big"] == "symbol_card"
    assert kinds["heavy", 20.0]["big"] == kinds["light", 20.0]["big"] == "symbol_body"
    assert all(len(k) == 13 for k in kinds.values())  # each with a card for every file


def test_the_best_hits_body_may_take_the_reserve_for_cards():
    # in a 2k room the depth pass keeps 1,000 tokens for cards; the best hit's 1,300-token body
    # goes in whole, and the second hit's body, which would fit, does not take its place
    cands = [code("best", "symbol_card", 120, 9.0, (0, 90)), code("best", "symbol_body", 1300, 9.0, (0, 90))]
    cands += [code("next", "symbol_card", 100, 8.0, (100, 140)), code("next", "symbol_body", 500, 8.0, (100, 140))]
    cands += [code(f"f{n}", "symbol_card", 100, 5.0 - n, (0, 9), f"pkg/f{n}.py") for n in range(4)]
    result = plan(plan_input(candidates=tuple(cands), rag_budget=2000, mode="light"))
    packed = {i.symbol: i.kind for i in result.plan.included if i.section == "rag"}
    assert packed["best"] == "symbol_body" and packed["next"] == "symbol_card"
    assert {"f0", "f1", "f2", "f3"} <= packed.keys()  # the room left is for cards


def test_a_small_room_shows_thin_cards_and_gives_what_they_free_to_depth():
    # eight symbols in eight files: a card (100 tokens), its thin form (30) and a body (600)
    def forms(n: int) -> list[Item]:
        lines, path, score = (0, 40), f"pkg/m{n}.py", 9.0 - n
        thin = msgspec.structs.replace(code(f"x{n}", "symbol_card", 30, score, lines, path), id=f"head:x{n}")
        body = code(f"x{n}", "symbol_body", 600, score, lines, path)
        return [code(f"x{n}", "symbol_card", 100, score, lines, path), thin, body]

    cands = tuple(i for n in range(8) for i in forms(n))
    small = plan(plan_input(candidates=cands, rag_budget=2000, mode="light"))
    packed = {i.symbol: i.id for i in small.plan.included if i.section == "rag"}
    # two bodies in depth, five thin cards, and the room they leave holds a third body (whole
    # cards left it 200 tokens: two bodies); every other file by its thin card, not its whole one
    assert [s for s, i in packed.items() if i.startswith("symbol_body")] == ["x0", "x1", "x2"]
    assert len(packed) == 8 and all(packed[f"x{n}"] == f"head:x{n}" for n in range(3, 8))
    whole = {i.id: i for i in small.plan.excluded}["symbol_card:x5"]
    assert whole.reason == "duplicate" and "cards are thin in a room of 2000 tokens" in (whole.detail or "")
    # a roomy plan shows whole cards and does not list the thin ones
    roomy = plan(plan_input(candidates=cands, rag_budget=6000, mode="light"))
    listed = [i.id for i in (*roomy.plan.included, *roomy.plan.excluded) if i.section == "rag"]
    assert not any(i.startswith("head:") for i in listed) and "symbol_card:x7" in listed
    # without thin forms a small room packs as before
    before = plan(plan_input(candidates=tuple(i for i in cands if not i.id.startswith("head:")), rag_budget=2000))
    bodies = [i.symbol for i in before.plan.included if i.kind == "symbol_body"]
    assert bodies == ["x0", "x1"]


def test_spread_a_card_of_a_file_not_shown_yet_takes_the_place_of_a_shown_files_last_card():
    # one file's ten cards fill the room; the eleventh hit is in another file
    cands = [code(f"a{n}", "symbol_card", 100, 9.0 - n / 10, (n * 20, n * 20 + 9), "pkg/a.py") for n in range(9)]
    cands += [code("solo", "symbol_card", 100, 8.0, (0, 9), "pkg/solo.py")]  # its file's only item
    cands += [code("lead", "symbol_body", 90, 9.5, (500, 509), "pkg/b.py")]  # bodies never give way
    cands += [code("b1", "symbol_card", 60, 9.4, (520, 529), "pkg/b.py")]
    cands += [code("other", "symbol_card", 100, 1.0, (0, 9), "pkg/other.py")]
    cands += [code("nope", "symbol_card", 300, 0.5, (0, 9), "pkg/nope.py")]  # no one card frees its room
    result = plan(plan_input(candidates=tuple(cands), rag_budget=1150, mode="light"))
    r = reasons(result)
    # the lowest-ranked card of a file that keeps another item gave way: a8 (not solo, not a body)
    assert r["symbol_card:other"] == "relevant" and r["symbol_card:a8"] == "budget"
    assert r["symbol_body:lead"] == r["symbol_card:solo"] == r["symbol_card:b1"] == "relevant"
    assert r["symbol_card:nope"] == "budget"
    details = {i.id: i.detail or "" for i in result.plan.excluded}
    assert details["symbol_card:a8"].startswith("gave its room to symbol_card:other: a file not shown yet")
    assert {i.path for i in result.plan.included if i.section == "rag"} == {
        "pkg/a.py",
        "pkg/solo.py",
        "pkg/b.py",
        "pkg/other.py",
    }


def test_no_item_is_packed_inside_another():
    # a class body holding two methods, each retrieved as a body, and a third method's card
    cls = code("C", "symbol_body", 400, 3.0, (0, 50))
    m1 = code("C.m1", "symbol_body", 80, 5.0, (2, 10))
    m2 = code("C.m2", "symbol_body", 80, 4.0, (12, 20))
    m3 = code("C.m3", "symbol_card", 10, 2.0, (22, 30))
    other = code("f", "symbol_body", 50, 1.0, (0, 9), path="pkg/other.py")
    # (2,500 tokens: the depth pass, which packs bodies first, has room after the cards' reserve)
    roomy = plan(plan_input(candidates=(cls, m1, m2, m3, other), rag_budget=2500, mode="heavy"))
    r = reasons(roomy)
    # the class fits in the room its methods free: it replaces them, and says so
    assert r["symbol_body:C"] == "relevant" and r["symbol_body:f"] == "relevant"
    assert r["symbol_body:C.m1"] == r["symbol_body:C.m2"] == r["symbol_card:C.m3"] == "duplicate"
    details = {i.id: i.detail or "" for i in (*roomy.plan.included, *roomy.plan.excluded)}
    assert "replaces symbol_body:C.m1, symbol_body:C.m2" in details["symbol_body:C"]
    assert details["symbol_body:C.m1"] == "inside symbol_body:C, included instead"
    assert details["symbol_card:C.m3"] == "inside symbol_body:C, already included"
    # a tight budget keeps the methods (the better hits) and leaves the class out
    tight = reasons(plan(plan_input(candidates=(cls, m1, m2, m3), rag_budget=300, mode="heavy")))
    assert tight["symbol_body:C.m1"] == tight["symbol_body:C.m2"] == tight["symbol_card:C.m3"] == "relevant"
    assert tight["symbol_body:C"] == "budget"


def test_a_spread_never_takes_the_place_of_a_files_best_ranked_item():
    # the best hit's body does not fit, its card does, and two lesser bodies of its file follow:
    # pkg/c.py's card would fit only in the room of the best hit's card, which stays
    cands = [code("best", "symbol_card", 150, 9.9, (0, 99), "pkg/a.py")]
    cands += [code("best", "symbol_body", 2000, 9.9, (0, 99), "pkg/a.py")]
    cands += [code(f"a{n}", "symbol_body", 200, 9.0 - n, (200 + n * 20, 209 + n * 20), "pkg/a.py") for n in range(2)]
    cands += [code("a2", "symbol_card", 40, 6.0, (300, 309), "pkg/a.py")]
    cands += [code("b", "symbol_card", 200, 5.0, (0, 9), "pkg/b.py")]
    cands += [code("c", "symbol_card", 260, 4.0, (0, 9), "pkg/c.py")]
    r = reasons(plan(plan_input(candidates=tuple(cands), rag_budget=1000, mode="light")))
    assert r["symbol_card:best"] == r["symbol_body:a0"] == r["symbol_body:a1"] == r["symbol_card:a2"] == "relevant"
    assert r["symbol_card:b"] == "relevant" and r["symbol_card:c"] == "budget"


def test_the_room_a_spread_frees_is_used():
    # five cards of one file fill the room; another file's 40-token card takes the place of the
    # last (100 tokens), and the 60 tokens it frees take the next card that fits
    cands = [code(f"a{n}", "symbol_card", 100, 9.0 - n / 10, (n * 20, n * 20 + 9), "pkg/a.py") for n in range(5)]
    cands += [code("other", "symbol_card", 40, 1.0, (0, 9), "pkg/other.py")]
    cands += [code("a5", "symbol_card", 50, 0.9, (200, 209), "pkg/a.py")]
    r = reasons(plan(plan_input(candidates=tuple(cands), rag_budget=500, mode="light")))
    assert r["symbol_card:other"] == r["symbol_card:a5"] == "relevant"
    assert r["symbol_card:a4"] == "budget"  # the card that gave way does not come back


def test_mode_off_and_stale():
    cands = (sym("a", 10, score=1.0), sym("b", 10, score=2.0, line=10, stale=True))
    assert set(reasons(plan(plan_input(candidates=cands, mode="off"))).values()) >= {"mode_off"}
    r = reasons(plan(plan_input(candidates=cands)))
    assert r["sym:b"] == "stale" and r["sym:a"] == "relevant"


def test_tool_call_and_results_are_one_atom():
    conv = conversation(
        [
            {"role": "user", "content": "run the tests"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "pytest", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "ruff", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3 passed"},
            {"role": "tool", "tool_call_id": "c2", "content": "All checks passed"},
            {"role": "assistant", "content": "All green."},
            {"role": "user", "content": "thanks"},
        ]
    )
    atoms = [a for t in conv.turns for a in t.atoms]
    assert [len(a.messages) for a in atoms] == [1, 3, 1, 1]
    result = plan(plan_input(conv=conv))
    assert sum(1 for i in result.plan.included if i.kind == "tool_episode") == 1


def test_current_turn_masks_then_drops_oldest_tool_exchanges():
    msgs = [{"role": "user", "content": "fix the bug"}]
    for k in range(4):
        msgs.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k} " * 600})
    result = plan(plan_input(context_length=4_000, max_completion=500, conv=conversation(msgs)))
    inc = [i for i in result.plan.included if i.kind == "tool_episode"]
    masked = [i for i in inc if i.detail and "masked" in i.detail]
    assert masked, "oldest tool results are masked before atoms are dropped"
    # the newest exchange is pending (the model answers it next) and stays whole
    assert inc[-1].reason == "required" and not (inc[-1].detail and "masked" in inc[-1].detail)
    assert any(i.reason == "latest_user" for i in result.plan.included)
    assert result.plan.totals.tokens <= result.plan.prompt_budget


def test_identical_inputs_give_identical_bytes_and_id():
    cands = tuple(sym(f"s{i}", 30 + i, score=float(i % 7), line=i * 10) for i in range(50))
    a = plan(plan_input(candidates=cands))
    b = plan(plan_input(candidates=cands))
    assert a.plan.plan_id == b.plan.plan_id
    assert msgspec.json.encode(a.plan) == msgspec.json.encode(b.plan)
    c = plan(plan_input(candidates=cands, rag_budget=100))
    assert c.plan.plan_id != a.plan.plan_id


def test_plan_json_is_camel_case_with_every_item_field():
    result = plan(plan_input(candidates=(sym("pkg.f", 20, score=1.0),)))
    data = msgspec.to_builtins(result.plan)
    assert {
        "planId",
        "promptBudget",
        "sections",
        "included",
        "excluded",
        "totals",
        "estimator",
    } <= data.keys()
    rag = next(i for i in data["included"] if i["section"] == "rag")
    assert {
        "id",
        "section",
        "kind",
        "title",
        "path",
        "range",
        "symbol",
        "tokens",
        "priority",
        "score",
        "reason",
    } <= (rag.keys())
    assert rag["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}


def test_retrieval_alone_under_a_budget_keeps_whole_items_best_first_one_form_each():
    body = sym("big", 300, score=9.0)
    card = msgspec.structs.replace(sym("big", 40, score=4.5), id="card:big")  # the same symbol, cheaper
    small = sym("small", 50, score=5.0, line=40)
    twice = sym("small", 50, score=5.0, line=40)  # listed twice by retrieval
    tail = sym("tail", 120, score=1.0, line=80)
    included, excluded = select_retrieved((tail, card, small, body, twice), 200)
    assert [i.id for i in included] == [small.id, card.id]  # the body does not fit: its card does
    # the body that does not fit is out as a duplicate: its card holds the symbol (one form each)
    assert dict((i.id, r) for i, r in excluded) == {body.id: "duplicate", tail.id: "budget", twice.id: "duplicate"}
    assert select_retrieved((body,), 0) == ([], [(body, "budget")])


def test_breadth_shows_the_code_of_a_short_symbol_whose_card_is_nearly_its_body():
    def forms(name: str, card_tokens: int, body_tokens: int, score: float, line: int) -> tuple[Item, Item]:
        card = sym(name, card_tokens, score=score, line=line)
        body = msgspec.structs.replace(sym(name, body_tokens, score=score, line=line), id=f"body:{name}")
        return card, msgspec.structs.replace(body, kind="symbol_body")

    lead_card, lead_body = forms("lead", 200, 2_000, 9.0, 0)  # its body does not fit: in as its card
    short_card, short_body = forms("short", 100, 135, 5.0, 40)  # body 1.35× the card, 35 more
    long_card, long_body = forms("long", 100, 400, 4.0, 80)  # a card that saves 300 tokens
    tail = sym("tail", 35, score=1.0, line=120)  # the last card: the short body's few tokens more
    pool = (lead_card, lead_body, short_card, short_body, long_card, long_body, tail)
    included, _ = select_retrieved(pool, 435, mode="light")  # no room for depth: all is breadth
    ids = [i.id for i in included]
    assert short_body.id in ids and short_card.id not in ids and tail.id not in ids
    assert long_card.id in ids and long_body.id not in ids
    assert lead_card.id in ids and lead_body.id not in ids
