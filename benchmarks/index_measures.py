"""What ``index_speed.py`` measures beside its timings: medians and p95, and where the bytes of
the database go, table by table (the parse floor it compares with is ``parse_floor.py``'s). Kept
apart from the timing script so that each stays readable."""

from __future__ import annotations

import sqlite3
import statistics
from collections.abc import Sequence
from pathlib import Path


def median_p95(values: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1))
    return statistics.median(ordered), ordered[rank]


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
