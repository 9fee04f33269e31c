"""A fake model provider on 127.0.0.1: OpenAI Chat, OpenAI Responses and Anthropic Messages.

Used in-process by the gateway tests and as a script next to a real assistant in a network
namespace (tests/gateway/netns.py). Nothing here talks to anything but its own clients.

In-process::

    async with FakeUpstream(reply="hi") as up:          # same event loop as the test (use async SDK clients)
        client = AsyncOpenAI(base_url=up.openai_url, api_key="k")
    with FakeUpstream() as up:                           # its own thread and loop (sync SDK clients, subprocesses)
        up.queue(Reply.tool_call("read_file", {"path": "a.py"}), Reply.text("done"))
        ...
        up.requests[-1].json["messages"]

As a script (prints ``listening http://127.0.0.1:N`` on stdout once it accepts connections)::

    python -m tests.gateway.fake_upstream --port 0 --record requests.jsonl --reply "FAKE REPLY"

Usage numbers are deterministic: a request's prompt is ``len(body bytes) // 4`` tokens; a reply's
output is ``max(1, len(text bytes) // 4)``. A provider prefix cache is simulated per API: the cached
part is the common byte prefix of this request's cacheable fields (serialised compactly, in the
provider's cache order: Anthropic tools, system, messages, without cache_control markers; OpenAI
Chat tools, messages; Responses tools, instructions, input) with the previous request's to the
same API, in tokens (bytes // 4), rounded down to a multiple of 128 for OpenAI. Key order inside
the JSON counts (as it does for a real provider's tokens); whitespace between JSON tokens does not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gzip
import json
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

EXPAND_ID = "{expand_id}"  # in a scripted tool call's arguments: the id of the last shortened output seen
DEFAULT_REPLY = "FAKE-UPSTREAM-REPLY: hello from the fake model."
DEFAULT_MODEL = "fake-model"
MODELS = ("fake-model", "gpt-4o-mini", "claude-sonnet-4-5")

Api = Literal["chat", "responses", "messages"]
APIS: tuple[Api, ...] = ("chat", "responses", "messages")
_API_OF_PATH = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}

# status → (OpenAI error type, Anthropic error type)
_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("invalid_api_key", "authentication_error"),
    403: ("permission_denied", "permission_error"),
    404: ("not_found_error", "not_found_error"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_exceeded", "rate_limit_error"),
    500: ("server_error", "api_error"),
    503: ("server_error", "overloaded_error"),
    529: ("server_error", "overloaded_error"),
}


# --- what to answer -----------------------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer. Build it with :meth:`text`, :meth:`tool_call` or :meth:`error`.

    ``delay``: seconds between stream events (a slow stream). ``initial_delay``: seconds before the
    status line. ``cut_after``: a streamed reply stops after that many SSE events — ``cut="drop"``
    closes the connection (the chunked body never finishes), ``cut="end"`` ends the HTTP body
    cleanly but without the closing events (no ``[DONE]``, ``message_stop``, ``response.completed``).
    ``gzip``: a non-streamed body is gzip-compressed and sent with ``Content-Encoding: gzip``.
    ``headers``: extra response headers. ``input_tokens``: the prompt size the usage reports
    (default: the request's bytes / 4 — a screenshot then counts as its base64, where a provider
    counts ~1,600).
    """

    kind: Literal["text", "tool_call", "error"] = "text"
    content: str = DEFAULT_REPLY  # a text reply's text
    tool_name: str = ""
    tool_arguments: str = "{}"  # a JSON object, as text
    status: int = 200
    message: str = ""  # an error's message
    body: bytes | None = None  # an error's whole body, instead of the provider-shaped one
    delay: float = 0.0
    initial_delay: float = 0.0
    cut_after: int | None = None
    cut: Literal["drop", "end"] = "drop"
    gzip: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    input_tokens: int | None = None
    tool_id: str | None = None  # a tool call's id (default: one made from the request's number)

    @classmethod
    def text(cls, content: str = DEFAULT_REPLY, **options: Any) -> Reply:
        return cls(kind="text", content=content, **options)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any] | str | None = None, **options: Any) -> Reply:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        return cls(kind="tool_call", tool_name=name, tool_arguments=args, **options)

    @classmethod
    def error(cls, status: int, message: str | None = None, **options: Any) -> Reply:
        return cls(kind="error", status=status, message=message or f"fake upstream error {status}", **options)

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> Reply:
        """A reply from JSON (``--queue`` in script mode): ``{"kind": "tool_call", "tool_name": …,
        "tool_arguments": {…}}``, ``{"kind": "error", "status": 429}``, ``{"text": "…", "delay": 0.1}``."""
        spec = dict(spec)
        if "text" in spec:
            spec["content"] = spec.pop("text")
        if isinstance(spec.get("tool_arguments"), dict):
            spec["tool_arguments"] = json.dumps(spec["tool_arguments"])
        if isinstance(spec.get("body"), str):
            spec["body"] = spec["body"].encode()
        return cls(**spec)


