"""The server's life: `initialize` opens the workspace (configuration, index, memory);
`initialized` starts its host (``hosting.WorkspaceHost``: the index refreshed with progress,
capsules, the file watcher, search prepared), registers the client's file watcher, pulls the
editor's settings and starts the gateway when configured; `shutdown` and `exit` end it."""

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
from ctx_lsp.server import convert, gateway
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.sessions import SessionEngine
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES

log = logging.getLogger("ctx_lsp.server")
EXIT_GRACE_SECONDS = 2.0
CONFIGURATION_TIMEOUT_SECONDS = 5
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
    ls.host.attach(sessions)
    ls.host.on_stale = lambda stale, files: ls.notify("ctx/capsulesStale", convert.capsules_stale(stale, files))
    ls.config_messages = messages  # the host tells the engine's own start-up messages
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

    summary = "stopped"  # the server shut down before indexing ended
    try:
        summary = await ls.host.start(
            ls.warn,
            fail=lambda message: ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"ctx-lsp: {message}")
            ),
            progress=report,
            is_open=lambda rel: ls.uri(rel) in ls.workspace.text_documents,  # buffers keep priority
        )
        if ls.serving:
            await gateway.start(ls)
        if ls.host.search_prepared is not None:
            await ls.host.search_prepared
    finally:  # the progress ends once the start-up work is done (search in memory included)
        if use_progress:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=summary))


async def shutdown(ls: CtxServer) -> None:
    """Stop what runs in the background, then close the workspace in the host's one order (the
    stores on the worker thread once no thread uses them; the event loop keeps serving
    meanwhile). The worker stays for the requests that may come before `exit`."""
    ls.shut_down = True
    await gateway.stop(ls)
    for task in list(ls.background):
        task.cancel()
    await ls.host.close(end_threads=False)


def exit_soon(ls: CtxServer) -> None:
    """The process ends within EXIT_GRACE_SECONDS even if a thread is still busy (a re-index of a
    big tree): interpreter exit would wait for it. Every store write is its own transaction."""
    code = 0 if ls.shut_down else 1  # LSP: 0 after a shutdown, 1 without one
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (code,))
    watchdog.daemon = True
    watchdog.start()
