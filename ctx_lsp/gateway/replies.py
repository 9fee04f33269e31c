"""Reading a copy of a provider's reply while it streams through untouched: server-sent events
split as they arrive, and per API a reader that collects the assistant's text, its tool calls and
the usage report."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from ctx_lsp.core.items import Message, ToolCall
from ctx_lsp.sessions.values import Usage

MAX_REPLY_CHARS = 4 * 1024 * 1024  # a copy larger than this is not kept (the reply still streams through)


@dataclass(slots=True)
class Event:
    name: str | None
    data: str
    raw: bytes  # the event's bytes as received, separator included


class SseSplitter:
    """Bytes in, complete events out (``\\n\\n`` or ``\\r\\n\\r\\n`` ends one)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[Event]:
        self._buf += chunk
        out = []
        while True:
            cut = _boundary(self._buf)
            if cut is None:
                return out
            end, raw = cut
            out.append(_event(raw))
            self._buf = self._buf[end:]

    def rest(self) -> bytes:
        rest, self._buf = self._buf, b""
        return rest


def _boundary(buf: bytes) -> tuple[int, bytes] | None:
    ends = [(i, len(sep)) for sep in (b"\n\n", b"\r\n\r\n") if (i := buf.find(sep)) >= 0]
    if not ends:
        return None
    i, n = min(ends)
    return i + n, buf[: i + n]


def _event(raw: bytes) -> Event:
    name, data = None, []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return Event(name=name, data="\n".join(data), raw=raw)


@dataclass(slots=True)
class Reply:
    """What the model answered, as far as it was read."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # by position: id, name, arguments
    usage: Usage | None = None
    complete: bool = False  # the reply's end was seen (a cut stream is not stored)

    def message(self) -> Message | None:
        if not self.complete:
            return None
        calls = tuple(
            ToolCall(id=c.get("id", ""), name=c.get("name", ""), arguments=c.get("arguments", ""))
            for _, c in sorted(self.calls.items())
        )
        text = "".join(self.text)
        if not text and not calls:
            return None
        return Message(id="reply", role="assistant", content=text, tool_calls=calls)


class Reader:
    """Fed the reply's bytes as they pass; ``finish`` gives what was read. Subclasses read one
    API's events (``on_event``) or whole body (``on_body``)."""

    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.reply = Reply()
        self._sse = SseSplitter()
        self._body: list[bytes] = []
        self._size = 0
        self._inflate: Any = None
        self.broken = False

    def set_encoding(self, encoding: str | None) -> None:
        """A compressed reply is read through a decompressor of its copy (the client gets the bytes)."""
        encoding = (encoding or "identity").lower()
        if encoding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._inflate = zlib.decompressobj()
        elif encoding != "identity":
            self.broken = True  # e.g. br, zstd: relayed as is, not read

    def feed(self, chunk: bytes) -> list[Event]:
        if self.broken:
            return []
        try:
            if self._inflate is not None:
                chunk = self._inflate.decompress(chunk)
            self._size += len(chunk)
            if self._size > MAX_REPLY_CHARS:
                self.broken = True
                return []
            if not self.stream:
                self._body.append(chunk)
                return []
            events = self._sse.feed(chunk)
            for e in events:
                if e.data and e.data != "[DONE]":
                    self.on_event(e.name, json.loads(e.data))
            return events
        except (ValueError, zlib.error, TypeError, KeyError, AttributeError):
            self.broken = True  # what cannot be read is still relayed; it is just not stored
            return []

    def finish(self) -> Reply:
        if not self.stream and not self.broken:
            try:
                self.on_body(json.loads(b"".join(self._body)))
            except (ValueError, TypeError, KeyError, AttributeError):
                self.broken = True
        if self.broken:
            self.reply.complete = False
        return self.reply

    def on_event(self, name: str | None, data: Any) -> None:
        raise NotImplementedError

    def on_body(self, body: Any) -> None:
        raise NotImplementedError
