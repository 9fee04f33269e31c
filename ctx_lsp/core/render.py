"""Rendering a plan into a prompt: OpenAI chat messages, Anthropic (system + messages), text.

Order keeps a stable prefix so providers' prompt caches keep hitting:

1. the system block: system prompt, agent instructions, sticky pins, scaffold and capsules,
   then the compaction summary (these change rarely);
2. the conversation, chronological (it only grows at the end between turns);
3. the context block: focus hint, leased and ephemeral pins, retrieved items (changes every
   turn, so it sits late), right before
4. the latest user message, last.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec

from ctx_lsp.core.items import COMPACTION_SUMMARY, INSTRUCTIONS, SYSTEM_PROMPT, Message, ToolCall
from ctx_lsp.core.planner import Chosen, PlanResult
from ctx_lsp.core.tokens import REPLY_PRIMING, TokenCounter, message_cost, scaled

RenderFormat = Literal["openai", "anthropic", "text"]
SEPARATOR = "\n\n"
CONTEXT_HEADER = "Context for this request (selected by ctx_lsp; read it before answering):"


class RenderedPrompt(msgspec.Struct, kw_only=True, rename="camel"):
    plan_id: str
    format: str
    tokens: int  # counted on the rendered messages with the same estimator as the plan
    system: str | None = None  # anthropic only
    messages: list[dict[str, Any]] | None = None
    text: str | None = None


def _messages_of(c: Chosen) -> tuple[Message, ...]:
    if c.masked and c.item.masked_messages:
        return c.item.masked_messages
    return c.item.messages


def _split(result: PlanResult) -> tuple[list[str], list[Chosen], list[str]]:
    system_parts: list[str] = []
    conversation: list[Chosen] = []
    context_parts: list[str] = []
    later_system: list[str] = []
    for c in result.chosen:
        item = c.item
        if item.messages:
            conversation.append(c)
        elif (
            item.kind in (SYSTEM_PROMPT, INSTRUCTIONS)
            or (c.pin is not None and c.pin.kind == "sticky")
            or (c.reason == "scaffold")
        ):
            system_parts.append(item.text)
        elif item.kind == COMPACTION_SUMMARY:
            later_system.append(item.text)
        else:
            context_parts.append(item.text)
    return system_parts + later_system, conversation, context_parts


def _openai_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
            for t in m.tool_calls
        ]
        if not m.content:
            out["content"] = None
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name:
        out["name"] = m.name
    return out


def _context_message(parts: list[str]) -> Message:
    return Message(id="ctx-context", role="user", content=CONTEXT_HEADER + SEPARATOR + SEPARATOR.join(parts))


def _ordered_messages(result: PlanResult) -> tuple[str, list[Message]]:
    system_parts, conversation, context_parts = _split(result)
    messages: list[Message] = []
    for c in conversation:
        if c.item.id == result.latest_user_id and context_parts:
            messages.append(_context_message(context_parts))
            context_parts = []
        messages.extend(_messages_of(c))
    if context_parts:  # no user message in the window: context goes last
        messages.append(_context_message(context_parts))
    return SEPARATOR.join(system_parts), messages


STABLE_HEADER = "Workspace context kept by ctx_lsp (pinned code, the project's layout, earlier conversation):"


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """A plan laid over a conversation the client already holds (the gateway): what to add and
    where, for prompt caches — ``stable`` (sticky pins, scaffold, capsules, the compaction
    summary: they change rarely) right after the client's system prompt, ``per_turn`` (focus,
    other pins, retrieval: new every turn) at the head of the latest user message — and how each
    conversation message is shown (``shown``: id → the message, or its stub when masked). A
    message not in ``shown`` is not sent."""

    stable: str = ""
    per_turn: str = ""
    shown: dict[str, Message] = {}
    latest_user_id: str | None = None  # the id of the latest user message itself
    # earlier turns' per-turn blocks, by the id of the user message they were sent ahead of: once
    # sent, a block stays there byte for byte until the next compaction step (the gateway's cache
    # plan), so a new turn appends instead of rewriting the previous one
    earlier: dict[str, str] = {}

    def block_for(self, message_id: str) -> str:
        """The block that goes ahead of the user message ``message_id`` ("" for none)."""
        if message_id == self.latest_user_id:
            return self.per_turn
        return self.earlier.get(message_id, "")


def place(result: PlanResult) -> Placement:
    """The client's own system prompt is a required item of the plan: it is counted, not added."""
    stable: list[str] = []
    summary: list[str] = []
    per_turn: list[str] = []
    shown: dict[str, Message] = {}
    latest = None
    for c in result.chosen:
        item = c.item
        if item.messages:
            for m in _messages_of(c):
                shown[m.id] = m
            if item.id == result.latest_user_id:
                latest = item.messages[0].id
        elif item.kind == SYSTEM_PROMPT:
            continue
        elif item.kind == INSTRUCTIONS or (c.pin is not None and c.pin.kind == "sticky") or c.reason == "scaffold":
            stable.append(item.text)
        elif item.kind == COMPACTION_SUMMARY:
            summary.append(item.text)
        else:
            per_turn.append(item.text)
    blocks = stable + summary
    return Placement(
        stable=STABLE_HEADER + SEPARATOR + SEPARATOR.join(blocks) if blocks else "",
        per_turn=CONTEXT_HEADER + SEPARATOR + SEPARATOR.join(per_turn) if per_turn else "",
        shown=shown,
        latest_user_id=latest,
    )


