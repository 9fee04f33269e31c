"""What a long-running face keeps in memory gives what the SQL gives: the postings give FTS5's
search results exactly (hits, order, scores, ``matched``), and keep giving them while the index
changes (edits, removals, new files, another process writing, a refresh that changes most rows,
an index made again from nothing); every symbol's node stats follow graph updates."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ctx_lsp.workspace.index import WorkspaceIndex, postings, search
from tests.workspaces import copy_sample, make_index_again

WORDS = (
    "invoice",
    "total",
    "price",
    "round",
    "tax",
    "discount",
    "parse",
    "token",
    "stream",
    "buffer",
    "cache",
    "render",
    "node",
    "tree",
    "walk",
    "symbol",
    "index",
    "graph",
    "edge",
    "weight",
    "rank",
    "score",
    "budget",
    "plan",
    "window",
    "message",
    "reply",
    "session",
    "branch",
    "pin",
)
QUERIES = [
    "how is the invoice total calculated with tax?",
    "parse the token stream into a tree",
    "where is the cache of rendered nodes kept",
    "rank symbols by graph weight and score",
    "budget of the plan window for a session branch",
    "discount",
    "Inventory add_product",
    "round price",
]


def module_text(rng: random.Random, n: int, tag: str) -> str:
    out = []
    for j in range(n):
        a, b, c = rng.sample(WORDS, 3)
        doc = " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))
        body = "\n".join(
            f"    {rng.choice(WORDS)}_{k} = {rng.choice(WORDS)}(x) + {k}" for k in range(rng.randint(1, 6))
        )
        out.append(f'def {a}_{b}_{tag}{j}(x, {c}=None):\n    """{doc}."""\n{body}\n    return x\n')
        if j % 4 == 0:
            out.append(
                f'class {b.title()}{c.title()}{tag}{j}:\n    """{doc}"""\n\n    def {a}(self):\n        return {c}\n'
            )
    return "\n".join(out)


def generate(root: Path, rng: random.Random, files: int) -> None:
    copy_sample(root)
    for i in range(files):
        path = root / "gen" / f"m{i:03}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module_text(rng, 12, f"f{i}"), encoding="utf-8")


def in_sql(idx: WorkspaceIndex, query: str, limit: int = 60) -> list[search.SearchHit]:
    db = idx._db
    kept, db.postings = db.postings, None
    try:
        return search._search(db, query, limit, None)
    finally:
        db.postings = kept


def in_memory(idx: WorkspaceIndex, query: str, limit: int = 60) -> list[search.SearchHit]:
    assert idx._db.postings is not None
    return search._search(idx._db, query, limit, None)


def assert_same(idx: WorkspaceIndex, queries: list[str] = QUERIES) -> None:
    for q in queries:
        expected = in_sql(idx, q)
        assert expected, q
        assert in_memory(idx, q) == expected, q  # the same hits, order, scores (bit for bit), matched
    # and the heads they keep are the rows' heads, of the rows there are now, no more
    stored = {r[0]: search.SymbolHead(*r) for r in idx._db.reader().execute(search.SELECT_HEADS)}
    assert idx._db.postings is not None and idx._db.postings.all_heads() == stored


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    generate(root, random.Random(7), 120)  # large enough that a few edits are followed, not rebuilt
    return root


@pytest.fixture
def idx(ws: Path, tmp_path: Path):
    index = WorkspaceIndex(ws, db_path=tmp_path / "index.sqlite3")
    index.refresh(processes=0)
    assert index.prepare_search()
    yield index
    index.close()


def test_scores_and_matches_are_fts5s(idx: WorkspaceIndex) -> None:
    assert_same(idx)
    hit = in_memory(idx, "invoice total")[0]
    assert "name: invoice total" in hit.matched and hit.words == {"invoice", "total"}


def test_terms_in_half_the_rows_are_left_out_of_the_match_alike(idx: WorkspaceIndex) -> None:
    """``gen`` is in the path of most rows: both paths leave it out of the match (but not out
    of ``matched``), unless nothing else is asked."""
    db = idx._db
    assert db.postings is not None and db.postings.ubiquitous(["gen", "invoice"]) == {"gen"}
    assert search._ubiquitous(db, db.reader(), ["gen", "invoice", "gén"]) == {"gen", "gén"}
    assert_same(idx, ["gen invoice total", "gen", "gén invoice"])
    assert "path: gen" in in_memory(idx, "gen invoice total")[0].matched


def test_terms_with_diacritics_are_folded_as_fts5_folds_them(idx: WorkspaceIndex, ws: Path) -> None:
    text = 'def poincaré_map(x):\n    """The Lovász number and a poincare section."""\n    return x\n'
    (ws / "gen" / "accents.py").write_text(text, encoding="utf-8")
    idx.update_file("gen/accents.py", None)
    assert_same(idx, ["poincaré map", "poincare section", "Lovász number", "lovasz"])  # followed
    idx._db.postings = None
    assert idx.prepare_search()  # and built with the accented terms
    for q in ("poincaré map", "poincare", "Lovász number", "lovasz"):
        assert in_memory(idx, q)[0].symbol.qualname == "gen.accents.poincaré_map", q
    assert_same(idx, ["poincaré map", "poincare section", "Lovász number", "lovasz"])


def test_edits_removals_and_new_files_are_followed(idx: WorkspaceIndex, ws: Path) -> None:
    rng = random.Random(11)
    before = idx._db.postings
    for i in range(3):
        (ws / "gen" / f"m{i:03}.py").write_text(module_text(rng, 8, f"edit{i}"), encoding="utf-8")
        idx.update_file(f"gen/m{i:03}.py", None)
    idx.remove_file("gen/m010.py")
    (ws / "gen" / "fresh.py").write_text("def zanzibar_total(x):\n    '''Totals for zanzibar.'''\n    return x\n")
    idx.update_file("gen/fresh.py", None)
    assert_same(idx, [*QUERIES, "zanzibar"])
    assert idx._db.postings is before  # kept up to date, not built again
    assert in_memory(idx, "zanzibar")[0].symbol.qualname == "gen.fresh.zanzibar_total"
    # the same file edited twice: its first replacement goes too
    (ws / "gen" / "fresh.py").write_text("def zanzibar_sum(x):\n    return x\n")
    idx.update_file("gen/fresh.py", None)
    found = [h.symbol.qualname for h in in_memory(idx, "zanzibar")]
    assert found[0] == "gen.fresh.zanzibar_sum" and "gen.fresh.zanzibar_total" not in found
    assert_same(idx, [*QUERIES, "zanzibar"])


def test_a_save_is_followed_without_reading_every_id(
    idx: WorkspaceIndex, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save replaces one file's rows: those are found among that file's rows. A file removed
    (no new rows say where) has every id compared."""
    rng = random.Random(5)
    in_memory(idx, "invoice")
    read_all = postings._ids
    calls: list[int] = []
    monkeypatch.setattr(postings, "_ids", lambda conn: calls.append(1) or read_all(conn))
    for i in (4, 5):  # two files saved between two searches
        (ws / "gen" / f"m{i:03}.py").write_text(module_text(rng, 6, f"saved{i}"), encoding="utf-8")
        idx.update_file(f"gen/m{i:03}.py", None)
    assert_same(idx)
    assert calls == []
    idx.remove_file("gen/m006.py")
    (ws / "gen" / "m007.py").write_text(module_text(rng, 6, "saved7"), encoding="utf-8")
    idx.update_file("gen/m007.py", None)
    assert_same(idx)
    assert calls == [1]


