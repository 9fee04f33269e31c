"""The fixture workspace, copied for a test: never the caches a run in place leaves behind.

`make run` and the README's examples plan on `tests/fixtures/sample_ws` itself, which leaves a
`.ctx/` store (and `__pycache__`) there; a test must start from the sources alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SAMPLE = Path(__file__).parent / "fixtures" / "sample_ws"
POLY = Path(__file__).parent / "fixtures" / "poly_ws"  # Rust, TS/JS, Go, Java, C/C++ and Python
_LEFT_BEHIND = shutil.ignore_patterns(".ctx", "__pycache__", ".ruff_cache", ".pytest_cache")


def copy_sample(dest: Path) -> Path:
    """A fresh copy of the sample workspace at ``dest``; returns ``dest``."""
    shutil.copytree(SAMPLE, dest, ignore=_LEFT_BEHIND)
    return dest


def copy_poly(dest: Path) -> Path:
    """A fresh copy of the polyglot workspace at ``dest``; returns ``dest``."""
    shutil.copytree(POLY, dest, ignore=_LEFT_BEHIND)
    return dest


def damage(db: Path, content: bytes) -> None:
    """Replace an SQLite file's bytes with ``content`` and drop its WAL and shared-memory files,
    so that what SQLite reads next is exactly the damage."""
    db.write_bytes(content)
    for side in ("-wal", "-shm"):
        db.with_name(db.name + side).unlink(missing_ok=True)


def make_index_again(ws: Path, db_path: Path | None = None) -> None:
    """What another process does when it opens the index with another schema: its tables are
    emptied and made again, and ids start over from 1 (under a new ``made`` token)."""
    from ctx_lsp.workspace.index import WorkspaceIndex

    other = WorkspaceIndex(ws, db_path=db_path)
    try:
        with other._db.lock:
            other._db.conn.execute("UPDATE index_meta SET value = 'older' WHERE key = 'schema'")
        other._db.init_schema()
        other.refresh(processes=0)
    finally:
        other.close()
