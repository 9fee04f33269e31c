"""The gateway's HTTP side (aiohttp, server and upstream client, one event loop): each API
request is planned on the engine's worker, forwarded with the client's own headers, and the
reply streamed back as it arrives while a copy is read (``replies``).

Fail open: when ctx_lsp cannot handle a request, the client's bytes go upstream unchanged.
Upstream statuses and bodies reach the client unchanged. Keys and auth headers are forwarded
and never stored, logged or echoed."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import msgspec
from aiohttp import web

from ctx_lsp import report_html
from ctx_lsp.core.items import ContextOverflow
from ctx_lsp.core.planner import InvalidBudget
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS
from ctx_lsp.core.runs import assistant_of
from ctx_lsp.core.savings import Totals
from ctx_lsp.engine import UserError
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis import Api
from ctx_lsp.gateway.apis.anthropic import Anthropic
from ctx_lsp.gateway.apis.chat import Chat, is_usage_only
from ctx_lsp.gateway.apis.responses import Responses
from ctx_lsp.gateway.direct import Cacheable, shared_prefix
from ctx_lsp.gateway.events import Decision, GatewayEvent, GatewaySnapshot, Listener, RequestDone
from ctx_lsp.gateway.kept import trim
from ctx_lsp.gateway.options import GatewayOptions, url_of
from ctx_lsp.gateway.planned import Planned, Sent
from ctx_lsp.gateway.replies import SseSplitter
from ctx_lsp.gateway.review import ReviewDesk
from ctx_lsp.gateway.status import GatewayRecord, Status
from ctx_lsp.gateway.translate import SESSION_HEADER, exchange, rewrite, session_of, tool_names
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.exchanges import ExchangePlan
from ctx_lsp.sessions.ledger import Forwarded
from ctx_lsp.sessions.shared import NotFound
from ctx_lsp.workspace.secrets import DEFAULT_MASKER

log = logging.getLogger("ctx_lsp.gateway")
T = TypeVar("T")
# Queues an engine call on the engine's one worker thread when called (not when awaited): calls
# run in the order they were made, whatever the event loop does in between.
Runner = Callable[..., Awaitable[Any]]

MAX_BODY_BYTES = 512 * 1024 * 1024  # requests with images and PDFs reach many MB
TOKEN_HEADER = "X-Ctx-Token"
COUNT_TOKENS = "/v1/messages/count_tokens"
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Host",
        "Content-Length",
    )
)
NOT_FORWARDED = HOP_BY_HOP | {"accept-encoding", SESSION_HEADER.lower(), TOKEN_HEADER.lower()}
ANTHROPIC, CHAT, RESPONSES = Anthropic(), Chat(), Responses()


SENT_KEPT = 32  # conversations whose last sent body is kept for the preview
KEPT_BYTES = 64 * 1024 * 1024  # what those bodies, and the previous requests' cacheable parts, weigh at most


class Gateway:
    def __init__(
        self,
        sessions: SessionEngine,
        options: GatewayOptions,
        run: Runner,
        listener: Listener | None = None,
        review: bool = False,
    ) -> None:
        self.sessions = sessions
        self.options = options
        self.run = run
        self.listener = listener
        # review before send: each planned request waits at the desk for the listener's decision
        timeout = lambda: sessions.engine.config.gateway.review_timeout  # noqa: E731
        self.desk = ReviewDesk(timeout, self._emit) if review else None
        self.sent: dict[str, Sent] = {}  # by session, newest last
        self._previous: dict[str, bytes] = {}  # by session: its client's previous request, cacheable part
        self._cacheable = Cacheable()
        self.status = Status(options)
        self.status.workspace = str(sessions.engine.root)
        self.client: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    # ---- lifecycle ----------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._guard])
        app.router.add_get("/", self._hello)  # and HEAD /, which Claude Code sends first
        app.router.add_get("/ctx/status", self._status)
        app.router.add_get("/ctx/report", self._report)
        for path, api in (
            ("/v1/messages", ANTHROPIC),
            ("/v1/chat/completions", CHAT),
            ("/chat/completions", CHAT),
            ("/v1/responses", RESPONSES),
            ("/responses", RESPONSES),
        ):
            app.router.add_post(path, self._handler(api))
        app.router.add_route("*", "/{tail:.*}", self._forward)
        return app

    async def start(self) -> str:
        """Listen; returns the base URL (the real port when 0 was asked for)."""
        # a client that goes away cancels its handler: with it the upstream request (which may be
        # silent for minutes) and any wait for the engine; what must be stored is shielded
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, handler_cancellation=True)
        await self._runner.setup()
        # the secret masker loads its detectors on first use (~0.5 s on the engine's one thread):
        # now, not while the first requests (thirty sub-agents at once) wait behind it
        await self.run(self._warm_masker)
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        await site.start()
        self.client = aiohttp.ClientSession(
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, connect=30, sock_read=600),
        )
        server = site._server
        port = server.sockets[0].getsockname()[1] if server and server.sockets else self.options.port
        self.status.url = url_of(self.options.host, port)
        return self.status.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.client is not None:
            await self.client.close()

    def _handler(self, api: Api) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._api(request, api)

        return handle

    # ---- small routes -------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable) -> web.StreamResponse:
        token = self.options.token
        if token and not hmac.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
            api = _api_of(request)
            return _reply(api, 401, f"ctx_lsp gateway: send the gateway's token as the {TOKEN_HEADER} header")
        return await handler(request)

    async def _hello(self, request: web.Request) -> web.Response:
        return web.Response(text="ctx-lsp gateway\n")

    async def _status(self, request: web.Request) -> web.Response:
        session = request.query.get("session")
        snapshot = self.status.snapshot()
        try:
            snapshot["totals"] = msgspec.to_builtins(await self.run(self.totals, session))
        except Exception:  # the status page answers even when the store cannot
            log.exception("gateway: totals for /ctx/status failed")
        return web.json_response(snapshot)

    async def _report(self, request: web.Request) -> web.Response:
        """The gateway report as a page (``ctx-lsp report --html``); ``?session=`` for one session."""
        session = request.query.get("session")
        workspace = str(self.sessions.engine.root)
        try:
            report = await self.run(self.sessions.gateway_report, session)
        except NotFound as err:
            return _html(404, report_html.error_page(str(err)))
        except Exception as err:  # an unreadable store: say so, as a page
            log.exception("gateway: the report for /ctx/report failed")
            return _html(503, report_html.error_page(f"the report could not be made: {err}"))
        # rendering reads only the report: off the engine's worker, so requests are not held
        return _html(200, await asyncio.to_thread(report_html.render, report, workspace))

    # ---- the APIs -----------------------------------------------------------------------------

    async def _api(self, request: web.Request, api: Api) -> web.StreamResponse:
        started = time.perf_counter()
        raw = await _body(request)
        if raw is None:
            self.status.count("bad_request")
            return _too_large(api)
        try:
            fields = b.obj(raw)
        except b.BodyError as err:
            self.status.count("bad_request")
            return _reply(api, 400, f"ctx_lsp gateway: the request body is not a JSON object ({err})")
        try:
            planned = await self.run(self._plan, api, fields, raw, request.headers.get(SESSION_HEADER))
        except ContextOverflow as err:
            self.status.count("overflow")
            return _reply(api, 400, f"ctx_lsp gateway: {err}")
        except b.BodyError as err:
            if request.headers.get(SESSION_HEADER):
                return _reply(api, 400, f"ctx_lsp gateway: {err}")
            planned = Planned(body=raw, note=f"not read ({err})")
        except (UserError, InvalidBudget) as err:  # no messages, max_tokens over the window: the provider answers
            planned = Planned(body=raw, note=f"not planned ({err})")
        except Exception as err:  # the assistant must never break because of us
            log.exception("gateway: planning failed; forwarding the request unchanged")
            self.status.count("fail_open")
            planned = Planned(body=raw, note=f"fail-open: {type(err).__name__}: {err}")
        added = (time.perf_counter() - started) * 1000
        planned.client_body = raw
        if self.desk is not None and planned.plan is not None:
            review_id = f"review-{uuid.uuid4().hex[:12]}"
            while (decision := await self._review(review_id, planned)) == "replan":
                try:
                    again = await self.run(self._plan, api, fields, raw, request.headers.get(SESSION_HEADER))
                except Exception:  # e.g. the new pins overflow: the request stays as it was planned
                    log.exception("gateway: re-planning a held request failed; it stays as planned")
                    continue
                again.client_body, planned = raw, again
            if decision == "cancel":
                self.status.count("cancelled")
                return _reply(api, 400, "ctx_lsp gateway: the request was cancelled in the editor (review before send)")
            if decision == "timeout":
                planned.note = "sent as planned: the review timed out"
        if planned.session is not None and planned.parsed is not None:
            self._keep_sent(api, planned)
        try:
            return await self._send(request, api, planned, added)
        finally:
            if planned.plan is not None:  # the plan is kept for replay once the reply is on its way
                await self.run(self.sessions.flush)

    async def _review(self, review_id: str, planned: Planned) -> Decision:
        assert self.desk is not None
        try:
            return await self.desk.ask(review_id, planned)
        except Exception:  # a review that fails must not hold the assistant
            log.exception("gateway: the review failed; sending as planned")
            return "send"

    def _emit(self, event: GatewayEvent) -> Awaitable[None] | None:
        """``event`` to the listener; what it returns is for the caller to await."""
        return self.listener(event) if self.listener is not None else None

    def snapshot(self) -> GatewaySnapshot:
        """Where the gateway stands, for whoever runs it."""
        st = self.status
        counts = st.counts
        return GatewaySnapshot(
            st.url, counts["requests"], counts["planned"], counts["fail_open"], self.desk is not None, st.last
        )

    def _keep_sent(self, api: Api, planned: Planned) -> None:
        assert planned.session is not None and planned.parsed is not None
        plan_id = planned.plan.outcome.result.plan.plan_id if planned.plan else None
        self.sent.pop(planned.session, None)
        self.sent[planned.session] = Sent(api.name, planned.parsed.model, planned.body, plan_id, time.time())
        trim(self.sent, SENT_KEPT, KEPT_BYTES, lambda s: len(s.body))

    def _plan(self, api: Api, fields: dict[str, b.Raw], raw: bytes, header: str | None) -> Planned:
        """On the engine's worker: read the body, plan it, rewrite it."""
        parsed = api.parse(fields)
        session = session_of(api, parsed, header)
        if parsed.opaque:
            return Planned(body=raw, api=api.name, parsed=parsed, session=session, note=parsed.opaque)
        plan = self.sessions.plan_exchange(exchange(api, parsed, session, self.options.mode))
        body = rewrite(api, parsed, plan) or raw
        planned = Planned(body=body, api=api.name, parsed=parsed, session=plan.session, plan=plan)
        if plan.side:
            planned.note = f"side request ({plan.side}): no context added"
        if api is CHAT and parsed.stream:
            options = b.value(fields.get("stream_options")) or {}
            if not (isinstance(options, dict) and options.get("include_usage")):
                top = b.obj(body)
                top["stream_options"] = b.raw({**(options if isinstance(options, dict) else {}), "include_usage": True})
                planned.body, planned.strip_usage = bytes(b.join_object(top)), True
        return planned

    async def _send(self, request: web.Request, api: Api, planned: Planned, added_ms: float) -> web.StreamResponse:
        parsed = planned.parsed
        stream = parsed.stream if parsed else False
        url = self._upstream_url(request, api)
        reader = api.reader(stream)
        sent_at, planned.sent = time.perf_counter(), time.time()
        first_byte: float | None = None
        resp: web.StreamResponse | None = None
        recorded: Awaitable[Any] | None = None
        try:
            async with self._client().request(
                request.method, url, data=planned.body, headers=_forward_headers(request), allow_redirects=False
            ) as up:
                if up.status >= 400:  # the provider's own answer, unchanged
                    self.status.count("upstream_error")
                    return web.Response(status=up.status, body=await up.read(), headers=_reply_headers(up))
                encoding = up.headers.get("Content-Encoding")
                reader.set_encoding(encoding)
                strip = planned.strip_usage and (encoding or "identity").lower() == "identity"
                resp = web.StreamResponse(status=up.status, headers=_reply_headers(up))
                splitter = SseSplitter() if strip else None
                try:
                    await resp.prepare(request)
                except (ConnectionResetError, aiohttp.ClientConnectionResetError):
                    return resp  # the client is gone before the first byte
                chunks = up.content.iter_any()
                while True:
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        break
                    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, TimeoutError) as err:
                        # the upstream broke off: so do we, so the client sees a failed request,
                        # never a clean end of a reply that is not whole
                        log.warning("gateway: the upstream stopped mid-reply (%s)", type(err).__name__)
                        self.status.count("upstream_cut")
                        if request.transport is not None:
                            request.transport.close()
                        return resp
                    if first_byte is None:
                        first_byte = time.perf_counter()
                    reader.feed(chunk)
                    out = chunk
                    if splitter is not None:
                        out = b"".join(e.raw for e in splitter.feed(chunk) if not is_usage_only(e.data))
                    try:
                        if out:
                            await resp.write(out)
                    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
                        up.close()  # the client went away: so does the upstream request
                        self.status.count("client_gone")
                        await self._keep_whole(planned, reader, added_ms, sent_at, first_byte, request)
                        return resp
                # queued on the worker before the client can see the end: its next request finds it
                upstream_s = (first_byte or time.perf_counter()) - sent_at
                recorded = self._record(planned, reader.finish(), added_ms, upstream_s, _client(request))
                try:
                    if splitter is not None and (rest := splitter.rest()):
                        await resp.write(rest)
                    await resp.write_eof()
                except (ConnectionResetError, aiohttp.ClientConnectionResetError):
                    self.status.count("client_gone")
        except (aiohttp.ClientConnectorError, aiohttp.ClientOSError) as err:
            self.status.count("upstream_unreachable")
            reply = _reply(
                api, 502, f"ctx_lsp gateway: the upstream {_origin(url)} is unreachable ({type(err).__name__})"
            )
            if isinstance(err, aiohttp.ClientConnectorError):  # nothing listens there: retrying only waits
                reply.headers["x-should-retry"] = "false"  # the OpenAI and Anthropic SDKs obey it
            return reply
        except TimeoutError:
            self.status.count("upstream_timeout")
            return _reply(api, 504, f"ctx_lsp gateway: the upstream {_origin(url)} did not answer in time")
        except aiohttp.ClientError as err:  # closed without an answer, an invalid status line…
            self.status.count("upstream_broken")
            if resp is not None and resp.prepared:  # the client has our headers: it must see a cut
                if request.transport is not None:
                    request.transport.close()
                return resp
            return _reply(api, 502, f"ctx_lsp gateway: the upstream {_origin(url)} broke off ({type(err).__name__})")
        except asyncio.CancelledError:  # the client went away: the upstream request is closed with us
            self.status.count("client_gone")
            if recorded is None:
                await self._keep_whole(planned, reader, added_ms, sent_at, first_byte, request)
            raise
        await _stored(recorded)
        assert resp is not None
        return resp

    async def _keep_whole(
        self,
        planned: Planned,
        reader: Any,
        added_ms: float,
        sent_at: float,
        first_byte: float | None,
        request: web.Request,
    ) -> None:
        """A client that leaves once it has read the reply's last event (Codex does) still has the
        reply stored: the next request continues the conversation with it. A reply cut short is not."""
        if not (reader.stream and reader.reply.complete and not reader.broken):
            return
        upstream_s = (first_byte or time.perf_counter()) - sent_at
        await _stored(self._record(planned, reader.finish(), added_ms, upstream_s, _client(request)))

    def _record(
        self, planned: Planned, reply: Any, added_ms: float, upstream_s: float, client: tuple[str, str | None]
    ) -> Awaitable[Any] | None:
        """The reply into the session (appended, its usage reported: queued on the worker, returned
        to be awaited), the request into the status, the log and the editor."""
        plan = planned.plan
        stored = None
        record = self.status.record(planned, reply.usage, added_ms, upstream_s * 1000)
        if plan is not None:
            stored = self.run(self._store, planned, reply, record, client)
        self._log(record)
        try:
            self._emit(RequestDone(record))
        except Exception:
            log.exception("gateway: notifying the editor failed")
        return stored

    def _store(self, planned: Planned, reply: Any, record: GatewayRecord, client: tuple[str, str | None]) -> None:
        """On the worker: the reply into the session, then what the request sent, saved and cost
        (with what sending it direct would have repeated of the client's previous request)."""
        plan = planned.plan
        assert plan is not None
        with self.sessions.batch():  # a dozen writes, one commit
            self._store_reply(planned, reply, record, plan, client)

    def _store_reply(
        self, planned: Planned, reply: Any, record: GatewayRecord, plan: ExchangePlan, client: tuple[str, str | None]
    ) -> None:
        self.sessions.record_reply(
            plan.session, record.plan_id or "", plan.ids[-1] if plan.ids else None, reply.message(), reply.usage
        )
        fields = planned.parsed.fields if planned.parsed is not None else None
        key = self._cacheable(planned.api, planned.client_body, fields)
        previous = self._previous.pop(plan.session, None)
        self._previous[plan.session] = key
        trim(self._previous, SENT_KEPT, KEPT_BYTES, len)
        assistant, named = client
        parsed = planned.parsed
        self.sessions.account_exchange(
            plan,
            Forwarded(
                model=record.model,
                usage=reply.usage,
                client=assistant,
                named=named,
                client_session=parsed.client_session if parsed else None,
                messages=[m for ms in parsed.messages for m in ms] if parsed else [],
                tools=tool_names(parsed.tools) if parsed else (),
                repeated=shared_prefix(key, previous) / len(key) if previous and key else 0.0,
                sent=planned.sent,
                cache_ttl=parsed.cache_ttl if parsed else CACHE_TTL_SECONDS,
            ),
        )

    def _warm_masker(self) -> None:
        (self.sessions.engine.masker or DEFAULT_MASKER).mask("warm-up")

    def totals(self, session: str | None = None) -> Totals:
        """On the worker: the requests' savings and cost, through vs direct (``core.savings``)."""
        return self.sessions.gateway_totals(session)

    def _log(self, record: GatewayRecord) -> None:
        line = record.json_line() if self.options.json_log else record.text_line()
        log.info("%s", line)

    # ---- forwarding ---------------------------------------------------------------------------

    def _client(self) -> aiohttp.ClientSession:
        assert self.client is not None, "the gateway was not started"
        return self.client

    def _upstream_url(self, request: web.Request, api: Api | None) -> str:
        path = request.rel_url.raw_path
        query = request.rel_url.raw_query_string
        if api is ANTHROPIC or (api is None and _is_anthropic(request)):
            url = self.options.anthropic_upstream + path
        else:  # OpenAI's base URL already ends in /v1
            url = self.options.openai_upstream + (path[3:] if path.startswith("/v1/") or path == "/v1" else path)
        return url + (f"?{query}" if query else "")

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        """Any other path: forwarded unchanged to the upstream of its API (models, count_tokens…)."""
        url = self._upstream_url(request, None)
        data = await _body(request)
        if data is None:
            return _too_large(_api_of(request))
        counting = request.method == "POST" and request.path == COUNT_TOKENS
        resp: web.StreamResponse | None = None
        try:
            async with self._client().request(
                request.method, url, data=data, headers=_forward_headers(request), allow_redirects=False
            ) as up:
                resp = web.StreamResponse(status=up.status, headers=_reply_headers(up))
                await resp.prepare(request)
                answer = []
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                    if counting:
                        answer.append(chunk)
                await resp.write_eof()
        except (aiohttp.ClientConnectorError, aiohttp.ClientOSError) as err:
            return _reply(_api_of(request), 502, f"ctx_lsp gateway: the upstream is unreachable ({type(err).__name__})")
        except TimeoutError:
            return _reply(_api_of(request), 504, "ctx_lsp gateway: the upstream did not answer in time")
        except aiohttp.ClientError as err:
            if resp is not None and resp.prepared:
                if request.transport is not None:
                    request.transport.close()
                return resp
            return _reply(_api_of(request), 502, f"ctx_lsp gateway: the upstream broke off ({type(err).__name__})")
        if counting and up.status == 200 and not up.headers.get("Content-Encoding"):
            await self._count_sample(data, b"".join(answer))
        return resp

    async def _count_sample(self, request: bytes, answer: bytes) -> None:
        """Anthropic's exact count of a request calibrates our estimate for that model."""
        try:
            actual = b.value(b.obj(answer).get("input_tokens"))
            if isinstance(actual, int):
                await self.run(self._count_sampled, request, actual)
        except Exception:  # a measurement lost, nothing more
            log.debug("gateway: count_tokens not used for calibration", exc_info=True)

    def _count_sampled(self, request: bytes, actual: int) -> None:
        """On the worker, as every read of a request is: what the readers keep between requests
        is the engine thread's alone."""
        parsed = ANTHROPIC.parse(b.obj(request))
        texts = [parsed.system, parsed.tools, *(m.content for ms in parsed.messages for m in ms)]
        text = "\n".join(t for t in texts if t)
        self.sessions.count_sample(parsed.model, text, actual, parsed.media_tokens)


