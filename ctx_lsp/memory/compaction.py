"""Compaction: summarise older conversation into one item, without deleting anything.

What must survive is kept by construction: the system prompt, agent instruction files and
sticky pins never enter the conversation; the current turn (with the user's current request)
is never archived; and the summary always restates the original task. The extractive
summariser is deterministic and needs no network; the llm one asks an OpenAI-compatible
endpoint and falls back to extractive (saying so) on any failure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence

import msgspec

from ctx_lsp.core.conversation import group_atoms
from ctx_lsp.core.items import Message
from ctx_lsp.memory.llm import ChatClient, LlmError

TASK_CHARS = 2_000
LINE_CHARS = 200
CAPS = {"requests": 20, "decisions": 20, "touched": 40, "tools": 30, "failures": 15, "open_items": 15}

_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|md|toml|json|txt|ya?ml|cfg|ini|js|ts|lua|rs|go)\b")
_TICKED = re.compile(r"`([A-Za-z_][\w.]*(?:\(\))?)`")
_DECISION = re.compile(
    r"\b(decided|decide|we will|i will|i'll|we'll|going to|chose|choose|instead of|the plan is|let's|we should)\b", re.I
)
FAILURE = re.compile(r"\b(error|failed|fails|failure|traceback|exception|did not work|doesn't work|broke)\b", re.I)
_OPEN = re.compile(r"\b(todo|fixme|next step|still need|open question|remaining|not yet|follow[- ]up)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


class Digest(msgspec.Struct, kw_only=True):
    """The structured content of a summary; merged across chained compactions."""

    task: str = ""
    requests: list[str] = msgspec.field(default_factory=list)
    decisions: list[str] = msgspec.field(default_factory=list)
    touched: list[str] = msgspec.field(default_factory=list)
    tools: list[str] = msgspec.field(default_factory=list)
    failures: list[str] = msgspec.field(default_factory=list)
    open_items: list[str] = msgspec.field(default_factory=list)


class Compaction(msgspec.Struct, kw_only=True, rename="camel"):
    number: int
    session: str
    branch: str
    summary: str
    archived_ids: list[str]
    tokens_before: int
    tokens_after: int
    milliseconds: float
    summarizer: str  # extractive | llm | edited | trim
    note: str | None = None  # e.g. why the llm summariser fell back to extractive
    applied: bool = True  # False for a dry-run proposal


def _line(text: str, limit: int = LINE_CHARS) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _merge(old: list[str], new: list[str], cap: int) -> list[str]:
    seen = dict.fromkeys(old)
    for x in new:
        seen.pop(x, None)
        seen[x] = None
    return list(seen)[-cap:]


def extract_digest(
    messages: Sequence[Message], previous: Digest | None = None, sizes: Mapping[str, int] | None = None
) -> Digest:
    """Deterministic digest of archived messages: the task, requests, decisions, files and
    symbols touched, tools run and their outcomes, failed approaches and open items. ``sizes``
    are the UTF-8 sizes of messages whose text is only their head (a large tool result)."""
    prev = previous or Digest()
    users = [m for m in messages if m.role == "user" and m.content.strip()]
    task = prev.task or (users[0].content.strip()[:TASK_CHARS] if users else "")
    requests, decisions, touched, tools, failures, open_items = [], [], [], [], [], []
    calls = {}
    for m in messages:
        for call in m.tool_calls:
            calls[call.id] = call
            touched += _PATH.findall(call.arguments)
        touched += _PATH.findall(m.content) + _TICKED.findall(m.content)
        if m.role == "user" and m.content.strip():
            requests.append(_line(m.content))
        if m.role == "assistant":
            for sentence in _SENTENCE.findall(m.content):
                if _DECISION.search(sentence):
                    decisions.append(_line(sentence))
                if _OPEN.search(sentence):
                    open_items.append(_line(sentence))
        if m.role == "tool":
            call = calls.get(m.tool_call_id or "")
            name = call.name if call else (m.name or "tool")
            args = _line(call.arguments, 80) if call else ""
            first = next((ln for ln in m.content.splitlines() if ln.strip()), "")
            failed = bool(FAILURE.search(m.content[:2000]))
            outcome = ("failed: " if failed else "") + _line(first, 100)
            size = f"{sizes[m.id]:,} bytes" if sizes and m.id in sizes else f"{len(m.content):,} chars"
            tools.append(f"{name}({args}) → {outcome} ({size})")
            if failed:
                failures.append(f"{name}: {_line(first, 160)}")
        elif FAILURE.search(m.content) and m.role == "assistant":
            failures += [_line(s, 160) for s in _SENTENCE.findall(m.content) if FAILURE.search(s)][:2]
    if users:
        last = users[-1].content
        open_items += [_line(s) for s in _SENTENCE.findall(last) if s.strip().endswith("?")][:3]
    return Digest(
        task=task,
        requests=_merge(prev.requests, requests, CAPS["requests"]),
        decisions=_merge(prev.decisions, decisions, CAPS["decisions"]),
        touched=_merge(prev.touched, touched, CAPS["touched"]),
        tools=_merge(prev.tools, tools, CAPS["tools"]),
        failures=_merge(prev.failures, failures, CAPS["failures"]),
        open_items=_merge(prev.open_items, open_items, CAPS["open_items"]),
    )


def digest_text(d: Digest, number: int, archived: int) -> str:
    out = [
        f"[Compaction #{number}: summary of {archived} earlier messages; the originals are kept in the session]",
        f"Original task: {d.task or '(not stated)'}",
    ]

    def section(title: str, items: list[str], inline: bool = False) -> None:
        if not items:
            return
        if inline:
            out.append(f"{title}: {', '.join(items)}")
        else:
            out.append(f"{title}:")
            out.extend(f"- {x}" for x in items)

    section("User requests (oldest first)", d.requests)
    section("Decisions made", d.decisions)
    section("Files and symbols touched", d.touched, inline=True)
    section("Tools run", d.tools)
    section("Failed approaches", d.failures)
    section("Open items", d.open_items)
    return "\n".join(out)


def transcript(messages: Sequence[Message]) -> str:
    parts = []
    for m in messages:
        head = m.role if not m.tool_call_id else f"tool result {m.tool_call_id}"
        body = m.content
        for c in m.tool_calls:
            body += f"\n[calls {c.name}({c.arguments}) id={c.id}]"
        parts.append(f"{head}: {body.strip()}")
    return "\n\n".join(parts)


LLM_INSTRUCTIONS = (
    "You summarise the earlier part of a conversation between a user and an AI coding assistant so the "
    "assistant can continue without it. State, concisely and factually: the original task; decisions made; "
    "files and symbols touched; tools run and their outcomes; failed approaches; open items. Keep names, paths "
    "and numbers exact. Do not invent anything."
)


def llm_summary(
    client: ChatClient,
    messages: Sequence[Message],
    previous_summary: str | None,
    count: Callable[[str], int],
    window: int,
    max_output: int = 1_000,
) -> str:
    """Summarise with the endpoint, never overflowing its window: messages are split into chunks
    that fit, each chunk is summarised, then the partial summaries are merged the same way."""
    room = window - max_output - count(LLM_INSTRUCTIONS) - 200
    if room <= 200:
        raise LlmError(f"the summariser's window ({window} tokens) is too small to summarise anything")
    texts = [transcript([m]) for m in messages]
    if previous_summary:
        texts.insert(0, "Summary of what came before:\n" + previous_summary)
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for t in texts:
        n = count(t)
        if n > room:  # one enormous message: keep its head, say it was cut
            t = t[: room * 3] + "\n[… cut to fit the summariser's window]"
            n = count(t)
        if current and used + n > room:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(t)
        used += n
    if current:
        chunks.append("\n\n".join(current))
    partials = [
        client.complete(
            [{"role": "system", "content": LLM_INSTRUCTIONS}, {"role": "user", "content": chunk}], max_output
        )
        for chunk in chunks
    ]
    while len(partials) > 1:  # merge, again in pieces that fit
        merged: list[str] = []
        group: list[str] = []
        used = 0
        for p in partials:
            n = count(p)
            if group and used + n > room:
                merged.append(_merge_call(client, group, max_output))
                group, used = [], 0
            group.append(p)
            used += n
        if group:
            merged.append(_merge_call(client, group, max_output) if len(group) > 1 else group[0])
        if len(merged) >= len(partials):  # cannot shrink further: keep what fits
            break
        partials = merged
    return partials[0]


def _merge_call(client: ChatClient, parts: list[str], max_output: int) -> str:
    body = "Merge these partial summaries of consecutive parts of one conversation into one summary:\n\n"
    body += "\n\n---\n\n".join(parts)
    return client.complete(
        [{"role": "system", "content": LLM_INSTRUCTIONS}, {"role": "user", "content": body}], max_output
    )


def summarise(
    messages: Sequence[Message],
    number: int,
    previous: Digest | None,
    previous_summary: str | None,
    *,
    use_llm: bool,
    client: ChatClient | None,
    count: Callable[[str], int],
    window: int,
    sizes: Mapping[str, int] | None = None,
) -> tuple[str, Digest, str, str | None, float]:
    """(summary text, digest, summarizer used, note, milliseconds)."""
    t0 = time.perf_counter()
    digest = extract_digest(messages, previous, sizes)
    note = None
    if use_llm and client is not None:
        try:
            body = llm_summary(client, messages, previous_summary, count, window)
            text = (
                f"[Compaction #{number}: summary of {len(messages)} earlier messages by {client.endpoint.model}; "
                f"the originals are kept in the session]\nOriginal task: {digest.task}\n{body}"
            )
            return text, digest, "llm", None, (time.perf_counter() - t0) * 1000
        except LlmError as err:
            note = f"llm summariser failed ({err}); used the extractive summariser instead"
    return digest_text(digest, number, len(messages)), digest, "extractive", note, (time.perf_counter() - t0) * 1000


def split_for_compaction(
    turns: Sequence[Sequence[Message]],
    cost: Callable[[Sequence[Message]], int],
    keep_tokens: int,
    *,
    split_current: bool = False,
) -> tuple[list[Message], list[Message]]:
    """(messages to archive, messages to keep): the current turn is kept, then older turns newest
    first while they fit in ``keep_tokens``; the rest is archived. Turns stay whole — except, with
    ``split_current``, a current turn larger than ``keep_tokens`` on its own (a long agent loop):
    then its oldest tool exchanges are archived too, whole atoms, keeping its user message, its
    pending exchange and the newest exchanges that fit."""
    if not turns:
        return [], []
    current = list(turns[-1])
    if split_current and cost(current) > keep_tokens:
        atoms = group_atoms(current[1:])
        head = current[:1]
        room = keep_tokens - cost(head) - (cost(atoms[-1]) if atoms else 0)
        start = len(atoms) - 1
        while start > 0 and cost(atoms[start - 1]) <= room:
            room -= cost(atoms[start - 1])
            start -= 1
        if start > 0:
            archive = [m for t in turns[:-1] for m in t] + [m for a in atoms[:start] for m in a]
            return archive, head + [m for a in atoms[start:] for m in a]
    if len(turns) <= 1:
        return [], current
    kept = [current]
    room = keep_tokens - cost(current)
    cut = len(turns) - 1
    for i in range(len(turns) - 2, -1, -1):
        c = cost(turns[i])
        if c > room:
            break
        room -= c
        kept.insert(0, list(turns[i]))
        cut = i
    archive = [m for t in turns[:cut] for m in t]
    return archive, [m for t in kept for m in t]
