"""The wire under ``ctx-lsp serve``: LSP's base protocol (``Content-Length`` framing, JSON-RPC
2.0) read by our own loop, and LSP's lifecycle rules, on top of pygls' protocol object.

Why not pygls' reader (``pygls.io_.run_async``): it reads a body with one ``read(Content-Length)``
(a huge length allocates it up front, and the MemoryError ends the loop: the server stops
reading for good); a header it does not match exactly (not a number, another spelling) leaves
the stream out of step, so every later message is lost too; and a body that is not JSON, or not
a JSON-RPC message, gets no answer, only a popup. Here:

- a message longer than ``max_bytes`` is answered with InvalidRequest (with its id, when the first
  bytes show it) and its body is skipped as it streams in, never buffered, so the next message
  is read as usual;
- a malformed header is answered with a parse error, and reading resumes at the next
  ``Content-Length`` header;
- a body that is not JSON gets -32700, JSON that is not a JSON-RPC message -32600 (id null when
  the message has no usable id), params a standard method cannot take -32602;
- requests before ``initialize`` get -32003, a second ``initialize`` and anything after
  ``shutdown`` InvalidRequest; notifications in those states are dropped (``exit`` excepted).

Every request gets an answer, and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, BinaryIO, Protocol

import msgspec
from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest

from ctx_lsp.server import protocol as P

log = logging.getLogger("ctx_lsp.transport")

MAX_MESSAGE_BYTES = 256 * 2**20  # far above any real message (a whole file, a long log), far below trouble
HEADER_LINE_LIMIT = 4096  # a longer line is not a header (and its digits always fit int())
DISCARD_CHUNK = 2**20
ID_SCAN_BYTES = 64 * 1024  # how much of an over-long message is read to find its id

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = P.PARSE_ERROR, P.INVALID_REQUEST, P.INVALID_PARAMS
NOT_INITIALIZED = P.NOT_INITIALIZED

_ENCODE = msgspec.json.Encoder().encode
_HEADER_AT_END = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n\Z", re.IGNORECASE)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SPACE = b" \t\r\n"


# ---- lifecycle ------------------------------------------------------------------------------------


class CtxProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, answering what LSP's lifecycle does not allow instead of dropping it
    (pygls drops requests after ``shutdown``) or letting it wait for a workspace that never comes."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.initialize_received = False  # reset by the server when its initialize fails
        self.client_initialized = False  # the client's `initialized` notification arrived
        self.workspace_root: str | None = None  # set by the server once initialized
        self.after_reply: list[Callable[[], None]] = []  # run once the next reply is written
        self._writes: set[asyncio.Future[Any]] = set()

    def _send_data(self, data: Any) -> None:
        """A reply whose result is one of our msgspec Structs (a plan: hundreds of items) is
        encoded by msgspec in one pass, instead of pygls' cattrs walk over the whole result and
        then ``json.dumps``; everything else as pygls sends it. Then what was waiting for a
        reply to be out (``after_reply``) runs."""
        result = getattr(data, "result", None)
        if isinstance(result, msgspec.Struct) and self.writer is not None:
            body = _ENCODE({"id": data.id, "jsonrpc": "2.0", "result": result})
            if self._include_headers:
                content_type = f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}"
                body = f"Content-Length: {len(body)}\r\n{content_type}\r\n\r\n".encode() + body
            res = self.writer.write(body)
            if inspect.isawaitable(res):  # a socket's writer: drained as pygls does
                self._writes.add(task := asyncio.ensure_future(res))
                task.add_done_callback(self._writes.discard)
        else:
            super()._send_data(data)
        if self.after_reply and (hasattr(data, "result") or hasattr(data, "error")):
            waiting, self.after_reply = self.after_reply, []
            for fn in waiting:
                fn()

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        request = isinstance(message, RPCRequest)
        if method == types.EXIT:
            super().handle_message(message)
            return
        if method is None and not request:
            waiting = self._request_futures.get(getattr(message, "id", None))
            if waiting is not None and waiting.cancelled():  # we stopped waiting (shutdown): pygls would raise
                del self._request_futures[message.id]
                return
        if self._shutdown:
            if request:
                self.reply_error(
                    message.id,
                    INVALID_REQUEST,
                    f"the server is shut down: after `shutdown` only the `exit` notification is valid, not {method!r}",
                )
            elif method is not None:
                log.info("notification %s after shutdown dropped", method)
            return
        if method == types.INITIALIZE and self.initialize_received:
            self.reply_error(
                message.id,
                INVALID_REQUEST,
                f"the server is already initialized (workspace {self.workspace_root}); a second `initialize` "
                "is not allowed: start another server for another workspace",
            )
            return
        if method == types.INITIALIZE:
            self.initialize_received = True
        elif not self.initialize_received and method is not None and method != types.SHUTDOWN:
            if request:
                text = f"the server is not initialized yet: send `initialize` before {method!r}"
                self.reply_error(message.id, NOT_INITIALIZED, text)
            else:
                log.info("notification %s before initialize dropped", method)
            return
        elif method == types.INITIALIZED:
            self.client_initialized = True
        super().handle_message(message)

    def reply_error(self, msg_id: int | str | None, code: int, message: str, data: Any = None) -> None:
        """An error response; with id null (JSON-RPC 2.0) when the request's id is unknown."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


