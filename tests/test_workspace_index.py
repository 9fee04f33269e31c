"""The SQLite symbol index: refresh, incremental updates, search, lookups, persistence."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ctx_lsp.core.tokens import counter_for
from ctx_lsp.workspace.cards import body_header
from ctx_lsp.workspace.index import (
    BATCH_FILES,
    IndexedSymbol,
    RefreshStopped,
    WorkspaceIndex,
    query_term_words,
    query_terms,
    search_terms,
    split_identifier,
)

SAMPLE_FILES = 8  # .py files in sample_ws, refunds.py (syntax error) included


@pytest.fixture
def index(ws: Path):
    idx = WorkspaceIndex(ws)
    idx.refresh()
    yield idx
    idx.close()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def bump_mtime(path: Path) -> None:
    """Make sure a rewrite is seen as a change even on coarse-mtime file systems."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def qualnames(idx: WorkspaceIndex, rel: str) -> list[str]:
    return [s.qualname for s in idx.symbols_in(rel)]


def fts_rows(idx: WorkspaceIndex) -> int:
    return idx._reader().execute("SELECT count(*) FROM symbols_fts").fetchone()[0]


# -- refresh -------------------------------------------------------------------------------


def test_first_refresh_indexes_the_sample(ws: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    with WorkspaceIndex(ws) as idx:
        stats = idx.refresh(progress=lambda done, total, rel: seen.append((done, total, rel)))
        assert stats.files_seen == SAMPLE_FILES
        assert stats.files_indexed == SAMPLE_FILES
        assert stats.files_unchanged == 0 and stats.files_removed == 0
        assert stats.errors == ["shop/refunds.py: SyntaxError: '(' was never closed (line 6)"]
        assert stats.symbols == idx.stats().symbols > 40
        assert [d for d, _, _ in seen] == list(range(1, SAMPLE_FILES + 1))
        assert {t for _, t, _ in seen} == {SAMPLE_FILES}
        summary = idx.stats()
        assert summary.files == SAMPLE_FILES
        assert summary.files_with_errors == 1
        assert summary.tokens > 1000 and summary.card_tokens > 1000
    assert (ws / ".ctx" / "index.sqlite3").exists()
    assert "*" in (ws / ".ctx" / ".gitignore").read_text().splitlines()


def test_reopening_finds_symbols_without_reparsing(ws: Path) -> None:
    with WorkspaceIndex(ws) as idx:
        idx.refresh()
        before = [(s.id, s.qualname) for s in idx.iter_symbols()]
    with WorkspaceIndex(ws) as idx:
        # Usable before any refresh: the index is on disk.
        assert idx.get("shop.billing.invoice.calculate_invoice_total") is not None
        stats = idx.refresh()
        assert stats.files_unchanged == SAMPLE_FILES
        assert stats.files_indexed == 0
        assert [(s.id, s.qualname) for s in idx.iter_symbols()] == before


def test_touched_but_unchanged_file_is_not_reparsed(index: WorkspaceIndex, ws: Path) -> None:
    ids = [s.id for s in index.symbols_in("shop/inventory.py")]
    bump_mtime(ws / "shop" / "inventory.py")
    stats = index.refresh()
    assert stats.files_unchanged == SAMPLE_FILES and stats.files_indexed == 0
    assert [s.id for s in index.symbols_in("shop/inventory.py")] == ids
    assert index.refresh().files_unchanged == SAMPLE_FILES  # the new stat was stored


def test_edit_rename_delete_leave_no_ghosts(index: WorkspaceIndex, ws: Path) -> None:
    n_fts = fts_rows(index)
    assert n_fts == index.stats().symbols
    # Edit: a function renamed in place.
    path = ws / "shop" / "billing" / "discounts.py"
    path.write_text(path.read_text().replace("applyBulkDiscount", "apply_volume_discount"))
    bump_mtime(path)
    stats = index.refresh()
    assert stats.files_indexed == 1 and stats.files_unchanged == SAMPLE_FILES - 1
    assert index.get("shop.billing.discounts.applyBulkDiscount") is None
    assert index.get("shop.billing.discounts.apply_volume_discount") is not None
    assert not [h for h in index.search("applyBulkDiscount") if h.symbol.name == "applyBulkDiscount"]
    assert index.search("volume discount")[0].symbol.name == "apply_volume_discount"
    # Rename: the file moves; its symbols follow, none stay behind.
    (ws / "shop" / "storage.py").rename(ws / "shop" / "persistence.py")
    stats = index.refresh()
    assert stats.files_removed == 1 and stats.files_indexed == 1
    assert index.symbols_in("shop/storage.py") == []
    assert index.get("shop.persistence.StockRepository") is not None
    assert index.get("shop.storage.StockRepository") is None
    # Delete.
    (ws / "shop" / "config.py").unlink()
    stats = index.refresh()
    assert stats.files_removed == 1 and stats.files_seen == SAMPLE_FILES - 1
    assert index.symbols_in("shop/config.py") == []
    assert all(h.symbol.path != "shop/config.py" for h in index.search("TAX_RATE currency settings"))
    # The FTS table and the symbols table stay in step.
    assert fts_rows(index) == index.stats().symbols
    imports = index._reader().execute("SELECT DISTINCT path FROM imports").fetchall()
    assert ("shop/config.py",) not in imports and ("shop/storage.py",) not in imports


def test_syntax_error_keeps_last_good_symbols(index: WorkspaceIndex, ws: Path) -> None:
    path = ws / "shop" / "inventory.py"
    good = path.read_text()
    before = qualnames(index, "shop/inventory.py")
    path.write_text(good.replace("def restock(self, sku: str, quantity: int) -> int:", "def restock(self, sku:"))
    bump_mtime(path)
    stats = index.refresh()
    assert stats.errors == [
        "shop/inventory.py: SyntaxError: '(' was never closed (line 53)",
        # refunds.py is unchanged, so it is not re-reported
    ]
    assert qualnames(index, "shop/inventory.py") == before
    assert index.stats().files_with_errors == 2
    # Fixed again (with a new method): the symbols are replaced, the error cleared.
    path.write_text(good + "\n\ndef audit_stock() -> None:\n    pass\n")
    bump_mtime(path)
    stats = index.refresh()
    assert stats.errors == []
    assert qualnames(index, "shop/inventory.py") == [*before, "shop.inventory.audit_stock"]
    assert index.stats().files_with_errors == 1


def test_new_file_with_syntax_error_has_no_symbols(index: WorkspaceIndex, ws: Path) -> None:
    assert index.symbols_in("shop/refunds.py") == []
    write(ws, "shop/half_typed.py", "class Broken(\n")
    stats = index.refresh()
    assert stats.files_indexed == 1 and stats.errors[0].startswith("shop/half_typed.py: SyntaxError")
    assert index.symbols_in("shop/half_typed.py") == []


def test_legacy_encoded_sources_are_indexed_where_their_language_allows(index: WorkspaceIndex, ws: Path) -> None:
    """A Latin-1 Java file and a UTF-16 C++ header are indexed and found; a Go file that is
    not UTF-8 is skipped with its reason, as Go's compiler would refuse it."""
    legacy = b"/** R\xe9sum\xe9 of an order. */\nclass Legacy {\n  int resumeOrder() { return 1; }\n}\n"
    (ws / "Legacy.java").write_bytes(legacy)
    (ws / "wide.h").write_bytes("namespace wide {\nint widthOfGlyph(int c) { return c * 2; }\n}\n".encode("utf-16"))
    (ws / "bad.go").write_bytes(b"package bad\n// caf\xe9\nfunc F() {}\n")
    stats = index.refresh()
    assert stats.skipped == ["bad.go (not_utf8)"]
    assert index.search("resume order", limit=3)[0].symbol.qualname == "Legacy.resumeOrder"
    assert "wide::widthOfGlyph" in qualnames(index, "wide.h")
    (method,) = [s for s in index.symbols_in("Legacy.java") if s.name == "resumeOrder"]
    assert "Résumé" not in method.body  # the class's doc comment, not the method's
    (cls,) = [s for s in index.symbols_in("Legacy.java") if s.name == "Legacy"]
    assert "Résumé of an order" in cls.body


def test_binary_and_undecodable_files_are_skipped_and_remembered(index: WorkspaceIndex, ws: Path) -> None:
    (ws / "shop" / "blob.py").write_bytes(b"\x00\x01\x02 binary")
    (ws / "shop" / "legacy.py").write_bytes(b"NAME = 'caf\xe9'\n")
    stats = index.refresh()
    assert stats.files_skipped == 2
    assert stats.skipped == ["shop/blob.py (binary)", "shop/legacy.py (not_utf8)"]
    assert index.symbols_in("shop/legacy.py") == []
    again = index.refresh()  # unchanged: not read again, still reported
    assert again.files_skipped == 2 and again.files_indexed == 0
    # A good file that turns binary loses its symbols.
    (ws / "shop" / "config.py").write_bytes(b"\x00" * 10)
    bump_mtime(ws / "shop" / "config.py")
    index.refresh()
    assert index.symbols_in("shop/config.py") == []


def test_ignored_and_vendored_files_are_not_indexed(ws: Path) -> None:
    write(ws, ".venv/pyvenv.cfg", "home = /usr\n")
    write(ws, ".venv/lib/site.py", "def hidden(): pass\n")
    write(ws, "node_modules/pkg/x.py", "def hidden(): pass\n")
    write(ws, ".gitignore", "generated/\n")
    write(ws, "generated/out.py", "def hidden(): pass\n")
    with WorkspaceIndex(ws) as idx:
        stats = idx.refresh()
        assert stats.files_seen == SAMPLE_FILES
        assert idx.search("hidden") == []


def test_schema_or_encoding_change_rebuilds(ws: Path) -> None:
    with WorkspaceIndex(ws) as idx:
        idx.refresh()
        idx._conn.execute("UPDATE index_meta SET value = '0' WHERE key = 'schema'")
    with WorkspaceIndex(ws) as idx:
        assert idx.stats().symbols == 0  # stale cache dropped
        assert idx.refresh().files_indexed == SAMPLE_FILES


# -- incremental updates -------------------------------------------------------------------


def test_update_file_from_a_buffer(index: WorkspaceIndex, ws: Path) -> None:
    rel = "shop/billing/discounts.py"
    disk = (ws / rel).read_bytes()
    assert index.update_file(rel, disk) is False  # same content: nothing to do
    edited = disk + b"\n\ndef loyaltyBonus(points: int) -> int:\n    return points // 10\n"
    assert index.update_file(rel, edited) is True
    assert index.get("shop.billing.discounts.loyaltyBonus") is not None
    assert index.search("loyalty bonus")[0].symbol.name == "loyaltyBonus"
    # A half-typed buffer keeps the last good symbols.
    assert index.update_file(rel, edited + b"\ndef broken(:\n") is False
    assert index.get("shop.billing.discounts.loyaltyBonus") is not None
    # The disk did not change, so a refresh keeps the buffer's symbols...
    assert index.refresh().files_indexed == 0
    assert index.get("shop.billing.discounts.loyaltyBonus") is not None
    # ...until the buffer is discarded and the file re-read from disk.
    assert index.update_file(rel, None) is True
    assert index.get("shop.billing.discounts.loyaltyBonus") is None


def test_update_file_reports_moved_ranges_as_changes(index: WorkspaceIndex, ws: Path) -> None:
    rel = "shop/config.py"
    disk = (ws / rel).read_bytes()
    assert index.update_file(rel, b"# a comment line\n" + disk) is True
    assert index.get("shop.config.TAX_RATE").start_line == 8  # type: ignore[union-attr]


def test_update_and_remove_file(index: WorkspaceIndex, ws: Path) -> None:
    assert index.update_file("shop/new_module.py", b"def fresh():\n    return 1\n") is True
    assert index.get("shop.new_module.fresh") is not None
    assert index.remove_file("shop/new_module.py") is True
    assert index.get("shop.new_module.fresh") is None
    assert index.remove_file("shop/new_module.py") is False
    (ws / "shop" / "config.py").unlink()
    assert index.update_file("shop/config.py", None) is True  # gone from disk: removed
    assert index.symbols_in("shop/config.py") == []
    assert fts_rows(index) == index.stats().symbols


# -- token counts --------------------------------------------------------------------------


def test_token_counts_are_stored_and_conservative(index: WorkspaceIndex, ws: Path) -> None:
    counter = counter_for("cl100k_base")
    for sym in index.iter_symbols():
        assert sym.card_tokens == counter.count(sym.card), sym.qualname
        if sym.kind in ("function", "method", "variable"):
            assert sym.body_tokens == counter.count(sym.body), sym.qualname
        elif sym.kind == "class":
            exact = counter.count(sym.body)
            assert exact <= sym.body_tokens <= exact * 1.03 + 2, sym.qualname
        else:  # the module: the whole file, counted once in pieces
            exact = counter.count((ws / sym.path).read_text())
            assert exact <= sym.body_tokens <= exact * 1.03 + 2, sym.qualname


# -- search --------------------------------------------------------------------------------


def test_split_identifier_and_terms() -> None:
    assert split_identifier("parseHTTPResponse_v2") == "parse http response v2"
    assert split_identifier("calculate_invoice_total") == "calculate invoice total"
    assert split_identifier("HTTP2Server") == "http2 server"
    assert split_identifier("__init__") == "init"
    assert split_identifier("getX") == "get x"
    # stemmed, in the index and in queries alike
    assert search_terms("parseHTTPResponse") == "pars http respons parsehttprespons"
    assert query_terms('where is the "foo" AND (bar) defined?') == ["foo", "bar"]
    assert query_terms("calculateInvoiceTotal") == ["calcul", "invoic", "total", "calculateinvoicetot"]
    assert query_terms("is it there? a b c") == []
    assert query_terms("how are prices rounded") == query_terms("price round") == ["price", "round"]
    assert query_term_words("how are prices rounded") == {"price": "prices", "round": "rounded"}


def test_stemming_finds_a_name_in_other_words(index: WorkspaceIndex) -> None:
    hits = index.search("how are amounts rounded to cents?")
    assert hits[0].symbol.qualname == "shop.billing.invoice._round_cents"
    assert "name: rounded cents" in hits[0].matched  # the words as the query has them


def test_query_naming_a_function_finds_it_first(index: WorkspaceIndex) -> None:
    hits = index.search("where is calculate_invoice_total defined")
    assert hits[0].symbol.qualname == "shop.billing.invoice.calculate_invoice_total"
    assert hits[0].score > hits[1].score > 0
    assert "name: calculate invoice total calculateinvoicetotal" in hits[0].matched
    # The camelCase spelling of the same name finds it too.
    assert index.search("calculateInvoiceTotal")[0].symbol.name == "calculate_invoice_total"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("fetch remote stock levels", "shop.storage.fetchRemoteStockLevels"),  # camelCase target
        ("fetchRemoteStockLevels", "shop.storage.fetchRemoteStockLevels"),
        ("parse_voucher_code", "shop.billing.discounts.parseVoucherCode_v2"),  # snake → camel
        ("voucher code v2", "shop.billing.discounts.parseVoucherCode_v2"),
        ("bulk discount", "shop.billing.discounts.applyBulkDiscount"),
        ("out of stock error", "shop.inventory.OutOfStockError"),
        ("low stock threshold", "shop.config.LOW_STOCK_THRESHOLD"),
        ("StockRepository load", "shop.storage.StockRepository.load"),
    ],
)
def test_sub_word_matching(index: WorkspaceIndex, query: str, expected: str) -> None:
    assert index.search(query)[0].symbol.qualname == expected


