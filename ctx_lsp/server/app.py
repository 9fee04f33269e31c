"""The language server: LSP plus the ctx/ methods (DESIGN.md §5). Handlers are thin: decode
params at the edge, call the engine on its worker thread, encode the result, push notifications.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ctx_lsp import __version__
from ctx_lsp.config import load_workspace_config, validate
from ctx_lsp.core.conversation import ConversationError
from ctx_lsp.core.items import ContextOverflow, Position, Range
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.planner import InvalidBudget
from ctx_lsp.engine import Engine, Focus, UserError
from ctx_lsp.memory.store import MemoryUnavailable, PinRecord, StoreError
from ctx_lsp.server import protocol as P
from ctx_lsp.server import transport
from ctx_lsp.sessions import DEFAULT_SESSION, NotFound, PinIntent, SessionEngine, SessionPlanRequest
from ctx_lsp.workspace import watch
from ctx_lsp.workspace.files import PathRefused, read_workspace_text, workspace_rel
from ctx_lsp.workspace.parse import parse_module

log = logging.getLogger("ctx_lsp.server")
T = TypeVar("T")
INDEX_DEBOUNCE_SECONDS = 0.2
REPLAN_DEBOUNCE_SECONDS = 0.3
EXIT_GRACE_SECONDS = 2.0
_DEF_LINE = re.compile(r"\s*(async\s+def|def|class)\s")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # two letters at least: not a drive letter


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
        self.engine: SessionEngine | None = None
        self.session_id = DEFAULT_SESSION  # unless initializationOptions name one
        self.config_messages: list[str] = []
        # One worker thread owns the engine: requests are served in order, SQLite stays simple.
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-engine")
        self.indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index")
        self.index_ready = asyncio.Event()
        self._pending_index: dict[str, asyncio.TimerHandle] = {}
        self._pending_replan: dict[str, asyncio.TimerHandle] = {}
        self._background: set[asyncio.Task] = set()
        self.shut_down = False  # a shutdown request was received

    # ---- transport: our reader loop instead of pygls' (see transport.py) -----------------------

    def start_io(self, stdin: Any = None, stdout: Any = None) -> int:  # type: ignore[override]
        return transport.serve_stdio(self, self.max_message_bytes)

    def start_tcp(self, host: str, port: int) -> int:  # type: ignore[override]
        return transport.serve_tcp(self, host, port, self.max_message_bytes)

    # ---- helpers used by handlers ----------------------------------------------------------

    @property
    def core(self) -> SessionEngine:
        if self.engine is None:
            raise JsonRpcServerError("the server is not initialized yet", P.NOT_INITIALIZED)
        return self.engine

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run engine work on the worker thread, mapping domain errors to JSON-RPC errors a
        person can act on (no tracebacks leak to the client)."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.worker, lambda: fn(*args))
        except ContextOverflow as err:
            raise JsonRpcServerError(str(err), P.CONTEXT_OVERFLOW, data={"overBy": err.over_by}) from None
        except (NotFound, StoreError) as err:
            raise JsonRpcServerError(str(err), P.NOT_FOUND) from None
        except MemoryUnavailable as err:
            raise JsonRpcServerError(str(err), P.MEMORY_UNAVAILABLE) from None
        except (UserError, InvalidBudget, ConversationError, P.ParamsError) as err:
            raise JsonRpcInvalidParams(str(err)) from None
        except JsonRpcException:
            raise
        except Exception as err:  # a bug: say so plainly, log the traceback, keep serving
            log.exception("internal error")
            raise JsonRpcInternalError(f"internal error: {type(err).__name__}: {err}") from None

    async def wait_index(self) -> None:
        """Requests that read the index wait for the start-up indexing (seconds, once), instead of
        answering from half an index. Indexing starts on the client's `initialized`: without it
        (or without a workspace) the answer is -32003 at once, not a wait that never ends."""
        if self.engine is None:
            raise JsonRpcServerError("the server is not initialized yet", P.NOT_INITIALIZED)
        if not self.protocol.client_initialized:
            raise JsonRpcServerError(
                "the server is not initialized yet: the client has not sent the `initialized` notification",
                P.NOT_INITIALIZED,
            )
        await self.index_ready.wait()

    def session_of(self, session: str | None) -> str:
        return session or self.session_id

    def rel(self, uri: str) -> str:
        """A ``file:`` URI or a path (absolute, or workspace-relative) → workspace-relative.
        Every path of every method comes through here (one check: inside the root)."""
        if self.engine is None:
            raise JsonRpcServerError("the server is not initialized yet", P.NOT_INITIALIZED)
        if _URI_SCHEME.match(uri) and not uri.startswith("file:"):
            raise JsonRpcInvalidParams(f"not a file URI or a path: {uri!r}")
        path = to_fs_path(uri) if uri.startswith("file:") else uri
        if path is None:
            raise JsonRpcInvalidParams(f"not a file URI: {uri!r}")
        try:
            return workspace_rel(self.core.engine.root, path)
        except PathRefused as err:
            raise JsonRpcInvalidParams(str(err)) from None

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.core.engine.root / rel)) or rel

    def open_text(self, uri: str) -> str | None:
        """The buffer's text if the editor has the document open (it may be unsaved)."""
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"ctx-lsp: {message}"))

    def notify_meter(self, session: str, meter: dict[str, Any]) -> None:
        self.protocol.notify("ctx/budgetChanged", meter)

    def spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


