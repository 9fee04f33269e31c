"""How the index stores what it knows (schema 8): an older index rebuilt cleanly, big texts
packed and read back exactly, the reference graph by integer ids with nothing left behind, and a
cold build that leaves no big write-ahead log."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from ctx_lsp.core.tokens import FALLBACK_ENCODING, counter_for
from ctx_lsp.workspace.index import BATCH_FILES, SCHEMA_VERSION, WorkspaceIndex, masking_key, texts
from ctx_lsp.workspace.parse import parse_module
from ctx_lsp.workspace.secrets import DEFAULT_MASKER
from tests.workspaces import copy_sample

# Schema 7 as it was released (the reference graph by strings, raw identifiers, plain texts).
SCHEMA_7 = """
CREATE TABLE index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(rel TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, error TEXT);
CREATE TABLE symbols(id INTEGER PRIMARY KEY, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL, end_col INTEGER NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, decorators TEXT NOT NULL, parent TEXT NOT NULL,
    identifiers TEXT NOT NULL, card TEXT NOT NULL, body TEXT NOT NULL,
    card_tokens INTEGER NOT NULL, body_tokens INTEGER NOT NULL, secrets INTEGER NOT NULL DEFAULT 0);
CREATE INDEX symbols_path ON symbols(path, start_line);
CREATE TABLE imports(path TEXT NOT NULL, local_name TEXT NOT NULL, target TEXT NOT NULL);
CREATE TABLE edges(path TEXT NOT NULL, src TEXT NOT NULL, target TEXT NOT NULL, weight INTEGER NOT NULL,
    PRIMARY KEY (path, src, target)) WITHOUT ROWID;
