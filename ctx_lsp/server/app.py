"""The language server's registrations: every LSP feature, command and ctx/ method, each a few
lines — decode the params, call the sessions engine on its worker thread, return the reply
built by ``convert`` from the protocol's types. The work is elsewhere: ``ctx_server`` (what the
handlers share), ``lifecycle``, ``documents``, ``lenses``, ``replan``, ``convert``."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ctx_lsp.engine import UserError
from ctx_lsp.server import convert, documents, gateway, lenses, lifecycle, replan
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import CtxServer, decode

Reply = dict[str, Any]
server = CtxServer()


# ---- lifecycle ----------------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
def on_initialize(ls: CtxServer, params: types.InitializeParams) -> None:
    """Open the workspace: configuration (files, then initializationOptions), index, memory."""
    lifecycle.initialize(ls, params)


@server.feature(types.INITIALIZED)
async def on_initialized(ls: CtxServer, params: types.InitializedParams) -> None:
    """Say what start-up found, then index (with progress), watch files, pull settings."""
    lifecycle.initialized(ls)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CtxServer, params: types.DidChangeConfigurationParams) -> None:
    """Pull the editor's settings again."""
    lifecycle.pull_configuration(ls)


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: CtxServer, params: Any) -> None:
    """Stop watching, close the engine after the request in flight."""
    await lifecycle.shutdown(ls)


@server.feature(types.EXIT)
def on_exit(ls: CtxServer, params: Any) -> None:
    """End the process (0 after shutdown, else 1)."""
    lifecycle.exit_soon(ls)


# ---- documents ----------------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CtxServer, params: types.DidOpenTextDocumentParams) -> None:
    """Index the buffer's text."""
    documents.schedule_index(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CtxServer, params: types.DidChangeTextDocumentParams) -> None:
    """Index the buffer's text once edits settle."""
    documents.schedule_index(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: CtxServer, params: types.DidSaveTextDocumentParams) -> None:
    """Index, and check the module's capsule at once."""
    documents.saved(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CtxServer, params: types.DidCloseTextDocumentParams) -> None:
    """Back to the text on disk."""
    documents.schedule_index(ls, params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: CtxServer, params: types.DidChangeWatchedFilesParams) -> None:
    """Files changed on disk: index them, check their capsules."""
    documents.watched_files_changed(ls, params.changes)


# ---- code lenses and commands -------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: CtxServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    """One lens per function, class and method; cheap (the command is built on resolve)."""
    return lenses.lenses(ls, params.text_document.uri)


@server.feature(types.CODE_LENS_RESOLVE)
async def code_lens_resolve(ls: CtxServer, lens: types.CodeLens) -> types.CodeLens:
    """ "Pin to context", or "Pinned · ttl · tokens · unpin"."""
    return await lenses.resolve(ls, lens)


@server.command("ctx.pinSymbol")
async def cmd_pin(ls: CtxServer, *args: Any) -> Reply:
    """ctx.pinSymbol(uri, qualifiedName) or ctx.pinSymbol(uri, {line, character})."""
    if len(args) < 2:
        raise JsonRpcInvalidParams("ctx.pinSymbol takes a document URI and a symbol name or a position")
    uri, target = P.to_builtin(args[0]), P.to_builtin(args[1])
    where = {"position": target} if isinstance(target, dict) else {"symbol": str(target)}
    req = decode({"textDocument": {"uri": uri}, **where}, P.PinRequest)
    return P.encode(await replan.pin(ls, req, ls.session_id))


@server.command("ctx.unpin")
async def cmd_unpin(ls: CtxServer, *args: Any) -> Reply:
    """ctx.unpin(pinId)."""
    if not args:
        raise JsonRpcInvalidParams("ctx.unpin takes a pin id")
    return P.encode(await replan.unpin(ls, str(args[0]), ls.session_id))


@server.command("ctx.plan")
async def cmd_plan(ls: CtxServer, *args: Any) -> Reply:
    """ctx.plan(query): ctx/planContext for the server's session."""
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("ctx.plan takes a query")
    return await plan_context(ls, {"query": args[0]})


# ---- ctx/ methods: plans and the meter ----------------------------------------------------------


# ---- ctx/ methods: the gateway this server runs (gateway.listen) ---------------------------------


@server.feature("ctx/gatewayStatus")
def gateway_status(ls: CtxServer, params: Any) -> Reply:
    """Where the gateway listens, its counts, the active conversation, the latest request.
    Not async: pygls writes a sync handler's reply at once, an async one's a loop turn later,
    when a ``ctx/gatewayStatusChanged`` written in between would arrive first and be overwritten
    by this older status (the savings lost from the status bar)."""
    decode(params, P.NoParams)
    return P.encode(gateway.status(ls))


@server.feature("ctx/listConversations")
async def list_conversations(ls: CtxServer, params: Any) -> Reply:
    """The conversations that came through the gateway, newest first; one is active."""
    decode(params, P.NoParams)
    return P.encode(await gateway.conversations(ls))


@server.feature("ctx/setActiveConversation")
async def set_active_conversation(ls: CtxServer, params: Any) -> Reply:
    """Pins and plans without a session go to this conversation from now on."""
    p = decode(params, P.ActiveConversationParams)
    return P.encode(await gateway.set_active(ls, p.session))


