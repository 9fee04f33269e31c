"""WorkspaceHost: one workspace served by a long-running face — `ctx-lsp serve`, `ctx-lsp gateway`,
the gateway `ctx-lsp wrap` runs on a thread, `ctx-lsp mcp` — with the same steps in the same order
whichever face serves it.

- Engine work runs on one worker thread (``run``: in call order, so SQLite stays simple), index
  work on one indexer thread (``index_work``), never on the event loop.
- ``start``: what the user should know (settings ignored, a memory store that cannot be read),
  the index refreshed (with progress), a cache found unreadable and rebuilt, capsules for the
  central modules when there are none, what every first plan builds made; then ``ready``, the
  file watcher, and search's postings prepared on the indexer, off the request path; then what
  start-up built is set apart from the garbage collector (a full collection no longer walks it).
- A file saved or changed on disk: re-indexed on the indexer, its capsule checked on the worker
  (``file_saved``); the face is told which capsules became stale.
- ``close``, in one order: the watcher, a refresh told to stop, the indexer drained (a search
  preparation or capsules still being made included), then the stores closed on the worker
  after the call in flight. An SQLite connection closed under another thread's query is a crash
  risk, so the stores stay open when a thread is still busy after ``CLOSE_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ctx_lsp.engine import Engine
from ctx_lsp.sessions import SessionEngine
from ctx_lsp.sessions.records import Capsule
from ctx_lsp.workspace.watch import WorkspaceWatcher, drained

log = logging.getLogger("ctx_lsp.host")
T = TypeVar("T")
CLOSE_TIMEOUT_SECONDS = 10.0

Progress = Callable[[int, int, str], None]  # (files done, files in all, the file being read)
Tell = Callable[[str], None]  # a message for the user, in the face's own way
OnStale = Callable[[list[Capsule], list[str]], None]  # capsules that became stale, and their files


class WorkspaceHost:
    def __init__(self) -> None:
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-engine")
        self.indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index")
        self.engine: Engine | None = None
        self.sessions: SessionEngine | None = None
        self.failure: str | None = None  # why the workspace could not be opened
        self.ready = asyncio.Event()  # the start-up refresh is over (or failed, and said so)
        self.search_prepared: asyncio.Future[None] | None = None  # once ``start`` submitted it
        self.watcher: WorkspaceWatcher | None = None
        self.closing = False
        self.on_stale: OnStale | None = None  # the face hears which capsules a change made stale

    @property
    def serving(self) -> bool:
        """The workspace is open and not closing."""
        return self.sessions is not None and not self.closing

    # ---- the two threads -----------------------------------------------------------------------

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on the engine's worker thread, queued now, in call order."""
        return asyncio.get_running_loop().run_in_executor(self.worker, lambda: fn(*args))

    def index_work(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on the indexer thread."""
        return asyncio.get_running_loop().run_in_executor(self.indexer, lambda: fn(*args))

    # ---- opening ---------------------------------------------------------------------------------

    async def open(self, make_engine: Callable[[], Engine], session: str | None = None) -> SessionEngine:
        """The engine and the memory store, made on the worker (their connections are used
        there), and ``session`` opened. Raises what stopped it, after noting it in ``failure``."""
        try:
            self.engine = await self.run(make_engine)
            sessions = await self.run(SessionEngine, self.engine)
            if session is not None:
                await self.run(sessions.open_session, session)
        except Exception as err:
            root = self.engine.root if self.engine is not None else "the workspace"
            self.failure = f"ctx-lsp cannot open the workspace {root}: {err}"
            self.ready.set()  # nothing to wait for: requests get ``failure``
            raise
        self.attach(sessions)
        return sessions

    def attach(self, sessions: SessionEngine) -> None:
        """A sessions engine the face made itself (the language server, in `initialize`)."""
        self.engine, self.sessions = sessions.engine, sessions

    # ---- start-up --------------------------------------------------------------------------------

    async def start(
        self,
        tell: Tell,
        *,
        fail: Tell | None = None,
        progress: Progress | None = None,
        is_open: Callable[[str], bool] = lambda rel: False,
    ) -> str:
        """Start serving the attached workspace; returns a one-line summary of the refresh.
        ``tell`` says what the user should know, ``fail`` what went wrong (``tell`` unless
        given); ``is_open`` names the files the face keeps current itself (the editor's buffers).
        Search is being prepared when this returns (``search_prepared``)."""
        sessions = self.sessions
        assert sessions is not None, "attach or open a workspace first"
        fail = fail or tell
        engine = sessions.engine
        for message in sessions.startup_messages():
            tell(message)
        summary = "stopped"  # the face closed before the refresh ended
        try:
            # a cold index runs in a process of its own: a long-running face keeps nothing of it
            stats = await self.index_work(lambda: engine.refresh_index(progress, apart=True))
            summary = f"{stats.symbols} symbols in {stats.files_seen} files ({stats.seconds:.1f} s)"
            log.info("indexed %s: %s", engine.root, summary)
            recovered = engine.index.take_recovered()
            if recovered:
                tell(recovered)
            try:
                await self.index_work(sessions.ensure_capsules)
            except Exception as err:  # the index serves without them
                log.exception("making capsules failed")
                fail(f"making capsules failed: {err}")
            # what every first plan builds or reads (the scaffold, the calibration), before the
            # first request: a gateway's first plan paid 30-40 ms for them on sympy
            try:
                await self.run(sessions.warm)
            except Exception:  # only time is lost: the first plan builds them itself
                log.exception("preparing the first plan's work failed")
        except Exception as err:  # requests are answered from the index as it is
            if not self.closing:
                log.exception("indexing failed")
                summary = f"indexing failed: {err}"
                fail(summary)
        finally:
            self.ready.set()
        if not self.serving:
            return summary
        # from now on edits made outside the face reach the index, and their capsules go stale
        self.watcher = WorkspaceWatcher(
            engine.root, engine.index, self.indexer, is_open=is_open, on_files=self._changed
        )
        self.watcher.start()
        self.search_prepared = self.index_work(_prepared, engine)  # searches use FTS5 until done
        return summary

    async def _changed(self, rels: list[str]) -> None:
        await self.file_saved(rels)

    # ---- files -----------------------------------------------------------------------------------

    async def file_saved(
        self, rels: list[str], text_of: Callable[[str], str | None] = lambda rel: None
    ) -> list[Capsule]:
        """Files saved or changed on disk: their capsules checked on the worker (``text_of`` a
        buffer's text, else the file's). ``on_stale`` hears what became stale."""
        stale: list[Capsule] = []
        files: list[str] = []
        for rel in rels:
            if not self.serving:
                break
            assert self.sessions is not None
            became = await self.run(self.sessions.file_saved, rel, text_of(rel))
            if became:
                stale += became
                files.append(rel)
        if stale and self.on_stale is not None:
            self.on_stale(stale, files)
        return stale

    def update_file(self, rel: str, data: bytes | None) -> None:
        """Re-index one file on the indexer (``data``: an unsaved buffer's bytes, else the file's)."""
        if self.serving and self.engine is not None:
            self.index_work(self.engine.index.update_file, rel, data)

    def remove_file(self, rel: str) -> None:
        if self.serving and self.engine is not None:
            self.index_work(self.engine.index.remove_file, rel)

    # ---- closing ---------------------------------------------------------------------------------

    async def close(self, end_threads: bool = True) -> None:
        """Stop what runs in the background, then close the stores on the worker once no thread
        uses them (see the module's docstring). With ``end_threads``, the two threads end once
        their last work is done (the language server keeps its worker to answer until `exit`)."""
        if self.closing:
            return
        self.closing = True
        if self.watcher is not None:
            await self.watcher.close()
        engine, sessions = self.engine, self.sessions
        self.sessions = None
        if engine is not None:
            engine.index.stop()  # a refresh of a big tree ends after its current file
            try:
                await asyncio.wait_for(drained(self.indexer), CLOSE_TIMEOUT_SECONDS)
                close = sessions.close if sessions is not None else engine.close
                await asyncio.wait_for(self.run(close), CLOSE_TIMEOUT_SECONDS)
            except TimeoutError:
                log.warning("the engine was still busy after %.0f s; its stores close on exit", CLOSE_TIMEOUT_SECONDS)
        if end_threads:
            self.worker.shutdown(wait=False)
            self.indexer.shutdown(wait=False, cancel_futures=True)
        gc.unfreeze()  # what start-up set apart (``_prepared``) can be collected again


def _prepared(engine: Engine) -> None:
    """Search's postings in memory, then what start-up built set apart from the garbage
    collector (``gc.freeze``): it lives as long as the face, and each full collection walked
    it again, holding every thread 30-50 ms in a gateway on the sympy tree — the first byte of
    whichever requests were in flight waited behind it. The young generations are collected
    first (what start-up dropped is not kept); ``close`` gives it all back."""
    engine.prepare_search()
    gc.collect(1)
    gc.freeze()