def _is_anthropic(request: web.Request) -> bool:
    return request.path.startswith("/v1/messages") or "anthropic-version" in request.headers


def _api_of(request: web.Request) -> Api:
    if _is_anthropic(request):
        return ANTHROPIC
    return RESPONSES if request.path.endswith("/responses") else CHAT


async def _body(request: web.Request) -> bytes | None:
    """The request's body; None when it is over the limit — told by its Content-Length before a
    byte of it is read, or by reading a body of no announced length."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return None
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None


def _too_large(api: Api) -> web.Response:
    reply = _reply(api, 413, f"ctx_lsp gateway: the request body is over the limit of {MAX_BODY_BYTES >> 20} MB")
    reply.force_close()  # the rest of the body is not read
    return reply


def _reply(api: Api, status: int, message: str) -> web.Response:
    return web.Response(status=status, body=api.error(status, message), content_type="application/json")


def _html(status: int, page: str) -> web.Response:
    # the page itself allows no script and no loads; the header says so before it is parsed
    headers = {"Content-Security-Policy": report_html.CSP, "Cache-Control": "no-store"}
    return web.Response(status=status, text=page, content_type="text/html", charset="utf-8", headers=headers)


def _origin(url: str) -> str:
    return url.split("/", 3)[2] if "://" in url else url


async def _stored(recorded: Awaitable[Any] | None) -> None:
    """A reply's recording waited for, shielded: a client that leaves now does not take the
    stored reply with it."""
    if recorded is None:
        return
    try:
        await asyncio.shield(recorded)
    except Exception:
        log.exception("gateway: the reply could not be recorded")


def _client(request: web.Request) -> tuple[str, str | None]:
    """(the assistant as its User-Agent names it, the session the client named in the header)."""
    headers = request.headers
    return assistant_of(headers.get("User-Agent", ""), headers.get("originator", "")), headers.get(SESSION_HEADER)


def _forward_headers(request: web.Request) -> dict[str, str]:
    headers = {k: v for k, v in request.headers.items() if k.lower() not in NOT_FORWARDED}
    headers["Accept-Encoding"] = "identity"  # the copy must be readable; the client gets what is sent
    return headers


def _reply_headers(up: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in up.headers.items() if k.lower() not in HOP_BY_HOP}
