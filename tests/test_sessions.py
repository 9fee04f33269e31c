"""The sessions engine without a server: what-if pins agree with real ones, capsules are counted
like every other item, re-plans repeat the stored request (also one stored by an earlier version)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ctx_lsp.core.items import ContextPlan
from ctx_lsp.core.tokens import TokenCounter, scaled
from ctx_lsp.engine import BudgetOverrides, Engine, Focus, PlanRequest, ResolvedModel, UserError
from ctx_lsp.sessions import NotFound, PinIntent, SessionEngine, SessionPlanRequest
from tests.workspaces import copy_sample

QUERY = "how is the invoice total calculated with tax?"
SYMBOL = "shop.billing.invoice.tax_for"


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionEngine]:
    core = SessionEngine(Engine(copy_sample(tmp_path_factory.mktemp("sessions") / "ws")))
    core.engine.refresh_index()
    yield core
    core.close()


@contextmanager
def indexed(tmp_path: Path, files: dict[str, str]) -> Iterator[SessionEngine]:
    """A sessions engine on a workspace of ``files`` (path → text), indexed, its graph built."""
    root = tmp_path / "ws"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    core = SessionEngine(Engine(root))
    try:
        core.engine.refresh_index()
        core.engine.index.update_graph()
        yield core
    finally:
        core.close()


def plan(core: SessionEngine, session: str, **kw) -> ContextPlan:
    return core.plan(SessionPlanRequest(session=session, request=PlanRequest(query=QUERY), **kw)).result.plan


@pytest.mark.parametrize("ttl", [2, 0])
def test_a_what_if_sticky_pin_keeps_its_ttl_like_the_real_pin(core: SessionEngine, ttl: int):
    session = f"what-if-{ttl}"
    intent = PinIntent(symbol=SYMBOL, kind="sticky", ttl=ttl)

    def pinned(p) -> tuple[str, str | None]:
        item = next(i for i in (*p.included, *p.excluded) if i.symbol == SYMBOL and i.pin_id)
        return item.reason, item.detail

    what_if = pinned(plan(core, session, dry_run=True, extra_pins=[intent]))
    assert not core.pins(session)
    core.pin(session, intent)
    assert pinned(plan(core, session)) == what_if
    assert f"ttl {ttl}" in (what_if[1] or "")
    assert what_if[0] == ("pinned" if ttl else "ttl_expired")


class CharCounter(TokenCounter):
    """A counter unlike cl100k_base: one token per character."""

    def measure(self, text: str) -> tuple[int, bool]:
        return len(text), True


def test_capsules_are_counted_with_the_model_counter(core: SessionEngine, monkeypatch):
    core.refresh_capsules(["shop/billing/invoice.py"])
    resolve = core.engine.resolve_model
    counter = CharCounter()

    def with_char_counter(name: str | None) -> ResolvedModel:
        model = resolve(name)
        return ResolvedModel(spec=model.spec, known=model.known, estimator=model.estimator, counter=counter)

    monkeypatch.setattr(core.engine, "resolve_model", with_char_counter)
    out = core.plan(SessionPlanRequest(session="capsules", request=PlanRequest(query=QUERY), dry_run=True))
    capsules = [i for i in out.inputs.scaffold if i.kind == "capsule"]
    assert capsules
    cal = out.inputs.estimator.calibration
    for item in capsules:
        assert item.tokens == scaled(len(item.text) + 1, cal)


def test_a_replan_repeats_the_stored_request(core: SessionEngine):
    budget = BudgetOverrides(context_length=9_000, max_completion_tokens=1_000, rag_budget=150)
    request = PlanRequest(query=QUERY, budget=budget, focus=Focus("shop/billing/invoice.py", 3))
    first = core.plan(SessionPlanRequest(session="replan", request=request)).result.plan
    again = core.replan_latest("replan")
    assert again is not None and again.result.plan == first


def test_a_replan_reads_the_options_an_earlier_version_stored(core: SessionEngine):
    first = core.plan(SessionPlanRequest(session="old", request=PlanRequest(query=QUERY)))
    old_options = {"context_length": 9_000, "rag_budget": 150, "focus": {"path": "shop/billing/invoice.py", "line": 3}}
    record = core.open_session("old")
    core.store.save_plan("old", record.branch, record.turn, QUERY, first.inputs, first.result.plan, {}, old_options)
    again = core.replan_latest("old")
    assert again is not None
    p = again.result.plan
    assert p.context_length == 9_000 and next(s for s in p.sections if s.name == "rag").budget == 150
    assert any(i.kind == "focus_hint" and i.path == "shop/billing/invoice.py" for i in p.included)


# ---- an agent's questions (the MCP face's engine calls) -------------------------------------------


def test_symbol_by_name_or_what_the_name_could_mean(core: SessionEngine):
    assert core.symbol("Inventory.reserve").qualname == "shop.inventory.Inventory.reserve"
    with pytest.raises(NotFound, match=r"ambiguous.*DiscountRule\.apply.*PercentOff\.apply"):
        core.symbol("apply")
    with pytest.raises(NotFound, match=r"did you mean shop\.inventory\.Inventory"):
        core.symbol("Inventroy")
    core.pin("agent-pinned", PinIntent(symbol="shop.inventory.Product", created_by="agent"))
    assert core.pinned("agent-pinned", "shop.inventory.Product") == "pin:shop.inventory.Product"
    assert core.pinned("agent-pinned", "shop.inventory.Inventory") is None


def test_references_are_the_graph_neighbours_both_ways(core: SessionEngine):
    refs = core.references("calculate_invoice_total")
    assert refs.symbol.qualname == "shop.billing.invoice.calculate_invoice_total"
    callees = {r.symbol.qualname for r in refs.callees}
    assert {"shop.billing.invoice._round_cents", "shop.config.TAX_RATE"} <= callees
    assert "shop.billing.invoice.Invoice.total" in {r.symbol.qualname for r in refs.callers}
    assert all(r.weight >= 1 for r in (*refs.callers, *refs.callees))


@pytest.mark.parametrize("budget", [120, 600, 4000])
def test_a_search_returns_whole_items_within_its_budget(core: SessionEngine, budget: int):
    found = core.search_code("search", QUERY, budget)
    assert found.items and found.used == sum(i.tokens for i in found.items) <= budget
    assert [i.score for i in found.items] == sorted((i.score or 0.0 for i in found.items), reverse=True)
    symbols = [i.symbol for i in found.items]
    assert len(symbols) == len(set(symbols))  # one form of a symbol
    for item in found.items:
        assert item.why
        if item.kind == "symbol_body" and item.path and item.range:  # never cut: every line of its range
            source = (core.engine.root / item.path).read_text().splitlines()
            lines = source[item.range.start.line : item.range.end.line + 1]
            assert all(line.strip() in item.text for line in lines if line.strip()), item.title
    if budget == 120:
        assert found.left_out > 0


def test_a_search_refuses_what_it_cannot_do(core: SessionEngine):
    with pytest.raises(UserError, match="budget must be greater than 0"):
        core.search_code("search", QUERY, 0)
    with pytest.raises(UserError, match="give a query"):
        core.search_code("search", "   ")


def test_an_agent_context_is_the_plan_without_its_system_prompt(core: SessionEngine):
    core.pin("agent", PinIntent(symbol=SYMBOL, created_by="agent"))
    ctx = core.agent_context("agent", QUERY, budget=300, mode="heavy")
    plan = ctx.outcome.result.plan
    rag = next(s for s in plan.sections if s.name == "rag")
    assert rag.budget == 300 and 0 < rag.used <= 300
    assert "def tax_for" in ctx.text  # the pin
    assert "You are an AI coding assistant" not in ctx.text and QUERY not in ctx.text
    assert core.meter("agent").plan_id == plan.plan_id  # kept like an editor's plan
    off = core.agent_context("agent", QUERY, mode="off").outcome.result.plan
    assert not [i for i in off.included if i.section == "rag"]
    with pytest.raises(UserError, match="budget must be 0 or more"):
        core.agent_context("agent", QUERY, budget=-1)


def test_one_name_in_several_files_is_the_pinned_files_and_file_name_says_which(tmp_path) -> None:
    """Each C program has its own ``start``: a pin at the cursor in server.c was planned as
    client.c's (the pin held only the name, and the name read the first file's). A name typed
    alone is ambiguous now; ``FILE:NAME`` (gdb's way) or the file it is used in says which. A
    ``static`` function and a program's ``main`` are their file's alone, and named so
    (``tools/server.c:usage``); a ``.pyi`` stub beside its module is not another definition."""
    files = {
        f"tools/{prog}.c": f'static void usage(void)\n{{\n    puts("usage: {prog} {arg}");\n}}\n\n'
        f"int start(int argc, char **argv)\n{{\n    usage(); /* {prog}: {arg} */\n    return 0;\n}}\n\n"
        "int main(int argc, char **argv)\n{\n    return start(argc, argv);\n}\n"
        for prog, arg in (("client", "HOST"), ("server", "PORT [--verbose] [--log FILE] [--workers N]"))
    }
    files["fmt.py"] = "def money(cents):\n    return f'{cents / 100:.2f}'\n"
    files["fmt.pyi"] = "def money(cents: int) -> str: ...\n"
    with indexed(tmp_path, files) as core:
        core.pin("s", PinIntent(path="tools/server.c", line=6, character=0))  # inside server.c's start
        pinned = [i for i in plan(core, "s").included if i.pin_id]
        assert [(i.symbol, i.path) for i in pinned] == [("start", "tools/server.c")]
        assert core.pins("s")[0].tokens == pinned[0].tokens - 1  # the pin's size is that file's too

        index = core.engine.index
        lookup = index.lookup("start")
        assert lookup.symbol is None and [s.path for s in lookup.candidates] == ["tools/client.c", "tools/server.c"]
        assert "FILE:NAME (tools/client.c:start)" in (lookup.problem() or "")
        assert index.lookup("server.c:start").symbol.path == "tools/server.c"
        assert index.lookup("tools/client.c:start").symbol.path == "tools/client.c"
        assert index.lookup("start", "tools/server.c").symbol.path == "tools/server.c"  # used in that file
        assert index.lookup("nowhere.c:start").symbol is None
        with pytest.raises(UserError, match="ambiguous"):
            core.pin("s", PinIntent(symbol="start"))

        statics = index.lookup("usage").candidates
        assert [s.qualname for s in statics] == ["tools/client.c:usage", "tools/server.c:usage"]
        assert index.lookup("tools/server.c:usage").symbol.path == "tools/server.c"
        mains = index.lookup("main").candidates
        assert [s.qualname for s in mains] == ["tools/client.c:main", "tools/server.c:main"]
        assert index.lookup("server.c:main").symbol.qualname == "tools/server.c:main"
        for prog in ("client", "server"):
            main = f"tools/{prog}.c:main"
            assert {(s, n) for s, n, rel, _ in index.neighbours([main], 10) if rel == "calls"} == {(main, "start")}
        assert index.lookup("fmt.money").symbol.path == "fmt.py"
        assert index.lookup("fmt:money").symbol.qualname == "fmt.money"  # Python's ``module:attr``


def test_a_question_in_a_cpp_headers_words_gets_the_code_the_header_declares(tmp_path) -> None:
    """The words of a C++ method's doc are in the header, its code in the .cpp: a question in
    those words now finds the declaration, and the plan carries the .cpp's code under it (its
    detail says whose doc was matched). A name, a pin and a lookup mean the code, not the
    declaration (a header does not make a name ambiguous)."""
    header = (
        "namespace juce {\nclass JUCE_API BigInteger\n{\npublic:\n"
        "    /** Returns the largest value that will divide both this value and the argument. */\n"
        "    BigInteger findGreatestCommonDivisor (BigInteger other) const;\n"
        "    /** Divides this value by another one and returns the remainder. */\n"
        "    void divideBy (const BigInteger& divisor, BigInteger& remainder);\n"
        "    /** Creates a BigInteger holding an unsigned value. */\n    BigInteger (uint32 value);\n"
        "    /** Creates a BigInteger holding a signed value. */\n    BigInteger (int64 value);\n"
        "};\n}\n"
    )
    source = (
        "namespace juce {\n"
        "BigInteger BigInteger::findGreatestCommonDivisor (BigInteger n) const\n{\n"
        "    auto m = *this;\n    while (! n.isZero())\n    {\n        BigInteger temp;\n"
        "        m.divideBy (n, temp);\n        m.swapWith (n);\n        n.swapWith (temp);\n    }\n"
        "    return m;\n}\n\n"
        "void BigInteger::divideBy (const BigInteger& divisor, BigInteger& remainder)\n{\n"
        "    remainder = *this;\n}\n\n"
        "BigInteger::BigInteger (int64 n)\n{\n    setSigned (n);\n}\n\n"
        "BigInteger::BigInteger (uint32 n)\n{\n    setUnsigned (n);\n}\n\n"
        # the rest of a real .cpp: its namespace costs more than the parts a plan takes of it
        + "".join(f"void BigInteger::step{k} (int n)\n{{\n    shiftBits (n + {k}, 0);\n}}\n\n" for k in range(200))
        + "}\n"
    )
    with indexed(tmp_path, {"maths/BigInteger.h": header, "maths/BigInteger.cpp": source}) as core:
        gcd = "juce::BigInteger::findGreatestCommonDivisor"
        rag_2k = BudgetOverrides(rag_budget=2_000)  # a real .cpp's namespace and a real class are bigger
        words = "the largest value that will divide both this value and the argument"
        out = core.engine.plan(PlanRequest(query=words, mode="light", budget=rag_2k))
        rag = [i for i in out.result.plan.included if i.section == "rag"]
        assert (rag[0].symbol, rag[0].kind, rag[0].path) == (gcd, "symbol_body", "maths/BigInteger.cpp")
        assert rag[0].range.start.line == 1  # the definition in the .cpp
        assert "the code of the declaration at maths/BigInteger.h:5, whose doc was matched" in (rag[0].detail or "")
        index = core.engine.index
        assert index.lookup(gcd).symbol.path == "maths/BigInteger.cpp"
        assert index.get(gcd).path == "maths/BigInteger.cpp"
        core.pin("s", PinIntent(symbol=gcd))
        assert [(i.symbol, i.path) for i in plan(core, "s").included if i.pin_id] == [(gcd, "maths/BigInteger.cpp")]
        # from the gutter of the header: on the declaration's name, and on its doc; the pin holds
        # the .cpp's code (and one recorded in the header by an earlier version finds it)
        assert index.get(gcd, "maths/BigInteger.h").path == "maths/BigInteger.cpp"
        divide = "juce::BigInteger::divideBy"
        core.pin("h", PinIntent(path="maths/BigInteger.h", line=7, character=12))
        core.pin("h", PinIntent(path="maths/BigInteger.h", line=4, character=8))
        pinned = [(i.symbol, i.path, i.kind) for i in plan(core, "h").included if i.pin_id]
        assert sorted(pinned) == [(s, "maths/BigInteger.cpp", "symbol_body") for s in (divide, gcd)]
        assert {p.record.path for p in core.pins("h")} == {"maths/BigInteger.cpp"}
        # an overloaded constructor: the header's first is the .cpp's second, told by its type
        words = "creates a BigInteger holding an unsigned value"
        out = core.engine.plan(PlanRequest(query=words, mode="light", budget=rag_2k))
        rag = [i for i in out.result.plan.included if i.section == "rag"]
        assert (rag[0].path, rag[0].symbol) == ("maths/BigInteger.cpp", "juce::BigInteger::BigInteger(uint32 n)")
        assert "the code of the declaration at maths/BigInteger.h:9, whose doc" in (rag[0].detail or "")
        # an agent asking for a declaration's name (its card's) gets the code (MCP get_symbol)
        assert (core.symbol("juce::BigInteger::BigInteger(uint32)").qualname, core.symbol(gcd).path) == (
            "juce::BigInteger::BigInteger(uint32 n)",
            "maths/BigInteger.cpp",
        )
        core.pin("o", PinIntent(path="maths/BigInteger.h", line=11, character=6))  # the int64 one
        assert [(i.symbol, i.path) for i in plan(core, "o").included if i.pin_id] == [
            ("juce::BigInteger::BigInteger", "maths/BigInteger.cpp")  # the .cpp's first keeps the plain name
        ]


def test_a_pin_on_a_typescript_value_holds_the_value_not_the_type_of_its_name(tmp_path) -> None:
    """zod pairs ``interface ZodIntersection`` with ``const ZodIntersection``: one name for both.
    A pin made in the const (from the gutter) holds the const's code, and one made in the
    interface the interface — by the line each was pinned at."""
    schemas = (
        "export interface ZodIntersection<A> extends ZodType {\n  left: A;\n  right: A;\n}\n\n"
        "export const ZodIntersection: core.$constructor<ZodIntersection> = core.$constructor(\n"
        '  "ZodIntersection",\n  (inst, def) => {\n    inst.left = def.left;\n  }\n);\n'
    )
    with indexed(tmp_path, {"src/schemas.ts": schemas}) as core:
        core.pin("v", PinIntent(path="src/schemas.ts", line=8, character=6))  # in the const's code
        core.pin("t", PinIntent(path="src/schemas.ts", line=1, character=3))  # in the interface
        for session, start in (("v", 5), ("t", 0)):
            pinned = [(i.symbol, i.range.start.line) for i in plan(core, session).included if i.pin_id]
            assert pinned == [("src/schemas.ZodIntersection", start)]