server = CtxServer()


def decode(params: Any, kind: type[T]) -> T:
    try:
        return P.decode(params, kind)
    except P.ParamsError as err:
        raise JsonRpcInvalidParams(str(err)) from None


def pin_out(ls: CtxServer, pin: PinRecord) -> dict[str, Any]:
    rng = None
    if pin.start_line is not None and pin.end_line is not None:
        rng = Range(Position(pin.start_line, 0), Position(pin.end_line, 0))
    out = P.Pin(
        id=pin.id,
        kind=pin.kind,
        policy=pin.policy,
        ttl=pin.ttl,
        ttl_remaining=pin.ttl_remaining,
        lease_scope=pin.lease_scope,
        priority=pin.priority,
        created_by=pin.created_by,
        title=pin.title,
        status=pin.status,
        symbol=pin.symbol,
        path=pin.path,
        uri=ls.uri(pin.path) if pin.path else None,
        range=rng,
        tokens=ls.core.pin_tokens(pin),
    )
    return P.encode(out)


def intent_of(ls: CtxServer, req: P.PinRequest) -> PinIntent:
    path = text = None
    line = character = None
    if req.text_document is not None:
        path = ls.rel(req.text_document.uri)
        text = ls.open_text(req.text_document.uri)
    if req.position is not None:
        line, character = req.position.line, req.position.character
    if req.symbol is None and (path is None or line is None):
        raise JsonRpcInvalidParams("give either 'symbol' (a qualified name) or 'textDocument' and 'position'")
    return PinIntent(
        symbol=req.symbol,
        path=path,
        line=line,
        character=character,
        text=text,
        kind=req.kind,
        ttl=req.ttl,
        policy=req.policy,
        priority=req.priority,
        lease_scope=req.lease_scope,
    )


# ---- lifecycle ----------------------------------------------------------------------------


def _root_of(params: types.InitializeParams) -> Path:
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    elif params.root_uri:
        uri = params.root_uri
    elif params.root_path:
        return Path(params.root_path)
    else:
        return Path.cwd()
    return Path(unquote(urlparse(uri).path))


@server.feature(types.INITIALIZE)
def on_initialize(ls: CtxServer, params: types.InitializeParams) -> None:
    """Open the workspace: configuration (files, then initializationOptions), index, memory."""
    try:
        _open_workspace(ls, params)
    except Exception as err:
        ls.protocol.initialize_received = False  # nothing was opened: a corrected `initialize` may follow
        if isinstance(err, UserError):  # e.g. a workspace that is not a directory
            raise JsonRpcInvalidParams(str(err)) from None
        raise