@dataclass
class RecordedRequest:
    """One request as the fake upstream received it."""

    method: str
    path: str  # with the query string, e.g. "/v1/messages?beta=true"
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes
    json: Any  # the parsed body, or None
    time: float
    api: str | None = None  # "chat" | "responses" | "messages" for a model call
    status: int = 0  # what the fake answered
    reply: str = ""  # the kind of reply it sent

    @property
    def route(self) -> str:
        return self.path.split("?", 1)[0]

    def to_record(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body.decode("utf-8", errors="replace"),
            "api": self.api,
            "status": self.status,
            "reply": self.reply,
        }


def tokens(data: bytes | str) -> int:
    """The fake tokenizer: four bytes a token."""
    return len(data.encode() if isinstance(data, str) else data) // 4


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def cacheable(api: str, body: dict[str, Any]) -> bytes:
    """The parts of a request a provider caches, in its order, serialised compactly.

    Tools come first everywhere (OpenAI renders function definitions ahead of the conversation).
    Anthropic's ``cache_control`` markers are not content: Claude Code moves its last one to the
    newest user block every turn, and that must not count as a change of the prefix."""
    keys = {
        "messages": ("tools", "system", "messages"),
        "chat": ("tools", "messages"),
        "responses": ("tools", "instructions", "input"),
    }[api]
    parts = [body.get(k) for k in keys]
    if api == "messages":
        parts = _without_cache_control(parts)
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def _pieces(text: str) -> list[str]:
    """Stream deltas: a word (with its trailing space) each."""
    return re.findall(r"\S+\s*|\s+", text) or [""]


def _arg_pieces(args: str, size: int = 12) -> list[str]:
    return [args[i : i + size] for i in range(0, len(args), size)] or [""]


DIAGNOSED = (("model", "model_changed"), ("tools", "tools_changed"), ("system", "system_changed"))


