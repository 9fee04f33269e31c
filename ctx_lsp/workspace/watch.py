"""Keep the index current with the files on disk: a watchfiles loop.

Edits made outside the editor (``git checkout``, a formatter, another tool) arrive here within
a short debounce (≈50 ms); edits in the editor arrive as LSP document
events and keep priority — a file open in the editor is indexed from its buffer, so the loop
leaves it alone. Ignored like the walker ignores them: ``.git``, virtualenvs, ``node_modules``,
``__pycache__``, ``build``, ``dist``, ``.ctx`` and ``.gitignore``d paths.

Centrality is global (PageRank over the whole graph, ~1 s on sympy), so it is not recomputed
per change: the loop recomputes it once the workspace has been quiet for a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Protocol

from watchfiles import Change, awatch

from ctx_lsp.workspace.files import WorkspaceWalker, _Ignore, _ignored, _load_ignore
from ctx_lsp.workspace.languages import language_of

log = logging.getLogger(__name__)

DEBOUNCE_MS = 50  # the longest a batch of changes is held
STEP_MS = 10  # the quiet time that ends a batch
GRAPH_QUIET_S = 2.0  # recompute centrality once no change came for this long
IDLE_CHECK_MS = 1000  # how often an idle loop looks whether the graph needs an update


class IndexLike(Protocol):
    def update_file(self, rel: str, source: bytes | None) -> bool: ...

    def remove_file(self, rel: str) -> bool: ...

    def graph_dirty(self) -> bool: ...

    def update_graph(self, *, apart: bool = False) -> float: ...


class WatchFilter:
    """watchfiles filter: Python files outside the folders the walker prunes and outside
    ``.gitignore``d paths; ``.gitignore`` files themselves pass (the rules are re-read)."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        # "directory/ignore file" → (its mtime, parsed rules); directory "" is the root
        self._ignores: dict[str, tuple[int, _Ignore | None]] = {}

    def rel(self, path: str) -> str | None:
        real = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
        if real != self.root and not real.startswith(self.root + os.sep):
            return None
        return os.path.relpath(real, self.root).replace(os.sep, "/")

    def _ignore_for(self, directory: str, file: str = ".gitignore") -> _Ignore | None:
        """The rules of ``directory``'s ignore file, re-read only when it changes."""
        path = os.path.join(self.root, directory, file)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = -1
        key = f"{directory}/{file}"
        cached = self._ignores.get(key)
        if cached is None or cached[0] != mtime:
            cached = (mtime, _load_ignore(path, directory) if mtime >= 0 else None)
            self._ignores[key] = cached
        return cached[1]

    def __call__(self, change: Change, path: str) -> bool:
        rel = self.rel(path)
        if rel is None or rel == ".":
            return False
        parts = rel.split("/")
        if parts[-1] == ".gitignore":
            return True
        if language_of(parts[-1]) is None:
            return False
        ignores: list[_Ignore] = []
        info = self._ignore_for("", os.path.join(".git", "info", "exclude"))
        if info is not None:
            ignores.append(info)
        current = self.root
        for depth, name in enumerate(parts[:-1]):
            directory = "/".join(parts[:depth])
            ign = self._ignore_for(directory)
            if ign is not None:
                ignores.append(ign)
            current = os.path.join(current, name)
            if WorkspaceWalker._skip_dir_name(name, current):
                return False
            if any(os.path.exists(os.path.join(current, marker)) for marker in ("pyvenv.cfg", "conda-meta")):
                return False
            if ignores and _ignored(tuple(ignores), "/".join(parts[: depth + 1]), True):
                return False
        ign = self._ignore_for("/".join(parts[:-1]))
        if ign is not None:
            ignores.append(ign)
        return not (ignores and _ignored(tuple(ignores), rel, False))


def normalise(changes: set[tuple[Change, str]], filt: WatchFilter) -> list[tuple[str, str]]:
    """A batch as ``(kind, rel)`` pairs, ``kind`` "changed" or "deleted" by what is on disk
    now (a rename is its old path deleted and its new one changed), sorted by path."""
    out: dict[str, str] = {}
    for _change, path in changes:
        rel = filt.rel(path)
        if rel is None or rel.endswith("/.gitignore") or rel == ".gitignore":
            continue
        out[rel] = "changed" if os.path.isfile(path) else "deleted"
    return sorted(((kind, rel) for rel, kind in out.items()), key=lambda kr: kr[1])