@pytest.mark.parametrize(
    "query",
    ['"foo" AND (bar', "NEAR(a b", "* ^ : -", "名前 größe ünïcödé", "'); DROP TABLE symbols; --", "", "   "],
)
def test_hostile_queries_never_raise(index: WorkspaceIndex, query: str) -> None:
    assert isinstance(index.search(query), list)
    assert index.stats().symbols > 0


def test_no_usable_terms_returns_nothing(index: WorkspaceIndex) -> None:
    assert index.search("where is it?") == []
    assert index.search("x y z") == []
    assert index.search("calculate_invoice_total", limit=0) == []


def test_search_limit_kinds_and_determinism(index: WorkspaceIndex) -> None:
    hits = index.search("stock invoice discount", limit=5)
    assert len(hits) == 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.symbol.id for h in hits] == [h.symbol.id for h in index.search("stock invoice discount", limit=5)]
    classes = index.search("stock invoice discount", kinds={"class"})
    assert classes and {h.symbol.kind for h in classes} == {"class"}
    head = index.search("calculate_invoice_total", limit=1)[0].symbol
    assert not hasattr(head, "body")  # a hit is the symbol's head; its texts are read by row id
    hit = index.symbols_by_id([head.id])[head.id]
    assert isinstance(hit, IndexedSymbol) and hit.qualname == head.qualname
    assert hit.body.startswith("def calculate_invoice_total(") and hit.body_tokens > 0