@server.feature("ctx/gatewayPreview")
async def gateway_preview(ls: CtxServer, params: Any) -> Reply:
    """The body last sent upstream for a conversation, readable."""
    p = decode(params, P.GatewayPreviewParams)
    return P.encode(await gateway.last_preview(ls, ls.session_of(p.session)))


@server.feature("ctx/reviewDecision")
async def review_decision(ls: CtxServer, params: Any) -> Reply:
    """Send, cancel or re-plan a request waiting for review."""
    return P.encode(gateway.decide(ls, decode(params, P.ReviewDecisionParams)))


@server.feature("ctx/planContext")
async def plan_context(ls: CtxServer, params: Any) -> Reply:
    """Plan a question; with dryRun (and extraPins / dropItems) a what-if that changes nothing."""
    p = decode(params, P.PlanContextParams)
    req = convert.plan_request(ls, p, ls.session_of(p.session))
    await ls.wait_index()
    if not p.dry_run:
        replan.supersede(ls, req.session)
    outcome = await ls.run(ls.sessions.plan, req)
    replan.push_events(ls)
    if not p.dry_run:  # the reply first; then the plan is kept for replay, and the meter follows
        plan = outcome.result.plan
        ls.after_reply(lambda: replan.after_plan(ls, req.session, plan))
    return outcome.result.plan  # type: ignore[return-value]  # a Struct: encoded in one pass (transport)


@server.feature("ctx/renderPrompt")
async def render_prompt(ls: CtxServer, params: Any) -> Reply:
    """The prompt a plan renders to (OpenAI or Anthropic messages, or text)."""
    p = decode(params, P.RenderPromptParams)
    outcome = await ls.run(ls.sessions.outcome, ls.session_of(p.session), p.plan_id)
    return P.encode(convert.rendered(await ls.run(outcome.render, p.format)))


@server.feature("ctx/showBudget")
async def show_budget(ls: CtxServer, params: Any) -> Reply:
    """The session's budget meter."""
    p = decode(params, P.SessionParams)
    return P.encode(convert.meter(await ls.run(ls.sessions.meter, ls.session_of(p.session))))


@server.feature("ctx/listExcluded")
async def list_excluded(ls: CtxServer, params: Any) -> Reply:
    """The dropped ledger: what recent plans excluded, turn by turn."""
    p = decode(params, P.ListExcludedParams)
    session = ls.session_of(p.session)
    turns = await ls.run(ls.sessions.ledger, session, p.plan_id, max(1, p.turns))
    return P.encode(convert.ledger(session, turns))


@server.feature("ctx/replayPlan")
async def replay_plan(ls: CtxServer, params: Any) -> Reply:
    """Rebuild a stored plan from its inputs: the same plan, byte for byte?"""
    p = decode(params, P.ReplayPlanParams)
    identical, result = await ls.run(ls.sessions.replay, p.plan_id)
    return P.encode(convert.replay(p.plan_id, identical, result))


@server.feature("ctx/setMode")
async def set_mode(ls: CtxServer, params: Any) -> Reply:
    """Set the session's retrieval mode, and re-plan."""
    p = decode(params, P.SetModeParams)
    session = ls.session_of(p.session)
    mode = await ls.run(ls.sessions.set_mode, session, p.mode)
    await replan.latest(ls, session)
    return P.encode(convert.mode(session, mode))


# ---- pins ---------------------------------------------------------------------------------------


@server.feature("ctx/pinSymbol")
async def pin_symbol(ls: CtxServer, params: Any) -> Reply:
    """Pin a symbol (by name, or at a position), and re-plan."""
    p = decode(params, P.PinSymbolParams)
    return P.encode(await replan.pin(ls, p, ls.session_of(p.session)))


@server.feature("ctx/unpin")
async def unpin(ls: CtxServer, params: Any) -> Reply:
    """Remove a pin, and re-plan."""
    p = decode(params, P.UnpinParams)
    return P.encode(await replan.unpin(ls, p.pin_id, ls.session_of(p.session)))


@server.feature("ctx/listPins")
async def list_pins(ls: CtxServer, params: Any) -> list[Reply]:
    """The session's pins, with what each costs now."""
    p = decode(params, P.SessionParams)
    pins = await ls.run(ls.sessions.pins, ls.session_of(p.session))
    return P.encode([convert.pin(ls, x) for x in pins])


@server.feature("ctx/restoreItem")
async def restore_item(ls: CtxServer, params: Any) -> Reply:
    """Restore an item of the dropped ledger in one call: pin what it shows."""
    p = decode(params, P.RestoreItemParams)
    session = ls.session_of(p.session)
    item = await ls.run(ls.sessions.excluded_item, session, p.item_id, p.plan_id)
    if not item.symbol:
        raise JsonRpcInvalidParams(f"item {p.item_id!r} ({item.kind}) is not code and cannot be pinned")
    return P.encode(await replan.pin(ls, P.PinRequest(symbol=item.symbol, kind=p.kind, ttl=p.ttl), session))


