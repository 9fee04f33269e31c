"""Documents keep the index current: edits in the editor (debounced, the buffer's text wins over
the file's), files changed on disk (the client's watcher and our own), and capsules marked
stale the moment their module is saved with different code."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ctx_lsp.server import convert
from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.sessions.records import Capsule
from ctx_lsp.workspace import watch
from ctx_lsp.workspace.languages import language_of

INDEX_DEBOUNCE_SECONDS = 0.2


def schedule_index(ls: CtxServer, uri: str) -> None:
    """Re-index a source document once its edits settle (from the buffer while it is open, else
    from disk)."""
    if language_of(uri) is None or not ls.serving:
        return
    loop = asyncio.get_running_loop()
    old = ls.pending_index.pop(uri, None)
    if old is not None:
        old.cancel()

    def fire() -> None:
        ls.pending_index.pop(uri, None)
        text = ls.open_text(uri)
        try:
            rel = ls.rel(uri)
        except JsonRpcException:
            return
        data = text.encode("utf-8") if text is not None else None
        loop.run_in_executor(ls.indexer, ls.sessions.engine.index.update_file, rel, data)

    ls.pending_index[uri] = loop.call_later(INDEX_DEBOUNCE_SECONDS, fire)


def saved(ls: CtxServer, uri: str) -> None:
    schedule_index(ls, uri)
    ls.spawn(check_capsules(ls, [uri]))


def watched_files_changed(ls: CtxServer, changes: list[types.FileEvent]) -> None:
    """The client's file watcher: deleted files leave the index, the rest are re-indexed."""
    ls.spawn(check_capsules(ls, [c.uri for c in changes if language_of(c.uri) is not None]))
    for change in changes:
        if change.type == types.FileChangeType.Deleted:
            try:
                rel = ls.rel(change.uri)
            except JsonRpcException:
                continue
            asyncio.get_running_loop().run_in_executor(ls.indexer, ls.sessions.engine.index.remove_file, rel)
        else:
            schedule_index(ls, change.uri)


async def check_capsules(ls: CtxServer, uris: list[str]) -> None:
    """A saved (or changed-on-disk) file may make its capsule stale: check at once, not after
    the index debounce, and tell the client which capsules and files."""
    if not ls.serving:
        return
    loop = asyncio.get_running_loop()
    stale: list[Capsule] = []
    files: list[str] = []
    for uri in uris:
        try:
            rel = ls.rel(uri)
        except JsonRpcException:
            continue
        became = await loop.run_in_executor(ls.indexer, ls.sessions.file_saved, rel, ls.open_text(uri))
        if became:
            stale += became
            files.append(rel)
    if stale:
        ls.notify("ctx/capsulesStale", convert.capsules_stale(stale, files))


def start_watcher(ls: CtxServer) -> None:
    """Our own watcher of the workspace, for edits made outside the editor."""
    engine = ls.sessions.engine
    ls.watcher = watch.WorkspaceWatcher(
        engine.root,
        engine.index,
        ls.indexer,
        is_open=lambda rel: ls.uri(rel) in ls.workspace.text_documents,  # buffers keep priority
        on_files=lambda rels: check_capsules(ls, [ls.uri(rel) for rel in rels]),
    )
    ls.spawn(ls.watcher.run())