def count_openai(counter: TokenCounter, messages: list[dict[str, Any]], calibration: float = 1.0) -> int:
    """Tokens of OpenAI-style messages: per-message framing, content, tool calls, reply priming."""
    total = REPLY_PRIMING
    for m in messages:
        calls = [
            ToolCall(id=t["id"], name=t["function"]["name"], arguments=t["function"]["arguments"])
            for t in m.get("tool_calls") or []
        ]
        total += message_cost(counter, m["role"], m.get("content") or "", calls, m.get("name"))
    return scaled(total, calibration)


def render(result: PlanResult, fmt: RenderFormat, counter: TokenCounter, calibration: float = 1.0) -> RenderedPrompt:
    system_text, messages = _ordered_messages(result)
    openai = ([{"role": "system", "content": system_text}] if system_text else []) + [
        _openai_message(m) for m in messages
    ]
    tokens = count_openai(counter, openai, calibration)
    plan_id = result.plan.plan_id
    if fmt == "openai":
        return RenderedPrompt(plan_id=plan_id, format=fmt, tokens=tokens, messages=openai)
    if fmt == "anthropic":
        return RenderedPrompt(
            plan_id=plan_id, format=fmt, tokens=tokens, system=system_text, messages=_anthropic(messages)
        )
    if fmt == "text":
        return RenderedPrompt(plan_id=plan_id, format=fmt, tokens=tokens, text=_text(openai))
    raise ValueError(f"unknown render format {fmt!r}: use openai, anthropic or text")


def _anthropic(messages: list[Message]) -> list[dict[str, Any]]:
    """Anthropic's shape: tool calls are ``tool_use`` blocks, tool results ``tool_result`` blocks
    in a user turn, and consecutive same-role messages are merged into one turn."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            blocks.append({"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content})
        else:
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for t in m.tool_calls:
                try:
                    args = json.loads(t.arguments) if t.arguments else {}
                except json.JSONDecodeError:
                    args = {"_raw": t.arguments}
                blocks.append({"type": "tool_use", "id": t.id, "name": t.name, "input": args})
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _text(openai: list[dict[str, Any]]) -> str:
    parts = []
    for m in openai:
        head = f"### {m['role']}"
        if m.get("name"):
            head += f" ({m['name']})"
        if m.get("tool_call_id"):
            head += f" [result of {m['tool_call_id']}]"
        body = m.get("content") or ""
        for t in m.get("tool_calls") or []:
            body += f"\n→ call {t['function']['name']}({t['function']['arguments']}) [{t['id']}]"
        parts.append(f"{head}\n{body.strip()}")
    return SEPARATOR.join(parts) + "\n"
