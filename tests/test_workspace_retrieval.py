"""Retrieval: lexical hits plus graph relevance personalised per request, every signal in the
``why``; exact signals; priors; graph fill; modes; the orientation scaffold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctx_lsp import engine as engine_module
from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import Item, Message
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import ITEMS_KEPT, RETRIEVALS_KEPT, BudgetOverrides, Engine, Focus, PlanRequest, SessionContext
from ctx_lsp.workspace import cards, priors, retrieval, signals
from ctx_lsp.workspace.index import WorkspaceIndex, code_words
from tests.workspaces import copy_sample, make_index_again

# A long function (the card shows its top only) that uses calculate_invoice_total far down.
REPORTS = (
    '"""Monthly reports."""\n\n'
    "from shop.billing.invoice import calculate_invoice_total\n\n\n"
    "def monthly_report(invoices, month):\n"
    '    """Summarise a month of invoices into a printable report."""\n'
    + "".join(f"    step_{i} = len(invoices) + {i}  # bookkeeping\n" for i in range(40))
    + "    totals = [calculate_invoice_total(inv.lines) for inv in invoices]\n"
    "    grand = sum(totals)\n" + "".join(f"    pad_{i} = {i}\n" for i in range(20)) + "    return grand\n"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    copy_sample(root)
    (root / "shop" / "reports.py").write_text(REPORTS, encoding="utf-8")
    return root


@pytest.fixture
def index(ws: Path):
    idx = WorkspaceIndex(ws)
    idx.refresh()
    yield idx
    idx.close()


def ranked_for(index: WorkspaceIndex, query: str, **kw) -> list[tuple]:
    return retrieval.rank(index.search(query), query, graph=index, **kw)


def test_a_query_naming_a_function_retrieves_it_first(index: WorkspaceIndex) -> None:
    ranked = ranked_for(index, "why is calculate_invoice_total wrong with a discount?")
    sym, _, why = ranked[0]
    assert sym.qualname == "shop.billing.invoice.calculate_invoice_total"
    assert why.startswith("bm25 ") and "named in the query (×2.0)" in why and "central " in why


def test_graph_neighbours_join_with_a_graph_why(index: WorkspaceIndex) -> None:
    ranked = ranked_for(index, "calculate_invoice_total")
    by_name = {sym.qualname: (score, why) for sym, score, why in ranked}
    # not a lexical hit: its text shares no word with the query; it comes from the graph
    lexical = {h.symbol.qualname for h in index.search("calculate_invoice_total")}
    assert "shop.billing.discounts.DiscountRule" not in lexical
    score, why = by_name["shop.billing.discounts.DiscountRule"]
    assert why.startswith("used by invoice.calculate_invoice_total (graph ") and score > 0
    # a function it calls: "called by"; a weak lexical hit (its path says "invoice") scores as a
    # neighbour, not below one
    round_why = by_name["shop.billing.invoice._round_cents"][1]
    assert round_why.startswith("bm25 ") and "called by invoice.calculate_invoice_total (graph " in round_why
    assert "above its lexical score" in round_why
    # export lists are no seeds: nothing is "used by __all__"
    assert not any("__all__ (graph" in why for _, why in by_name.values())
    # a lexical hit that is also a neighbour is boosted, and says by how much
    assert "calls invoice.calculate_invoice_total (graph ×" in by_name["shop.billing.invoice.Invoice.total"][1]
    # the caller in another module comes through the graph too
    assert "calls invoice.calculate_invoice_total" in by_name["shop.reports.monthly_report"][1]


def test_seeds_and_focus_personalise_the_graph(index: WorkspaceIndex) -> None:
    query = "stock levels"
    plain = {s.qualname for s, _, _ in ranked_for(index, query)}
    seeded = {s.qualname: why for s, _, why in ranked_for(index, query, seeds=["shop.inventory.Inventory.reserve"])}
    assert "shop.inventory.OutOfStockError" in seeded
    assert "used by Inventory.reserve" in seeded["shop.inventory.OutOfStockError"]
    focused = {s.qualname: why for s, _, why in ranked_for(index, query, focus_path="shop/billing/invoice.py")}
    assert "shop.config.TAX_RATE" not in plain
    assert "used by the focused file" in focused["shop.config.TAX_RATE"]
    opened = {s.qualname: why for s, _, why in ranked_for(index, query, open_files=["shop/billing/invoice.py"])}
    assert "used by open file shop/billing/invoice.py" in opened["shop.config.TAX_RATE"]


def test_rank_without_a_graph_keeps_the_old_behaviour(index: WorkspaceIndex) -> None:
    query = "calculate_invoice_total"
    ranked = retrieval.rank(index.search(query), query)
    assert all("graph" not in why and "central" not in why for _, _, why in ranked)
    assert ranked[0][0].qualname == "shop.billing.invoice.calculate_invoice_total"


def test_modes_change_what_is_retrieved(ws: Path) -> None:
    engine = Engine(ws)
    engine.refresh_index()
    query = "calculate_invoice_total in the monthly report"
    try:
        kinds = {}
        for mode in ("off", "light", "heavy"):
            outcome = engine.plan(PlanRequest(query=query, mode=mode, budget=BudgetOverrides(rag_budget=20_000)))
            kinds[mode] = {c.kind for c in outcome.inputs.candidates}
        assert kinds["off"] == set()
        # both modes offer cards and bodies (the planner packs light mode's bodies within its depth share)
        assert kinds["light"] == kinds["heavy"] == {"symbol_card", "symbol_body"}
    finally:
        engine.close()


def test_a_request_that_points_at_code_gets_thin_cards_in_a_small_room(ws: Path) -> None:
    engine = Engine(ws)
    engine.refresh_index()
    error = "Invoice.total fails:\nTypeError: unsupported operand type(s) for +: 'decimal.Decimal' and 'float'"
    try:
        small = engine.plan(PlanRequest(query=error, budget=BudgetOverrides(rag_budget=600)))
        thin = {c.symbol: c for c in small.inputs.candidates if c.id.startswith("head:")}
        total = thin["shop.billing.invoice.Invoice.total"]
        assert total.kind == "symbol_card" and total.title.endswith("Invoice.total (signature)")
        assert total.text == (  # a method's header names its class: its signature does not
            "# shop/billing/invoice.py:46-49 · shop.billing.invoice.Invoice.total\n"
            "def total(self) -> Decimal\n"
            "# The amount due, tax and discount included."
        )
        whole = next(c for c in small.inputs.candidates if c.id.startswith("card:") and c.symbol == total.symbol)
        assert total.tokens < whole.tokens
        assert any(i.id.startswith("head:") for i in small.result.plan.included)
        roomy = engine.plan(PlanRequest(query=error, budget=BudgetOverrides(rag_budget=8000)))
        shown = [i.id for i in (*roomy.result.plan.included, *roomy.result.plan.excluded) if i.section == "rag"]
        assert shown and not any(i.startswith("head:") for i in shown)
        # a question in words is answered with breadth: whole cards, none thin
        words = PlanRequest(query="what does Invoice.total add up?", budget=BudgetOverrides(rag_budget=600))
        asked = engine.plan(words)
        assert asked.inputs.candidates and not any(c.id.startswith("head:") for c in asked.inputs.candidates)
    finally:
        engine.close()


def test_engine_passes_focus_and_pins_as_graph_seeds(ws: Path) -> None:
    engine = Engine(ws)
    engine.refresh_index()
    lines = (ws / "shop/inventory.py").read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if "def reserve" in text)
    try:
        outcome = engine.plan(
            PlanRequest(
                query="stock levels",
                focus=Focus("shop/inventory.py", line + 1),
                budget=BudgetOverrides(rag_budget=20_000),
            )
        )
        whys = {c.symbol: c.why or "" for c in outcome.inputs.candidates}
        assert "used by Inventory.reserve" in whys["shop.inventory.OutOfStockError"]
        pinned = engine.plan(
            PlanRequest(
                query="stock levels", pins=["shop.billing.invoice.tax_for"], budget=BudgetOverrides(rag_budget=20_000)
            )
        )
        whys = {c.symbol: c.why or "" for c in pinned.inputs.candidates}
        assert any("used by invoice.tax_for" in w or "called by invoice.tax_for" in w for w in whys.values())
    finally:
        engine.close()


def test_scaffold_names_central_symbols_and_how_to_navigate(ws: Path) -> None:
    engine = Engine(ws)
    engine.refresh_index()
    try:
        outcome = engine.plan(PlanRequest(query="anything about invoices"))
        scaffold = next(i for i in outcome.inputs.scaffold if i.kind == "scaffold")
        central = engine.index.central_symbols(3)
        assert central and f"Most central symbols (most referenced, directly and indirectly): {central[0]}" in (
            scaffold.text
        )
        note = next(line for line in scaffold.text.splitlines() if line.startswith("How to navigate: "))
        assert "Most code is under shop/." in note and "qualified name is the module path" in note
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("files", "sentence"),
    [
        (
            ["server/h.go", "server/h_test.go", "client/c.go", "client/c_test.go"],
            "Tests sit beside the code they test (`*_test.go`).",
        ),
        (
            ["src/a.ts", "src/a.test.ts", "src/b.ts", "src/b.spec.ts"],
            "Tests sit beside the code they test (`*.test.ts`, `*.spec.ts`).",
        ),
        (["pkg/a.py", "tests/test_a.py", "tests/test_b.py"], "Tests live under tests/."),
        (
            ["a/x.py", "a/tests/test_x.py", "b/tests/test_y.py"],
            "Tests live in tests/ folders next to the code they test.",
        ),
        (
            ["src/main/java/A.java", "src/test/java/ATest.java"],
            "Tests live in test/ folders next to the code they test.",
        ),
        (["src/lib.rs", "src/net.rs"], None),
    ],
)
def test_where_tests_live_by_each_languages_conventions(files: list[str], sentence: str | None) -> None:
    """From every indexed file, not the folders a large workspace's scaffold lists: Go's tests sit
    beside its code, whatever folder is called ``tests``."""
    note = cards.layout_note([("a/", 1)], [], files)
    if sentence is None:
        assert "Tests" not in note
    else:
        assert sentence in note


def test_layout_note_finds_tests_folders() -> None:
    modules = [("src/app/", 40), ("src/app/tests/", 12), ("tools.py", 3)]
    note = cards.layout_note(modules, ["app.core.Thing"])
    assert note.startswith("Most code is under src/, tools.py.")
    assert "Tests live in tests/ folders next to the code they test." in note
    assert "app.core.Thing is Thing in app/core.py" in note
    assert "Tests live under tests/." in cards.layout_note([("pkg/", 5), ("tests/", 4)], [])
    # a folder named like a file (``serde-1.0.152``) is still a folder
    folder = cards.layout_note([("serde-1.0.152/src/", 9)], [], ["serde-1.0.152/src/lib.rs"])
    assert folder.startswith("Most code is under serde-1.0.152/.") and "Rust crate::module" in folder


def test_plain_words_are_weaker_names_than_code(index: WorkspaceIndex) -> None:
    assert code_words("why does `total` differ from calculate_invoice_total() and Invoice.add?") == {
        "total",
        "calculate_invoice_total",
        "invoice.add",
    }
    assert code_words("fetchRemoteStockLevels is slow") == {"fetchremotestocklevels"}
    plain = {s.qualname: why for s, _, why in ranked_for(index, "what is the total of an invoice?")}
    assert "named in the query (×1.3)" in plain["shop.billing.invoice.Invoice.total"]
    code = {s.qualname: why for s, _, why in ranked_for(index, "what is `total` of an invoice?")}
    assert "named in the query (×2.0)" in code["shop.billing.invoice.Invoice.total"]


def test_a_method_called_on_a_snippets_variable_is_named_by_the_call(index: WorkspaceIndex) -> None:
    # a bug report's snippet calls methods on its own variables, which no index knows: the name
    # after the dot is the method's when it can only be code (``load`` may be a plain word)
    assert code_words("cfg = ShopSettings.from_env(env); cfg.from_env(os.environ); repo.load()") >= {"from_env"}
    assert "load" not in code_words("repo.load()")
    ranked = ranked_for(index, "settings = cfg.from_env(os.environ) fails when a value is empty")
    why = {s.qualname: why for s, _, why in ranked}["shop.config.ShopSettings.from_env"]
    assert "named in the query (×2.0)" in why
    assert ranked[0][0].qualname == "shop.config.ShopSettings.from_env"


def test_hits_matching_few_query_terms_say_so(index: WorkspaceIndex) -> None:
    ranked = ranked_for(index, "reserve stock for an order of products")
    found = [re.search(r"matches (\d+) of (\d+) terms \(×([\d.]+)\)", why) for _, _, why in ranked]
    partial = [m for m in found if m]
    assert partial
    for m in partial:
        covered, total, factor = int(m[1]), int(m[2]), float(m[3])
        assert covered < total and factor == round(0.5 + 0.5 * covered / total, 2)


def test_heavy_mode_falls_back_to_the_card_of_a_long_body(ws: Path) -> None:
    engine = Engine(ws)
    engine.refresh_index()
    try:
        query = "monthly_report"
        outcome = engine.plan(PlanRequest(query=query, mode="heavy", budget=BudgetOverrides(rag_budget=300)))
        forms = {(c.kind, c.symbol) for c in outcome.inputs.candidates if c.symbol == "shop.reports.monthly_report"}
        assert forms == {("symbol_body", "shop.reports.monthly_report"), ("symbol_card", "shop.reports.monthly_report")}
        included = [i for i in outcome.result.plan.included if i.symbol == "shop.reports.monthly_report"]
        assert [i.kind for i in included] == ["symbol_card"]  # the body (≈600 tokens) does not fit 300
        roomy = engine.plan(PlanRequest(query=query, mode="heavy", budget=BudgetOverrides(rag_budget=5000)))
        included = [i for i in roomy.result.plan.included if i.symbol == "shop.reports.monthly_report"]
        assert [i.kind for i in included] == ["symbol_body"]  # and the card is a duplicate then
    finally:
        engine.close()


def test_path_roles_name_what_is_not_the_projects_own_package() -> None:
    assert priors.path_role("requests/packages/urllib3/util/timeout.py") == ("vendored", "urllib3")
    assert priors.path_role("pip/_vendor/rich/console.py") == ("vendored", "rich")
    assert priors.path_role("packages/core/app.py") is None  # a monorepo's own packages
    assert priors.path_role("tests/test_app.py") == ("test", "test")
    assert priors.path_role("jinja2/testsuite/api.py") == ("test", "test")
    assert priors.path_role("pkg/conftest.py") == ("test", "test")
    assert priors.path_role("jinja2/tests.py") is None  # Jinja's template tests are its own code
    assert priors.path_role("api/service_pb2.py") == ("generated", "generated")
    assert priors.path_role("docs/conf.py") == ("aux", "docs")
    assert priors.path_role("setup.py") == ("aux", "setup")
    assert priors.path_role("src/flask/app.py") is None


def test_priors_lower_tests_and_vendored_code_unless_the_request_is_about_them(ws: Path) -> None:
    vendored = ws / "shop" / "packages" / "moneylib"
    vendored.mkdir(parents=True)
    (vendored / "__init__.py").write_text("")
    (vendored / "rounding.py").write_text(
        'def round_invoice_total(total):\n    """Round an invoice total to cents."""\n    return round(total, 2)\n'
    )
    (ws / "tests").mkdir()
    (ws / "tests" / "test_invoice.py").write_text(
        "def test_invoice_total_rounding():\n    assert round_invoice_total(1.005) == 1.0\n"
    )
    with WorkspaceIndex(ws) as index:
        index.refresh()

        def whys(query: str) -> dict[str, str]:
            return {s.qualname: why for s, _, why in ranked_for(index, query)}

        plain = whys("how is the invoice total rounded?")
        assert "vendored copy of moneylib (×0.3)" in plain["shop.packages.moneylib.rounding.round_invoice_total"]
        assert "test code (×0.3)" in plain["tests.test_invoice.test_invoice_total_rounding"]
        ranked = [s.qualname for s, _, _ in ranked_for(index, "how is the invoice total rounded?")]
        assert ranked.index("shop.billing.invoice.calculate_invoice_total") < ranked.index(
            "shop.packages.moneylib.rounding.round_invoice_total"
        )
        # a request about them: the vendored project named, tests mentioned
        about = whys("does moneylib round the invoice total? the tests say so")
        assert "vendored" not in about["shop.packages.moneylib.rounding.round_invoice_total"]
        assert "the request mentions tests (×0.6)" in about["tests.test_invoice.test_invoice_total_rounding"]


TRACEBACK = """The nightly restock job crashes:

