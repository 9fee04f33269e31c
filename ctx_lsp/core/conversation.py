"""Conversation → turns and atoms (the words are in docs/architecture.md).

An assistant message that calls tools and the results of those calls form one atom: providers
reject a tool call without its result and a result without its call, so the planner keeps or
drops them together. A turn starts at each user message.

Any message may be far larger than a prompt (a tool result with a whole log). Counts can come
from the store (``Sized``: counted once, when the message arrived), and a message whose text was
left in the store because this plan cannot show it whole is built as a one-line stub that says
what it was, how large, and its message id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import MESSAGE, TOOL_EPISODE, BudgetSpec, Item, Message, ToolCall, Turn
from ctx_lsp.core.tokens import (
    EXACT_COUNT_LIMIT_BYTES,
    MESSAGE_OVERHEAD,
    TokenCounter,
    scaled,
    tool_call_cost,
    utf8_size,
)
from ctx_lsp.errors import Invalid

# A tool result larger than this (raw tokens) may be masked to a one-line stub when the
# conversation does not fit; smaller ones are not worth the information lost. A message of any
# role may be masked when it alone is larger than the conversation section's share of the budget
# (``mask_limit``); the latest user message never is.
MASK_THRESHOLD_TOKENS = 200
ROLES = ("system", "user", "assistant", "tool")


class Sized(msgspec.Struct, frozen=True, kw_only=True):
    """What is known of a message's text without reading it: its raw token count (an upper
    bound, its UTF-8 size, when not ``exact``) and its UTF-8 size. ``loaded`` is False when the
    text was left in the store because the plan cannot show it whole: the message is a stub."""

    tokens: int
    bytes: int
    exact: bool = True
    loaded: bool = True
    media: int = 0  # its images and documents as the provider counts them: kept by a stub too

    def estimate(self, calibration: float) -> int:
        """Its content's estimate: the text's count calibrated, the media as the provider counts
        them (the calibration factor is learned from text; an image is not text)."""
        return scaled(self.tokens, calibration) + self.media


class Window(msgspec.Struct, frozen=True):
    """What a plan can use of a stored conversation (``conversation_window``)."""

    start: int  # messages before this index cannot be in the plan: they are not read at all
    load: frozenset[str]  # ids of the messages whose text the plan may show whole


def mask_limit(budget: BudgetSpec) -> int:
    """Tokens (calibrated) over which a message of any role gets a masked form: more than the
    conversation section's share of the prompt budget."""
    return max(MASK_THRESHOLD_TOKENS, int(budget.prompt_budget * budget.shares.conversation))


def maskable(role: str, raw_tokens: int, calibration: float = 1.0, mask_over: int | None = None) -> bool:
    if role == "tool" and raw_tokens > MASK_THRESHOLD_TOKENS:
        return True
    return mask_over is not None and scaled(raw_tokens, calibration) > mask_over


