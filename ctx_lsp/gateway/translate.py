"""A provider request ↔ the engine: which session it belongs to, the Exchange the sessions
engine plans, and the body that carries the plan — the client's own bytes wherever the plan
changes nothing."""

from __future__ import annotations

import itertools
import re

import msgspec

from ctx_lsp.core.harness import first_words
from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import Mode
from ctx_lsp.core.runs import CLIENT_PREFIX, client_conversation
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis import Api, Parsed
from ctx_lsp.sessions.exchanges import Exchange, ExchangePlan

SESSION_HEADER = "X-Ctx-Session"
SESSION_NAME = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
FIRST_USER_MESSAGES = 8  # user messages read for a conversation's first words


def session_of(api: Api, parsed: Parsed, header: str | None) -> str:
    """The conversation a request belongs to: the client's header, else an id the client sends
    (Claude Code's session id, Codex's prompt_cache_key), else the system prompt and the user's
    first words (``core.harness.first_words``). A sub-agent has its own system prompt, so it gets
    its own session; tools may change within a conversation, so they do not count."""
    if header:
        if not SESSION_NAME.match(header):
            raise b.BodyError(f"{SESSION_HEADER}: use letters, digits and . _ : @ - (at most 128)")
        return header
    system = content_id(parsed.system)[:8]
    if parsed.client_session:
        return f"{client_conversation(api.name, parsed.client_session)}-{system}"
    # the user's first words: aider's worked example, the same in every run, is not its question
    users = (m.content for ms in parsed.messages for m in ms if m.role == "user")
    first = first_words(itertools.islice(users, FIRST_USER_MESSAGES))
    return f"{CLIENT_PREFIX[api.name]}-{content_id(parsed.system, first)[:12]}"


def exchange(api: Api, parsed: Parsed, session: str, mode: Mode | None) -> Exchange:
    definitions = tool_definitions(parsed.tools)
    return Exchange(
        session=session,
        model=parsed.model,
        system="\n".join(p for p in (parsed.system, parsed.tools) if p),
        messages=[m for ms in parsed.messages for m in ms],
        max_output=parsed.max_output,
        mode=mode,
        tools=tuple(name for name, _ in definitions),
        tool_texts=tuple(text for _, text in definitions),
        cache_ttl=parsed.cache_ttl,
    )


def tool_definitions(tools: str) -> tuple[tuple[str, str], ...]:
    """Each of a request's tool definitions as (name, its JSON), in any API's shape (``{"name"}``,
    Chat's ``{"function": {"name"}}``, a Responses built-in's ``{"type"}``, the tools inside a
    Responses ``{"type": "namespace"}``: ``mcp__ctx__expand`` for Codex's ``mcp__ctx``
    namespace); none when they do not parse."""
    try:
        found = msgspec.json.decode(tools) if tools else []
    except msgspec.DecodeError:
        return ()
    out: list[tuple[str, str]] = []
    todo = [("", t) for t in found] if isinstance(found, list) else []
    while todo:
        prefix, t = todo.pop(0)
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace" and isinstance(t.get("tools"), list):
            # an MCP server's namespace names its tools as Claude Code does (mcp__ctx__expand)
            inner = f"{t.get('name')}__" if str(t.get("name", "")).startswith("mcp__") else ""
            todo[:0] = [(inner, c) for c in t["tools"]]
            continue
        function = t.get("function")
        name = t.get("name") or (function.get("name") if isinstance(function, dict) else None) or t.get("type")
        if isinstance(name, str):
            out.append((prefix + name, msgspec.json.encode(t).decode()))
    return tuple(out)


def tool_names(tools: str) -> tuple[str, ...]:
    return tuple(name for name, _ in tool_definitions(tools))


def rewrite(api: Api, parsed: Parsed, plan: ExchangePlan) -> bytes | None:
    """The body that carries ``plan``, or None when it is the client's body unchanged.

    An item is sent when the plan shows any of its messages (an item without messages — a
    reasoning item, say — goes with the item after it); a masked message's text becomes its stub;
    the per-turn block goes ahead of the latest user message (and an earlier turn's, as it was
    sent, ahead of its own), the stable block after the system prompt."""
    placement = plan.placement
    shown = placement.shown
    ids_of: list[list[str]] = []
    start = 0
    for ms in parsed.messages:
        ids_of.append(plan.ids[start : start + len(ms)])
        start += len(ms)
    keep: list[bool | None] = [any(i in shown for i in ids) if ids else None for ids in ids_of]
    following = True
    for n in range(len(keep) - 1, -1, -1):
        if keep[n] is None:
            keep[n] = following
        following = bool(keep[n])
    changed = bool(placement.stable)
    items: list[b.Raw] = []
    for n, item in enumerate(parsed.items):
        if not keep[n]:
            changed = True
            continue
        ids, originals = ids_of[n], parsed.messages[n]
        stubs = {
            k: shown[i].content for k, i in enumerate(ids) if i in shown and shown[i].content != originals[k].content
        }
        if stubs:
            item = api.mask(item, stubs)
            changed = True
        block = next((t for i in ids if (t := placement.block_for(i))), "")
        if block:
            items.extend(api.prepend(item, block))
            changed = True
            continue
        items.append(item)
    if not changed:
        return None
    fields = api.assemble(parsed, items, placement.stable)
    mark = getattr(api, "mark_cache", None)  # Anthropic's explicit breakpoints
    if mark is not None and plan.appended < len(plan.ids):  # a conversation seen before: it is resent
        fields = mark(fields)
    return bytes(b.join_object(fields))
