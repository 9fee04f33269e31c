"""The server's life: `initialize` opens the workspace (configuration, index, memory);
`initialized` indexes it with progress, registers the file watcher and pulls the editor's
settings; `shutdown` and `exit` end it."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ctx_lsp import __version__
from ctx_lsp.config import load_workspace_config, validate
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.server import documents, gateway
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.sessions import SessionEngine
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES
from ctx_lsp.workspace.watch import drained

log = logging.getLogger("ctx_lsp.server")
EXIT_GRACE_SECONDS = 2.0
CONFIGURATION_TIMEOUT_SECONDS = 5
SHUTDOWN_TIMEOUT_SECONDS = 10
# every extension the index reads: ``**/*.{py,rs,ts,…}``
SOURCE_GLOB = "**/*.{" + ",".join(sorted(e[1:] for e in SOURCE_SUFFIXES)) + "}"


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


def initialize(ls: CtxServer, params: types.InitializeParams) -> None:
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
    sessions = SessionEngine(Engine(root, config))
    ls.attach(sessions)
    ls.config_messages = messages + sessions.startup_messages()
    sessions.open_session(ls.session_id)
    ls.protocol.workspace_root = str(sessions.engine.root)
    log.info("ctx-lsp %s serving %s (session %s)", __version__, root, ls.session_id)


def initialized(ls: CtxServer) -> None:
    if not ls.serving:  # initialize failed (and said why): nothing to index
        return
    for message in ls.config_messages:
        ls.warn(message)
    caps = ls.client_capabilities
    watch = caps.workspace and caps.workspace.did_change_watched_files
    if watch and watch.dynamic_registration:
        ls.spawn(_register_watchers(ls))
    pull_configuration(ls)
    ls.spawn(_index_with_progress(ls))


def pull_configuration(ls: CtxServer) -> None:
    """Editor settings (section ``ctx``) override ctx.toml, when the client has them."""
    caps = ls.client_capabilities
    if caps.workspace and caps.workspace.configuration:
        ls.spawn(_pull_configuration(ls))


async def _pull_configuration(ls: CtxServer) -> None:
    """Invalid values are named and ignored."""
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=[types.ConfigurationItem(section="ctx")])),
            timeout=CONFIGURATION_TIMEOUT_SECONDS,
        )
    except Exception as err:
        log.info("workspace/configuration unavailable: %s", err)
        return
    settings = result[0] if result else None
    if not isinstance(settings, dict) or not settings:
        return
    engine = ls.sessions.engine
    config, messages = validate(P.to_builtin(settings), "editor settings (ctx)", base=engine.config)
    await ls.run(engine.apply_config, config)
    for message in messages:
        ls.warn(message)


async def _register_watchers(ls: CtxServer) -> None:
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id="ctx-watch-source",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[types.FileSystemWatcher(glob_pattern=SOURCE_GLOB)]
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

    sessions = ls.sessions
    summary = "stopped"  # the server shut down before indexing ended
    try:
        # a cold index runs in a process of its own: the server does not keep what indexing leaves
        stats = await loop.run_in_executor(ls.indexer, lambda: sessions.engine.refresh_index(report, apart=True))
        summary = f"{stats.symbols} symbols in {stats.files_seen} files ({stats.seconds:.1f} s)"
        recovered = sessions.engine.index.take_recovered()
        if recovered:
            ls.warn(recovered)
        await loop.run_in_executor(ls.indexer, sessions.ensure_capsules)
        log.info("indexed: %s", summary)
    except Exception as err:
        log.exception("indexing failed")
        summary = f"indexing failed: {err}"
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"ctx-lsp: {summary}"))
    finally:
        ls.index_ready.set()  # requests go ahead: search works from the index alone
    try:
        if ls.serving:  # from now on, edits made outside the editor reach the index too
            documents.start_watcher(ls)
            await gateway.start(ls)
            await loop.run_in_executor(ls.indexer, sessions.engine.prepare_search)
    finally:  # the progress ends once the start-up work is done (search in memory included)
        if use_progress:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=summary))


async def shutdown(ls: CtxServer) -> None:
    """Stop what runs in the background, then close the stores on the worker thread, after the
    request in flight (the event loop keeps serving meanwhile). The stores close only once no
    thread uses them: an SQLite connection closed under another thread's query is a crash risk."""
    ls.shut_down = True
    await gateway.stop(ls)
    if ls.watcher is not None:
        await ls.watcher.close()
    for task in list(ls.background):
        task.cancel()
    sessions = ls.detach()
    if sessions is None:
        return
    sessions.engine.index.stop()  # a start-up refresh of a big tree ends after its current file
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(drained(ls.indexer), SHUTDOWN_TIMEOUT_SECONDS)
        await asyncio.wait_for(loop.run_in_executor(ls.worker, sessions.close), SHUTDOWN_TIMEOUT_SECONDS)
    except TimeoutError:
        log.warning("shutdown: the engine was still busy after 10 s; its stores close on exit")


def exit_soon(ls: CtxServer) -> None:
    """The process ends within EXIT_GRACE_SECONDS even if a thread is still busy (a re-index of a
    big tree): interpreter exit would wait for it. Every store write is its own transaction."""
    code = 0 if ls.shut_down else 1  # LSP: 0 after a shutdown, 1 without one
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (code,))
    watchdog.daemon = True
    watchdog.start()
