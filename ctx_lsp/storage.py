"""The store's files on disk (default ``.ctx/`` in the workspace root): the index cache and the
memory store. What is kept there is the user's alone: the folder is kept out of version control
and readable by its owner only, and a cache that cannot be read is moved aside, never trusted.

Nothing here imports the rest of ctx_lsp: the index and the memory store both use it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

DEFAULT_DIR = ".ctx"
GITIGNORE = "# ctx_lsp's store: conversations, pins and an index cache. Never commit it.\n*\n"
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def prepare_dir(path: Path) -> None:
    """Create the store folder (owner-only) with a ``.gitignore`` of ``*``, so that ``git add -A``
    never stages the conversation store. Only a folder made here, or one named ``.ctx`` (made by
    an earlier version), gets the ``.gitignore``: a ``storeDir`` that is some existing folder —
    the workspace itself, say — must not be hidden from git."""
    created = not path.is_dir()
    if created:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    ignore = path / ".gitignore"
    if not (created or path.name == DEFAULT_DIR) or ignore.exists() or ignore.is_symlink():
        return
    with contextlib.suppress(OSError):  # a read-only folder: the store itself reports what fails
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(GITIGNORE)


def private_file(path: Path) -> None:
    """Make sure the database file exists readable by its owner only, before SQLite opens it
    (SQLite gives its WAL and shared-memory files the same permissions)."""
    prepare_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    with contextlib.suppress(OSError):  # stores made by earlier versions were 0644
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o600)


def move_aside(path: Path) -> Path:
    """Rename a database (and its WAL / journal files) to ``<name>.corrupt-<time>``; returns the
    new path. Used for the index cache only: the memory store is never moved without the user."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    for suffix in SQLITE_SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def is_corruption(err: BaseException) -> bool:
    """Whether an SQLite error says the file itself is unusable (not busy, not locked)."""
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
