"""CtxServer: what every handler shares — the workspace's host (the sessions engine and the one
worker thread that runs it, ``hosting.WorkspaceHost``), the mapping of document URIs to workspace
paths, notifications, background tasks."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ctx_lsp import __version__, errors
from ctx_lsp.hosting import WorkspaceHost
from ctx_lsp.server import protocol as P
from ctx_lsp.server import transport
from ctx_lsp.sessions import DEFAULT_SESSION, SessionEngine
from ctx_lsp.workspace.files import PathRefused, workspace_rel

log = logging.getLogger("ctx_lsp.server")
T = TypeVar("T")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # two letters at least: not a drive letter


def not_initialized(detail: str = "") -> JsonRpcServerError:
    return JsonRpcServerError(f"the server is not initialized yet{detail}", P.NOT_INITIALIZED)


def decode(params: Any, kind: type[T]) -> T:
    """A method's params as ``kind``; InvalidParams naming the field when they do not match."""
    try:
        return P.decode(params, kind)
    except P.ParamsError as err:
        raise JsonRpcInvalidParams(str(err)) from None


def rpc_error(err: errors.CtxError) -> JsonRpcException:
    """The JSON-RPC error of each kind (a name that is missing is checked before a bad request:
    ``sessions.NotFound`` is both)."""
    if isinstance(err, errors.Overflow):
        return JsonRpcServerError(str(err), P.CONTEXT_OVERFLOW, data={"overBy": err.over_by})
    if isinstance(err, errors.Missing):
        return JsonRpcServerError(str(err), P.NOT_FOUND)
    if isinstance(err, errors.Unavailable):
        return JsonRpcServerError(str(err), P.MEMORY_UNAVAILABLE)
    return JsonRpcInvalidParams(str(err))


class CtxServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "ctx-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=transport.CtxProtocol,
        )
        self.protocol: transport.CtxProtocol
        self.max_message_bytes = transport.MAX_MESSAGE_BYTES
        # The workspace from `initialize` to `shutdown`; its one worker thread owns the engine
        # (requests are served in order, SQLite stays simple).
        self.host = WorkspaceHost()
        self.session_id = DEFAULT_SESSION  # unless initializationOptions name one
        self.config_messages: list[str] = []  # settings ignored, from ctx.toml and initializationOptions
        self.pending_index: dict[str, asyncio.TimerHandle] = {}
        self.pending_replan: dict[str, asyncio.TimerHandle] = {}
        self.background: set[asyncio.Task] = set()
        self.gateway: Any = None  # the gateway, when the configuration sets gateway.listen
        self.shut_down = False  # a shutdown request was received

    # ---- transport: our reader loop instead of pygls' (see transport.py) -----------------------

    def start_io(self, stdin: Any = None, stdout: Any = None) -> int:  # type: ignore[override]
        return transport.serve_stdio(self, self.max_message_bytes)

    def start_tcp(self, host: str, port: int) -> int:  # type: ignore[override]
        return transport.serve_tcp(self, host, port, self.max_message_bytes)

    # ---- the sessions engine -------------------------------------------------------------------

    @property
    def sessions(self) -> SessionEngine:
        """The sessions engine (its ``engine`` is the workspace's); -32003 before `initialize`."""
        sessions = self.host.sessions
        if sessions is None:
            raise not_initialized()
        return sessions

    @property
    def serving(self) -> bool:
        """A workspace is open (between a successful `initialize` and `shutdown`)."""
        return self.host.serving

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run engine work on the worker thread, mapping domain errors to JSON-RPC errors a
        person can act on (no tracebacks leak to the client)."""
        try:
            return await self.host.run(fn, *args)
        except errors.CtxError as err:
            raise rpc_error(err) from None
        except JsonRpcException:
            raise
        except Exception as err:  # a bug: say so plainly, log the traceback, keep serving
            log.exception("internal error")
            raise JsonRpcInternalError(f"internal error: {type(err).__name__}: {err}") from None

    async def wait_index(self) -> None:
        """Requests that read the index wait for the start-up indexing (seconds, once), instead of
        answering from half an index. Indexing starts on the client's `initialized`: without it
        (or without a workspace) the answer is -32003 at once, not a wait that never ends."""
        if not self.serving:
            raise not_initialized()
        if not self.protocol.client_initialized:
            raise not_initialized(": the client has not sent the `initialized` notification")
        await self.host.ready.wait()

    def session_of(self, session: str | None) -> str:
        return session or self.session_id

    # ---- paths ---------------------------------------------------------------------------------

    def rel(self, uri: str) -> str:
        """A ``file:`` URI or a path (absolute, or workspace-relative) → workspace-relative.
        Every path of every method comes through here (one check: inside the root)."""
        root = self.sessions.engine.root
        if _URI_SCHEME.match(uri) and not uri.startswith("file:"):
            raise JsonRpcInvalidParams(f"not a file URI or a path: {uri!r}")
        path = to_fs_path(uri) if uri.startswith("file:") else uri
        if path is None:
            raise JsonRpcInvalidParams(f"not a file URI: {uri!r}")
        try:
            return workspace_rel(root, path)
        except PathRefused as err:
            raise JsonRpcInvalidParams(str(err)) from None

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.sessions.engine.root / rel)) or rel

    def open_text(self, uri: str) -> str | None:
        """The buffer's text if the editor has the document open (it may be unsaved)."""
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    # ---- telling the client --------------------------------------------------------------------

    def notify(self, method: str, params: msgspec.Struct) -> None:
        self.protocol.notify(method, P.encode(params))

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"ctx-lsp: {message}"))

    def after_reply(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Start ``work`` once the reply to the request being handled is written (the client
        reads its answer first; e.g. the notifications and the writes that follow a plan)."""
        self.protocol.after_reply.append(lambda: self.spawn(work()))

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
