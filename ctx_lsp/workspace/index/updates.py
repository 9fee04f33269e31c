"""Incremental updates: one file re-indexed from an editor buffer or from disk, or removed.

A file the workspace walk would leave out (ignored, outside the root after symlinks, too large)
is removed from the index even when it is open in an editor. References into and out of the
file are re-resolved at once; centrality waits for ``refgraph.update_graph``.
"""

from __future__ import annotations

import hashlib
import operator

from ctx_lsp.workspace.files import BINARY, MAX_FILE_BYTES, PathRefused, WorkspaceWalker, read_bounded
from ctx_lsp.workspace.index import refgraph
from ctx_lsp.workspace.index.build import write
from ctx_lsp.workspace.index.db import SELECT_SYMBOLS, IndexDb, masking_key, normalise_rel, row_symbol
from ctx_lsp.workspace.index.prepare import FileWork, parse_source, token_plan

COUNT_CACHE_TEXTS = 4096  # texts whose token counts ``update_file`` remembers
# What ``update_file`` compares to say whether a file's symbols changed.
_change_key = operator.attrgetter(
    "qualname",
    "kind",
    "start_line",
    "end_line",
    "start_col",
    "end_col",
    "signature",
    "docstring",
    "parent",
    "card",
    "decorators",
    "body",
)


def update_file(db: IndexDb, rel: str, source: bytes | None) -> bool:
    """Re-index one file from ``source`` or, when None, from disk (see ``WorkspaceIndex.update_file``)."""
    rel = normalise_rel(rel)
    too_large = source is not None and len(source) > MAX_FILE_BYTES
    if too_large or WorkspaceWalker(db.root).excluded(rel) is not None:
        return remove_file(db, rel)  # the walk would leave it out: so does an open buffer
    path = db.root / rel
    try:
        st = path.stat()
        size, mtime_ns = st.st_size, st.st_mtime_ns
    except OSError:
        size, mtime_ns = -1, -1
    if source is None:
        try:
            source = read_bounded(path, MAX_FILE_BYTES, rel)
        except (OSError, PathRefused):
            return remove_file(db, rel)
    masker = db.masker
    work = FileWork(rel, size, mtime_ns, sha256=hashlib.sha256(source).hexdigest(), secrets=masking_key(masker))
    with db.lock:
        conn = db.conn
        prev = conn.execute("SELECT sha256, error FROM files WHERE rel = ?", (rel,)).fetchone()
        if prev is not None and prev[0] == work.sha256:
            conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE rel = ?", (size, mtime_ns, rel))
            return False
        old = [row_symbol(r) for r in conn.execute(f"{SELECT_SYMBOLS} WHERE s.path = ? ORDER BY s.id", (rel,))]
    if b"\x00" in source[:8192]:
        work.action, work.reason = "skip", BINARY
    else:
        parse_source(work, source, masker, str(db.root))
    if work.parsed is not None:
        _count_cached(db, work)
    write(db, [work], None)
    if work.action in ("replace", "skip"):
        new = [s.qualname for s in work.parsed.symbols] if work.parsed is not None else []
        refgraph.resolve_local(db, rel, {s.qualname for s in old}, set(new))
    if work.action != "replace":
        return work.action == "skip" and bool(old)
    assert work.parsed is not None
    return list(map(_change_key, old)) != list(map(_change_key, work.parsed.symbols))


def _count_cached(db: IndexDb, work: FileWork) -> None:
    """Token counts for one re-indexed file, reusing the counts of texts seen before: an
    edit changes one symbol, not the file's other bodies and cards."""
    assert work.parsed is not None
    texts, assemble = token_plan(work.parsed)
    cache = db.count_cache
    if len(cache) + len(texts) > COUNT_CACHE_TEXTS:
        cache.clear()
    count = db.counter.count
    counts = []
    for text in texts:
        n = cache.get(text)
        if n is None:
            n = cache[text] = count(text)
        counts.append(n)
    work.tokens = assemble(counts)


def remove_file(db: IndexDb, rel: str) -> bool:
    """Drop a file and its symbols; returns whether it had any."""
    rel = normalise_rel(rel)
    with db.lock:
        old = {r[0] for r in db.conn.execute("SELECT qualname FROM symbols WHERE path = ?", (rel,))}
        write(db, [FileWork(rel, 0, 0, action="remove")], None)
        if old:
            refgraph.resolve_local(db, rel, old, set())
    return bool(old)
