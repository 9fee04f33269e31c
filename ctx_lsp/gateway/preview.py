"""A body as it was sent upstream, made readable: each part with its role, its text, its token
count, and whether ctx_lsp put it there — what the editor's preview shows, not a re-render."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER

TEXT_LIMIT = 20_000  # characters of one part shown; the count is of the whole


class Part(msgspec.Struct, kw_only=True):
    role: str  # system, tools, user, assistant, tool, developer
    kind: str  # system | tools | message | context (ctx_lsp's own block)
    text: str
    tokens: int
    injected: bool = False


class Preview(msgspec.Struct, kw_only=True):
    api: str
    model: str
    parts: list[Part]
    tokens: int

    def text(self) -> str:
        out = []
        for p in self.parts:
            mark = " · added by ctx_lsp" if p.injected else ""
            out.append(f"## {p.role} ({p.kind}, {p.tokens:,} tokens){mark}\n\n{p.text}")
        return f"# {self.api} request to {self.model}: {self.tokens:,} tokens\n\n" + "\n\n".join(out) + "\n"


def preview(api: str, body: bytes, count: Callable[[str], int]) -> Preview:
    data = json.loads(body)
    parts: list[Part] = []

    def add(role: str, text: str, kind: str = "message") -> None:
        injected = text.startswith((STABLE_HEADER, CONTEXT_HEADER))
        shown = (
            text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n… ({len(text) - TEXT_LIMIT:,} more characters)"
        )
        parts.append(
            Part(role=role, kind="context" if injected else kind, text=shown, tokens=count(text), injected=injected)
        )

    if data.get("tools"):
        add("tools", f"{len(data['tools'])} tool definitions: " + ", ".join(_tool_names(data["tools"])), "tools")
        parts[-1].tokens = count(json.dumps(data["tools"]))
    if api == "anthropic":
        system = data.get("system")
        for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
            add("system", _block_text(block), "system")
        for m in data.get("messages") or []:
            _blocks(m.get("role", "?"), m.get("content"), add)
    elif api == "chat":
        for m in data.get("messages") or []:
            role = m.get("role", "?")
            text = _content(m.get("content"))
            calls = [
                f"→ call {c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})"
                for c in m.get("tool_calls") or []
            ]
            add(
                role,
                "\n".join([t for t in (text, *calls) if t]),
                "system" if role in ("system", "developer") else "message",
            )
    else:
        if data.get("instructions"):
            add("system", data["instructions"], "system")
        items = data.get("input")
        for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
            kind = item.get("type", "message")
            if kind == "message":
                role = item.get("role", "?")
                add(role, _content(item.get("content")), "system" if role in ("system", "developer") else "message")
            elif kind == "function_call":
                add("assistant", f"→ call {item.get('name')}({item.get('arguments')})")
            elif kind == "function_call_output":
                add("tool", _content(item.get("output")))
            else:
                add("item", f"[{kind}]")
    return Preview(api=api, model=str(data.get("model", "")), parts=parts, tokens=sum(p.tokens for p in parts))


def _tool_names(tools: list[Any]) -> list[str]:
    return [
        str(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
        for t in tools
        if isinstance(t, dict)
    ]


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(_block_text(b) for b in content or [])


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    kind = block.get("type")
    if isinstance(block.get("text"), str):
        return block["text"]
    if kind == "tool_use":
        return f"→ call {block.get('name')}({json.dumps(block.get('input'))})"
    if kind == "tool_result":
        return f"[result of {block.get('tool_use_id')}]\n{_content(block.get('content'))}"
    return f"[{kind}]"


def _blocks(role: str, content: Any, add: Callable[..., None]) -> None:
    """A message's blocks, with ctx_lsp's own text blocks as parts of their own."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    mine = [
        b for b in blocks if isinstance(b, dict) and str(b.get("text", "")).startswith((STABLE_HEADER, CONTEXT_HEADER))
    ]
    for b in mine:
        add(role, b["text"])
    rest = "\n".join(_block_text(b) for b in blocks if b not in mine)
    if rest:
        add(role, rest)
