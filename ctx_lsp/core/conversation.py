"""Conversation → turns and atoms (DESIGN.md §2 "Atom", "Turn").

An assistant message that calls tools and the results of those calls form one atom: providers
reject a tool call without its result and a result without its call, so the planner keeps or
drops them together. A turn starts at each user message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import MESSAGE, TOOL_EPISODE, Item, Message, ToolCall, Turn
from ctx_lsp.core.tokens import TokenCounter, message_cost, scaled

# A tool result larger than this (raw tokens) may be masked to a one-line stub when the
# conversation does not fit; smaller ones are not worth the information lost.
MASK_THRESHOLD_TOKENS = 200
ROLES = ("system", "user", "assistant", "tool")


class ConversationError(ValueError):
    """A conversation that cannot be read: says which message and what is wrong."""


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts / Anthropic blocks
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part.get("content"), str):
                    texts.append(part["content"])
        return "\n".join(texts)
    raise ConversationError(f"{where}: 'content' must be a string, a list of parts or null")


def parse_messages(raw: Any) -> list[Message]:
    """OpenAI-style chat messages (tool calls and results included) → Messages, validated."""
    if not isinstance(raw, list):
        raise ConversationError("a conversation must be a JSON list of messages")
    out: list[Message] = []
    for n, m in enumerate(raw):
        where = f"message {n + 1}"
        if not isinstance(m, dict):
            raise ConversationError(f"{where}: expected an object with 'role' and 'content'")
        role = m.get("role")
        if role not in ROLES:
            raise ConversationError(f"{where}: 'role' must be one of {', '.join(ROLES)}, got {role!r}")
        content = _content_text(m.get("content"), where)
        calls: list[ToolCall] = []
        for k, tc in enumerate(m.get("tool_calls") or m.get("toolCalls") or []):
            if not isinstance(tc, dict):
                raise ConversationError(f"{where}: tool call {k + 1} must be an object")
            fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
            name = fn.get("name")
            if not isinstance(name, str) or not name:
                raise ConversationError(f"{where}: tool call {k + 1} has no function name")
            args = fn.get("arguments", "")
            if not isinstance(args, str):
                args = msgspec.json.encode(args).decode()
            calls.append(ToolCall(id=str(tc.get("id") or f"call_{n}_{k}"), name=name, arguments=args))
        tool_call_id = m.get("tool_call_id", m.get("toolCallId"))
        if role == "tool" and not tool_call_id:
            raise ConversationError(f"{where}: a 'tool' message needs 'tool_call_id'")
        given_id = m.get("id")
        msg_id = str(given_id) if given_id is not None else f"m{n + 1}-{content_id(role, content)[:8]}"
        name = m.get("name")
        out.append(
            Message(
                id=msg_id,
                role=role,
                content=content,
                tool_calls=tuple(calls),
                tool_call_id=str(tool_call_id) if tool_call_id else None,
                name=name if isinstance(name, str) else None,
            )
        )
    return out


def _group_atoms(messages: Sequence[Message]) -> list[list[Message]]:
    atoms: list[list[Message]] = []
    open_calls: dict[str, list[Message]] = {}
    for m in messages:
        if m.role == "tool" and m.tool_call_id in open_calls:
            open_calls[m.tool_call_id].append(m)
            continue
        atom = [m]
        atoms.append(atom)
        open_calls = {t.id: atom for t in m.tool_calls} if m.role == "assistant" and m.tool_calls else {}
    return atoms


def _stub(m: Message, raw_tokens: int, tool_names: dict[str, str]) -> Message:
    name = tool_names.get(m.tool_call_id or "", m.name or "tool")
    return msgspec.structs.replace(
        m,
        content=(
            f"[tool result masked by ctx_lsp: {name}, {raw_tokens} tokens, {len(m.content)} chars; "
            f"the full result is kept in the session as message {m.id}]"
        ),
    )


def atom_item(messages: Sequence[Message], counter: TokenCounter, calibration: float = 1.0) -> Item:
    """One atom as a conversation Item, with a masked variant when it has big tool results."""
    tool_names = {t.id: t.name for m in messages for t in m.tool_calls}
    full = 0
    masked_messages: list[Message] = []
    masked = 0
    any_masked = False
    for m in messages:
        cost = message_cost(counter, m.role, m.content, m.tool_calls, m.name)
        full += cost
        raw = counter.count(m.content) if m.role == "tool" else 0
        if m.role == "tool" and raw > MASK_THRESHOLD_TOKENS:
            stub = _stub(m, raw, tool_names)
            masked_messages.append(stub)
            masked += message_cost(counter, stub.role, stub.content, stub.tool_calls, stub.name)
            any_masked = True
        else:
            masked_messages.append(m)
            masked += cost
    first = messages[0]
    is_episode = any(m.tool_calls for m in messages) or any(m.role == "tool" for m in messages)
    if is_episode:
        names = ", ".join(sorted({t.name for m in messages for t in m.tool_calls})) or "tool result"
        title = f"{first.role}: {names}"
    else:
        snippet = " ".join(first.content.split())[:60]
        title = f"{first.role}: {snippet}" if snippet else first.role
    return Item(
        id="atom:" + content_id(*(m.id for m in messages), *(m.content for m in messages)),
        section="conversation",
        kind=TOOL_EPISODE if is_episode else MESSAGE,
        title=title,
        tokens=scaled(full, calibration),
        messages=tuple(messages),
        masked_messages=tuple(masked_messages) if any_masked else (),
        masked_tokens=scaled(masked, calibration) if any_masked else None,
    )


def group_turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped into turns: each user message starts one."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def build_turns(messages: Iterable[Message], counter: TokenCounter, calibration: float = 1.0) -> tuple[Turn, ...]:
    """Group messages into turns of atoms. System messages inside a conversation are kept as
    ordinary atoms; the last atom, if it is a tool exchange, is what the model must answer next,
    so it is marked pending (required)."""
    atoms = [atom_item(group, counter, calibration) for group in _group_atoms(list(messages))]
    if atoms and atoms[-1].kind == TOOL_EPISODE:
        atoms[-1] = msgspec.structs.replace(atoms[-1], pending=True)
    turns: list[list[Item]] = []
    for atom in atoms:
        if atom.messages[0].role == "user" or not turns:
            turns.append([atom])
        else:
            turns[-1].append(atom)
    return tuple(Turn(tuple(t)) for t in turns)
