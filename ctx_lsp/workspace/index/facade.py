"""``WorkspaceIndex``: the one object the rest of ctx_lsp uses, and the table of contents of
the index. Each method hands its ``IndexDb`` to the module that does the work (``build``,
``updates``, ``refgraph``, ``search``, ``names``, ``lookups``); the contracts are written here.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from ctx_lsp.core.tokens import FALLBACK_ENCODING, quick_counter
from ctx_lsp.workspace.index import apart as apart_work
from ctx_lsp.workspace.index import build, lookups, memo, names, refgraph, search, updates
from ctx_lsp.workspace.index.build import IndexStats
from ctx_lsp.workspace.index.db import IndexDb, IndexedSymbol
from ctx_lsp.workspace.index.lookups import IndexSummary
from ctx_lsp.workspace.index.names import NameLookup
from ctx_lsp.workspace.index.search import SearchHit
from ctx_lsp.workspace.languages.gomod import workspace_modules
from ctx_lsp.workspace.languages.specifiers import workspace_packages
from ctx_lsp.workspace.secrets import DEFAULT_MASKER, SecretMasker

log = logging.getLogger("ctx_lsp.index")

# On sympy (40.7k symbols) an update takes ~0.9 s and peaks ~50 MB above the server; on a
# Rust tree of 139k, 3 s and ~380 MB. A child costs ~0.5 s of CPU to start.
GRAPH_APART_MIN_SYMBOLS = 20_000


class WorkspaceIndex:
    """Symbols of one workspace, persisted in SQLite and searchable with BM25.

    Thread-safe: writes are serialised by a lock on one connection; reads use one connection
    per thread (WAL lets them run while a refresh writes). Two processes may share the file.
    """

    def __init__(
        self,
        root: Path,
        db_path: Path | None = None,
        encoding: str = FALLBACK_ENCODING,
        masker: SecretMasker | None = DEFAULT_MASKER,
    ) -> None:
        """``masker`` masks secrets in every file before it is parsed (None: no masking). The
        database defaults to ``<root>/.ctx/index.sqlite3``; one that cannot be read is moved
        aside and rebuilt (``take_recovered`` says so)."""
        self._db = db = IndexDb(root, db_path, encoding, masker)
        self._building = threading.Lock()  # ``prepare_search``
        self.root = db.root
        self.db_path = db.db_path
        self.encoding = encoding

    @property
    def masker(self) -> SecretMasker | None:
        """How secrets are masked in what the index stores (None: not at all)."""
        return self._db.masker

    # The connections, for tests that look at the stored rows.
    @property
    def _conn(self) -> sqlite3.Connection:
        return self._db.conn

    def _reader(self) -> sqlite3.Connection:
        return self._db.reader()

    # -- lifecycle -------------------------------------------------------------------------

    def take_recovered(self) -> str | None:
        """The message about a cache that was found unreadable and rebuilt (once)."""
        return self._db.take_recovered()

    def set_masker(self, masker: SecretMasker | None) -> bool:
        """Mask secrets with ``masker`` from now on. When it masks differently from the one the
        rows were made with, the index is emptied (a refresh rebuilds it): no text masked the
        old way, or not at all, stays visible. Returns whether it was emptied."""
        return self._db.set_masker(masker)

    def stop(self) -> None:
        """Make a refresh in progress, on any thread, end after the file it is on (raising
        ``RefreshStopped``), so that the index can be closed soon: what it wrote stays, and the
        files it did not reach are read by the next refresh."""
        self._db.stopping.set()

    def close(self) -> None:
        """Close every connection. The index can not be used afterwards: call it only when no
        other thread is using the index (``stop`` first, and wait for that thread)."""
        self._db.close()

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing --------------------------------------------------------------------------

    def refresh(
        self,
        progress: Callable[[int, int, str], None] | None = None,
        *,
        processes: int | None = None,
        apart: bool = False,
    ) -> IndexStats:
        """Bring the index in line with the files on disk.

        Unchanged files (same size and mtime) are not read; changed ones are hashed and only
        re-parsed when the content differs; files gone from disk lose their rows. A file with
        a syntax error keeps its last good symbols and records the error. ``progress`` is
        called as ``(done, total, rel)`` over the files that need reading. A cache found
        unreadable on the way is moved aside and built again.

        ``processes``: parse in a pool of that many processes (0 or 1: in this process). By
        default a pool of 2 is used for a large refresh when a core is free. ``apart``: a large
        refresh (a cold index) runs in a process of its own, so that a long-running face does
        not keep what indexing leaves behind in memory (``build._refresh_apart``).
        """
        return build.refresh(self._db, progress, processes=processes, apart=apart)

    def update_file(self, rel: str, source: bytes | None) -> bool:
        """Re-index one file from ``source`` (e.g. an unsaved buffer) or, when None, from disk.

        Returns whether the file's symbols changed. A syntax error keeps the old symbols and
        returns False; a file missing from disk (``source`` None) is removed, and so is one the
        walk would leave out (ignored, outside the root after symlinks, too large). The file's disk
        size and mtime are recorded, so a later ``refresh`` leaves these symbols alone until
        the file changes on disk. Search's postings, when kept, follow at once, in this thread
        (the faces' indexer), not in the next plan's.
        """
        changed = updates.update_file(self._db, rel, source)
        search.follow(self._db)
        return changed

    def remove_file(self, rel: str) -> bool:
        """Drop a file and its symbols; returns whether it had any."""
        had = updates.remove_file(self._db, rel)
        search.follow(self._db)
        return had

    # -- the reference graph ---------------------------------------------------------------

    def graph_dirty(self) -> bool:
        """Whether symbols or references changed since the centrality was last computed."""
        return self._db.graph_dirty()

    def update_graph(self, *, apart: bool = False) -> float:
        """Resolve every reference against the whole workspace and recompute centrality
        (PageRank over the def→ref graph, warm-started from the previous ranks). Returns the
        seconds it took. Reads run on a snapshot without holding the write lock; a write that
        lands meanwhile leaves the graph marked dirty for the next call. Search's postings, when
        kept, are built again here once enough changed since their build, or when a search
        found too much changed to follow (``postings``): the watch loop calls this when edits
        pause, off the request path.

        ``apart``: on an index of GRAPH_APART_MIN_SYMBOLS symbols or more, the update runs in a
        process of its own (``apart``), so that a long-running face neither keeps its peak nor
        waits for the GIL meanwhile; if that process fails, here."""
        seconds = None
        if apart and self.counts()[1] >= GRAPH_APART_MIN_SYMBOLS:
            try:
                seconds = apart_work.update_graph(self._db)
            except apart_work.ApartFailed as err:
                log.warning("the graph update in a process of its own failed (%s): updating here instead", err)
        if seconds is None:
            seconds = refgraph.update_graph(self._db)
        kept = self._db.postings
        if self._db.postings_wanted or (kept is not None and kept.worn()):
            from ctx_lsp.workspace.index import postings

            del kept

            with self._building:
                # One copy at a time (searches use SQLite meanwhile): on the Rust tree, a build
                # beside the old postings took a server from 270 to 650 MB.
                self._db.postings = None
                self._db.postings_wanted = False
                postings.give_back()  # the old copy's memory, before the new one is built
                self._db.postings = postings.load(self._db.reader())
        return seconds

    def edge_count(self) -> int:
        """Resolved def→ref edges as of the last ``update_graph``."""
        return self._db.edge_count()

    def central_symbols(self, n: int = 10, kinds: Iterable[str] = ("class", "function", "method")) -> list[str]:
        """The ``n`` most central definitions (PageRank over the def→ref graph, computed at
        index time); ties by name, so the answer is deterministic. Before the graph exists,
        the names imported by the most files stand in."""
        return refgraph.central_symbols(self._db, n, kinds)

    def centrality(self, qualnames: Iterable[str]) -> dict[str, float]:
        """Centrality percentile (0–1, 1 = the most central) of each given symbol that has
        one (symbols no reference touches are absent)."""
        return lookups.centrality(self._db, qualnames)

    def node_stats(self, qualnames: Iterable[str]) -> dict[str, tuple[float, int]]:
        """``(centrality percentile, degree)`` of each given symbol in the graph; degree is
        the number of distinct definitions it uses or is used by."""
        return refgraph.node_stats(self._db, qualnames)

    def neighbours(self, seeds: Iterable[str], per_seed: int = 16) -> list[tuple[str, str, str, int]]:
        """Graph neighbours of each seed: ``(seed, neighbour, relation, weight)`` where
        relation is ``"calls"`` (the seed's text names the neighbour) or ``"called by"``, and
        weight the number of mentions; the ``per_seed`` heaviest each way."""
        return refgraph.neighbours(self._db, seeds, per_seed)

    def file_neighbours(self, rel: str, limit: int = 24) -> list[tuple[str, str, int]]:
        """Definitions in other files that ``rel``'s code names (``"used by"`` the file) or
        whose code names ``rel``'s definitions (``"uses"`` it): ``(qualname, relation,
        weight)``, the ``limit`` heaviest each way."""
        return refgraph.file_neighbours(self._db, rel, limit)

    # -- search and names ------------------------------------------------------------------

    def search(self, query: str, limit: int = 200, kinds: set[str] | None = None) -> list[SearchHit]:
        """Symbols matching any term of ``query``, best first; ties by qualname, path, line. A
        hit carries the symbol's head (names, kind, place); ``symbols_by_id`` reads its texts.

        ``score`` weighs matches by field (name 10, signature 4, docstring 2, body
        identifiers 1, path 3), and a match on the symbol's own name counts twice.

        Any text is accepted: only identifier-like words are used, so quotes, parentheses
        and FTS operators in the query are inert. No usable terms → [].
        """
        return search.search(self._db, query, limit, kinds)

    def prepare_search(self) -> bool:
        """Build the in-memory postings that ``search`` scores with from now on (the same hits
        and scores as FTS5's, about ten times faster: ``postings``), and keep every symbol's
        node stats in memory. Takes about a second on 40k symbols, so long-running faces call
        it off the request path, after the start-up refresh; searches meanwhile use FTS5. Later
        changes to the index are followed by the reads themselves. Returns whether the
        postings are in use (not for a huge workspace)."""
        from ctx_lsp.workspace.index import postings  # numpy: only where postings are kept

        with self._building:  # one build at a time; writers go on meanwhile (it reads a snapshot)
            self._db.keep_tables = True
            if self._db.postings is None:
                self._db.postings = postings.load(self._db.reader())
        self.node_stats(())  # every symbol's, read now rather than by the next plan
        return self._db.postings is not None

    def resolve_name(self, name: str, from_rel: str | None = None) -> IndexedSymbol | None:
        """Find the symbol a (possibly dotted) name refers to.

        Order: exact qualname; then, from ``from_rel``, the file's own module and its imports
        (following re-exports through packages' ``__init__``); then a unique ``*.name`` suffix.
        """
        return names.resolve_name(self._db, name, from_rel)

    def lookup(self, name: str, from_rel: str | None = None) -> NameLookup:
        """``resolve_name``, with what to say when it finds nothing: for a short name that
        several symbols end with (``apply``), those candidates, most central first; for an
        unknown name, close qualified names (a different case, a typo, the same words).
        ``NameLookup.problem()`` says it in a sentence a person or an agent can act on."""
        return names.lookup_name(self._db, name, from_rel)

    def bound_by_package(self, module: IndexedSymbol) -> IndexedSymbol | None:
        """What a Python module's dotted name means when its package's ``__init__`` imports a
        name of the module's name over it (``from .m import m``): that object (``names``)."""
        return names.bound_by_package(self._db, module)

    def imports_of(self, rel: str) -> list[tuple[str, str]]:
        """``(local_name, target_qualname)`` pairs of one file."""
        return names.imports_of(self._db, rel)

    def importers_of(self, module: str) -> list[str]:
        """Modules (qualnames, sorted) that import ``module`` or anything inside it
        (``import m``, ``from m import x``, ``from m import *``, relative forms included)."""
        return names.importers_of(self._db, module)

    # -- stored symbols --------------------------------------------------------------------

    def get_all(self, qualname: str) -> list[IndexedSymbol]:
        """Every symbol with this qualname (overloads, property setters, redefinitions)."""
        return lookups.get_all(self._db, qualname)

    def get(self, qualname: str, path: str | None = None, line: int | None = None) -> IndexedSymbol | None:
        """The symbol with this qualname; of several, the first that is not an ``@overload`` stub,
        in ``path`` when that file has one (one name in several files: each C program's ``main``),
        nearest ``line`` there (one name for a type and a value: TypeScript's ``interface X`` and
        ``const X``)."""
        return lookups.get(self._db, qualname, path, line)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the index's encoding (its symbols' texts were counted so), by
        rs-bpe where it has the encoding (``tokens.quick_counter``): a plan for a request that
        points at code counts a thin card per ranked symbol, ~200."""
        return quick_counter(self._db.counter.encoding)(text)

    def code_of(self, sym: lookups.Row) -> lookups.Row | IndexedSymbol | None:
        """The code a C++ header's declaration (kept for its doc) stands for; ``sym`` when it is
        code, None when its code is not indexed (``lookups.code_of``)."""
        return lookups.code_of(self._db, sym)

    def get_many(self, qualnames: Iterable[str]) -> dict[str, IndexedSymbol]:
        """``get`` for many names in one query (overload stubs lose to the implementation)."""
        return lookups.get_many(self._db, qualnames)

    def symbols_by_id(self, ids: Iterable[int]) -> dict[int, IndexedSymbol]:
        """Stored symbols by row id (a search hit's ``symbol.id``), those that still exist."""
        return lookups.symbols_by_id(self._db, ids)

    def memo(self, name: str, limit: int = memo.MAX_ENTRIES, *, lasting: bool = False) -> dict:
        """A table for what callers make from the index's rows (the engine: prompt items), kept
        per thread and emptied when the database changes, or, ``lasting`` (keyed by row id), when
        the index is made again (see ``memo``)."""
        return memo.table(self._db, name, limit, lasting=lasting)

    def symbols_in(self, rel: str) -> list[IndexedSymbol]:
        """The symbols of one file in source order (the module symbol first)."""
        return lookups.symbols_in(self._db, rel)

    def files_matching(self, written: str, limit: int = 3) -> list[str]:
        """The indexed files a path written in a request means: the file itself, or the files
        whose path ends with what was written (``models.py``, ``app/models.py``), or that end an
        absolute path (``/home/me/proj/src/app/models.py``, a traceback's), two components at
        least unless all of one side matches; the longest match wins. More than ``limit`` equally
        good files: the path is ambiguous, [] ."""
        return lookups.files_matching(self._db, written, limit)

    def module_symbol(self, rel: str) -> IndexedSymbol | None:
        """The module symbol of an indexed file."""
        return lookups.module_symbol(self._db, rel)

    def symbol_at(self, rel: str, line: int, name: str | None = None) -> IndexedSymbol | None:
        """The innermost symbol of ``rel`` whose range contains the 0-based ``line``; given a
        ``name`` that symbol does not have, the symbol of ``rel`` with that name nearest the line."""
        return lookups.symbol_at(self._db, rel, line, name)

    def iter_symbols(self, kinds: Iterable[str] | None = None) -> list[IndexedSymbol]:
        """Every stored symbol (optionally of some kinds), ordered by path and line."""
        return lookups.iter_symbols(self._db, kinds)

    def module_symbol_counts(self) -> list[tuple[str, int]]:
        """``(path, number of symbols)`` per indexed file, by path (for the scaffold)."""
        return lookups.module_symbol_counts(self._db)

    def packages(self) -> dict[str, str]:
        """The workspace's own JavaScript/TypeScript packages and Go modules (name → folder) that
        imports by name reach (``languages.specifiers``, ``languages.gomod``)."""
        paths = [path for path, _ in self.module_symbol_counts()]
        found = {**workspace_packages(str(self._db.root), paths), **workspace_modules(str(self._db.root), paths)}
        return dict(sorted(found.items()))

    def counts(self) -> tuple[int, int, int]:
        """Files, symbols and resolved edges, counted now (cheap: see ``stats`` for the sums)."""
        return lookups.counts(self._db)

    def stats(self) -> IndexSummary:
        """Totals: files, symbols, files with errors, card tokens, tokens of all files (cached
        until the database changes)."""
        return lookups.stats(self._db)
