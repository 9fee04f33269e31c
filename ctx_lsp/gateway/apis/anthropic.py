"""Anthropic Messages (``POST /v1/messages``; Claude Code, the anthropic SDK).

A user message holding ``tool_result`` blocks is one tool message per result in the engine (its
other text goes with the last one); an assistant message is its text and its ``tool_use`` blocks.
Thinking blocks, images, documents and block types we do not know stay in the body as sent."""

from __future__ import annotations

import json
import re
from typing import Any

from ctx_lsp.core.exchange import canonical_arguments
from ctx_lsp.core.items import Message, ToolCall
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, LONG_CACHE_TTL_SECONDS
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis import Parsed, provider_compaction, with_media
from ctx_lsp.gateway.kept import Kept, Resent, digest
from ctx_lsp.gateway.replies import Reader
from ctx_lsp.sessions.values import Usage

SESSION_IN_USER_ID = re.compile(r"session_([0-9a-fA-F-]{8,})")


def _client_session(metadata: Any) -> str | None:
    """Claude Code's session id, from ``metadata.user_id`` (a JSON string, or older ``…_session_<uuid>``)."""
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str):
        return None
    try:
        decoded = json.loads(user_id)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("session_id"), str):
        return decoded["session_id"]
    found = SESSION_IN_USER_ID.search(user_id)
    return found.group(1) if found else None


def _messages(n: int, role: str, content: Any) -> list[Message]:
    if role not in ("user", "assistant", "system"):
        raise b.BodyError(f"messages.{n}.role: expected user or assistant, got {role!r}")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise b.BodyError(f"messages.{n}.content: expected a string or a list of blocks")
    if role == "assistant":
        calls = tuple(
            ToolCall(id=str(x.get("id", "")), name=str(x.get("name", "")), arguments=json.dumps(x.get("input", {})))
            for x in blocks
            if isinstance(x, dict) and x.get("type") in ("tool_use", "server_tool_use")
        )
        text = "\n".join(t for x in blocks if (t := b.part_text(x)))
        return [Message(id="", role="assistant", content=text, tool_calls=calls)]
    results = [x for x in blocks if isinstance(x, dict) and x.get("type") == "tool_result"]
    texts = [
        t for x in blocks if not (isinstance(x, dict) and x.get("type") == "tool_result") and (t := b.part_text(x))
    ]
    if role == "user" and results:
        out = [
            Message(id="", role="tool", content=_result_text(x.get("content")), tool_call_id=str(x.get("tool_use_id")))
            for x in results
        ]
        if texts:
            last = out[-1]
            out[-1] = Message(
                id="", role="tool", content="\n".join([last.content, *texts]), tool_call_id=last.tool_call_id
            )
        return out
    return [Message(id="", role=role, content="\n".join(texts))]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for x in content if (t := b.part_text(x)))
    return ""


EPHEMERAL = {"type": "ephemeral"}


def _marked_last(blocks: b.Raw) -> b.Raw:
    """An array of content blocks with a cache_control marker on its last block."""
    items = b.arr(blocks)
    last = b.obj(items[-1])
    last["cache_control"] = b.raw(EPHEMERAL)
    return b.join_array([*items[:-1], b.join_object(last)])


PARSED_KEPT = 4096  # messages whose parse is remembered, by a digest of their bytes
PARSED_BYTES = 64 * 1024 * 1024  # their texts weigh at most this
PARSED_AGE = 3600.0  # seconds a parse unused is kept
Found = tuple[list[Message], int, bool]  # a message's engine messages, media tokens, hour-long cache asked


def _weight(parsed: Found) -> int:
    return sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in parsed[0]) + 64