Traceback (most recent call last):
  File "/home/me/shop-app/jobs/nightly.py", line 12, in <module>
    main()
  File "/home/me/shop-app/shop/inventory.py", line 42, in release
    inventory.restock(self.sku, self.quantity)
  File "/home/me/shop-app/shop/inventory.py", line 56, in restock
    raise ValueError("restock quantity must be positive")
  File "/usr/lib/python3.12/site-packages/audit/hooks.py", line 3, in check
    raise
ValueError: restock quantity must be positive
"""


def test_signals_read_the_pointers_in_a_request() -> None:
    sig = signals.read(TRACEBACK + "See shop/billing/invoice.py:17, `Invoice.total` and tests/test_a.py::TestA::test_b")
    assert [(f.path.rsplit("/", 2)[-1], f.line, f.func) for f in sig.frames] == [
        ("nightly.py", 12, "<module>"),
        ("inventory.py", 42, "release"),
        ("inventory.py", 56, "restock"),
        ("hooks.py", 3, "check"),
    ]
    assert sig.locations == (("shop/billing/invoice.py", 17),)
    assert {"Invoice.total", "TestA.test_b"} <= set(sig.dotted)  # and code in the frames: inventory.restock
    assert sig.exceptions == ("ValueError",) and sig.fragments == ("restock quantity must be positive",)
    # the frames' paths say nothing to a lexical search; the prose is what the user wrote
    assert "site-packages" not in sig.search_text and "in restock" in sig.search_text
    assert "The nightly restock job crashes" in sig.prose and "line 56" not in sig.prose


def test_a_traceback_points_at_its_innermost_project_frame(index: WorkspaceIndex) -> None:
    assert index.files_matching("/home/me/shop-app/shop/inventory.py") == ["shop/inventory.py"]
    assert index.files_matching("/usr/lib/python3.12/site-packages/audit/hooks.py") == []
    ranked = ranked_for(index, TRACEBACK)
    by_name = {s.qualname: why for s, _, why in ranked}
    assert ranked[0][0].qualname == "shop.inventory.Inventory.restock"
    assert (
        "the innermost traceback frame in the project, shop/inventory.py:56 (×3.00)"
        in by_name["shop.inventory.Inventory.restock"]
    )
    assert (
        "a traceback frame (1 out), shop/inventory.py:42 (×2.20)"
        in by_name["shop.inventory.Inventory.Reservation.release"]
    )


def test_a_frame_from_another_version_of_the_file_points_at_its_function_by_name(index: WorkspaceIndex) -> None:
    # the user's copy is older: line 20 of today's inventory.py is in Product, not in restock
    older = TRACEBACK.replace("line 56, in restock", "line 20, in restock")
    ranked = ranked_for(index, older)
    why = {s.qualname: why for s, _, why in ranked}
    assert ranked[0][0].qualname == "shop.inventory.Inventory.restock"
    assert "the innermost traceback frame in the project, shop/inventory.py:20 (×3.00)" in why[ranked[0][0].qualname]
    assert "traceback frame" not in why.get("shop.inventory.Product", "")
    # a frame's name is its last part; one that names nothing (``<module>``) leaves the line to decide
    assert [retrieval._short_name(f) for f in ("com.x.Y.z", "fd::exec::run", "<module>", None)] == [
        "z",
        "run",
        None,
        None,
    ]
    # and a name no symbol of the file has leaves the symbol at the line
    assert index.symbol_at("shop/inventory.py", 55, "no_such_name").qualname == "shop.inventory.Inventory.restock"


def test_paths_lines_and_dotted_names_point_at_symbols(index: WorkspaceIndex) -> None:
    by_name = {
        s.qualname: why
        for s, _, why in ranked_for(index, "totals are off: shop/billing/invoice.py:17 and `Invoice.total`")
    }
    assert "at shop/billing/invoice.py:17, named in the request (×3.00)" in by_name["shop.billing.invoice._round_cents"]
    assert "Invoice.total named in the request (×2.50)" in by_name["shop.billing.invoice.Invoice.total"]
    assert "its file shop/billing/invoice.py is named in the request" in by_name["shop.billing.invoice"]


def test_a_code_hosts_link_to_a_line_points_at_the_symbol_there(index: WorkspaceIndex) -> None:
    query = "Totals are off\nsee https://github.com/o/shop/blob/0a1b2c3/shop/billing/invoice.py#L17\n"
    ranked = ranked_for(index, query)
    order = [s.qualname for s, _, _ in ranked]
    unlinked = [s.qualname for s, _, _ in ranked_for(index, "Totals are off\n")]
    rounding = "shop.billing.invoice._round_cents"
    assert rounding not in unlinked[:3] and rounding in order[:2]
    assert "at shop/billing/invoice.py:17, named in the request (×3.00)" in ranked[order.index(rounding)][2]


def test_an_error_message_points_at_the_code_that_writes_it(index: WorkspaceIndex) -> None:
    query = "Applying a voucher fails with\nValueError: discount must be 1..50%"
    by_name = {s.qualname: why for s, _, why in ranked_for(index, query)}
    assert (
        "has the error message's text 'discount must be' (×2.00)"
        in by_name["shop.billing.discounts.PercentOff.__init__"]
    )


def test_code_the_request_quotes_points_at_the_functions_that_have_it(index: WorkspaceIndex) -> None:
    sig = signals.read(
        'add `--one-file-system`, "Retry-After" and `ky().json()` (not `nodes.Module`), like --no-ignore-vcs'
    )
    assert sig.literals == ("one-file-system", "Retry-After", "ky().json()", "no-ignore-vcs")
    assert signals.read("plain words, it's 'fine' and `names`").literals == ()
    quoted = {s.qualname: why for s, _, why in ranked_for(index, 'A file ending in ".tmp" is left behind')}
    assert "has '.tmp', quoted in the request (×1.50)" in quoted["shop.storage.StockRepository.save"]
    plain = {s.qualname: why for s, _, why in ranked_for(index, "A file ending in tmp is left behind")}
    assert "quoted in the request" not in plain.get("shop.storage.StockRepository.save", "")


def test_graph_fill_offers_code_around_the_best_hits_below_everything_else(index: WorkspaceIndex) -> None:
    ranked = ranked_for(index, "parse_sku")
    fill = retrieval.graph_fill(ranked, index)
    whys = {sym.qualname: why for sym, _, why in fill}
    assert whys["shop.storage.StockRepository"] == "graph fill: the class of StockRepository.load"
    assert not {s.qualname for s, _, _ in ranked} & set(whys)
    items = retrieval.candidates(ranked, "heavy", 1.0, fill=fill, load=index.symbols_by_id)
    lowest_ranked = min(i.score or 0 for i in items if not (i.why or "").startswith("graph fill"))
    filled = [i for i in items if (i.why or "").startswith("graph fill")]
    assert filled and all((i.score or 0) < lowest_ranked for i in filled)


def test_a_src_layout_is_named_as_its_users_write_it(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src" / "flask").mkdir(parents=True)
    (root / "src" / "flask" / "__init__.py").write_text("from .app import Flask\n")
    (root / "src" / "flask" / "app.py").write_text("class Flask:\n    def run(self, port=5000):\n        return port\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "serve.py").write_text("from src.flask.app import Flask\n\n\ndef serve():\n    Flask().run()\n")
    with WorkspaceIndex(root) as index:
        index.refresh()
        assert index.get("flask.app.Flask.run") is not None  # not src.flask.app.Flask.run
        assert index.resolve_name("flask.Flask").qualname == "flask.app.Flask"
        # code that imports the layout as ``src.flask`` still reaches it in the graph
        assert ("scripts.serve.serve", "flask.app.Flask", "called by") in {
            (n, s, r) for s, n, r, _ in index.neighbours(["flask.app.Flask"])
        }
        ranked = ranked_for(index, 'File "/venv/lib/site-packages/flask/app.py", line 3, in run\nflask.app.Flask.run')
        assert ranked[0][0].qualname == "flask.app.Flask.run"


def test_the_index_counts_a_thin_cards_text_as_its_counter_does(index: WorkspaceIndex) -> None:
    counter = counter_for("cl100k_base")
    texts = [
        "# shop/billing/invoice.py:46-49 · shop.billing.invoice.Invoice.total\ndef total(self) -> Decimal",
        "// web/src/api/client.ts:24-30 · ApiClient.request\nasync request<T>(path: string): Promise<T>",
        "def f(x): ... # lone \ud800 surrogate, émoji 🚀",
        "x = 1\n" * 2_000,  # longer than rs-bpe is asked to count
    ]
    assert [index.count_tokens(t) for t in texts] == [counter.count(t) for t in texts]


def test_a_module_its_package_rebinds_names_what_the_package_imports(tmp_path: Path) -> None:
    # pvlib's ``spectrum/__init__.py`` does ``from .spectrl2 import spectrl2``: ``spectrum.spectrl2``
    # is then the function, not the module it is in
    root = tmp_path / "proj"
    (root / "pv" / "spectrum").mkdir(parents=True)
    (root / "pv" / "__init__.py").write_text("")
    (root / "pv" / "spectrum" / "__init__.py").write_text("from .spectrl2 import spectrl2\n")
    (root / "pv" / "spectrum" / "spectrl2.py").write_text(
        "COEFFS = [0.1, 0.2]\n\n\ndef _transmittance(z):\n    return z\n\n\n"
        "def spectrl2(aoi, zenith):\n    return _transmittance(zenith) * aoi\n"
    )
    (root / "pv" / "irradiance.py").write_text("def aoi(tilt, zenith):\n    return tilt - zenith\n")
    with WorkspaceIndex(root) as index:
        index.refresh()
        ranked = ranked_for(index, "`spectrum.spectrl2` gives negative irradiance when aoi is over 90")
        assert ranked[0][0].qualname == "pv.spectrum.spectrl2.spectrl2"
        assert "spectrum.spectrl2 named in the request (×2.50)" in ranked[0][2]
        # a module nothing rebinds is named as its file, as before
        assert index.bound_by_package(index.get("pv.irradiance")) is None


def test_the_errors_exception_points_at_its_class_and_where_it_is_raised(index: WorkspaceIndex) -> None:
    query = "Placing an order fails:\nshop.inventory.OutOfStockError: SKU-1: 0 in stock, 3 requested"
    by_name = {s.qualname: why for s, _, why in ranked_for(index, query)}
    assert "shop.inventory.OutOfStockError named in the request (×2.50)" in by_name["shop.inventory.OutOfStockError"]
    assert "raises the error's exception (×1.50)" in by_name["shop.inventory.Inventory.reserve"]


def test_prompt_items_outlast_a_save_and_show_the_saved_code(ws: Path) -> None:
    """The items made of a symbol are kept by row id across saves (a row never changes while its
    id stands); a saved symbol is a new row with its new code; an index made again starts over."""
    engine = Engine(ws)
    engine.refresh_index()
    query = "calculate_invoice_total in the monthly report"

    def bodies() -> dict[str, Item]:
        out = engine.plan(PlanRequest(query=query, mode="heavy"))
        return {c.symbol: c for c in out.inputs.candidates if c.kind == "symbol_body" and c.symbol}

    try:
        before = bodies()
        report, total = before["shop.reports.monthly_report"], before["shop.billing.invoice.calculate_invoice_total"]
        kept_id = engine.index.get("shop.billing.invoice.calculate_invoice_total").id
        path = ws / "shop" / "reports.py"
        path.write_text(REPORTS.replace("grand = sum(totals)", "grand = sum(totals) + 1"), encoding="utf-8")
        engine.index.update_file("shop/reports.py", path.read_bytes())
        memo = engine.index.memo("items", ITEMS_KEPT, lasting=True)
        assert kept_id in memo  # the save left the other file's rows, and their items (kept by row id)
        after = bodies()
        assert "sum(totals) + 1" in after["shop.reports.monthly_report"].text and "sum(totals) + 1" not in report.text
        assert after["shop.billing.invoice.calculate_invoice_total"].text == total.text
        make_index_again(ws)  # another process, another schema: ids start over, so does the memo
        assert engine.index.memo("items", ITEMS_KEPT, lasting=True) == {}
        again = bodies()
        assert again["shop.reports.monthly_report"].text == after["shop.reports.monthly_report"].text
    finally:
        engine.close()


def test_a_full_items_memo_lets_the_least_recently_used_go(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prompt items are kept for many questions (a new one finds many of its symbols made); when
    the memo is full, what was used least recently goes, not everything."""
    engine = Engine(ws)
    engine.refresh_index()
    try:
        kept = engine.index.memo("items", 3, lasting=True)
        for key in ("a", "b", "c"):
            kept[key] = key
        assert kept["a"] == "a"  # read: recent again
        kept["d"] = "d"
        assert list(kept) == ["c", "a", "d"]
        assert engine.index.memo("items", 3, lasting=True) is kept
        # a plan offering more symbols than the memo keeps still gets every one of them
        query = PlanRequest(query="calculate_invoice_total in the monthly report", mode="heavy")
        wanted = engine.plan(query).inputs.candidates
        kept.clear()
        engine.index.memo("retrieved", RETRIEVALS_KEPT).clear()  # asked again: made again, not recalled
        monkeypatch.setattr(engine_module, "ITEMS_KEPT", 3)
        assert len(wanted) > 6 and engine.plan(query).inputs.candidates == wanted
    finally:
        engine.close()