def apply_changes(
    index: IndexLike, batch: list[tuple[str, str]], is_open: Callable[[str], bool] = lambda rel: False
) -> list[str]:
    """Apply a batch to the index (on the indexing thread). Files open in the editor are left
    to their buffers. Returns the paths whose symbols changed or went away."""
    touched = []
    for kind, rel in batch:
        if is_open(rel):
            continue
        try:
            changed = index.remove_file(rel) if kind == "deleted" else index.update_file(rel, None)
        except Exception:  # one bad file must not stop the loop
            log.exception("could not re-index %s", rel)
            continue
        if changed:
            touched.append(rel)
    return touched


async def drained(executor: Executor) -> None:
    """Wait until what was queued on ``executor`` (one thread) before this call is done."""
    await asyncio.get_running_loop().run_in_executor(executor, _nothing)


def _nothing() -> None:
    pass


class WorkspaceWatcher:
    """The watch loop of one workspace.

    ``on_files`` (async) is told which paths were re-indexed or removed after each batch —
    the server checks capsule staleness there. Index work runs on ``executor`` (the
    server's indexing thread), never on the event loop.
    """

    def __init__(
        self,
        root: Path,
        index: IndexLike,
        executor: Executor | None = None,
        *,
        is_open: Callable[[str], bool] = lambda rel: False,
        on_files: Callable[[list[str]], Awaitable[None]] | None = None,
        graph_quiet_s: float = GRAPH_QUIET_S,
        debounce_ms: int = DEBOUNCE_MS,
    ) -> None:
        self.root = Path(root)
        self.index = index
        self.executor = executor
        self.is_open = is_open
        self.on_files = on_files
        self.graph_quiet_s = graph_quiet_s
        self.debounce_ms = debounce_ms
        self.filter = WatchFilter(self.root)
        logging.getLogger("watchfiles.main").setLevel(logging.WARNING)  # not "1 change detected" per batch
        self.stop_event = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.batches = 0  # applied so far (tests and logs)
        self._last_change = 0.0

    def start(self) -> asyncio.Task:
        self.task = asyncio.get_running_loop().create_task(self.run(), name="ctx-watch")
        return self.task

    def stop(self) -> None:
        """Ask the loop to end (it does within a few milliseconds)."""
        self.stop_event.set()

    async def close(self) -> None:
        """Stop, and return once no change is being applied: the index may be closed then."""
        self.stop()
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self.task, 2)
        if self.executor is not None:
            await drained(self.executor)

    async def _in_executor(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def run(self) -> None:
        try:
            async for changes in awatch(
                self.root,
                watch_filter=self.filter,
                debounce=self.debounce_ms,
                step=STEP_MS,
                stop_event=self.stop_event,
                rust_timeout=IDLE_CHECK_MS,
                yield_on_timeout=True,
                ignore_permission_denied=True,
            ):
                if changes:
                    await self._apply(changes)
                elif time.monotonic() - self._last_change >= self.graph_quiet_s:
                    await self._maybe_update_graph()
        except asyncio.CancelledError:
            raise
        except Exception:  # no watcher (e.g. inotify limits): document events still work
            log.exception("the file watcher stopped")

    async def _apply(self, changes: set[tuple[Change, str]]) -> None:
        batch = normalise(changes, self.filter)
        if not batch:
            return
        self._last_change = time.monotonic()
        touched = await self._in_executor(apply_changes, self.index, batch, self.is_open)
        self.batches += 1
        log.debug("watch: %d change(s), %d re-indexed", len(batch), len(touched))
        if touched and self.on_files is not None:
            try:
                await self.on_files(touched)
            except Exception:
                log.exception("file change callback failed")

    async def _maybe_update_graph(self) -> None:
        try:
            if await self._in_executor(self.index.graph_dirty):
                seconds = await self._in_executor(lambda: self.index.update_graph(apart=True))
                log.info("reference graph updated in %.2f s", seconds)
        except Exception:
            log.exception("reference graph update failed")