def test_what_plans_read_is_kept_until_the_index_changes(index: WorkspaceIndex) -> None:
    """Searches, neighbours and symbols are answered from memory while the database is
    unchanged, and read again as soon as any connection commits a change."""
    before = index.search("loyalty points")
    assert index.search("loyalty points") == before  # from memory: the same hits
    assert not [h for h in before if h.symbol.name == "award_loyalty_points"]
    source = b'def award_loyalty_points(order):\n    """Loyalty points for an order."""\n    return 1\n'
    index.update_file("shop/loyalty.py", source)
    head = next(h.symbol for h in index.search("loyalty points") if h.symbol.name == "award_loyalty_points")
    assert index.get_many([head.qualname])[head.qualname].id == head.id
    index.remove_file("shop/loyalty.py")
    assert not index.get_many([head.qualname]) and not index.symbols_by_id([head.id])
    # another connection's commit (another index object on the same file, as a second editor's
    # server would be) is seen too
    other = WorkspaceIndex(index.root, db_path=index.db_path)
    try:
        other.update_file("shop/loyalty.py", source)
    finally:
        other.close()
    assert [h for h in index.search("loyalty points") if h.symbol.name == "award_loyalty_points"]


# -- lookups -------------------------------------------------------------------------------


def test_get_prefers_the_implementation_over_overloads(index: WorkspaceIndex) -> None:
    all_defs = index.get_all("shop.billing.invoice.format_amount")
    assert [s.decorators for s in all_defs] == [("overload",), ("overload",), ()]
    impl = index.get("shop.billing.invoice.format_amount")
    assert impl is not None and impl.decorators == () and impl.docstring.startswith("Render an amount")
    assert index.get("shop.nothing.here") is None


