"""What ``index_speed.py`` compares the index with: the parse floor (``ast.parse`` of the same
files, in one process and in a pool of two) and where the bytes of the database go, table by
table. Kept apart from the timing script so that each stays readable."""

from __future__ import annotations

import ast
import gc
import multiprocessing
import sqlite3
import statistics
import time
from collections.abc import Sequence
from pathlib import Path


def median_p95(values: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1))
    return statistics.median(ordered), ordered[rank]


def _parse_one(path: str) -> int:
    """Read and parse one file, dropping the tree at once; 0 when it does not parse."""
    try:
        data = Path(path).read_bytes()
        ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return 0
    return 1


def _pool_init() -> None:
    gc.disable()  # as the indexer's workers do: an AST is acyclic, the collector only re-walks it


def ast_floor(paths: Sequence[Path], processes: int) -> float:
    """Seconds to read and ``ast.parse`` every file (GC off, as the indexer parses): in this
    process (``processes`` ≤ 1) or in a pool of that many, pool start included. What no
    indexer built on ``ast`` can beat."""
    names = [str(p) for p in paths]
    t0 = time.perf_counter()
    if processes <= 1:
        was = gc.isenabled()
        gc.disable()
        try:
            for name in names:
                _parse_one(name)
        finally:
            if was:
                gc.enable()
    else:
        with multiprocessing.get_context("spawn").Pool(processes, initializer=_pool_init) as pool:
            for _ in pool.imap_unordered(_parse_one, names, chunksize=4):
                pass
    return time.perf_counter() - t0


def table_sizes(db: Path) -> list[tuple[str, int]]:
    """Bytes on disk per table and index (its pages), biggest first; from SQLite's ``dbstat``
    table when it is compiled in, else every object is charged its share by page count
    (``pragma page_count`` minus the free list, split evenly) and listed as one row."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        try:
            rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC, 1").fetchall()
            return [(name, int(size)) for name, size in rows]
        except sqlite3.OperationalError:  # no dbstat in this build of SQLite
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            used = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
            return [("(all tables; dbstat unavailable)", page * used)]
    finally:
        conn.close()


def files_size(db: Path) -> dict[str, int]:
    """Bytes of the database file and of its WAL and shared-memory files, as they are now."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(db) + suffix)
        out[suffix or "db"] = path.stat().st_size if path.exists() else 0
    return out