# ---- conversation and usage ---------------------------------------------------------------------


@server.feature("ctx/appendMessages")
async def append_messages(ls: CtxServer, params: Any) -> Reply:
    """Append messages to the session's branch; re-plan once appends settle."""
    p = decode(params, P.AppendMessagesParams)
    session = ls.session_of(p.session)
    stored = await ls.run(ls.sessions.append_raw, session, p.branch, convert.messages_in(p))
    replan.soon(ls, session)
    count = await ls.run(ls.sessions.message_count, session, p.branch)
    meter = convert.meter(await ls.run(ls.sessions.meter, session))
    return P.encode(P.AppendResult(appended=len(stored), messages=count, budget=meter))


@server.feature("ctx/reportUsage")
async def report_usage(ls: CtxServer, params: Any) -> Reply:
    """What a model call used: the turn ends (TTLs tick, reflection runs), calibration learns."""
    p = decode(params, P.ReportUsageParams)
    session = ls.session_of(p.session)
    report = await ls.run(ls.sessions.report_usage, session, p.plan_id, convert.usage(p))
    if report.asked:
        ls.notify("ctx/askRepin", convert.ask_repin(ls, session, report.asked))
    replan.push_events(ls)  # promotions, renewals, demotions, suggestions of the turn that just ended
    lenses.refresh(ls)  # TTLs ticked; pins may have expired or been promoted
    await replan.announce(ls, session, None)
    replan.soon(ls, session)
    return P.encode(convert.usage_report(report))


@server.feature("ctx/listMessages")
async def list_messages(ls: CtxServer, params: Any) -> Reply:
    """The branch's messages, archived ones marked (or left out)."""
    p = decode(params, P.ListMessagesParams)
    transcript = await ls.run(ls.sessions.messages, ls.session_of(p.session), p.branch)
    return P.encode(convert.transcript(transcript, p.include_archived))


@server.feature("ctx/branch")
async def branch(ls: CtxServer, params: Any) -> Reply:
    """Fork the conversation at a message."""
    p = decode(params, P.BranchParams)
    forked = await ls.run(ls.sessions.branch, ls.session_of(p.session), p.from_message_id, p.name)
    return P.encode(convert.branch(forked))


@server.feature("ctx/compact")
async def compact(ls: CtxServer, params: Any) -> Reply:
    """Summarise older turns (or trim them); ``dryRun`` returns the proposal, and an edited
    ``summary`` may be sent back to apply it."""
    p = decode(params, P.CompactParams)
    session = ls.session_of(p.session)
    c = await ls.run(lambda: ls.sessions.compact(session, p.strategy, dry_run=p.dry_run, summary=p.summary))
    if not p.dry_run:
        ls.notify("ctx/compacted", convert.compacted(session, c))
        await replan.latest(ls, session)
    return P.encode(convert.compaction(c))


@server.feature("ctx/setMemoryPolicy")
async def set_memory_policy(ls: CtxServer, params: Any) -> Reply:
    """Rolling (trim) or summarising memory, and the compaction threshold."""
    p = decode(params, P.MemoryPolicyParams)
    record = await ls.run(ls.sessions.set_memory_policy, ls.session_of(p.session), p.rolling, p.compaction_threshold)
    return P.encode(convert.memory_policy(record))


# ---- capsules and reflection --------------------------------------------------------------------


@server.feature("ctx/listCapsules")
async def list_capsules(ls: CtxServer, params: Any) -> list[Reply]:
    """The workspace's capsules."""
    decode(params, P.SessionParams)
    return P.encode(await ls.run(ls.sessions.capsules))


@server.feature("ctx/refreshCapsules")
async def refresh_capsules(ls: CtxServer, params: Any) -> list[Reply]:
    """(Re)make capsules: of ``paths``, else the stale ones and the most central modules."""
    p = decode(params, P.RefreshCapsulesParams)
    await ls.wait_index()
    paths = [ls.rel(x) for x in p.paths] if p.paths is not None else None
    return P.encode(await ls.run(ls.sessions.refresh_capsules, paths))


@server.feature("ctx/listSuggestions")
async def list_suggestions(ls: CtxServer, params: Any) -> list[Reply]:
    """Items the model suggested in ``ctx-suggest`` blocks: shown, never pinned without the user."""
    p = decode(params, P.SessionParams)
    return P.encode(await ls.run(ls.sessions.suggestions, ls.session_of(p.session)))


@server.feature("ctx/listReflections")
async def list_reflections(ls: CtxServer, params: Any) -> list[Reply]:
    """The reflection loop's decisions."""
    p = decode(params, P.SessionParams)
    return P.encode(await ls.run(ls.sessions.reflections, ls.session_of(p.session)))


@server.feature("ctx/undoReflection")
async def undo_reflection(ls: CtxServer, params: Any) -> Reply:
    """Undo a promotion, demotion or suggestion, and re-plan."""
    p = decode(params, P.UndoReflectionParams)
    session = ls.session_of(p.session)
    out = await ls.run(ls.sessions.undo_reflection, session, p.id)
    lenses.refresh(ls)
    await replan.latest(ls, session)
    return P.encode(out)


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