CREATE INDEX edges_src ON edges(src);
CREATE INDEX edges_target ON edges(target);
CREATE TABLE targets(target TEXT PRIMARY KEY, dst TEXT) WITHOUT ROWID;
CREATE INDEX targets_dst ON targets(dst);
CREATE TABLE centrality(qualname TEXT PRIMARY KEY, rank REAL NOT NULL, pct REAL NOT NULL,
    degree INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE symbols_fts USING fts5(qualname_terms, signature, docstring, identifiers, path_terms,
    tokenize = 'unicode61 remove_diacritics 2');
"""


def _schema_7_index(db: Path) -> None:
    """A schema-7 index with a file, a symbol, an edge and its resolution, as schema 7 wrote them."""
    conn = sqlite3.connect(db)
    with conn:
        conn.executescript(SCHEMA_7)
        meta = {
            "schema": "7",
            "encoding": counter_for(FALLBACK_ENCODING).encoding,
            "secrets": masking_key(DEFAULT_MASKER),
        }
        conn.executemany("INSERT INTO index_meta VALUES (?, ?)", meta.items())
        conn.execute("INSERT INTO files VALUES ('old.py', 10, 1, 'ab', NULL)")
        conn.execute(
            "INSERT INTO symbols VALUES (1, 'old.gone', 'gone', 'function', 'old.py', 0, 1, 0, 8, 'def gone()', '', "
            "'[]', 'old', 'gone', '# old.py:1-2', 'def gone(): pass', 5, 5, 0)"
        )
        conn.execute("INSERT INTO edges VALUES ('old.py', 'old.gone', 'shop.core.thing', 1)")
        conn.execute("INSERT INTO targets VALUES ('shop.core.thing', NULL)")
        conn.execute("INSERT INTO symbols_fts(rowid, qualname_terms) VALUES (1, 'gone')")
    conn.close()


def test_a_schema_7_index_is_emptied_and_built_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = tmp_path / "ws"
    copy_sample(ws)
    db = tmp_path / "index.sqlite3"
    _schema_7_index(db)
    with caplog.at_level(logging.INFO, logger="ctx_lsp.index"), WorkspaceIndex(ws, db_path=db) as idx:
        assert idx.stats().symbols == 0 and idx.get("old.gone") is None  # the old rows are gone
        stats = idx.refresh()
        assert stats.files_indexed > 0 and not stats.errors[1:]  # refunds.py has its syntax error
        assert idx.search("invoice total")  # searchable, and the graph works on the new tables
        assert idx.neighbours(["shop.billing.invoice.calculate_invoice_total"])
        conn = idx._reader()
        assert conn.execute("SELECT value FROM index_meta WHERE key = 'schema'").fetchone()[0] == SCHEMA_VERSION
        columns = {r[1] for r in conn.execute("PRAGMA table_info(edges)")}
        assert columns == {"src", "target", "weight"}
    assert any(
        f"schema 7 → {SCHEMA_VERSION}" in r.getMessage() and "built again" in r.getMessage() for r in caplog.records
    )


def test_an_index_made_by_other_parsers_is_built_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from ctx_lsp.workspace.languages import PARSER_VERSION
    from tests.workspaces import copy_poly

    ws = copy_poly(tmp_path / "ws")
    db = tmp_path / "index.sqlite3"
    with WorkspaceIndex(ws, db_path=db) as idx:
        assert idx.refresh(processes=0).files_indexed > 10
    conn = sqlite3.connect(db)
    with conn:  # as a build whose Rust description named symbols otherwise would have left it
        conn.execute("UPDATE index_meta SET value = 'older' WHERE key = 'parsers'")
        conn.execute("UPDATE symbols SET qualname = 'stale::name' WHERE path = 'src/error.rs'")
    conn.close()
    with caplog.at_level(logging.INFO, logger="ctx_lsp.index"), WorkspaceIndex(ws, db_path=db) as idx:
        assert idx.refresh(processes=0).files_indexed > 10  # every file parsed again, not stat-checked
        assert idx.get("stale::name") is None and idx.get("ledger_core::error::Chain::next") is not None
    assert any(f"parsers older → {PARSER_VERSION}" in r.getMessage() for r in caplog.records)


def test_big_texts_are_packed_and_read_back_exactly(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    # A docstring may hold any character through its escapes, NUL and a lone surrogate included.
    big = "\n".join(f"    total_{i} = price_{i} * quantity_{i}  # line {i}" for i in range(60))
    source = (
        "def small():\n    return 1\n\n\n"
        f'def big_function(price, quantity):\n    """Sums up.\\x00 and \\ud800 too."""\n{big}\n    return total_0\n'
    )
    (ws / "mod.py").write_text(source, encoding="utf-8")
    with WorkspaceIndex(ws, masker=None) as idx:
        idx.refresh()
        parsed = {s.qualname: s for s in parse_module("mod.py", source.encode()).symbols}
        packed = dict(idx._reader().execute("SELECT qualname, packed IS NOT NULL FROM symbols"))
        assert packed == {"mod": False, "mod.small": False, "mod.big_function": True}
        for qualname, want in parsed.items():
            got = idx.get(qualname)
            assert got is not None
            assert (got.card, got.docstring, got.body) == (want.card, want.docstring, want.body)
            assert got.identifiers == ""  # only their search terms are stored
        assert "\x00" in parsed["mod.big_function"].docstring
        assert idx.search("quantity")[0].symbol.qualname == "mod.big_function"


def test_pack_round_trip_and_threshold() -> None:
    assert texts.pack("card", "doc", "body") is None  # short texts are stored as they are
    card, doc, body = "# c\n" * 100, "a\x00b\ud800", "x = 1\n" * 300
    assert texts.unpack(texts.pack(card, doc, body) or b"") == (card, doc, body)
    assert texts.unpack(texts.pack("", "", "y" * texts.PACK_MIN_CHARS) or b"") == ("", "", "y" * texts.PACK_MIN_CHARS)


def test_edges_follow_their_symbols_and_unused_names_go(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    copy_sample(ws)
    with WorkspaceIndex(ws) as idx:
        idx.refresh()
        conn = idx._reader()
        edges = "SELECT count(*) FROM edges"
        before = conn.execute(edges).fetchone()[0]
        assert before > 0
        rel = "shop/billing/invoice.py"
        idx.update_file(rel, b"def only():\n    return 1\n")  # its references are gone
        idx.update_graph()
        assert conn.execute(edges).fetchone()[0] < before
        orphans = "SELECT count(*) FROM edges e LEFT JOIN symbols s ON s.id = e.src WHERE s.id IS NULL"
        assert conn.execute(orphans).fetchone()[0] == 0
        unused = "SELECT count(*) FROM targets t WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.target = t.id)"
        assert conn.execute(unused).fetchone()[0] == 0
        unresolved = "SELECT count(*) FROM targets WHERE resolved = 0"
        assert conn.execute(unresolved).fetchone()[0] == 0


def test_a_cold_build_leaves_no_big_write_ahead_log(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(BATCH_FILES + 20):  # a bulk build: more files than one batch
        path = ws / f"pkg{i % 7}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n\ndef handler_{i}(value):\n    return value * {i}\n', encoding="utf-8")
    db = tmp_path / "index.sqlite3"
    with WorkspaceIndex(ws, db_path=db) as idx:
        assert idx.refresh(processes=0).files_indexed == BATCH_FILES + 20
        wal = Path(f"{db}-wal")
        # still open (a server keeps it open): the log was folded into the database and truncated
        assert not wal.exists() or wal.stat().st_size == 0
        assert idx.search("handler_7")[0].symbol.name == "handler_7"


def test_a_docstring_with_a_lone_surrogate_escape_is_stored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text('def f():\n    """a \\ud800 b"""\n    return 1\n', encoding="utf-8")
    with WorkspaceIndex(ws) as idx:
        assert idx.refresh().files_indexed == 1  # schema 7 stopped the whole refresh here
        sym = idx.get("m.f")
        assert sym is not None and sym.docstring == "a \ufffd b"


def test_unpacked_texts_are_cached_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    texts.clear_cache()
    monkeypatch.setattr(texts, "CACHE_CHARS", 5 * texts.PACK_MIN_CHARS)
    values = [texts.pack(f"card {i}\n", "", f"body_{i} = 1\n" * 200) or b"" for i in range(8)]
    first = [texts.unpack(v) for v in values]
    again = [texts.unpack(v) for v in values]
    assert again == first  # the same texts, cached or not
    assert texts.unpack(values[-1]) is again[-1]  # a recent one comes from the cache
    assert sum(len("".join(t)) for t in texts._cache.values()) <= texts.CACHE_CHARS
    assert values[0] not in texts._cache  # the least recent went first
    texts.clear_cache()


@pytest.mark.parametrize("long_texts", [False, True], ids=["plain", "packed"])
def test_a_symbol_row_reads_back_every_field_as_it_was_written(long_texts: bool) -> None:
    """``row_symbol`` names the columns one by one: each field gets a value no other field has,
    so a column read into the wrong field shows."""
    from ctx_lsp.workspace.index.db import IndexedSymbol, row_symbol, symbol_row
    from ctx_lsp.workspace.parse import Symbol

    filler = "x" * 2000 if long_texts else ""
    sym = Symbol(
        qualname="pkg.mod.Cls.method",
        name="method",
        kind="method",
        path="pkg/mod.py",
        start_line=11,
        end_line=22,
        start_col=4,
        end_col=33,
        signature="def method(self, a)",
        docstring="The docstring." + filler,
        decorators=("staticmethod", "cache"),
        parent="pkg.mod.Cls",
        identifiers="",  # never stored
        body="    def method(self, a):\n        return a\n" + filler,
        card="# pkg/mod.py:12-23\ndef method(self, a)" + filler,
        secrets=2,
    )
    packed = texts.pack(sym.card, sym.docstring, sym.body)
    assert (packed is not None) == long_texts
    back = row_symbol(symbol_row(sym, 7, (101, 202, 303), packed))
    fields = {f: getattr(sym, f) for f in Symbol.__struct_fields__}
    expected = IndexedSymbol(**fields, id=7, card_tokens=101, body_tokens=202, header_tokens=303)
    assert back == expected