def test_symbols_in_and_symbol_at(index: WorkspaceIndex) -> None:
    syms = index.symbols_in("shop/billing/invoice.py")
    assert syms[0].kind == "module"
    assert [s.start_line for s in syms] == sorted(s.start_line for s in syms)
    net = index.get("shop.billing.invoice.Invoice.Line.net")
    assert net is not None
    at = index.symbol_at("shop/billing/invoice.py", net.start_line + 2)
    assert at is not None and at.qualname == "shop.billing.invoice.Invoice.Line.net"
    line_cls = index.get("shop.billing.invoice.Invoice.Line")
    assert line_cls is not None
    at = index.symbol_at("shop/billing/invoice.py", line_cls.start_line + 4)  # a field of Line
    assert at is not None and at.qualname == "shop.billing.invoice.Invoice.Line"
    at = index.symbol_at("shop/billing/invoice.py", 1)  # between definitions: the module
    assert at is not None and at.kind == "module"
    assert index.symbol_at("shop/nowhere.py", 0) is None


def test_resolve_name(index: WorkspaceIndex) -> None:
    def q(name: str, from_rel: str | None = None) -> str | None:
        sym = index.resolve_name(name, from_rel)
        return sym.qualname if sym else None

    assert q("shop.inventory.Product") == "shop.inventory.Product"  # exact
    assert q("Item", "shop/billing/invoice.py") == "shop.inventory.Product"  # import alias
    assert q("Item.display_name", "shop/billing/invoice.py") == "shop.inventory.Product.display_name"
    assert q("StockBook", "shop/storage.py") == "shop.inventory.Inventory"
    assert q("TAX_RATE", "shop/billing/invoice.py") == "shop.config.TAX_RATE"  # relative import
    assert q("_round_cents", "shop/billing/invoice.py") == "shop.billing.invoice._round_cents"  # same file
    assert q("shop.Invoice") == "shop.billing.invoice.Invoice"  # re-exported through two __init__s
    assert q("Invoice", "shop/__init__.py") == "shop.billing.invoice.Invoice"
    assert q("Inventory.reserve") == "shop.inventory.Inventory.reserve"  # unique suffix
    assert q("fetchRemoteStockLevels") == "shop.storage.fetchRemoteStockLevels"
    assert q("__init__") is None  # ambiguous suffix
    assert q("no_such_name") is None
    assert q("") is None


