"""Large index work in a process of its own, on the same database file: a cold refresh
(``refresh``) and, on a large index, the reference graph's update (``update_graph``).

Why: what such work leaves behind in the process that ran it — freed parse and write buffers
the allocator keeps, the graph update's peak — stayed in a language server for its lifetime.
On sympy a server that indexed cold held ~75 MB more and peaked ~85 MB higher than one started
on the index made; on a Rust tree of 139k symbols one graph update after an edit took a server
from 270 to 650 MB and held its plans for 5 s (the update holds the GIL for its 3 s).

The child is spawned (a clean interpreter: the parent's threads and locks stay behind); its
progress and log records come back through a pipe, and ``stop`` goes to it through another.
When the child fails, the caller does the work in its own process instead (``ApartFailed``).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Literal

import msgspec

from ctx_lsp.workspace.index.db import IndexDb, RefreshStopped

Job = Literal["refresh", "graph"]


class ApartFailed(Exception):
    """The process of its own the work ran in ended without its result."""


def run(
    db: IndexDb,
    job: Job,
    progress: Callable[[int, int, str], None] | None = None,
    processes: int | None = None,
) -> bytes:
    """Run ``job`` in a spawned child on ``db``'s file; returns its result (msgpack: a refresh's
    ``IndexStats``, the graph update's seconds). Raises ``RefreshStopped`` when ``db`` was told to
    stop and the child stopped, ``ApartFailed`` when it failed or died."""
    spawn = multiprocessing.get_context("spawn")
    from_child, to_parent = spawn.Pipe(duplex=False)
    from_parent, to_child = spawn.Pipe(duplex=False)
    masker = db.masker
    masking = (masker.disabled, masker.allowlist) if masker is not None else None
    level = logging.getLogger("ctx_lsp").getEffectiveLevel()
    args = (job, str(db.root), str(db.db_path), db.encoding, masking, processes, level, to_parent, from_parent)
    child = spawn.Process(target=_child_main, args=args, name=f"ctx-index-{job}")
    child.start()
    to_parent.close()
    from_parent.close()
    result: bytes | None = None
    stop_sent = False
    try:
        while result is None:
            if db.stopping.is_set() and not stop_sent:
                to_child.send("stop")
                stop_sent = True
            if not from_child.poll(0.1):
                if not child.is_alive() and not from_child.poll():
                    raise ApartFailed(f"it exited with status {child.exitcode}")
                continue
            try:
                kind, *rest = from_child.recv()
            except EOFError:
                raise ApartFailed(f"it exited with status {child.join(5) or child.exitcode}") from None
            if kind == "progress" and progress is not None:
                progress(*rest)
            elif kind == "log":  # the child's log, in this process's
                name, level, message = rest
                logging.getLogger(name).log(level, "%s", message)
            elif kind == "done":
                result = rest[0]
            elif kind == "stopped":
                raise RefreshStopped(rest[0])
            elif kind == "failed":
                raise ApartFailed(rest[0])
    finally:
        child.join(10)
        if child.is_alive():
            child.terminate()
            child.join()
        from_child.close()
        to_child.close()
    return result


def update_graph(db: IndexDb) -> float:
    """``refgraph.update_graph`` in a child; the seconds it took, the child's start included."""
    t0 = time.perf_counter()
    run(db, "graph")
    return time.perf_counter() - t0


def _child_main(
    job: Job,
    root: str,
    db_path: str,
    encoding: str,
    masking: tuple[tuple[str, ...], tuple[str, ...]] | None,
    processes: int | None,
    level: int,
    to_parent: Connection,
    from_parent: Connection,
) -> None:
    """The child's side of ``run``: ("progress", done, total, rel) per file and ("log", logger,
    level, message) per log record, then ("done", result), ("stopped", why) or ("failed", why)."""
    from pathlib import Path

    from ctx_lsp.workspace.index import build, refgraph
    from ctx_lsp.workspace.secrets import SecretMasker

    lock = threading.Lock()  # the writer thread logs too: one message at a time on the pipe

    def send(*message: object) -> None:
        with lock:
            to_parent.send(message)

    class ToParent(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            with contextlib.suppress(Exception):
                send("log", record.name, record.levelno, record.getMessage())

    ours = logging.getLogger("ctx_lsp")
    ours.handlers[:] = [ToParent()]
    ours.setLevel(level)
    ours.propagate = False
    db = IndexDb(Path(root), Path(db_path), encoding, SecretMasker(*masking) if masking is not None else None)

    def watch() -> None:  # the parent asks it to stop, or is gone
        with contextlib.suppress(EOFError, OSError):
            from_parent.recv()
        db.stopping.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        if job == "refresh":
            stats = build._refresh(db, lambda *p: send("progress", *p), processes=processes)
            send("done", msgspec.msgpack.encode(stats))
        else:
            send("done", msgspec.msgpack.encode(refgraph.update_graph(db)))
    except RefreshStopped as err:
        send("stopped", str(err))
    except BaseException as err:  # told to the parent, which does the work in its own process instead
        with contextlib.suppress(OSError):
            send("failed", f"{type(err).__name__}: {err}")
    finally:
        db.close()
        to_parent.close()
