"""A request that an assistant sends through the gateway, in the engine's terms: the ids its
messages get, and the question it asks.

An assistant resends the whole conversation with every request. A message's id is derived from
its content and from the id of the message before it (a hash chain), so a resent history gets
the ids it had, a restart changes nothing, and a history that was edited or rewound gets new ids
from the first changed message on: that is where its branch forks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ctx_lsp.core.harness import user_words
from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import Message

RECENT_CALLS = 6  # tool calls of an agent loop whose names and arguments join the query
CALL_ARGUMENTS_CHARS = 400


def canonical_arguments(arguments: str) -> str:
    """Tool call arguments as compact JSON with sorted keys, so a call read from a reply stream
    and the same call resent by the client (re-serialised its own way) are the same text."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, TypeError):
        return arguments


def message_key(m: Message) -> str:
    """What identifies a message's content: role, text, tool calls, the call it answers."""
    calls = "\x1e".join(f"{t.id}\x1f{t.name}\x1f{canonical_arguments(t.arguments)}" for t in m.tool_calls)
    return content_id(m.role, m.content, calls, m.tool_call_id or "", m.name or "")


def chain_id(parent: str | None, m: Message) -> str:
    return "g-" + content_id(parent or "", message_key(m))


def chain_ids(
    messages: Sequence[Message], parent: str | None = None, known: dict[tuple[str | None, Message], str] | None = None
) -> list[str]:
    """The chained ids of ``messages``. ``known``: ids found before, by (parent id, message) — an
    assistant resends the whole conversation every request, and hashing it all again (its tool
    results too) costs more than looking each message up."""
    out = []
    for m in messages:
        found = known.get((parent, m)) if known is not None else None
        if found is None:
            found = chain_id(parent, m)
            if known is not None:
                known[parent, m] = found
        parent = found
        out.append(parent)
    return out


def exchange_query(messages: Sequence[Message]) -> str:
    """The question a request asks: the user's words in their latest message (the assistant's
    harness text left out: ``core.harness``); in an agent loop whose last message is a tool
    result, those words plus the names and arguments (paths, symbols) of the recent tool calls,
    which say what the agent is working on now."""
    latest = next((n for n in range(len(messages) - 1, -1, -1) if messages[n].role == "user"), None)
    text = ""
    for n in range(latest if latest is not None else -1, -1, -1):  # a message all harness says nothing
        if messages[n].role == "user" and (text := user_words(messages[n].content)):
            break
    if not messages or messages[-1].role != "tool" or latest is None:
        return text
    calls = [t for m in messages[latest + 1 :] for t in m.tool_calls][-RECENT_CALLS:]
    pointers = [f"{t.name} {t.arguments[:CALL_ARGUMENTS_CHARS]}" for t in calls]
    return "\n".join([text, *pointers]).strip()
