"""OpenAI Responses (``POST /v1/responses``; Codex CLI). ``instructions`` and the leading
developer / system items are the client's system prompt (Codex's newer models send no
``instructions``: their system prompt and an ``additional_tools`` item, both of role
``developer``, open ``input``). Tools are ``tools`` and those of ``additional_tools`` items.
Messages, function calls and their
outputs are engine messages; items we do not read (reasoning, shell calls…) have none and go
wherever the next item goes. A request continuing ``previous_response_id`` has its history on the
provider's side: it is forwarded as sent."""

from __future__ import annotations

import json
from typing import Any

from ctx_lsp.core.items import Message, ToolCall
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis import Parsed, provider_compaction, with_media
from ctx_lsp.gateway.kept import Resent
from ctx_lsp.gateway.replies import Reader
from ctx_lsp.sessions.values import Usage

SYSTEM_ROLES = ("system", "developer")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is not None and not isinstance(content, list):
        raise b.BodyError("input: a content or output is a string or a list of parts")
    return "\n".join(t for p in content or [] if (t := b.part_text(p)))


def _messages(item: Any) -> list[Message]:
    if not isinstance(item, dict):
        raise b.BodyError("input: every item must be an object")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        role = "system" if role in SYSTEM_ROLES else role
        if role not in ("user", "assistant", "system"):
            raise b.BodyError(f"input: unknown message role {item.get('role')!r}")
        return [Message(id="", role=role, content=_text(item.get("content")))]
    if kind == "function_call":
        call = ToolCall(
            id=str(item.get("call_id", "")), name=str(item.get("name", "")), arguments=str(item.get("arguments", ""))
        )
        return [Message(id="", role="assistant", tool_calls=(call,))]
    if kind == "function_call_output":
        output = item.get("output")
        return [Message(id="", role="tool", content=_text(output), tool_call_id=str(item.get("call_id", "")))]
    return []


def _is_system(item: Any) -> bool:
    """An item the client's system or developer role speaks, of any type."""
    return isinstance(item, dict) and item.get("role") in SYSTEM_ROLES


def _tools(fields: dict[str, b.Raw], decoded: list[Any]) -> str:
    """The request's tool definitions as one JSON array: ``tools`` and every ``additional_tools``
    item's (as sent: only their names and size are read)."""
    listed = [b.utf8(fields["tools"])] if "tools" in fields else []
    more = [d["tools"] for d in decoded if isinstance(d, dict) and d.get("type") == "additional_tools"]
    more = [t for t in more if isinstance(t, list) and t]
    if not more:
        return listed[0] if listed else ""
    first = b.value(fields["tools"]) if listed else []
    return json.dumps([*(first if isinstance(first, list) else []), *(t for group in more for t in group)])


Read = tuple[Any, list[Message], int]  # an item decoded, its engine messages, its media tokens


def _read(n: int, raw: b.Raw) -> Read:
    item = b.value(raw)
    media = b.media_tokens([item], "openai")
    return item, with_media(_messages(item), media), media


class Responses:
    name = "responses"

    def __init__(self) -> None:
        # an assistant resends its whole input with every request: its items as read before
        self._previous: Resent[Read] = Resent()

    def parse(self, fields: dict[str, b.Raw]) -> Parsed:
        model = b.value(fields.get("model"))
        if not isinstance(model, str) or "input" not in fields:
            raise b.BodyError("a responses request needs 'model' and 'input'")
        source = fields["input"]
        one = b.is_string(source)  # a bare string is one user message
        raws = [b.join_object({"role": b.raw("user"), "content": source})] if one else b.arr(source)
        read = self._previous.made(raws, _read)
        decoded = [r[0] for r in read]
        lead = 0
        while lead < len(decoded) and _is_system(decoded[lead]):
            lead += 1
        instructions = b.value(fields.get("instructions"))
        system = [instructions if isinstance(instructions, str) else ""]
        system += [_text(d.get("content")) for d in decoded[:lead] if d.get("type", "message") == "message"]
        limit = b.value(fields.get("max_output_tokens"))
        key = b.value(fields.get("prompt_cache_key"))
        return Parsed(
            fields=fields,
            model=model,
            stream=b.value(fields.get("stream"), False) is True,
            max_output=limit if isinstance(limit, int) and limit > 0 else None,
            system="\n".join(p for p in system if p),
            tools=_tools(fields, decoded),
            head=raws[:lead],
            items=raws[lead:],
            messages=[r[1] for r in read[lead:]],
            client_session=key if isinstance(key, str) else None,
            media_tokens=sum(r[2] for r in read),
            opaque="the history is kept by the provider (previous_response_id)"
            if b.value(fields.get("previous_response_id"))
            else provider_compaction(b.value(fields.get("context_management"))),
        )

    def mask(self, item: b.Raw, stubs: dict[int, str]) -> b.Raw:
        fields = b.obj(item)
        if "output" in fields:
            fields["output"] = b.raw(stubs[0])
        else:
            kind = "output_text" if b.value(fields.get("role")) == "assistant" else "input_text"
            fields["content"] = b.join_array([b.join_object({"type": b.raw(kind), "text": b.raw(stubs[0])})])
        return b.join_object(fields)

    def prepend(self, item: b.Raw, text: str) -> list[b.Raw]:
        """A user message of its own, right before the user's (which keeps its bytes)."""
        part = b.join_object({"type": b.raw("input_text"), "text": b.raw(text)})
        return [b.join_object({"type": b.raw("message"), "role": b.raw("user"), "content": b.join_array([part])}), item]

    def assemble(self, parsed: Parsed, items: list[b.Raw], stable: str) -> dict[str, b.Raw]:
        fields = dict(parsed.fields)
        extra = []
        if stable:
            part = b.join_object({"type": b.raw("input_text"), "text": b.raw(stable)})
            extra = [
                b.join_object({"type": b.raw("message"), "role": b.raw("developer"), "content": b.join_array([part])})
            ]
        fields["input"] = b.join_array([*parsed.head, *extra, *items])
        return fields

    def error(self, status: int, message: str) -> bytes:
        kind = {400: "invalid_request_error", 401: "authentication_error"}.get(status, "api_error")
        return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()

    def reader(self, stream: bool) -> Reader:
        return ResponsesReader(stream)


class ResponsesReader(Reader):
    def on_event(self, name: str | None, data: Any) -> None:
        if data.get("type", name) in ("response.completed", "response.incomplete"):
            self.on_body(data.get("response") or {})

    def on_body(self, body: Any) -> None:
        for n, item in enumerate(body.get("output") or []):
            if item.get("type") == "message":
                self.reply.text.append(_text(item.get("content")))
            elif item.get("type") == "function_call":
                self.reply.calls[n] = {
                    "id": item.get("call_id", ""),
                    "name": item.get("name", ""),
                    "arguments": item.get("arguments", ""),
                }
        u = body.get("usage") or {}
        self.reply.usage = Usage(
            input_tokens=u.get("input_tokens") or 0,
            output_tokens=u.get("output_tokens") or 0,
            cached_input_tokens=(u.get("input_tokens_details") or {}).get("cached_tokens") or 0,
        )
        self.reply.complete = body.get("status", "completed") == "completed"
