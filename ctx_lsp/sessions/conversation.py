"""The conversation of a session: messages appended with their token counts, branches, and the
part of the conversation a plan reads — only what its budget could show."""

from __future__ import annotations

import operator
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ctx_lsp.core.conversation import Sized, conversation_window, group_turns, mask_limit, parse_messages, with_query
from ctx_lsp.core.items import BudgetSpec, Message
from ctx_lsp.core.planner import FRAMING_TOKENS
from ctx_lsp.core.tokens import TokenCounter, utf8_size
from ctx_lsp.engine import ResolvedModel
from ctx_lsp.memory.store import BOUND_ENCODING, MessageMeta, StoredMessage
from ctx_lsp.memory.store.paths import Archived
from ctx_lsp.sessions.records import Branch
from ctx_lsp.sessions.shared import Shared, found
from ctx_lsp.sessions.values import Transcript

COUNT_BATCH = 32  # messages read at once when counting what an earlier version stored uncounted
QUESTION_SLACK_BYTES = 4096  # a latest user message this much longer than the query is not the query


@dataclass(slots=True)
class Conversation:
    shared: Shared
    # per session: the archived messages (the store's tuple), their turns (texts left out), and
    # the chunks' generation when every turn was read into a chunk
    archived: dict[str, tuple[tuple[MessageMeta, ...], list[list[Message]], int]] = field(default_factory=dict)
    # per session: the messages with images or documents, and their tokens as the provider counts
    # them. Kept here, not in the store: a gateway's client resends them with every request
    media: dict[str, dict[str, int]] = field(default_factory=dict)

    def note_media(self, session: str, ids: list[str], messages: list[Message]) -> None:
        """The images and documents of a request's messages (``ids`` their stored ids), counted in
        every later count of them (``sizes``)."""
        found = {i: m.media_tokens for i, m in zip(ids, messages, strict=True) if m.media_tokens > 0}
        if found or session in self.media:
            self.media[session] = found

    def append_raw(self, session: str, branch: str | None, raw: list[dict[str, Any]]) -> list[StoredMessage]:
        """Append chat messages as clients send them (OpenAI's or our camelCase spelling). A
        message without an id gets a fresh one: ids derived from content would collide when the
        same text ("ok") is sent twice."""
        messages = [
            m if r.get("id") is not None else msgspec.structs.replace(m, id=f"m-{uuid.uuid4().hex[:12]}")
            for m, r in zip(parse_messages(raw), raw, strict=True)
        ]
        return self.append(session, branch, messages)

    def append(self, session: str, branch: str | None, messages: list[Message]) -> list[StoredMessage]:
        """Store messages with their token counts, counted once here (in the session's model's
        encoding; a text over the counting limit is recorded as its UTF-8 size)."""
        self.shared.require_memory()
        record = self.shared.open_session(session)
        counter = self.shared.engine.resolve_model(record.model).counter  # the count, not its calibration
        counts = []
        for m in messages:
            tokens, exact = counter.measure(m.content)
            counts.append((tokens, counter.encoding if exact else BOUND_ENCODING))
        with found():
            return self.shared.store.append(session, branch, messages, counts)

    def transcript(self, session: str, branch: str | None = None) -> Transcript:
        record = self.shared.open_session(session)
        with found():
            messages = self.shared.store.path(session, branch)
        return Transcript(session=session, branch=branch or record.branch, messages=messages)

    def message_count(self, session: str, branch: str | None = None) -> int:
        self.shared.open_session(session)
        with found():
            return self.shared.store.path_length(session, branch)

    def branch(self, session: str, from_message: str, name: str | None) -> Branch:
        self.shared.require_memory()
        self.shared.open_session(session)
        with found():
            return msgspec.convert(self.shared.store.fork(session, from_message, name), Branch)

    def sizes(self, session: str, meta: list[MessageMeta], counter: TokenCounter) -> dict[str, Sized]:
        """The stored counts of messages, in ``counter``'s encoding. Messages never counted in it
        (stores of earlier versions, a session that changed model family) are read and counted
        now, once, and the counts stored."""
        store = self.shared.store
        stale = [
            m
            for m in meta
            if m.tokens is None or m.bytes is None or m.tokens_encoding not in (counter.encoding, BOUND_ENCODING)
        ]
        for start in range(0, len(stale), COUNT_BATCH):
            batch = stale[start : start + COUNT_BATCH]
            texts = store.contents(session, [m.id for m in batch])
            counted = []
            for m in batch:
                text = texts.get(m.id, "")
                tokens, exact = counter.measure(text)
                m.bytes, m.tokens = utf8_size(text), tokens
                m.tokens_encoding = counter.encoding if exact else BOUND_ENCODING
                counted.append((m.id, m.bytes, m.tokens, m.tokens_encoding))
            store.set_counts(session, counted)
        media = self.media.get(session, {})
        return {
            m.id: Sized(
                tokens=m.tokens or 0,
                bytes=m.bytes or 0,
                exact=m.tokens_encoding != BOUND_ENCODING,
                media=media.get(m.id, 0),
            )
            for m in meta
        }

    def window(
        self,
        session: str,
        active: list[MessageMeta],
        sizes: dict[str, Sized],
        query: str,
        model: ResolvedModel,
        budget: BudgetSpec,
        query_in_conversation: bool = False,
    ) -> tuple[list[Message], dict[str, Sized], int]:
        """The conversation a plan gets: only the part of the active path it can use, with the
        texts it may show whole (``conversation_window``); the rest stays unread in the store.
        Returns (messages, their sizes, how many older messages were left out)."""
        store = self.shared.store
        counter, cal = model.counter, model.estimator.calibration
        messages = [m.to_message() for m in active]
        if messages and messages[-1].role == "user" and not query_in_conversation:  # the question itself?
            last = messages[-1]
            if sizes[last.id].bytes <= utf8_size(query) + QUESTION_SLACK_BYTES:
                text = store.contents(session, [last.id]).get(last.id, "")
                messages[-1] = msgspec.structs.replace(last, content=text)
        if not query_in_conversation:
            messages = with_query(messages, query)
        available = budget.prompt_budget - FRAMING_TOKENS
        window = conversation_window(messages, sizes, counter, cal, available, mask_limit(budget))
        messages = messages[window.start :]
        wanted = [m.id for m in messages if m.id in window.load and m.id in sizes and not m.content]
        texts = store.contents(session, wanted) if wanted else {}
        out, used = [], {}
        for m in messages:
            if m.id not in sizes:  # the query, appended as a new message
                out.append(m)
            elif m.id in window.load:
                out.append(msgspec.structs.replace(m, content=texts[m.id]) if m.id in texts else m)
                used[m.id] = sizes[m.id]
            else:
                out.append(m)
                used[m.id] = msgspec.structs.replace(sizes[m.id], loaded=False)
        return out, used, window.start

    def history(self, session: str, archived: tuple[MessageMeta, ...]) -> list[list[Message]]:
        """Archived turns for older-history retrieval, each read into a chunk (the heads of its
        texts) once: the turns come back without their texts. They are kept per session, by the
        identity of the store's archived tuple (``MemoryStore.path_parts``): the same lists while
        nothing more is archived, grown when a compaction archives more. A long session archives
        thousands of messages, and every plan asks: a plan that archives nothing looks at none."""
        chunks = self.shared.engine.history_chunks
        kept = self.archived.get(session)
        read = 0  # the first turns, known to be read into chunks
        if kept is not None and kept[0] is archived:
            turns = kept[1]
            if kept[2] == chunks.generation:  # every turn was read into a chunk already
                return turns
        elif kept is not None and _grown(kept[0], archived):
            # more turns archived after the kept ones (a compaction archives whole turns)
            turns = kept[1] + group_turns([m.to_message() for m in archived[len(kept[0]) :]])
            read = len(kept[1]) if kept[2] == chunks.generation else 0
        else:
            turns = group_turns([m.to_message() for m in archived])
        missing = [t for t in turns[read:] if not chunks.has(t)]
        if missing:  # read into chunks now, so the turns go on as the same lists, without texts
            heads = self.shared.store.contents(session, [m.id for t in missing for m in t], prefix=True)
            for t in missing:
                chunks.of([msgspec.structs.replace(m, content=heads.get(m.id, "")) for m in t])
        self.archived[session] = (archived, turns, chunks.generation)
        return turns


def _grown(kept: tuple[MessageMeta, ...], archived: tuple[MessageMeta, ...]) -> bool:
    """Whether ``archived`` is ``kept`` followed by whole turns: the same messages first (by id:
    the store may have read them again), then a user message."""
    n = len(kept)
    if n == 0 or len(archived) <= n or archived[n].role != "user":
        return False
    if isinstance(archived, Archived) and archived.extends(kept):  # the store's own tuple, grown
        return True
    if all(map(operator.is_, kept, archived)):  # the same messages: no ids to compare
        return True
    return all(a.id == b.id for a, b in zip(kept, archived[:n], strict=True))