# ---- byte streams ----------------------------------------------------------------------------------


class ByteStream(Protocol):
    async def readline(self, limit: int) -> bytes:
        """Up to and including the next b"\\n", at most ``limit`` bytes; b"" at the end."""
        ...

    async def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes; fewer only at the end of the input."""
        ...

    async def read_some(self, n: int) -> bytes:
        """Between 1 and ``n`` bytes, as soon as there are any; b"" at the end."""
        ...


class FileStream:
    """A binary file (stdin), read on a thread so the event loop keeps serving."""

    def __init__(self, file: BinaryIO, executor: Executor) -> None:
        self.file = file
        self.executor = executor

    async def _call(self, fn: Any, *args: Any) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def readline(self, limit: int) -> bytes:
        return await self._call(self.file.readline, limit)

    async def read(self, n: int) -> bytes:
        return await self._call(self.file.read, n)

    async def read_some(self, n: int) -> bytes:
        read1 = getattr(self.file, "read1", None)
        return await self._call(read1 or self.file.read, n)


class SocketStream:
    """An asyncio StreamReader (``--tcp``)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    async def readline(self, limit: int) -> bytes:
        try:
            return await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as err:
            return err.partial
        except asyncio.LimitOverrunError:
            return await self.reader.read(limit)

    async def read(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError as err:
            return err.partial

    async def read_some(self, n: int) -> bytes:
        return await self.reader.read(n)


# ---- the message loop ------------------------------------------------------------------------------


class _EndOfInput(Exception):
    pass


class _BadHeader(Exception):
    pass


def _shown(data: bytes, limit: int = 60) -> str:
    text = data[:limit].decode("utf-8", "replace")
    return repr(text + ("…" if len(data) > limit else ""))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def request_id_in(head: bytes) -> tuple[bool, int | str | None]:
    """The top-level ``id`` of a JSON-RPC message from its first bytes: (found, id). Found with
    None when the id is there but not an integer or a string, or when the message is not an
    object or has none."""
    depth, i, n, prev = 0, 0, len(head), 0
    start = head.lstrip(_SPACE)[:1]
    if start and start != b"{":
        return True, None
    while i < n:
        c = head[i]
        if c == 0x22:  # a string: a key when it follows { or , at the top level
            m = _STRING.match(head, i)
            if m is None:
                return False, None  # cut off inside a string
            i = m.end()
            if depth == 1 and prev in (0x7B, 0x2C) and m.group() == b'"id"':
                j = i
                while j < n and head[j] in _SPACE:
                    j += 1
                if j < n and head[j] == 0x3A:  # :
                    rest = head[j + 1 :].decode("utf-8", "replace").lstrip()
                    try:
                        value, end = json.JSONDecoder().raw_decode(rest)
                    except ValueError:
                        return False, None
                    if end == len(rest):
                        return False, None  # the number may go on in the next bytes
                    ok = isinstance(value, int | str) and not isinstance(value, bool)
                    return True, value if ok else None
            prev = 0x22
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
            if depth == 0:
                return True, None  # the whole message, and no id in it
        if c not in _SPACE:
            prev = c
        i += 1
    return False, None


def message_problem(data: Any) -> tuple[int, str, int | str | None] | None:
    """Why a parsed body is not a JSON-RPC 2.0 message pygls can take: (code, message, id to
    answer); None when it is one."""
    if isinstance(data, list):
        what = "batches (a JSON array of messages) are not supported by LSP: send one message at a time"
        return INVALID_REQUEST, what if data else "an empty array is not a JSON-RPC message", None
    if not isinstance(data, dict):
        kind = "null" if data is None else type(data).__name__
        return INVALID_REQUEST, f"a JSON-RPC message is an object, got {kind}", None
    msg_id = data.get("id")
    id_ok = isinstance(msg_id, int | str) and not isinstance(msg_id, bool)
    reply_id = msg_id if id_ok else None
    if data.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"', reply_id
    if "method" in data:
        if not isinstance(data["method"], str):
            return INVALID_REQUEST, '"method" must be a string', reply_id
        if "id" in data and not id_ok:
            return INVALID_REQUEST, f'"id" must be an integer or a string, got {json.dumps(msg_id)[:40]}', None
        return None
    if "result" in data or "error" in data:
        return None  # a response to one of our requests (checked by pygls; never answered)
    return INVALID_REQUEST, "neither a request, a notification nor a response (no method, result or error)", reply_id


class Connection:
    """Reads messages from one client and hands them to the protocol."""

    def __init__(
        self, stream: ByteStream, protocol: CtxProtocol, *, stop: threading.Event, max_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.stream = stream
        self.protocol = protocol
        self.stop = stop
        self.max_bytes = max_bytes
        self._pushback: bytes | None = None

    async def run(self) -> None:
        while not self.stop.is_set():
            try:
                length = await self._headers()
            except _EndOfInput:
                return
            except _BadHeader as bad:
                log.warning("malformed message header: %s", bad)
                self.protocol.reply_error(
                    None, PARSE_ERROR, f"malformed message header: {bad}; skipped to the next message"
                )
                try:
                    await self._resync()
                except _EndOfInput:
                    return
                continue
            if length > self.max_bytes:
                if not await self._skip(length):
                    return
                continue
            body = await self.stream.read(length)
            if len(body) < length:
                log.warning("the input ended inside a message (%d of %d bytes)", len(body), length)
                return
            self.dispatch(body)

    async def _line(self) -> bytes:
        if self._pushback is not None:
            line, self._pushback = self._pushback, None
            return line
        return await self.stream.readline(HEADER_LINE_LIMIT)

    async def _headers(self) -> int:
        """The Content-Length of the next message, once its header block ends."""
        length: int | None = None
        started = False
        while True:
            line = await self._line()
            if not line:
                if started:
                    log.warning("the input ended inside a message header")
                raise _EndOfInput
            if not line.endswith(b"\n"):
                raise _BadHeader(f"a header line longer than {HEADER_LINE_LIMIT} bytes: {_shown(line)}")
            text = line.rstrip(b"\r\n")
            if not text:
                if not started:
                    continue  # blank lines between messages are harmless
                if length is None:
                    raise _BadHeader("no Content-Length header")
                return length
            started = True
            name, colon, value = text.partition(b":")
            if not colon or not name.strip():
                raise _BadHeader(f"not a header line: {_shown(text)}")
            if name.strip().lower() == b"content-length":
                value = value.strip()
                if not value.isdigit():
                    raise _BadHeader(f"Content-Length is not a number: {_shown(value)}")
                length = int(value)

    async def _resync(self) -> None:
        """Skip to the next line that ends with a Content-Length header (a body that is not cut
        by a newline runs into the next message's header)."""
        carry = b""
        while True:
            chunk = await self.stream.readline(HEADER_LINE_LIMIT)
            if not chunk:
                raise _EndOfInput
            data = carry + chunk
            if data.endswith(b"\n"):
                found = _HEADER_AT_END.search(data)
                if found is not None:
                    self._pushback = data[found.start() :]
                    return
                carry = b""
            else:
                carry = data[-64:]

    async def _skip(self, length: int) -> bool:
        """Answer an over-long message and discard its body as it streams in. False at the end
        of the input."""
        head = b""
        want = min(length, ID_SCAN_BYTES)
        found, msg_id, ended = False, None, False
        while len(head) < want and not found:
            chunk = await self.stream.read_some(want - len(head))
            if not chunk:
                ended = True
                break
            head += chunk
            found, msg_id = request_id_in(head)
        limit_mb = self.max_bytes / 2**20
        message = (
            f"message of {length:,} bytes is over the server's limit of {self.max_bytes:,} bytes "
            f"({limit_mb:g} MB): not read"
        )
        log.warning("%s (id %s)", message, msg_id)
        self.protocol.reply_error(msg_id, INVALID_REQUEST, message, data={"length": length, "limit": self.max_bytes})
        remaining = length - len(head)
        if ended:
            return False
        while remaining > 0:
            chunk = await self.stream.read_some(min(remaining, DISCARD_CHUNK))
            if not chunk:
                log.warning("the input ended inside an over-long message (%d bytes short)", remaining)
                return False
            remaining -= len(chunk)
        return True

    def dispatch(self, body: bytes) -> None:
        try:
            data = json.loads(body, parse_constant=_no_constant)
        except RecursionError:
            self.protocol.reply_error(None, PARSE_ERROR, "not valid JSON: nested too deeply")
            return
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, too many digits
            self.protocol.reply_error(None, PARSE_ERROR, f"not valid JSON: {err}")
            return
        problem = message_problem(data)
        if problem is not None:
            code, text, msg_id = problem
            log.warning("invalid message: %s", text)
            self.protocol.reply_error(msg_id, code, text)
            return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as err:
            method, msg_id = data.get("method"), data.get("id")
            cause = err.__cause__
            detail = "; ".join(transform_error(cause)) if isinstance(cause, ClassValidationError) else str(cause or err)
            log.warning("message %s (%s) not understood: %s", msg_id, method, detail)
            if method is not None and msg_id is not None:
                self.protocol.reply_error(msg_id, INVALID_PARAMS, f"invalid params for {method}: {detail}")
            return
        try:
            self.protocol.handle_message(message)
        except (SystemExit, KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception:  # pygls answers a request's own failures; this is a bug of ours
            log.exception("internal error while handling a message")


# ---- serving ---------------------------------------------------------------------------------------


def _run(server: Any, connection: Any) -> int:
    """Run the loop the way pygls' start_io does; the exit code of `exit` (0 after shutdown)."""
    code = 0
    try:
        asyncio.run(connection)
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return code


def serve_stdio(server: Any, max_bytes: int = MAX_MESSAGE_BYTES) -> int:
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    stream = FileStream(sys.stdin.buffer, server.thread_pool)
    return _run(server, Connection(stream, server.protocol, stop=stop, max_bytes=max_bytes).run())


def serve_tcp(server: Any, host: str, port: int, max_bytes: int = MAX_MESSAGE_BYTES) -> int:
    """One client at a time, as pygls' start_tcp; the server stops when that client leaves."""
    server._stop_event = stop = threading.Event()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)
        await Connection(SocketStream(reader), server.protocol, stop=stop, max_bytes=max_bytes).run()
        server.shutdown()

    async def main() -> None:
        server._server = await asyncio.start_server(connected, host, port)
        log.info("serving on %s", ", ".join(str(s.getsockname()) for s in server._server.sockets))
        async with server._server:
            with contextlib.suppress(asyncio.CancelledError):
                await server._server.serve_forever()

    return _run(server, main())
