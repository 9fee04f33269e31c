"""OpenAI Chat Completions (``POST /v1/chat/completions``; aider, Continue, the openai SDK, any
OpenAI-compatible server). The leading system / developer messages are the client's system
prompt; the rest is the conversation, one engine message per chat message."""

from __future__ import annotations

import json
from typing import Any

from ctx_lsp.core.items import Message, ToolCall
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis import Parsed, with_media
from ctx_lsp.gateway.kept import Resent
from ctx_lsp.gateway.replies import Reader
from ctx_lsp.sessions.values import Usage

SYSTEM_ROLES = ("system", "developer")


def _message(n: int, m: Any) -> Message:
    if not isinstance(m, dict):
        raise b.BodyError(f"messages.{n}: expected an object")
    role = m.get("role")
    content = m.get("content")
    if content is not None and not isinstance(content, str | list):
        raise b.BodyError(f"messages.{n}.content: expected a string or a list of parts")
    text = content if isinstance(content, str) else "\n".join(t for p in content or [] if (t := b.part_text(p)))
    if role in ("tool", "function"):
        return Message(id="", role="tool", content=text, tool_call_id=str(m.get("tool_call_id") or m.get("name")))
    if role == "assistant":
        calls = tuple(
            ToolCall(id=str(c.get("id", "")), name=str(fn.get("name", "")), arguments=str(fn.get("arguments", "")))
            for c in m.get("tool_calls") or []
            if isinstance(c, dict) and isinstance(fn := c.get("function") or {}, dict)
        )
        return Message(id="", role="assistant", content=text, tool_calls=calls)
    if role in SYSTEM_ROLES:
        return Message(id="", role="system", content=text)
    if role == "user":
        return Message(id="", role="user", content=text)
    raise b.BodyError(f"messages.{n}.role: unknown role {role!r}")


Read = tuple[Any, Message, int]  # a message decoded, as an engine message, its media tokens


def _read(n: int, raw: b.Raw) -> Read:
    m = b.value(raw)
    media = b.media_tokens(m.get("content"), "openai") if isinstance(m, dict) else 0
    return m, _message(n, m), media


class Chat:
    name = "chat"

    def __init__(self) -> None:
        # a client resends its whole conversation with every request: its messages as read before
        self._previous: Resent[Read] = Resent()

    def parse(self, fields: dict[str, b.Raw]) -> Parsed:
        model = b.value(fields.get("model"))
        if not isinstance(model, str) or "messages" not in fields:
            raise b.BodyError("a chat completions request needs 'model' and 'messages'")
        raws = b.arr(fields["messages"])
        read = self._previous.made(raws, _read)
        lead = 0
        while lead < len(read) and isinstance(read[lead][0], dict) and read[lead][0].get("role") in SYSTEM_ROLES:
            lead += 1
        system = "\n".join(r[1].content for r in read[:lead])
        tools = b.utf8(fields["tools"]) if "tools" in fields else ""
        limit = b.value(fields.get("max_completion_tokens"), b.value(fields.get("max_tokens")))
        return Parsed(
            fields=fields,
            model=model,
            stream=b.value(fields.get("stream"), False) is True,
            max_output=limit if isinstance(limit, int) and limit > 0 else None,
            system=system,
            tools=tools,
            head=raws[:lead],
            items=raws[lead:],
            messages=[with_media([r[1]], r[2]) for r in read[lead:]],
            client_session=b.value(fields.get("user")) if isinstance(b.value(fields.get("user")), str) else None,
            media_tokens=sum(r[2] for r in read),
        )

    def mask(self, item: b.Raw, stubs: dict[int, str]) -> b.Raw:
        fields = b.obj(item)
        fields["content"] = b.raw(stubs[0])
        return b.join_object(fields)

    def prepend(self, item: b.Raw, text: str) -> list[b.Raw]:
        """A user message of its own, right before the user's (which keeps its bytes)."""
        return [b.join_object({"role": b.raw("user"), "content": b.raw(text)}), item]

    def assemble(self, parsed: Parsed, items: list[b.Raw], stable: str) -> dict[str, b.Raw]:
        fields = dict(parsed.fields)
        extra = [b.join_object({"role": b.raw("system"), "content": b.raw(stable)})] if stable else []
        fields["messages"] = b.join_array([*parsed.head, *extra, *items])
        return fields

    def error(self, status: int, message: str) -> bytes:
        kind = {400: "invalid_request_error", 401: "authentication_error"}.get(status, "api_error")
        return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()

    def reader(self, stream: bool) -> Reader:
        return ChatReader(stream)


class ChatReader(Reader):
    def on_event(self, name: str | None, data: Any) -> None:
        if data.get("usage"):
            self._usage(data["usage"])
        for choice in data.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.reply.text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = self.reply.calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                fn = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.reply.complete = True

    def on_body(self, body: Any) -> None:
        choices = body.get("choices") or []
        message = choices[0].get("message") or {} if choices else {}
        if message.get("content"):
            self.reply.text.append(message["content"])
        for n, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            self.reply.calls[n] = {
                "id": call.get("id", ""),
                "name": fn.get("name", ""),
                "arguments": fn.get("arguments", ""),
            }
        if body.get("usage"):
            self._usage(body["usage"])
        self.reply.complete = bool(choices)

    def _usage(self, u: dict[str, Any]) -> None:
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        self.reply.usage = Usage(
            input_tokens=u.get("prompt_tokens") or 0,
            output_tokens=u.get("completion_tokens") or 0,
            cached_input_tokens=cached,
        )


def is_usage_only(data: str) -> bool:
    """The extra chunk ``stream_options.include_usage`` adds: no choices, only usage."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    return isinstance(chunk, dict) and chunk.get("choices") == [] and "usage" in chunk