def test_lookup_says_what_a_name_could_mean(index: WorkspaceIndex) -> None:
    found = index.lookup("Inventory")  # a unique short name is the symbol
    assert found.symbol is not None and found.symbol.qualname == "shop.inventory.Inventory"
    assert found.problem() is None
    found = index.lookup("apply")  # ambiguous: the candidates, with where they are
    assert found.symbol is None and found.ambiguous
    assert [s.qualname for s in found.candidates] == [
        "shop.billing.discounts.DiscountRule.apply",
        "shop.billing.discounts.PercentOff.apply",
    ]
    problem = found.problem() or ""
    assert "ambiguous" in problem and "shop/billing/discounts.py:" in problem and "qualified name" in problem
    many = index.lookup("__init__")
    assert len(many.candidates) == 4 and many.more == 0
    typo = index.lookup("Inventroy")  # unknown: close names first, then what a search finds
    assert typo.symbol is None and not typo.ambiguous
    assert typo.suggestions[0] == "shop.inventory.Inventory"
    assert "did you mean shop.inventory.Inventory" in (typo.problem() or "")
    assert index.lookup("INVENTORY").suggestions[0] == "shop.inventory.Inventory"  # case aside
    assert "shop.billing.invoice.calculate_invoice_total" in index.lookup("invoice total").suggestions
    nothing = index.lookup("xyzzy")
    assert nothing.suggestions == () and "nor any similar name" in (nothing.problem() or "")