class Anthropic:
    name = "anthropic"

    def __init__(self) -> None:
        # an assistant resends the whole conversation with every request: a message seen before
        # (the same bytes) is not decoded again; by a digest of its bytes
        self._parsed: Kept[Found] = Kept(PARSED_KEPT, PARSED_BYTES, PARSED_AGE, _weight)
        # and most of a request is its conversation's previous one, compared in place (no digest,
        # no lookup: a millisecond a request at 300 messages)
        self._previous: Resent[Found] = Resent()

    def parse(self, fields: dict[str, b.Raw]) -> Parsed:
        model = b.value(fields.get("model"))
        if not isinstance(model, str) or "messages" not in fields:
            raise b.BodyError("a Messages request needs 'model' and 'messages'")
        items = b.arr(fields["messages"])
        messages = []
        media = 0
        long_ttl = False
        for found in self._previous.made(items, self._message):
            messages.append(found[0])
            media += found[1]
            long_ttl = long_ttl or found[2]
        system = b.text_of(fields.get("system")) if "system" in fields else ""
        tools = b.utf8(fields["tools"]) if "tools" in fields else ""
        max_tokens = b.value(fields.get("max_tokens"))
        return Parsed(
            fields=fields,
            model=model,
            stream=b.value(fields.get("stream"), False) is True,
            max_output=max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None,
            system=system,
            tools=tools,
            items=items,
            messages=messages,
            client_session=_client_session(b.value(fields.get("metadata"))),
            media_tokens=media,
            opaque=provider_compaction(b.value(fields.get("context_management"))),
            cache_ttl=LONG_CACHE_TTL_SECONDS if long_ttl else _cache_ttl(fields, ("system", "tools")),
        )

    def _message(self, n: int, raw: b.Raw) -> Found:
        """The ``n``-th message read, or looked up by its bytes (read at another place before)."""
        key = digest(memoryview(raw))
        found = self._parsed.get(key)
        if found is None:
            m = b.value(raw)
            if not isinstance(m, dict):
                raise b.BodyError(f"messages.{n}: expected an object")
            content = m.get("content")
            counted = b.media_tokens(content, "anthropic")
            found = (with_media(_messages(n, m.get("role"), content), counted), counted, _asks_long(raw))
            self._parsed.put(key, found)
        return found

    def _blocks(self, item: dict[str, b.Raw]) -> list[b.Raw]:
        content = item.get("content")
        if b.is_string(content):
            return [b.join_object({"type": b.raw("text"), "text": content})]
        return b.arr(content) if content is not None else []

    def mask(self, item: b.Raw, stubs: dict[int, str]) -> b.Raw:
        fields = b.obj(item)
        blocks = self._blocks(fields)
        kinds = [b.value(b.obj(x).get("type")) if b.memoryview_head(x) == b"{" else None for x in blocks]
        if "tool_result" in kinds:  # the n-th engine message is the n-th result
            n = 0
            out = []
            for x, kind in zip(blocks, kinds, strict=True):
                if kind == "tool_result":
                    if n in stubs:
                        block = b.obj(x)
                        block["content"] = b.raw(stubs[n])
                        x = b.join_object(block)
                    n += 1
                out.append(x)
        else:  # the text blocks become one stub; tool_use, thinking and the rest stay
            stub = b.join_object({"type": b.raw("text"), "text": b.raw(stubs[0])})
            out = [x for x, kind in zip(blocks, kinds, strict=True) if kind != "text"]
            out.insert(0, stub)
        fields["content"] = b.join_array(out)
        return b.join_object(fields)

    def prepend(self, item: b.Raw, text: str) -> list[b.Raw]:
        fields = b.obj(item)
        block = b.join_object({"type": b.raw("text"), "text": b.raw(text)})
        fields["content"] = b.join_array([block, *self._blocks(fields)])  # a block of its own, ahead
        return [b.join_object(fields)]

    def assemble(self, parsed: Parsed, items: list[b.Raw], stable: str) -> dict[str, b.Raw]:
        fields = dict(parsed.fields)
        fields["messages"] = b.join_array(items)
        if stable:
            block = b.join_object({"type": b.raw("text"), "text": b.raw(stable)})
            system = fields.get("system")
            if system is None or b.value(system) in ("", None):
                fields["system"] = b.join_array([block])
            elif b.is_string(system):
                fields["system"] = b.join_array([b.join_object({"type": b.raw("text"), "text": system}), block])
            else:
                fields["system"] = b.join_array([*b.arr(system), block])
        return fields

    def mark_cache(self, fields: dict[str, b.Raw]) -> dict[str, b.Raw]:
        """Breakpoints where they pay, for a client that places none (a script on the SDK): a
        conversation the gateway has seen before is resent, so a ``cache_control`` marker on its
        newest block (the growing tail) is read back by the next request, and one on the end of
        the system prompt (with ctx_lsp's stable block, frozen between steps) by any request that
        diverges later. Two of the four allowed. A client that placed its own keeps them as they
        are, none added or moved; a newest message sent as a plain string is left as sent (a block
        of its own would change its bytes in the next request)."""
        if any(b'"cache_control"' in bytes(fields[k]) for k in ("system", "tools", "messages") if k in fields):
            return fields
        items = b.arr(fields["messages"])
        tail = b.obj(items[-1]) if items else {}
        content = tail.get("content")
        if content is None or not b.is_array(content) or not b.arr(content):
            return fields
        out = dict(fields)
        tail["content"] = _marked_last(content)
        out["messages"] = b.join_array([*items[:-1], b.join_object(tail)])
        system = out.get("system")
        if system is not None and b.is_array(system) and b.arr(system):
            out["system"] = _marked_last(system)
        return out

    def error(self, status: int, message: str) -> bytes:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            413: "request_too_large",
            502: "api_error",
            504: "api_error",
        }
        return json.dumps(
            {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": message}}
        ).encode()

    def reader(self, stream: bool) -> Reader:
        return AnthropicReader(stream)


class AnthropicReader(Reader):
    def __init__(self, stream: bool) -> None:
        super().__init__(stream)
        self._counts: dict[str, int] = {}
        self._miss: str | None = None

    def on_event(self, name: str | None, data: Any) -> None:
        kind = data.get("type", name)
        reply = self.reply
        if kind == "message_start":
            self._diagnose(data["message"].get("diagnostics"))
            self._usage(data["message"].get("usage") or {})
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use"):
                reply.calls[data["index"]] = {"id": block.get("id", ""), "name": block.get("name", ""), "arguments": ""}
            elif block.get("type") == "text" and block.get("text"):
                reply.text.append(block["text"])
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                reply.text.append(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta" and data["index"] in reply.calls:
                reply.calls[data["index"]]["arguments"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            self._diagnose(data.get("diagnostics"))
            self._usage(data.get("usage") or {})
        elif kind == "message_stop":
            for call in reply.calls.values():
                call["arguments"] = canonical_arguments(call["arguments"] or "{}")
            reply.complete = True

    def on_body(self, body: Any) -> None:
        for n, block in enumerate(body.get("content") or []):
            if block.get("type") == "text":
                self.reply.text.append(block.get("text", ""))
            elif block.get("type") in ("tool_use", "server_tool_use"):
                args = json.dumps(block.get("input", {}))
                self.reply.calls[n] = {"id": block.get("id", ""), "name": block.get("name", ""), "arguments": args}
        self._diagnose(body.get("diagnostics"))
        self._usage(body.get("usage") or {})
        self.reply.complete = True

    def _diagnose(self, diagnostics: Any) -> None:
        """Anthropic's cache diagnostics, when the client asked for them (``diagnostics`` with the
        previous reply's id): where its request diverged from the one before — "messages_changed
        (12,345 tokens after it)". None or no reason: no divergence, or the comparison was not done."""
        reason = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, dict) else None
        if isinstance(reason, dict) and isinstance(reason.get("type"), str):
            missed = reason.get("cache_missed_input_tokens")
            after = f" ({missed:,} tokens after it)" if isinstance(missed, int) else ""
            self._miss = reason["type"] + after

    def _usage(self, u: dict[str, Any]) -> None:
        """Anthropic counts cache reads and writes apart from ``input_tokens``: the input is their
        sum. ``message_delta`` repeats some counts: the latest of each wins."""
        self._counts.update({k: v for k, v in u.items() if isinstance(v, int)})
        c = self._counts
        read = c.get("cache_read_input_tokens", 0)
        total = c.get("input_tokens", 0) + read + c.get("cache_creation_input_tokens", 0)
        self.reply.usage = Usage(
            input_tokens=total,
            output_tokens=c.get("output_tokens", 0),
            cached_input_tokens=read,
            cache_write_tokens=c.get("cache_creation_input_tokens", 0),
            cache_miss=self._miss,
        )


# a breakpoint that asks for the hour-long cache (``"ttl": "1h"``), wherever it is in the body
LONG_TTL = re.compile(rb'"ttl"\s*:\s*"1h"')


def _cache_ttl(fields: dict[str, b.Raw], keys: tuple[str, ...]) -> int:
    """The prompt-cache lifetime the client's breakpoints in ``keys`` ask for: an hour when any
    asks for it (the provider keeps that prefix an hour), else the default five minutes."""
    for key in keys:
        if key in fields and _asks_long(fields[key]):
            return LONG_CACHE_TTL_SECONDS
    return CACHE_TTL_SECONDS


def _asks_long(raw: b.Raw) -> bool:
    return LONG_TTL.search(raw) is not None