def _open_workspace(ls: CtxServer, params: types.InitializeParams) -> None:
    root = _root_of(params)
    options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    if isinstance(options.get("session"), str) and options["session"]:
        ls.session_id = options["session"]
    config, messages = load_workspace_config(root)
    settings = options.get("settings", {k: v for k, v in options.items() if k != "session"})
    if isinstance(settings, dict) and settings:
        config, more = validate(settings, "initializationOptions", base=config)
        messages += more
    ls.engine = SessionEngine(Engine(root, config))
    ls.config_messages = messages + ls.engine.startup_messages()
    ls.engine.open_session(ls.session_id)
    ls.protocol.workspace_root = str(ls.engine.engine.root)
    log.info("ctx-lsp %s serving %s (session %s)", __version__, root, ls.session_id)


@server.feature(types.INITIALIZED)
async def on_initialized(ls: CtxServer, params: types.InitializedParams) -> None:
    if ls.engine is None:  # initialize failed (and said why): nothing to index
        return
    for message in ls.config_messages:
        ls.warn(message)
    caps = ls.client_capabilities
    watch = caps.workspace and caps.workspace.did_change_watched_files
    if watch and watch.dynamic_registration:
        ls.spawn(_register_watchers(ls))
    if caps.workspace and caps.workspace.configuration:
        ls.spawn(_pull_configuration(ls))
    ls.spawn(_index_with_progress(ls))


async def _pull_configuration(ls: CtxServer) -> None:
    """Editor settings (section ``ctx``) override ctx.toml; invalid values are named and ignored."""
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=[types.ConfigurationItem(section="ctx")])),
            timeout=5,
        )
    except Exception as err:
        log.info("workspace/configuration unavailable: %s", err)
        return
    settings = result[0] if result else None
    if not isinstance(settings, dict) or not settings:
        return
    engine = ls.core.engine
    config, messages = validate(P.to_builtin(settings), "editor settings (ctx)", base=engine.config)
    await ls.run(engine.apply_config, config)
    for message in messages:
        ls.warn(message)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CtxServer, params: types.DidChangeConfigurationParams) -> None:
    caps = ls.client_capabilities
    if caps.workspace and caps.workspace.configuration:
        ls.spawn(_pull_configuration(ls))


async def _register_watchers(ls: CtxServer) -> None:
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id="ctx-watch-python",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[types.FileSystemWatcher(glob_pattern="**/*.py")]
                        ),
                    )
                ]
            )
        )
    except Exception as err:  # the client declined: document events still keep the index current
        log.info("file watcher registration declined: %s", err)


async def _index_with_progress(ls: CtxServer) -> None:
    caps = ls.client_capabilities
    use_progress = bool(caps.window and caps.window.work_done_progress)
    token = f"ctx-index-{uuid.uuid4().hex[:8]}"
    loop = asyncio.get_running_loop()
    if use_progress:
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="ctx: indexing", percentage=0))
        except Exception:
            use_progress = False
    last = [-1]

    def report(done: int, total: int, rel: str) -> None:
        pct = int(100 * done / total) if total else 100
        if use_progress and pct != last[0]:
            last[0] = pct
            loop.call_soon_threadsafe(
                ls.work_done_progress.report,
                token,
                types.WorkDoneProgressReport(message=f"{done}/{total} {rel}", percentage=pct),
            )

    try:
        stats = await loop.run_in_executor(ls.indexer, ls.core.engine.refresh_index, report)
        summary = f"{stats.symbols} symbols in {stats.files_seen} files ({stats.seconds:.1f} s)"
        recovered = ls.core.engine.index.take_recovered()
        if recovered:
            ls.warn(recovered)
        await loop.run_in_executor(ls.indexer, ls.core.ensure_capsules)
        log.info("indexed: %s", summary)
    except Exception as err:
        log.exception("indexing failed")
        summary = f"indexing failed: {err}"
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"ctx-lsp: {summary}"))
    finally:
        ls.index_ready.set()
        if use_progress:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=summary))
    if ls.engine is not None:  # from now on, edits made outside the editor reach the index too
        _start_watcher(ls)