def _diagnose(body: dict[str, Any], previous: dict[str, Any] | None, missed: int) -> dict[str, Any] | None:
    """Anthropic's cache diagnostics, played: for a request that asks (``diagnostics``), where it
    diverged from the previous request — the model, the tools, the system prompt, or earlier
    messages (a request that only appends diverges nowhere: the reason is null)."""
    asked = body.get("diagnostics")
    if not isinstance(asked, dict):
        return None
    if previous is None or not asked.get("previous_message_id"):
        return {"cache_miss_reason": None}
    for name, kind in DIAGNOSED:
        if _without_cache_control(body.get(name)) != _without_cache_control(previous.get(name)):
            return {"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": missed}}
    before, now = (_without_cache_control(x.get("messages") or []) for x in (previous, body))
    if now[: len(before)] != before:
        return {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": missed}}
    return {"cache_miss_reason": None}


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


# --- the server ---------------------------------------------------------------------------------


class FakeUpstream:
    """The fake provider. ``reply`` is the default text answer; :meth:`queue` scripts the next ones."""

    def __init__(self, reply: str = DEFAULT_REPLY, *, record: Path | str | None = None) -> None:
        self.default = Reply.text(reply)
        self.requests: list[RecordedRequest] = []
        self.record_path = Path(record) if record else None
        self._queues: dict[str | None, deque[Reply]] = {None: deque(), **{a: deque() for a in APIS}}
        self._previous: dict[str, bytes] = {}
        self._previous_body: dict[str, Any] = {}  # the previous request of each API, for cache diagnostics
        self._diagnosis: dict[str, Any] | None = None
        self._counter = 0
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port = 0
        self.host = "127.0.0.1"

    # -- scripting

    def queue(self, *replies: Reply, api: Api | None = None) -> None:
        """Answer the next model requests (to ``api`` only, or to any) with these, in order."""
        self._queues[api].extend(replies)

    def set_default(self, reply: Reply | str) -> None:
        """What every request answers once the queues are empty."""
        self.default = Reply.text(reply) if isinstance(reply, str) else reply

    def reset(self) -> None:
        """Forget recorded requests, queued replies and the simulated cache."""
        self.requests.clear()
        for q in self._queues.values():
            q.clear()
        self._previous.clear()
        self._previous_body.clear()

    def set_responder(self, responder: Callable[[dict[str, Any]], Reply | None] | None) -> None:
        """Once the queues are empty, answer each request with ``responder(body)`` (None: the
        default): concurrent conversations each get the reply their next request resends."""
        self.responder = responder

    def _next_reply(self, api: str, body: dict[str, Any] | None = None) -> Reply:
        for key in (api, None):
            with contextlib.suppress(IndexError):
                return self._queues[key].popleft()
        if self.responder is not None and body is not None:
            found = self.responder(body)
            if found is not None:
                return found
        return self.default

    # -- where it is

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic base URL (the SDK and Claude Code add /v1)."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the OpenAI base URL."""
        return self.url + "/v1"

    anthropic_url = url

    def requests_to(self, route: str) -> list[RecordedRequest]:
        """Recorded requests whose path (without the query string) is ``route``."""
        return [r for r in self.requests if r.route == route]

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.api]

    # -- lifecycle: in the caller's loop

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0: a free port); returns the base URL."""
        self.host = host
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeUpstream:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- lifecycle: in a thread of its own

    def start_in_thread(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve from a background thread with its own event loop; returns the base URL."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start(host, port))
            except BaseException as e:
                failure.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-upstream", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self.url

    def stop_thread(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = self._loop = None

    def __enter__(self) -> FakeUpstream:
        self.start_in_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_thread()

    # -- requests

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        parsed: Any = None
        raw = body
        if request.headers.get("Content-Encoding", "").lower() == "gzip":
            with contextlib.suppress(OSError):
                raw = gzip.decompress(body)
        if raw:
            with contextlib.suppress(ValueError):
                parsed = json.loads(raw)
        headers: dict[str, str] = {}
        for k, v in request.headers.items():
            k = k.lower()
            headers[k] = f"{headers[k]}, {v}" if k in headers else v
        route = request.path
        api = _API_OF_PATH.get(route) if request.method == "POST" else None
        rec = RecordedRequest(request.method, request.path_qs, headers, body, parsed, time.time(), api)
        self.requests.append(rec)
        try:
            resp = await self._answer(request, rec, raw)
            rec.status = resp.status
            return resp
        finally:
            self._write_record(rec)

    def _write_record(self, rec: RecordedRequest) -> None:
        if self.record_path is None:
            return
        with self.record_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec.to_record()) + "\n")

    async def _answer(self, request: web.Request, rec: RecordedRequest, raw: bytes) -> web.StreamResponse:
        route, method = rec.route, rec.method
        if route == "/" and method in ("GET", "HEAD"):
            rec.reply = "root"
            return web.Response(text="ok")
        if route == "/v1/models" and method == "GET":
            rec.reply = "models"
            return web.json_response(self._models("anthropic-version" in rec.headers))
        if route == "/v1/messages/count_tokens" and method == "POST":
            rec.reply = "count_tokens"
            return web.json_response({"input_tokens": tokens(raw)})
        if rec.api is None:
            rec.reply = "not_found"
            anthropic = "anthropic-version" in rec.headers
            return self._error_response(rec, Reply.error(404, f"no route {method} {route}"), anthropic)
        if not isinstance(rec.json, dict):
            rec.reply = "bad_json"
            return self._error_response(rec, Reply.error(400, "body is not a JSON object"), rec.api == "messages")
        reply = self._next_reply(rec.api, rec.json)
        if reply.kind == "tool_call" and EXPAND_ID in reply.tool_arguments:
            # a model that read a shortened output asks for the whole: the id from the marker it saw
            found = re.findall(r"expand\(\\?'(g-[0-9a-f]+)\\?'\)", raw.decode("utf-8", "replace"))
            reply = dataclasses.replace(
                reply, tool_arguments=reply.tool_arguments.replace(EXPAND_ID, found[-1] if found else "")
            )
        rec.reply = reply.kind
        if reply.initial_delay:
            await asyncio.sleep(reply.initial_delay)
        if reply.kind == "error":
            return self._error_response(rec, reply, rec.api == "messages")
        body = rec.json
        self._counter += 1
        prompt = tokens(raw) if reply.input_tokens is None else reply.input_tokens
        key = cacheable(rec.api, body)
        before = self._previous.get(rec.api, b"")
        prefix = _common_prefix(key, before)
        self._diagnosis = _diagnose(body, self._previous_body.get(rec.api), (len(before) - prefix) // 4)
        self._previous[rec.api], self._previous_body[rec.api] = key, body
        cached = min(prefix // 4, prompt)
        if rec.api != "messages":
            cached -= cached % 128
        build = {"chat": self._chat, "responses": self._responses, "messages": self._messages}[rec.api]
        streamed = bool(body.get("stream"))
        result = build(body, reply, prompt, cached, streamed)
        if streamed:
            return await self._stream(request, result, reply)
        payload = json.dumps(result).encode()
        headers = {"Content-Type": "application/json", **reply.headers}
        if reply.gzip:
            payload = gzip.compress(payload)
            headers["Content-Encoding"] = "gzip"
        return web.Response(body=payload, headers=headers)

    def _models(self, anthropic: bool) -> dict[str, Any]:
        if anthropic:
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in MODELS]
            return {"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}
        return {
            "object": "list",
            "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in MODELS],
        }

    def _error_response(self, rec: RecordedRequest, reply: Reply, anthropic: bool) -> web.Response:
        openai_type, anthropic_type = _ERROR_TYPES.get(reply.status, ("api_error", "api_error"))
        if reply.body is not None:
            payload = reply.body
        elif anthropic:
            error = {"type": anthropic_type, "message": reply.message}
            payload = json.dumps({"type": "error", "error": error, "request_id": "req_fake"}).encode()
        else:
            error = {"message": reply.message, "type": openai_type, "param": None, "code": openai_type}
            payload = json.dumps({"error": error}).encode()
        headers = {"Content-Type": "application/json", **reply.headers}
        return web.Response(status=reply.status, body=payload, headers=headers)

    async def _stream(self, request: web.Request, events: list[bytes], reply: Reply) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        resp.headers.update(reply.headers)
        await resp.prepare(request)
        for i, event in enumerate(events):
            if reply.cut_after is not None and i >= reply.cut_after:
                if reply.cut == "drop" and request.transport is not None:
                    request.transport.close()
                    return resp
                break
            if i and reply.delay:
                await asyncio.sleep(reply.delay)
            await resp.write(event)
        await resp.write_eof()
        return resp

    # -- OpenAI Chat Completions

    def _chat(self, body: dict[str, Any], reply: Reply, prompt: int, cached: int, streamed: bool) -> Any:
        n = self._counter
        cid, created, model = f"chatcmpl-fake-{n}", int(time.time()), body.get("model") or DEFAULT_MODEL
        call_id = reply.tool_id or f"call_fake_{n}"
        out_text = reply.tool_arguments if reply.kind == "tool_call" else reply.content
        completion = max(1, tokens(out_text))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        finish = "tool_calls" if reply.kind == "tool_call" else "stop"
        if not streamed:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
            if reply.kind == "tool_call":
                function = {"name": reply.tool_name, "arguments": reply.tool_arguments}
                message["content"] = None
                message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            return {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [choice],
                "usage": usage,
            }
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            data: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                data["usage"] = None
            return _sse(data)

        events = []
        if reply.kind == "tool_call":
            events.append(chunk({"role": "assistant", "content": None}))
            first = {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [first]}))
            for piece in _arg_pieces(reply.tool_arguments):
                events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        else:
            events.append(chunk({"role": "assistant", "content": "", "refusal": None}))
            events.extend(chunk({"content": piece}) for piece in _pieces(reply.content))
        events.append(chunk({}, finish))
        if include_usage:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [],
                "usage": usage,
            }
            events.append(_sse(data))
        events.append(_sse("[DONE]"))
        return events

    # -- OpenAI Responses

    def _responses(self, body: dict[str, Any], reply: Reply, prompt: int, cached: int, streamed: bool) -> Any:
        n = self._counter
        rid, mid, model = f"resp_fake_{n}", f"msg_fake_{n}", body.get("model") or DEFAULT_MODEL
        out_text = reply.tool_arguments if reply.kind == "tool_call" else reply.content
        completion = max(1, tokens(out_text))
        usage = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
        if reply.kind == "tool_call":
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_fake_{n}",
                "call_id": reply.tool_id or f"call_fake_{n}",
                "name": reply.tool_name,
                "arguments": reply.tool_arguments,
                "status": "completed",
            }
        else:
            part = {"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}
            item = {"type": "message", "id": mid, "status": "completed", "role": "assistant", "content": [part]}

        def response(status: str, output: list[Any], usage: dict[str, Any] | None) -> dict[str, Any]:
            return {
                "id": rid,
                "object": "response",
                "created_at": int(time.time()),
                "status": status,
                "error": None,
                "incomplete_details": None,
                "instructions": body.get("instructions"),
                "max_output_tokens": body.get("max_output_tokens"),
                "model": model,
                "output": output,
                "parallel_tool_calls": body.get("parallel_tool_calls", True),
                "previous_response_id": body.get("previous_response_id"),
                "reasoning": {"effort": None, "summary": None},
                "store": body.get("store", True),
                "temperature": body.get("temperature", 1.0),
                "text": {"format": {"type": "text"}},
                "tool_choice": body.get("tool_choice", "auto"),
                "tools": body.get("tools", []),
                "top_p": body.get("top_p", 1.0),
                "truncation": "disabled",
                "usage": usage,
                "metadata": {},
            }

        if not streamed:
            return response("completed", [item], usage)
        seq = iter(range(1_000_000))

        def ev(kind: str, **fields: Any) -> bytes:
            return _sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        events = [ev("response.created", response=response("in_progress", [], None))]
        if reply.kind == "tool_call":
            events.append(ev("response.output_item.added", output_index=0, item={**item, "arguments": ""}))
            for piece in _arg_pieces(reply.tool_arguments):
                events.append(
                    ev("response.function_call_arguments.delta", item_id=item["id"], output_index=0, delta=piece)
                )
            events.append(
                ev(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=0,
                    arguments=reply.tool_arguments,
                )
            )
        else:
            ids = {"item_id": mid, "output_index": 0, "content_index": 0}
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            events.append(ev("response.output_item.added", output_index=0, item={**item, "content": []}))
            events.append(ev("response.content_part.added", **ids, part=empty_part))
            events.extend(ev("response.output_text.delta", **ids, delta=p, logprobs=[]) for p in _pieces(reply.content))
            events.append(ev("response.output_text.done", **ids, text=reply.content, logprobs=[]))
            events.append(ev("response.content_part.done", **ids, part=item["content"][0]))
        events.append(ev("response.output_item.done", output_index=0, item=item))
        events.append(ev("response.completed", response=response("completed", [item], usage)))
        return events

    # -- Anthropic Messages

    def _messages(self, body: dict[str, Any], reply: Reply, prompt: int, cached: int, streamed: bool) -> Any:
        n = self._counter
        model = body.get("model") or DEFAULT_MODEL
        out_text = reply.tool_arguments if reply.kind == "tool_call" else reply.content
        completion = max(1, tokens(out_text))
        usage = {
            "input_tokens": prompt - cached,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
            "output_tokens": completion,
        }
        if reply.kind == "tool_call":
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": reply.tool_id or f"toolu_fake_{n}",
                "name": reply.tool_name,
                "input": json.loads(reply.tool_arguments or "{}"),
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": reply.content}
            stop = "end_turn"
        message = {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if self._diagnosis is not None:  # on the message, and so on message_start when streamed
            message["diagnostics"] = self._diagnosis
        if not streamed:
            return message
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [_sse({"type": "message_start", "message": start}, "message_start")]
        if reply.kind == "tool_call":
            first = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _arg_pieces(reply.tool_arguments)]
        else:
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.content)]
        events.append(_sse({"type": "content_block_start", "index": 0, "content_block": first}, "content_block_start"))
        for d in deltas:
            events.append(_sse({"type": "content_block_delta", "index": 0, "delta": d}, "content_block_delta"))
        events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
        events.append(_sse({**delta, "usage": {"output_tokens": completion}}, "message_delta"))
        events.append(_sse({"type": "message_stop"}, "message_stop"))
        return events


# --- script mode --------------------------------------------------------------------------------


async def _serve(args: argparse.Namespace) -> None:
    up = FakeUpstream(args.reply, record=args.record)
    if args.queue:
        up.queue(*(Reply.from_dict(spec) for spec in json.loads(args.queue)))
    await up.start(args.host, args.port)
    print(f"listening {up.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await up.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gateway.fake_upstream", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--record", type=Path, help="append every request to this JSONL file")
    parser.add_argument("--reply", default=DEFAULT_REPLY, help="the default text answer")
    parser.add_argument("--queue", help='JSON list of scripted replies, e.g. \'[{"kind": "error", "status": 429}]\'')
    args = parser.parse_args(argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