def test_the_retrieval_set_id_names_the_candidates_however_they_were_found(ws: Path) -> None:
    """A question asked again is answered from memory, with its set id's digest: the id must
    stay the digest of the candidates offered, history's chunks included."""
    engine = Engine(ws)
    engine.refresh_index()
    history = [
        [
            Message(id=f"h{i}u", role="user", content=f"how is the invoice total rounded, take {i}?"),
            Message(id=f"h{i}a", role="assistant", content=f"calculate_invoice_total rounds each line {i}"),
        ]
        for i in range(4)
    ]
    try:
        seen = set()
        for with_history in (False, True, False, True):  # each asked twice: the second from memory
            memory = SessionContext(history=history if with_history else [])
            out = engine.plan(PlanRequest(query="invoice total rounding"), memory)
            cands = out.inputs.candidates
            assert any(c.kind == "history_chunk" for c in cands) == with_history
            assert out.inputs.retrieval_set_id == "rs-" + content_id(*(f"{c.id}:{c.score}" for c in cands))
            seen.add(out.inputs.retrieval_set_id)
        assert len(seen) == 2
    finally:
        engine.close()


# A bug report as users file one: the template's instructions left in, a screenshot, steps in
# prose long enough to make it a long request (over 64 terms) before the snippet, the snippet's
# call, the output, the versions. The function it calls comes after the first 32 terms.
BUG_REPORT = (
    "Coupons are refused at checkout since the upgrade\n"
    "<!-- Please fill in every section below. Example: ```AttributeError: 'Config' object has no "
    "attribute 'timeout'``` and run `import platform; print(platform.platform())` -->\n\n"
    "#### Description\n"
    "Since upgrading, our checkout page refuses every promotional coupon that customers type during "
    "the spring campaign; marketing reports angry emails, cancelled baskets, abandoned sessions and "
    "lower conversion across mobile, desktop, tablets, kiosks and partner storefronts worldwide. "
    "Support staff escalated repeatedly yesterday evening. Our regional managers noticed weekly "
    "revenue dropping sharply; finance wants an explanation before quarterly planning meetings, "
    "and legal asks whether advertised promises were broken. Several franchise owners threatened "
    "cancelling contracts unless somebody responds quickly with concrete timelines.\n"
    '<img width="248" alt="Screen Shot 2021-02-19" src="https://example.invalid/a.png">\n\n'
    "#### Steps/Code to Reproduce\n"
    "```python\n"
    "from shop.billing import discounts\n"
    'rule = discounts.parseVoucherCode_v2("SPRING10")\n'
    "print(rule)\n"
    "```\n"
    "#### Actual Results\n"
    "```\n"
    "None\n"
    "```\n"
    "#### Versions\n"
    "```\n"
    "Linux-5.15.0-91-generic-x86_64-with-glibc2.35\n"
    "Python 3.11.4\n"
    "shop 2.3.1\n"
    "```\n"
)