def test_importers_of(index: WorkspaceIndex) -> None:
    assert index.importers_of("shop.inventory") == ["shop", "shop.billing.invoice", "shop.storage"]
    assert index.importers_of("shop.config") == ["shop.billing.invoice", "shop.inventory"]
    assert index.importers_of("shop.billing.discounts") == ["shop.billing.invoice"]
    assert index.importers_of("shop.inv") == []  # a prefix of a name is not a submodule
    assert index.importers_of("nowhere") == []


def test_scaffold_helpers(index: WorkspaceIndex) -> None:
    counts = dict(index.module_symbol_counts())
    assert counts["shop/inventory.py"] == len(index.symbols_in("shop/inventory.py"))
    assert "shop/refunds.py" not in counts
    central = index.central_symbols(3)
    assert len(central) == 3 and "shop.inventory.Product" in central
    assert index.imports_of("shop/billing/__init__.py") == [
        ("Invoice", "shop.billing.invoice.Invoice"),
        ("calculate_invoice_total", "shop.billing.invoice.calculate_invoice_total"),
    ]


# -- concurrency and persistence -----------------------------------------------------------


def test_reads_from_other_threads_during_refresh(ws: Path) -> None:
    for i in range(60):
        write(ws, f"gen/mod{i}.py", "".join(f"def func_{i}_{j}(x):\n    return x + {j}\n\n" for j in range(20)))
    errors: list[BaseException] = []
    with WorkspaceIndex(ws) as idx:
        done = threading.Event()

        def reader() -> None:
            try:
                while not done.is_set():
                    idx.search("invoice total")
                    idx.get("shop.inventory.Product")
                    time.sleep(0.001)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            stats = idx.refresh()
        finally:
            done.set()
            thread.join()
        assert errors == []
        assert stats.files_indexed == SAMPLE_FILES + 60
        assert idx.get("gen.mod59.func_59_19") is not None