def test_the_segments_of_many_saves_are_merged(idx: WorkspaceIndex, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each search after a save adds a segment of the saved rows; segments are merged as they
    come (a search looks in each), dropping the rows saved over since."""
    monkeypatch.setattr(postings, "REBUILD_SHARE", 1.0)  # followed all the way, never built again
    rng = random.Random(9)
    before = idx._db.postings
    for i in range(12):
        (ws / "gen" / f"m{i % 3:03}.py").write_text(module_text(rng, 2, f"saved{i}"), encoding="utf-8")
        idx.update_file(f"gen/m{i % 3:03}.py", None)
        assert_same(idx, QUERIES[:2])
    kept = idx._db.postings
    assert kept is before and kept is not None
    assert 1 <= len(kept.segments) <= 3
    live = sum(int(kept.alive[seg.rows].all()) for seg in kept.segments)
    assert live == len(kept.segments)  # what merging kept is only rows that are there
    assert_same(idx)


def test_the_arrays_follow_the_rows_not_the_ids_given(
    idx: WorkspaceIndex, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every save gives a file's rows new ids, and ids are never given twice: an index edited
    for a month has given millions of ids for the same rows. The postings' arrays (and each
    search's) are sized by the rows they hold, built and added since, not by the ids."""
    monkeypatch.setattr(postings, "GROW_ROWS", 8)
    rng = random.Random(13)
    for i in range(40):
        (ws / "gen" / "m000.py").write_text(module_text(rng, 12, f"again{i}"), encoding="utf-8")
        idx.update_file("gen/m000.py", None)
        if idx._db.postings is None:  # too much to follow: built again when edits pause
            idx.update_graph()
    kept = idx._db.postings
    assert kept is not None
    next_id = postings.state(idx._reader())[2]
    assert next_id > kept.n_rows + 600  # many more ids given than rows held
    rows_added = kept.size - kept.base_size
    assert kept.base_size <= kept.built_rows and rows_added <= postings.REBUILD_SHARE * kept.built_rows
    for array in (kept.ids, kept.alive, kept.length, kept.heads.path, kept.heads.held):
        assert len(array) <= kept.size + 8 + 40  # the room a save's rows grow them by
    assert len(kept.rows) == kept.starts[-1]  # the built pairs: no more than were built
    assert_same(idx)


def test_ids_are_never_given_twice(idx: WorkspaceIndex, ws: Path) -> None:
    """Deleting the file with the highest ids, then adding one, must not reuse them: the
    postings tell rows apart by id."""
    top = idx._reader().execute("SELECT path, max(id) FROM symbols").fetchone()
    idx.remove_file(top[0])
    (ws / "gen" / "later.py").write_text("def later_work(x):\n    return x\n")
    idx.update_file("gen/later.py", None)
    new_id = idx._reader().execute("SELECT min(id) FROM symbols WHERE path = 'gen/later.py'").fetchone()[0]
    assert new_id > top[1]
    assert_same(idx, [*QUERIES, "later work"])


def test_another_process_writing_is_followed(idx: WorkspaceIndex, ws: Path, tmp_path: Path) -> None:
    in_memory(idx, "invoice")  # the postings' state read before the other writer
    other = WorkspaceIndex(ws, db_path=tmp_path / "index.sqlite3")
    try:
        (ws / "gen" / "m005.py").write_text("def quokka_invoice(x):\n    '''Quokka invoices.'''\n    return x\n")
        other.update_file("gen/m005.py", None)
    finally:
        other.close()
    assert in_memory(idx, "quokka")[0].symbol.qualname == "gen.m005.quokka_invoice"
    assert_same(idx, [*QUERIES, "quokka invoice"])


def test_a_large_change_is_searched_in_sqlite_until_edits_pause(idx: WorkspaceIndex, ws: Path) -> None:
    """Too much changed to follow: the postings are dropped (searches give SQLite's answers
    meanwhile, never a build on the request path) and built again, once, when edits pause."""
    before = idx._db.postings
    rng = random.Random(5)
    for i in range(60):  # half the files
        (ws / "gen" / f"m{i:03}.py").write_text(module_text(rng, 12, f"new{i}"), encoding="utf-8")
    idx.refresh(processes=0)
    built = []
    load = postings.load
    with pytest.MonkeyPatch.context() as m:
        m.setattr(postings, "load", lambda conn: built.append(1) or load(conn))
        expected = in_sql(idx, "invoice total")
        assert search._search(idx._db, "invoice total", 60, None) == expected
        assert idx._db.postings is None and idx._db.postings_wanted and built == []
        assert idx.search("invoice total", limit=5) == expected[:5]  # and again: no build
        idx.update_graph()  # what the watch loop runs when edits pause
        assert built == [1] and not idx._db.postings_wanted
    assert idx._db.postings is not before and idx._db.postings is not None
    assert_same(idx)


def test_an_index_emptied_and_made_again_builds_them_again(idx: WorkspaceIndex, ws: Path) -> None:
    before = idx._db.postings
    in_memory(idx, "invoice")
    make_index_again(ws, idx.db_path)
    assert search._search(idx._db, "invoice", 60, None) == in_sql(idx, "invoice")
    assert idx._db.postings is None
    idx.update_graph()
    assert_same(idx)
    assert idx._db.postings is not before


def test_too_many_symbols_stay_with_fts5(idx: WorkspaceIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    idx._db.postings = None
    monkeypatch.setattr(postings, "MAX_ROWS", 10)
    assert not idx.prepare_search()
    assert idx.search("invoice total") == in_sql(idx, "invoice total", 200)


def test_searches_restricted_to_kinds_use_fts5(idx: WorkspaceIndex) -> None:
    hits = idx.search("invoice total", kinds={"class"})
    assert hits and {h.symbol.kind for h in hits} == {"class"}


def test_node_stats_kept_in_memory_follow_graph_updates(idx: WorkspaceIndex, ws: Path, tmp_path: Path) -> None:
    def from_sql(names: list[str]) -> dict:
        fresh = WorkspaceIndex(ws, db_path=tmp_path / "index.sqlite3")  # keeps nothing in memory
        try:
            return fresh.node_stats(names)
        finally:
            fresh.close()

    names = [s.qualname for s in idx.iter_symbols()]
    assert idx._db.graph_stats is not None  # read by prepare_search
    assert idx.node_stats(names) == from_sql(names) != {}
    callers = "".join(f"def caller_{i}(x):\n    return calculate_invoice_total(x)\n\n" for i in range(30))
    (ws / "shop" / "callers.py").write_text(f"from shop.billing.invoice import calculate_invoice_total\n\n{callers}")
    other = WorkspaceIndex(ws, db_path=tmp_path / "index.sqlite3")  # another process updates the graph
    try:
        other.update_file("shop/callers.py", None)
        other.update_graph()
    finally:
        other.close()
    names = [s.qualname for s in idx.iter_symbols()]
    assert idx.node_stats(names) == from_sql(names)
    assert "shop.callers.caller_7" in idx.node_stats(names)
    (ws / "shop" / "callers.py").unlink()
    idx.remove_file("shop/callers.py")
    idx.update_graph()  # in this process: handed over, not read back
    assert idx.node_stats(names) == from_sql(names) and "shop.callers.caller_7" not in idx.node_stats(names)


def test_a_failure_leaves_search_to_sqlite(idx: WorkspaceIndex, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    expected = in_sql(idx, "invoice total")

    def broken(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(postings.Postings, "top", broken)
    assert search._search(idx._db, "invoice total", 60, None) == expected
    assert idx._db.postings is None and "searches use SQLite from now on" in caplog.text


def test_a_quiet_graph_update_builds_worn_postings_again(idx: WorkspaceIndex, ws: Path) -> None:
    before = idx._db.postings
    rng = random.Random(3)
    for i in range(3):  # a few percent of the rows: followed by the searches, not rebuilt
        (ws / "gen" / f"m{i:03}.py").write_text(module_text(rng, 12, f"w{i}"), encoding="utf-8")
        idx.update_file(f"gen/m{i:03}.py", None)
    assert_same(idx)
    assert idx._db.postings is before and before.worn()
    idx.update_graph()  # what the watch loop runs when edits pause
    assert idx._db.postings is not before and not idx._db.postings.worn()
    assert_same(idx)
