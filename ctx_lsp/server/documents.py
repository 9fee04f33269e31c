"""Documents keep the index current: edits in the editor (debounced, the buffer's text wins over
the file's), files changed on disk (the client's watcher; the host's own watches the rest), and
capsules marked stale the moment their module is saved with different code."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.workspace.languages import language_of

INDEX_DEBOUNCE_SECONDS = 0.2


def schedule_index(ls: CtxServer, uri: str) -> None:
    """Re-index a source document once its edits settle (from the buffer while it is open, else
    from disk)."""
    if language_of(uri) is None or not ls.serving:
        return
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
        ls.host.update_file(rel, text.encode("utf-8") if text is not None else None)

    ls.pending_index[uri] = asyncio.get_running_loop().call_later(INDEX_DEBOUNCE_SECONDS, fire)


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
            ls.host.remove_file(rel)
        else:
            schedule_index(ls, change.uri)


async def check_capsules(ls: CtxServer, uris: list[str]) -> None:
    """A saved (or changed-on-disk) file may make its capsule stale: check at once, not after
    the index debounce; the host tells the client which capsules and files (``ctx/capsulesStale``)."""
    if not ls.serving:
        return
    rels: dict[str, str] = {}  # path → its URI, for the buffer's text
    for uri in uris:
        try:
            rels[ls.rel(uri)] = uri
        except JsonRpcException:
            continue
    await ls.host.file_saved(list(rels), lambda rel: ls.open_text(rels[rel]))