def test_a_stopped_refresh_keeps_what_it_wrote_and_the_next_one_reads_the_rest(ws: Path, tmp_path: Path) -> None:
    n = BATCH_FILES + 50  # one whole batch is written before the stop
    for i in range(n):
        write(ws, f"gen/mod{i:03}.py", f"def func_{i}(x):\n    return x + {i}\n")
    db = tmp_path / "index.sqlite3"
    with WorkspaceIndex(ws, db_path=db) as idx:
        seen: list[str] = []

        def progress(done: int, total: int, rel: str) -> None:
            seen.append(rel)
            if done == BATCH_FILES + 10:
                idx.stop()  # as a server's shutdown does, from its own thread

        with pytest.raises(RefreshStopped, match="the index is closing"):
            idx.refresh(progress, processes=0)
        assert len(seen) == BATCH_FILES + 10  # it ended after the file it was on
        written = {r[0] for r in idx._reader().execute("SELECT rel FROM files")}
        assert len(written) == BATCH_FILES  # the batch in progress was not written: it is read again
    with WorkspaceIndex(ws, db_path=db) as again:
        stats = again.refresh(processes=0)
        assert stats.files_indexed == n + SAMPLE_FILES - len(written)
        assert again.get(f"gen.mod{n - 1:03}.func_{n - 1}") is not None
        assert again.get("gen.mod000.func_0") is not None


def test_two_index_objects_share_one_database(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    a = WorkspaceIndex(ws, db_path=db)
    b = WorkspaceIndex(ws, db_path=db)
    try:
        a.refresh()
        assert b.get("shop.inventory.Inventory") is not None
        a.update_file("shop/extra.py", b"def from_a(): pass\n")
        b.update_file("shop/other.py", b"def from_b(): pass\n")
        assert a.get("shop.other.from_b") is not None and b.get("shop.extra.from_a") is not None
        ids = [r[0] for r in sqlite3.connect(db).execute("SELECT id FROM symbols")]
        assert len(ids) == len(set(ids))
    finally:
        a.close()
        b.close()
    assert not (ws / ".ctx").exists()  # an explicit db_path puts nothing in the workspace


def test_closed_index_refuses_reads(ws: Path) -> None:
    idx = WorkspaceIndex(ws)
    idx.close()
    idx.close()  # idempotent
    with pytest.raises(RuntimeError):
        idx.search("invoice")


def test_a_term_in_half_the_symbols_is_not_matched_but_still_named(index: WorkspaceIndex) -> None:
    """``shop`` is in every symbol's path: FTS5's bm25 weighs it 1e-6, and scoring every row it is
    in would cost the most. It is left out of the match (alone, it is still asked) and ``matched``
    still names it."""
    conn = index._db.reader()
    rows = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    assert conn.execute("SELECT doc FROM symbols_vocab WHERE term = 'shop'").fetchone()[0] == rows
    with_it = index.search("shop reserve stock", limit=50)
    without = index.search("reserve stock", limit=50)
    assert [h.symbol.id for h in with_it] == [h.symbol.id for h in without]  # only what matches the rest
    assert all("path: shop" in h.matched for h in with_it)
    assert len(index.search("shop", limit=100)) == rows  # asked alone, it is matched


def test_each_symbols_body_header_is_counted_when_indexed(index: WorkspaceIndex, ws: Path) -> None:
    """A plan charges a body's header line from the index, not by counting it per plan."""
    count = counter_for(index.encoding).count
    symbols = index.iter_symbols()
    assert symbols and all(s.header_tokens == count(body_header(s)) for s in symbols)
    write(ws, "shop/added.py", "def a_new_function_with_a_longer_name(x):\n    return x\n")
    index.update_file("shop/added.py", None)
    new = index.get("shop.added.a_new_function_with_a_longer_name")
    assert new is not None and new.header_tokens == count(body_header(new))


def test_token_plan_counts_cards_and_headers_as_whole_texts() -> None:
    """Cards and headers are counted in pieces (the file's ``// path:``, a parent shared by its
    methods, once): the counts are those of the whole texts, in every language."""
    import random

    from ctx_lsp.workspace.index.prepare import prepare_file, token_plan

    count = counter_for("cl100k_base").count
    fixtures = Path(__file__).parent / "fixtures"
    files = [
        p for p in sorted(fixtures.rglob("*")) if p.is_file() and p.suffix in (".py", ".rs", ".ts", ".go", ".java")
    ]
    assert len({p.suffix for p in files}) == 5
    symbols = 0
    for path in files:
        work = prepare_file(path.relative_to(fixtures).as_posix(), path, path.stat().st_size, 0, None, None)
        if work.parsed is None:
            continue
        texts, assemble = token_plan(work.parsed)
        assert len(texts) == len(set(texts))  # each distinct piece counted once
        got = assemble([count(t) for t in texts])
        for sym, (card, _, header) in zip(work.parsed.symbols, got, strict=True):
            assert (card, header) == (count(sym.card), count(body_header(sym))), sym.qualname
            symbols += 1
    assert symbols > 50
    # and every cut the plan may make is one each encoding makes too, whatever surrounds it
    from ctx_lsp.workspace.index.prepare import _safe_cut

    rng = random.Random(5)
    alphabet = "ab:Z9_. ·'\n\t/-é0(){}<>,x"
    cuts = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 14)))
        for k in range(1, len(text)):
            if _safe_cut(text, k):
                cuts += 1
                assert count(text) == count(text[:k]) + count(text[k:]), (text, k)
    assert cuts > 3000