def test_a_long_bug_report_is_searched_for_every_name_its_snippet_calls(index: WorkspaceIndex) -> None:
    sig = signals.read(BUG_REPORT)
    # read as written, the call comes after the first 32 terms (the old fixed cap left it out)
    assert "parsevouchercodev2" not in list(index_terms(BUG_REPORT))[:32]
    # the template's instructions, the screenshot, the output and the versions are not searched
    for noise in ("AttributeError", "platform", "Screen Shot", "5.15.0", "Python 3.11.4", "None"):
        assert noise not in sig.search_text
    assert "AttributeError" not in sig.exceptions and "platform.platform" not in sig.dotted
    assert len(index_terms(sig.search_text)) > 64
    # the search itself looks for the call, though it comes late in a long text
    assert any(h.symbol.name == "parseVoucherCode_v2" for h in index.search(sig.search_text))
    ranked = ranked_for(index, BUG_REPORT)
    top, _, why = ranked[0]
    assert top.qualname == "shop.billing.discounts.parseVoucherCode_v2"
    assert "discounts.parseVoucherCode_v2 named in the request" in why
    assert "of the first line" in why  # a long report: coverage is counted on its title


def index_terms(text: str) -> dict[str, str]:
    from ctx_lsp.workspace.index import query_term_words

    return query_term_words(text)