def format_bytes(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


class ConversationError(Invalid, ValueError):
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


def group_atoms(messages: Sequence[Message]) -> list[list[Message]]:
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


def _size(m: Message, counter: TokenCounter, sizes: Mapping[str, Sized] | None) -> Sized:
    known = sizes.get(m.id) if sizes else None
    if known is not None:
        return known
    tokens, exact = counter.measure(m.content)
    return Sized(tokens=tokens, bytes=utf8_size(m.content), exact=exact, media=m.media_tokens)


def _framing(counter: TokenCounter, m: Message) -> int:
    """Raw tokens of a message besides its content: framing, tool calls, name."""
    cost = MESSAGE_OVERHEAD + sum(tool_call_cost(counter, c.name, c.arguments) for c in m.tool_calls)
    return cost + (counter.count(m.name) if m.name else 0)


def estimated_cost(counter: TokenCounter, m: Message, size: Sized, calibration: float) -> int:
    """What a message costs whole (calibrated), its text's count taken from ``size``: the text
    and framing scaled by the factor, its images and documents as the provider counts them."""
    return scaled(_framing(counter, m) + size.tokens, calibration) + size.media


def _stub(m: Message, size: Sized, tool_names: dict[str, str]) -> Message:
    if size.exact:
        amount = f"{size.tokens:,} tokens, {size.bytes:,} bytes"
    else:
        amount = f"{size.bytes:,} bytes, not tokenized (over {EXACT_COUNT_LIMIT_BYTES >> 20} MiB)"
    if m.role == "tool":
        name = tool_names.get(m.tool_call_id or "", m.name or "tool")
        text = (
            f"[tool result masked by ctx_lsp: {name}, {amount}; "
            f"the full result is kept in the session as message {m.id}]"
        )
    else:
        text = f"[{m.role} message masked by ctx_lsp: {amount}; the full text is kept in the session as message {m.id}]"
    return msgspec.structs.replace(m, content=text)


def _message_costs(
    m: Message,
    size: Sized,
    counter: TokenCounter,
    tool_names: dict[str, str],
    calibration: float,
    mask_over: int | None,
) -> tuple[int, Message | None, int]:
    """(raw cost of the message whole, its stub or None, raw cost of the stub), its images and
    documents left out (they are not calibrated: the caller adds ``size.media`` to either). A
    message gets a stub when it may be masked or when its text was not loaded."""
    extra = _framing(counter, m)
    if not (size.loaded and not maskable(m.role, size.tokens, calibration, mask_over)):
        stub = _stub(m, size, tool_names)
        return extra + size.tokens, stub, extra + counter.count(stub.content)
    return extra + size.tokens, None, extra + size.tokens


def atom_item(
    messages: Sequence[Message],
    counter: TokenCounter,
    calibration: float = 1.0,
    *,
    sizes: Mapping[str, Sized] | None = None,
    mask_over: int | None = None,
    latest_user_id: str | None = None,
) -> Item:
    """One atom as a conversation Item, with a masked variant when it has big messages. A
    message whose text was not loaded is shown as its stub in every variant; the latest user
    message cannot be, so it keeps its whole cost (and the plan overflows, saying so)."""
    tool_names = {t.id: t.name for m in messages for t in m.tool_calls}
    shown: list[Message] = []
    masked_messages: list[Message] = []
    full = masked = media = 0  # raw text and framing, whole and masked; media (a stub keeps its images)
    any_masked = False
    stubbed: list[str] = []
    for m in messages:
        size = _size(m, counter, sizes)
        media += size.media
        cost, stub, stub_cost = _message_costs(m, size, counter, tool_names, calibration, mask_over)
        if stub is None:
            shown.append(m)
            masked_messages.append(m)
            full += cost
            masked += cost
        elif not size.loaded:
            shown.append(stub)
            masked_messages.append(stub)
            full += cost if m.id == latest_user_id else stub_cost
            masked += stub_cost
            stubbed.append(f"message {m.id} ({format_bytes(size.bytes)})")
        else:
            shown.append(m)
            masked_messages.append(stub)
            full += cost
            masked += stub_cost
            any_masked = True
    first = messages[0]
    is_episode = any(m.tool_calls for m in messages) or any(m.role == "tool" for m in messages)
    if is_episode:
        names = ", ".join(sorted({t.name for m in messages for t in m.tool_calls})) or "tool result"
        title = f"{first.role}: {names}"
    elif shown[0] is not first:
        title = f"{first.role}: {stubbed[0]}"
    else:
        snippet = " ".join(first.content[:400].split())[:60]
        title = f"{first.role}: {snippet}" if snippet else first.role
    detail = None
    if stubbed:
        detail = (
            f"masked to a stub: {', '.join(stubbed)} cannot be shown whole within this plan's budget; "
            "the full text stays in the session (ctx/listMessages)"
        )
    return Item(
        id="atom:" + content_id(*(m.id for m in messages), *(m.content for m in shown)),
        section="conversation",
        kind=TOOL_EPISODE if is_episode else MESSAGE,
        title=title,
        tokens=scaled(full, calibration) + media,
        detail=detail,
        messages=tuple(shown),
        masked_messages=tuple(masked_messages) if any_masked else (),
        masked_tokens=scaled(masked, calibration) + media if any_masked else None,
        media=media,
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


def latest_user(messages: Sequence[Message]) -> str | None:
    return next((m.id for m in reversed(messages) if m.role == "user"), None)


def build_turns(
    messages: Iterable[Message],
    counter: TokenCounter,
    calibration: float = 1.0,
    *,
    sizes: Mapping[str, Sized] | None = None,
    mask_over: int | None = None,
) -> tuple[Turn, ...]:
    """Group messages into turns of atoms. System messages inside a conversation are kept as
    ordinary atoms; the last atom, if it is a tool exchange, is what the model must answer next,
    so it is marked pending (required). ``sizes`` are known counts (and which texts were left
    unread); ``mask_over`` is ``mask_limit`` of the plan's budget."""
    messages = list(messages)
    latest = latest_user(messages)
    atoms = [
        atom_item(group, counter, calibration, sizes=sizes, mask_over=mask_over, latest_user_id=latest)
        for group in group_atoms(messages)
    ]
    if atoms and atoms[-1].kind == TOOL_EPISODE:
        atoms[-1] = msgspec.structs.replace(atoms[-1], pending=True)
    turns: list[list[Item]] = []
    for atom in atoms:
        if atom.messages[0].role == "user" or not turns:
            turns.append([atom])
        else:
            turns[-1].append(atom)
    return tuple(Turn(tuple(t)) for t in turns)


def with_query(messages: Sequence[Message], query: str) -> list[Message]:
    """The conversation a plan is for: the messages, then the query as a new user message
    unless the last message already is that question."""
    out = list(messages)
    query = query.strip()
    if query and not (out and out[-1].role == "user" and out[-1].content.strip() == query):
        out.append(Message(id=f"q-{content_id(query)}", role="user", content=query))
    return out


def conversation_window(
    messages: Sequence[Message],
    sizes: Mapping[str, Sized],
    counter: TokenCounter,
    calibration: float,
    available: int,
    mask_over: int | None,
) -> Window:
    """What a plan with ``available`` tokens can use of a conversation, from counts alone (the
    messages' texts are not needed): planning then reads only that, however long the session.

    - The window's start: older turns newest first, each costing at least its masked form; the
      first turn that cannot fit even so, on top of the latest user message and the newer turns'
      masked forms, closes the window (the planner excludes it, and everything older).
    - Texts read whole: the latest user message (unless it alone is over the budget: the plan
      overflows), every message that is never masked, and the maskable (large) messages newest
      first while together they fit ``available``; older large messages are shown as stubs.
    """
    latest = latest_user(messages)
    turns: list[list[tuple[int, list[Message]]]] = []  # each turn's atoms, with their first index
    index = 0
    for group in group_atoms(list(messages)):
        if group[0].role == "user" or not turns:
            turns.append([])
        turns[-1].append((index, group))
        index += len(group)

    def least(turn: list[tuple[int, list[Message]]]) -> int:
        """What a turn costs at least: every large message masked (as the planner computes it)."""
        total = 0
        for _, group in turn:
            names = {t.id: t.name for m in group for t in m.tool_calls}
            sizes_of = [_size(m, counter, sizes) for m in group]
            raw = sum(
                _message_costs(m, size, counter, names, calibration, mask_over)[2]
                for m, size in zip(group, sizes_of, strict=True)
            )
            total += scaled(raw, calibration) + sum(size.media for size in sizes_of)
        return total

    position = next((n for n in range(len(messages) - 1, -1, -1) if messages[n].id == latest), None)
    floor = 0
    if position is not None:
        m = messages[position]
        floor = estimated_cost(counter, m, _size(m, counter, sizes), calibration)
    start = 0
    for turn in reversed(turns[:-1]):  # newest first, computed only as far as the window reaches
        cost = least(turn)
        if floor + cost > available:
            start = turn[0][0]  # the boundary turn is kept: the plan lists it as outside the window
            break
        floor += cost
    load: set[str] = set()
    allowance = available
    if position is not None and position >= start:
        m = messages[position]
        cost = estimated_cost(counter, m, _size(m, counter, sizes), calibration)
        if cost <= available:
            load.add(latest)
            allowance -= cost
    for m in reversed(messages[start:]):
        if m.id == latest:
            continue
        size = _size(m, counter, sizes)
        if not maskable(m.role, size.tokens, calibration, mask_over):
            load.add(m.id)
            continue
        cost = estimated_cost(counter, m, size, calibration)
        if cost <= allowance:
            load.add(m.id)
            allowance -= cost
    return Window(start=start, load=frozenset(load))
