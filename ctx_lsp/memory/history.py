"""Older-history retrieval: archived turns become retrievable chunks in the rag section, ranked
by relevance to the current query (BM25 over the chunks' words). They never duplicate the
window: only archived turns, which the prompt otherwise sees only through the summary."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import HISTORY_CHUNK, Item, Message
from ctx_lsp.core.tokens import TokenCounter, scaled
from ctx_lsp.memory.compaction import transcript

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
K1, B = 1.2, 0.75
MAX_CHUNK_CHARS = 12_000  # a chunk is one archived turn, cut so one huge tool dump cannot dominate
HISTORY_WEIGHT = 0.5  # history competes with code, a little below it: the code is the ground truth
HISTORY_LIMIT = 32  # candidates per plan, the best by score: more could not fit the rag section anyway


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class _Chunk:
    __slots__ = ("doc", "length", "tf", "title")

    def __init__(self, turn: Sequence[Message]) -> None:
        self.doc = transcript(turn)[:MAX_CHUNK_CHARS]
        self.tf = Counter(_terms(self.doc))
        self.length = sum(self.tf.values())
        self.title = f"earlier turn: {' '.join(turn[0].content[:400].split())[:60]}"


class HistoryChunks:
    """Archived turns never change, so each is read into a chunk (text and term counts) once."""

    def __init__(self, limit: int = 20_000) -> None:
        self._chunks: dict[tuple[str, ...], _Chunk] = {}
        self._limit = limit

    def has(self, turn: Sequence[Message]) -> bool:
        """Whether ``turn`` is read already (its messages' texts are then not needed)."""
        return tuple(m.id for m in turn) in self._chunks

    def of(self, turn: Sequence[Message]) -> _Chunk:
        key = tuple(m.id for m in turn)
        chunk = self._chunks.get(key)
        if chunk is None:
            if len(self._chunks) >= self._limit:
                self._chunks.clear()
            chunk = self._chunks[key] = _Chunk(turn)
        return chunk


def history_candidates(
    turns: Sequence[Sequence[Message]],
    query: str,
    counter: TokenCounter,
    calibration: float,
    chunks: HistoryChunks | None = None,
) -> list[Item]:
    """One item per archived turn that shares a word with the query, scored by BM25, for the
    ``HISTORY_LIMIT`` best turns. A turn already read into ``chunks`` needs only its message ids
    (its texts may be empty)."""
    q = set(_terms(query))
    if not turns or not q:
        return []
    chunks = chunks or HistoryChunks()
    read = [chunks.of(t) for t in turns]
    avg = sum(c.length for c in read) / len(read) or 1.0
    df = Counter(w for c in read for w in q if w in c.tf)
    n = len(read)
    scored = []
    for k, chunk in enumerate(read):
        tf, length = chunk.tf, chunk.length
        score = 0.0
        matched = []
        for w in q:
            f = tf.get(w, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
            matched.append(w)
        if score > 0:
            scored.append((score, k, matched))
    # the best few, in the conversation's order: a long session's history does not grow every plan
    best = sorted(sorted(scored, key=lambda s: (-s[0], s[1]))[:HISTORY_LIMIT], key=lambda s: s[1])
    out = []
    for score, k, matched in best:
        chunk = read[k]
        text = f"# Earlier in this conversation (archived turn, message {turns[k][0].id}):\n{chunk.doc}"
        out.append(
            Item(
                id="history:" + content_id(text),
                section="rag",
                kind=HISTORY_CHUNK,
                title=chunk.title,
                text=text,
                tokens=scaled(counter.count(text) + 1, calibration),
                score=round(score * HISTORY_WEIGHT, 6),
                why=f"older history, bm25 {score:.2f} on {', '.join(sorted(matched))} (×{HISTORY_WEIGHT})",
            )
        )
    return out