def test_a_test_next_to_a_seed_keeps_its_test_prior(ws: Path) -> None:
    # a test that calls the function the request names scores as the function's neighbour, not
    # as a weak lexical hit; it is still test code, and ranks as test code
    (ws / "tests").mkdir()
    (ws / "tests" / "test_totals.py").write_text(
        "from shop.billing.invoice import calculate_invoice_total\n\n\n"
        "def test_empty_invoice():\n    assert calculate_invoice_total([]) == 0\n"
    )
    with WorkspaceIndex(ws) as index:
        index.refresh()
        ranked = {s.qualname: (score, why) for s, score, why in ranked_for(index, "calculate_invoice_total")}
    score, why = ranked["tests.test_totals.test_empty_invoice"]
    assert "calls invoice.calculate_invoice_total (graph " in why and "test code (×0.3)" in why
    # what the graph gives the caller in the package (``monthly_report``), less the test prior
    assert score < ranked["shop.reports.monthly_report"][0] * 0.5, (score, why)


def test_the_many_users_of_a_seed_take_little_of_its_score(tmp_path: Path) -> None:
    # ``load_rows`` is named; six jobs call it (their modules import it: twelve users). What it
    # calls is where its problem may lie; one of its many users is not: each takes a share of
    # the seed's score cut by how many use the seed, and says so
    root = tmp_path / "ws"
    (root / "shop" / "jobs").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "jobs" / "__init__.py").write_text("")
    (root / "shop" / "store.py").write_text(
        '"""Rows kept on disk."""\n\n\n'
        'def _parse_rows(text):\n    """Split a file\'s text into rows."""\n'
        '    return [line.split(",") for line in text.splitlines()]\n\n\n'
        'def load_rows(path):\n    """The rows of the file at ``path``."""\n'
        "    with open(path) as fh:\n        return _parse_rows(fh.read())\n"
    )
    for i in range(5):
        (root / "shop" / "jobs" / f"job_{i}.py").write_text(
            "from shop.store import load_rows\n\n\n"
            f'def nightly_{i}(folder):\n    """Job {i}: count what the folder holds."""\n'
            f'    return len(load_rows(folder + "/part_{i}.csv"))\n'
        )
    (root / "shop" / "jobs" / "weekly.py").write_text(
        "from shop.store import load_rows as fetch\n\n\n"
        'def weekly(folder):\n    """Sum the week."""\n    return sum(len(fetch(folder + d)) for d in "1234567")\n'
    )
    (root / "shop" / "pricing.py").write_text(  # enough other code that the query's words are rare
        "".join(f"def price_rule_{i}(amount):\n    return round(amount * {i + 1}, 2)\n\n\n" for i in range(80))
    )
    with WorkspaceIndex(root) as index:
        index.refresh()
        ranked = {s.qualname: (score, why) for s, score, why in ranked_for(index, "load_rows returns stale rows")}
    callee_score, callee_why = ranked["shop.store._parse_rows"]
    graph_score = float(re.search(r"called by store\.load_rows \(graph ([\d.]+)", callee_why)[1])
    for q in [f"shop.jobs.job_{i}.nightly_{i}" for i in range(5)] + ["shop.jobs.weekly.weekly"]:
        score, why = ranked[q]
        assert score < callee_score, (q, why)
        found = re.search(r"calls store\.load_rows \(graph ([\d.]+)[^)]*one of many users of \S+ \(×([\d.]+)\)", why)
        assert found, why  # a share of the seed's score, as much as the callee's times the seed's specificity
        fan = float(found[2])
        assert fan < 0.9 and float(found[1]) == pytest.approx(graph_score * fan, rel=0.02), why
    assert not ranked["shop.jobs.weekly.weekly"][1].startswith("bm25")  # the query does not match it