def _start_watcher(ls: CtxServer) -> None:
    core = ls.core
    ls.watcher = watch.WorkspaceWatcher(  # type: ignore[attr-defined]
        core.engine.root,
        core.engine.index,
        ls.indexer,
        is_open=lambda rel: ls.uri(rel) in ls.workspace.text_documents,  # buffers keep priority
        on_files=lambda rels: _check_capsules(ls, [ls.uri(rel) for rel in rels]),
    )
    ls.spawn(ls.watcher.run())  # type: ignore[attr-defined]


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: CtxServer, params: Any) -> None:
    ls.shut_down = True
    if getattr(ls, "watcher", None) is not None:
        ls.watcher.stop()  # type: ignore[attr-defined]
    for task in list(ls._background):
        task.cancel()
    engine, ls.engine = ls.engine, None
    if engine is not None:  # after the request in flight (the event loop keeps serving meanwhile)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(ls.worker, engine.close), 10)
        except TimeoutError:
            log.warning("shutdown: the engine was still busy after 10 s; its store closes on exit")


@server.feature(types.EXIT)
def on_exit(ls: CtxServer, params: Any) -> None:
    """The process ends within EXIT_GRACE_SECONDS even if a thread is still busy (a re-index of a
    big tree): interpreter exit would wait for it. Every store write is its own transaction."""
    code = 0 if ls.shut_down else 1  # LSP: 0 after a shutdown, 1 without one
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (code,))
    watchdog.daemon = True
    watchdog.start()


# ---- documents keep the index current ---------------------------------------------------------


def _schedule_index(ls: CtxServer, uri: str) -> None:
    if not uri.endswith(".py") or ls.engine is None:
        return
    loop = asyncio.get_running_loop()
    old = ls._pending_index.pop(uri, None)
    if old is not None:
        old.cancel()

    def fire() -> None:
        ls._pending_index.pop(uri, None)
        text = ls.open_text(uri)
        try:
            rel = ls.rel(uri)
        except JsonRpcException:
            return
        data = text.encode("utf-8") if text is not None else None
        loop.run_in_executor(ls.indexer, ls.core.engine.index.update_file, rel, data)

    ls._pending_index[uri] = loop.call_later(INDEX_DEBOUNCE_SECONDS, fire)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CtxServer, params: types.DidOpenTextDocumentParams) -> None:
    _schedule_index(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CtxServer, params: types.DidChangeTextDocumentParams) -> None:
    _schedule_index(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: CtxServer, params: types.DidSaveTextDocumentParams) -> None:
    _schedule_index(ls, params.text_document.uri)
    ls.spawn(_check_capsules(ls, [params.text_document.uri]))


async def _check_capsules(ls: CtxServer, uris: list[str]) -> None:
    """A saved (or changed-on-disk) file may make its capsule stale: check at once, not after
    the index debounce, and tell the client which capsules and files."""
    if ls.engine is None:
        return
    loop = asyncio.get_running_loop()
    stale: list[dict[str, Any]] = []
    files: list[str] = []
    for uri in uris:
        try:
            rel = ls.rel(uri)
        except JsonRpcException:
            continue
        text = ls.open_text(uri)
        became = await loop.run_in_executor(ls.indexer, ls.core.file_saved, rel, text)
        if became:
            stale += became
            files.append(rel)
    if stale:
        ls.protocol.notify("ctx/capsulesStale", {"capsules": stale, "files": files})


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CtxServer, params: types.DidCloseTextDocumentParams) -> None:
    _schedule_index(ls, params.text_document.uri)  # back to the text on disk


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: CtxServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.spawn(_check_capsules(ls, [c.uri for c in params.changes if c.uri.endswith(".py")]))
    for change in params.changes:
        if change.type == types.FileChangeType.Deleted:
            try:
                rel = ls.rel(change.uri)
            except JsonRpcException:
                continue
            asyncio.get_running_loop().run_in_executor(ls.indexer, ls.core.engine.index.remove_file, rel)
        else:
            _schedule_index(ls, change.uri)