def test_count_batch_counts_as_count_does() -> None:
    counter = counter_for("cl100k_base")
    texts = ["", "x", "def f(x):\n    return x\n" * 40, "lone \ud800 surrogate", "é" * 10, "}\n"]
    assert counter.count_batch(texts) == [counter.count(t) for t in texts]


def test_a_long_request_is_searched_for_its_names_title_and_strongest_terms() -> None:
    from ctx_lsp.workspace.index import terms

    prose = " ".join(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(150))
    query = f"Totals wrong for refunds\n{prose}\nCalls `refund_invoice`, tax_for() and fd::exec::run"
    words = query_term_words(query)
    assert len(words) > 2 * terms.LONG_REQUEST_TERMS  # every term is read: no cap in reading order
    rows = {t: 1 + i % 40 for i, t in enumerate(words)}  # how many symbols hold each term
    rows["wordzz"] = 0  # a term no symbol holds is never searched
    names = terms.name_terms(query)
    assert {"refundinvoic", "taxfor", "fd", "exec", "run"} <= names
    chosen = terms.strongest(words, names, rows)
    assert {"refundinvoic", "taxfor", "exec"} <= set(chosen)  # every name the request writes as code
    assert list(chosen)[:3] == ["total", "wrong", "refund"]  # the title's and the opening's terms
    assert set(list(words)[: terms.LEADING_TERMS]) <= set(chosen) and "wordzz" not in chosen
    others = [t for t in chosen if t not in list(words)[: terms.LEADING_TERMS] and t not in names]
    assert len(chosen) - len(names & set(chosen)) == terms.MAX_QUERY_TERMS  # bounded, names besides
    # the rest: the strongest by inverse frequency (the fewest rows hold them)
    assert max(rows[t] for t in others) <= min(rows[t] for t in words if t not in chosen and rows[t] > 0)
    searched, scored = terms.weighted_terms(query, words, rows)
    assert searched == chosen
    # a long request's title terms and names count twice
    assert scored.count("refund") == 2 and scored.count("refundinvoic") == 2 and scored.count("wordab") == 1
    # a question, a commit message: its first 32 terms in reading order, each once, as before
    short = "why are refund totals wrong? " + " ".join(f"word{chr(97 + i)}" for i in range(26)) + " zeta_fn()"
    every = query_term_words(short)
    assert terms.weighted_terms(short, every, {}) == (dict(list(every.items())[:32]), list(every)[:32])