# ---- code lenses: "Pin to context" ----------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: CtxServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    """One lens per function, class and method; cheap (the command is built on resolve)."""
    uri = params.text_document.uri
    try:
        rel = ls.rel(uri)
        text = ls.open_text(uri)
        if text is None:  # not open: read through the same checks as every other file
            text = read_workspace_text(ls.core.engine.root, rel)
    except (JsonRpcException, PathRefused, OSError):
        return None
    parsed = parse_module(rel, text)
    lines = text.splitlines()
    lenses = []
    for sym in parsed.symbols:
        if sym.kind in ("class", "function", "method"):
            # on the def/class line itself, below decorators (which may span several lines)
            line = next(
                (n for n in range(sym.start_line, min(sym.end_line, len(lines) - 1) + 1) if _DEF_LINE.match(lines[n])),
                sym.start_line,
            )
            rng = types.Range(types.Position(line, 0), types.Position(line, 0))
            lenses.append(types.CodeLens(range=rng, data={"uri": uri, "symbol": sym.qualname}))
    return lenses


@server.feature(types.CODE_LENS_RESOLVE)
async def code_lens_resolve(ls: CtxServer, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    symbol = data.get("symbol", "")
    pins = await ls.run(ls.core.pins, ls.session_id)
    pin = next((p for p in pins if p.symbol == symbol), None)
    if pin is None:
        lens.command = types.Command(
            title="📌 Pin to context", command="ctx.pinSymbol", arguments=[data.get("uri"), symbol]
        )
    else:
        ttl = "no ttl" if pin.ttl_remaining is None else f"ttl {pin.ttl_remaining}"
        tokens = ls.core.pin_tokens(pin)
        tok = f" · {format_tokens(tokens)} tok" if tokens is not None else ""
        lens.command = types.Command(title=f"📌 Pinned · {ttl}{tok} · unpin", command="ctx.unpin", arguments=[pin.id])
    return lens


@server.command("ctx.pinSymbol")
async def cmd_pin(ls: CtxServer, *args: Any) -> dict[str, Any]:
    """ctx.pinSymbol(uri, qualifiedName) or ctx.pinSymbol(uri, {line, character})."""
    if len(args) < 2:
        raise JsonRpcInvalidParams("ctx.pinSymbol takes a document URI and a symbol name or a position")
    uri, target = P.to_builtin(args[0]), P.to_builtin(args[1])
    where = {"position": target} if isinstance(target, dict) else {"symbol": str(target)}
    req = decode({"textDocument": {"uri": uri}, **where}, P.PinRequest)
    return await _pin(ls, req, ls.session_id)


@server.command("ctx.unpin")
async def cmd_unpin(ls: CtxServer, *args: Any) -> dict[str, Any]:
    if not args:
        raise JsonRpcInvalidParams("ctx.unpin takes a pin id")
    return await _unpin(ls, str(args[0]), ls.session_id)


@server.command("ctx.plan")
async def cmd_plan(ls: CtxServer, *args: Any) -> dict[str, Any]:
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("ctx.plan takes a query")
    return await plan_context(ls, {"query": args[0]})


# ---- ctx/ methods -------------------------------------------------------------------------


def _replan_soon(ls: CtxServer, session: str) -> None:
    """Appends and usage reports come in bursts (and usually right before a new plan): re-plan
    once things settle, unless a plan for the session arrives first."""
    old = ls._pending_replan.pop(session, None)
    if old is not None:
        old.cancel()
    loop = asyncio.get_running_loop()
    ls._pending_replan[session] = loop.call_later(
        REPLAN_DEBOUNCE_SECONDS, lambda: (ls._pending_replan.pop(session, None), ls.spawn(_replan_latest(ls, session)))
    )


async def _replan_latest(ls: CtxServer, session: str) -> None:
    """Something that changes the budget happened: re-plan the session's latest question so the
    meter and tree show the new state, and push them."""

    def work() -> tuple[dict[str, Any] | None, dict[str, Any]]:
        out = ls.core.replan_latest(session)
        changed = None
        if out is not None:
            p = out.result.plan
            changed = {
                "session": session,
                "planId": p.plan_id,
                "tokens": p.totals.tokens,
                "promptBudget": p.prompt_budget,
            }
        return changed, ls.core.meter(session)

    try:
        changed, meter = await ls.run(work)
    except JsonRpcException as err:  # what changed (a pin, a message) stands; only the refresh failed
        log.warning("re-plan of session %s failed: %s", session, err)
        return
    push_events(ls)
    if changed is not None:
        ls.protocol.notify("ctx/planChanged", changed)
    ls.notify_meter(session, meter)


@server.feature("ctx/planContext")
async def plan_context(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.PlanContextParams)
    session = ls.session_of(p.session)
    focus = None
    if p.focus is not None:
        focus = Focus(path=ls.rel(p.focus.uri), line=p.focus.position.line if p.focus.position else None)
    req = SessionPlanRequest(
        session=session,
        query=p.query,
        model=p.model,
        mode=p.mode,
        context_length=p.context_length,
        max_completion_tokens=p.max_completion_tokens,
        safety_buffer=p.safety_buffer,
        rag_budget=p.rag_budget,
        focus=focus,
        open_files=[ls.rel(u) for u in p.open_files or []],
        dry_run=p.dry_run,
        extra_pins=[intent_of(ls, x) for x in p.extra_pins or []],
        drop_items=list(p.drop_items or []),
    )
    await ls.wait_index()
    pending = ls._pending_replan.pop(session, None)
    if pending is not None and not p.dry_run:  # this plan supersedes the deferred re-plan
        pending.cancel()
    outcome = await ls.run(ls.core.plan, req)
    push_events(ls)
    plan = outcome.result.plan
    if not p.dry_run:
        ls.protocol.notify(
            "ctx/planChanged",
            {
                "session": session,
                "planId": plan.plan_id,
                "tokens": plan.totals.tokens,
                "promptBudget": plan.prompt_budget,
            },
        )
        ls.notify_meter(session, await ls.run(ls.core.meter, session))
    return P.encode(plan)


@server.feature("ctx/renderPrompt")
async def render_prompt(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.RenderPromptParams)
    outcome = await ls.run(ls.core.outcome, ls.session_of(p.session), p.plan_id)
    return P.encode(await ls.run(outcome.render, p.format))


@server.feature("ctx/showBudget")
async def show_budget(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.SessionParams)
    return await ls.run(ls.core.meter, ls.session_of(p.session))


async def _pin(ls: CtxServer, req: P.PinRequest, session: str) -> dict[str, Any]:
    intent = intent_of(ls, req)
    await ls.wait_index()
    pin = await ls.run(ls.core.pin, session, intent)
    out = pin_out(ls, pin)
    _refresh_lenses(ls)
    await _replan_latest(ls, session)
    return out


async def _unpin(ls: CtxServer, pin_id: str, session: str) -> dict[str, Any]:
    pin = await ls.run(ls.core.unpin, session, pin_id)
    out = pin_out(ls, pin)
    _refresh_lenses(ls)
    await _replan_latest(ls, session)
    return out


def _refresh_lenses(ls: CtxServer) -> None:
    """Pins changed: lenses that say "Pin" / "Pinned" are out of date (when the client can refresh)."""
    caps = ls.client_capabilities.workspace
    if caps and caps.code_lens and caps.code_lens.refresh_support:
        ls.spawn(ls.workspace_code_lens_refresh_async(None))


@server.feature("ctx/pinSymbol")
async def pin_symbol(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.PinSymbolParams)
    return await _pin(ls, p, ls.session_of(p.session))


@server.feature("ctx/unpin")
async def unpin(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.UnpinParams)
    return await _unpin(ls, p.pin_id, ls.session_of(p.session))


@server.feature("ctx/listPins")
async def list_pins(ls: CtxServer, params: Any) -> list[dict[str, Any]]:
    p = decode(params, P.SessionParams)
    pins = await ls.run(ls.core.pins, ls.session_of(p.session))
    return [pin_out(ls, pin) for pin in pins]


@server.feature("ctx/restoreItem")
async def restore_item(ls: CtxServer, params: Any) -> dict[str, Any]:
    """Restore an item of the dropped ledger in one call: pin what it shows."""
    p = decode(params, P.RestoreItemParams)
    session = ls.session_of(p.session)
    item = await ls.run(ls.core.excluded_item, session, p.item_id, p.plan_id)
    if not item.get("symbol"):
        raise JsonRpcInvalidParams(f"item {p.item_id!r} ({item.get('kind')}) is not code and cannot be pinned")
    req = P.PinRequest(symbol=item["symbol"], kind=p.kind, ttl=p.ttl)
    return await _pin(ls, req, session)


@server.feature("ctx/appendMessages")
async def append_messages(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.AppendMessagesParams)
    session = ls.session_of(p.session)
    raw = [{k: v for k, v in P.encode(m).items() if v is not None} for m in p.messages]
    stored = await ls.run(ls.core.append_raw, session, p.branch, raw)
    _replan_soon(ls, session)
    count = await ls.run(ls.core.message_count, session, p.branch)
    meter = await ls.run(ls.core.meter, session)
    return {"appended": len(stored), "messages": count, "budget": meter}


@server.feature("ctx/reportUsage")
async def report_usage(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.ReportUsageParams)
    session = ls.session_of(p.session)
    report, asked, _expired = await ls.run(
        ls.core.report_usage, session, p.plan_id, p.input_tokens, p.output_tokens, p.cached_input_tokens
    )
    if asked:
        ls.protocol.notify("ctx/askRepin", {"session": session, "pins": [pin_out(ls, x) for x in asked]})
    push_events(ls)  # promotions, renewals, demotions, suggestions of the turn that just ended
    _refresh_lenses(ls)  # TTLs ticked; pins may have expired or been promoted
    ls.notify_meter(session, await ls.run(ls.core.meter, session))
    _replan_soon(ls, session)
    return report


@server.feature("ctx/listMessages")
async def list_messages(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.ListMessagesParams)
    session = ls.session_of(p.session)
    stored = await ls.run(ls.core.messages, session, p.branch)
    record = await ls.run(ls.core.open_session, session)
    out = [
        P.StoredMessageOut(
            id=m.id,
            role=m.role,
            content=m.content,
            turn=m.turn,
            parent=m.parent,
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            name=m.name,
            archived=m.archived_by is not None,
            archived_by=m.archived_by,
        )
        for m in stored
        if p.include_archived or m.archived_by is None
    ]
    return P.encode(P.MessagesResult(session=session, branch=p.branch or record.branch, messages=out))


@server.feature("ctx/listExcluded")
async def list_excluded(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.ListExcludedParams)
    session = ls.session_of(p.session)
    turns = await ls.run(ls.core.ledger, session, p.plan_id, max(1, p.turns))
    return {"session": session, "turns": turns}


@server.feature("ctx/replayPlan")
async def replay_plan(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.ReplayPlanParams)
    identical, result = await ls.run(ls.core.replay, p.plan_id)
    return {
        "planId": p.plan_id,
        "identical": identical,
        "replayedPlanId": result.plan.plan_id,
        "plan": P.encode(result.plan),
    }


@server.feature("ctx/setMode")
async def set_mode(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.SetModeParams)
    session = ls.session_of(p.session)
    mode = await ls.run(ls.core.set_mode, session, p.mode)
    await _replan_latest(ls, session)
    return {"session": session, "mode": mode}


@server.feature("ctx/branch")
async def branch(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.BranchParams)
    return await ls.run(ls.core.branch, ls.session_of(p.session), p.from_message_id, p.name)


def _marker(c: dict[str, Any]) -> str:
    return (
        f"── compaction #{c['number']}: {len(c['archivedIds'])} messages summarised "
        f"({c['tokensBefore']:,} → {c['tokensAfter']:,} tokens, {c['summarizer']}) ──"
    )


def push_events(ls: CtxServer) -> None:
    """Notifications the engine queued while working (automatic compactions)."""
    if ls.engine is None:
        return
    for method, payload in ls.engine.drain_events():
        if method == "ctx/compacted":
            ls.protocol.notify(
                method, {"session": payload["session"], "compaction": payload, "marker": _marker(payload)}
            )
        else:
            ls.protocol.notify(method, payload)


@server.feature("ctx/compact")
async def compact(ls: CtxServer, params: Any) -> dict[str, Any]:
    """Summarise older turns (or trim them); ``dryRun`` returns the proposal, and an edited
    ``summary`` may be sent back to apply it."""
    p = decode(params, P.CompactParams)
    session = ls.session_of(p.session)
    c = await ls.run(lambda: ls.core.compact(session, p.strategy, dry_run=p.dry_run, summary=p.summary))
    out = P.encode(c)
    if not p.dry_run:
        ls.protocol.notify("ctx/compacted", {"session": session, "compaction": out, "marker": _marker(out)})
        await _replan_latest(ls, session)
    return out


@server.feature("ctx/setMemoryPolicy")
async def set_memory_policy(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.MemoryPolicyParams)
    session = ls.session_of(p.session)
    record = await ls.run(ls.core.set_memory_policy, session, p.rolling, p.compaction_threshold)
    return {"session": session, "rolling": record.rolling, "compactionThreshold": record.compaction_threshold}


@server.feature("ctx/listCapsules")
async def list_capsules(ls: CtxServer, params: Any) -> list[dict[str, Any]]:
    decode(params, P.SessionParams)
    return await ls.run(ls.core.capsules)


@server.feature("ctx/refreshCapsules")
async def refresh_capsules(ls: CtxServer, params: Any) -> list[dict[str, Any]]:
    p = decode(params, P.RefreshCapsulesParams)
    await ls.wait_index()
    paths = [ls.rel(x) for x in p.paths] if p.paths is not None else None
    return await ls.run(ls.core.refresh_capsules, paths)


@server.feature("ctx/listSuggestions")
async def list_suggestions(ls: CtxServer, params: Any) -> list[dict[str, Any]]:
    """Items the model suggested in ``ctx-suggest`` blocks: shown, never pinned without the user."""
    p = decode(params, P.SessionParams)
    return await ls.run(ls.core.suggestions, ls.session_of(p.session))


@server.feature("ctx/listReflections")
async def list_reflections(ls: CtxServer, params: Any) -> list[dict[str, Any]]:
    p = decode(params, P.SessionParams)
    return await ls.run(ls.core.reflections, ls.session_of(p.session))


@server.feature("ctx/undoReflection")
async def undo_reflection(ls: CtxServer, params: Any) -> dict[str, Any]:
    p = decode(params, P.UndoReflectionParams)
    session = ls.session_of(p.session)
    out = await ls.run(ls.core.undo_reflection, session, p.id)
    _refresh_lenses(ls)
    await _replan_latest(ls, session)
    return out


def serve(tcp: str | None = None, max_message_bytes: int | None = None) -> int:
    """Serve until the client's `exit`; the process's exit code (LSP: 0 after `shutdown`, else 1)."""
    logging.basicConfig(level=logging.INFO, format="ctx-lsp %(levelname)s %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message at INFO
    # ... and every error response with a traceback; ours are expected answers (unknown symbol,
    # overflow), and real failures are logged by CtxServer.run.
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
    if max_message_bytes is not None:
        server.max_message_bytes = max_message_bytes
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            raise UserError(f"--tcp wants HOST:PORT, got {tcp!r}")
        return server.start_tcp(host or "127.0.0.1", int(port))
    return server.start_io()
