"""Older-history retrieval: archived turns become retrievable chunks in the rag section, ranked
by relevance to the current query (BM25 over the chunks' words). They never duplicate the
window: only archived turns, which the prompt otherwise sees only through the summary."""

from __future__ import annotations

import math
import operator
import re
from collections import Counter
from collections.abc import Sequence

import msgspec

from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import HISTORY_CHUNK, Item, Message
from ctx_lsp.core.tokens import TokenCounter, scaled
from ctx_lsp.memory.compaction import transcript

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
K1, B = 1.2, 0.75
MAX_CHUNK_CHARS = 12_000  # a chunk is one archived turn, cut so one huge tool dump cannot dominate
HISTORY_WEIGHT = 0.5  # history competes with code, a little below it: the code is the ground truth
HISTORY_LIMIT = 32  # candidates per plan, the best by score: more could not fit the rag section anyway
INDEXES_KEPT = 8  # lists of archived turns indexed (sessions planned lately)
INDEX_WORDS = 2_000  # postings kept per index; past it, they are made again as asked


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class _Chunk:
    __slots__ = ("doc", "length", "made", "tf", "title")

    def __init__(self, turn: Sequence[Message]) -> None:
        self.doc = transcript(turn)[:MAX_CHUNK_CHARS]
        self.tf = Counter(_terms(self.doc))
        self.length = sum(self.tf.values())
        self.title = f"earlier turn: {' '.join(turn[0].content[:400].split())[:60]}"
        self.made: tuple[tuple[str, TokenCounter, float], Item] | None = None  # its item, unscored


class _Posting:
    """The chunks a word is in (their numbers, ascending) and its count in each; for a word in
    most chunks, also its count in every chunk (0 where it is not), made when first asked for."""

    __slots__ = ("column", "counts", "numbers")

    def __init__(self) -> None:
        self.numbers: list[int] = []
        self.counts: list[int] = []
        self.column: list[int] | None = None

    def add(self, base: int, chunks: Sequence[_Chunk], word: str) -> None:
        for k, c in enumerate(chunks):
            f = c.tf.get(word)
            if f:
                self.numbers.append(base + k)
                self.counts.append(f)
        if self.column is not None:
            self.column += [c.tf.get(word, 0) for c in chunks]

    def dense(self, n: int) -> list[int]:
        if self.column is None:
            column = [0] * n
            for k, f in zip(self.numbers, self.counts, strict=True):
                column[k] = f
            self.column = column
        return self.column


class _Index:
    """The chunks of one list of archived turns, in order, and the postings of the words asked
    for: a compaction adds turns to the list, and the index grows with it instead of being read
    again."""

    __slots__ = ("best", "chunks", "lengths", "postings", "total", "turns")

    def __init__(self) -> None:
        self.turns: list[Sequence[Message]] = []
        self.chunks: list[_Chunk] = []
        self.lengths: list[int] = []  # the chunks' lengths in words, in order
        self.total = 0  # words in all chunks
        self.postings: dict[str, _Posting] = {}
        # the best chunks (number, score) for a query's words, until the index grows: an agent's
        # turns ask with the same words (the task's) until the next compaction
        self.best: dict[tuple[str, ...], list[tuple[int, float]]] = {}

    def extend(self, turns: Sequence[Sequence[Message]], chunks: list[_Chunk]) -> None:
        self.best.clear()
        base = len(self.chunks)
        self.turns += turns
        self.chunks += chunks
        self.lengths += [c.length for c in chunks]
        self.total += sum(c.length for c in chunks)
        for w, found in self.postings.items():
            found.add(base, chunks, w)

    def posting(self, word: str) -> _Posting:
        found = self.postings.get(word)
        if found is None:
            if len(self.postings) >= INDEX_WORDS:
                self.postings.clear()
            found = self.postings[word] = _Posting()
            found.add(0, self.chunks, word)
        return found


class HistoryChunks:
    """Archived turns never change, so each is read into a chunk (text and term counts) once.
    ``generation`` moves when chunks are forgotten (past ``limit``)."""

    def __init__(self, limit: int = 20_000) -> None:
        self._chunks: dict[tuple[str, ...], _Chunk] = {}
        # a turn's list object → (the list, its chunk): the sessions engine keeps each session's
        # archived turns as the same lists from plan to plan, so most look-ups cost no key
        self._lists: dict[int, tuple[Sequence[Message], _Chunk]] = {}
        self._indexes: list[_Index] = []  # the latest first
        self._limit = limit
        self.generation = 0

    def has(self, turn: Sequence[Message]) -> bool:
        """Whether ``turn`` is read already (its messages' texts are then not needed)."""
        known = self._lists.get(id(turn))
        return (known is not None and known[0] is turn) or tuple(m.id for m in turn) in self._chunks

    def of(self, turn: Sequence[Message]) -> _Chunk:
        known = self._lists.get(id(turn))
        if known is not None and known[0] is turn:
            return known[1]
        key = tuple(m.id for m in turn)
        chunk = self._chunks.get(key)
        if chunk is None:
            if len(self._chunks) >= self._limit:
                self._chunks.clear()
                self._lists.clear()
                self._indexes.clear()
                self.generation += 1
            chunk = self._chunks[key] = _Chunk(turn)
        if not any(m.content for m in turn):  # a list without texts is one the engine keeps
            if len(self._lists) >= 2 * self._limit:
                self._lists.clear()
            self._lists[id(turn)] = (turn, chunk)
        return chunk

    def index(self, turns: Sequence[Sequence[Message]]) -> _Index:
        """The index of ``turns``: one made before for the same turns (the same lists), grown by
        the turns added since, else a new one."""
        for n, idx in enumerate(self._indexes):
            size = len(idx.turns)
            if size <= len(turns) and all(map(operator.is_, idx.turns, turns[:size])):
                self._indexes.insert(0, self._indexes.pop(n))
                break
        else:
            idx = _Index()
            self._indexes.insert(0, idx)
            del self._indexes[INDEXES_KEPT:]
        if len(idx.turns) < len(turns):
            added = turns[len(idx.turns) :]
            idx.extend(added, [self.of(t) for t in added])
        return idx


def _best(idx: _Index, q: list[str]) -> list[tuple[int, float]]:
    """(chunk number, BM25 score) of the ``HISTORY_LIMIT`` best chunks for the words ``q``, in
    the conversation's order (a long session's history does not grow every plan).

    Each word adds its share to the scores of the chunks it is in, in the order of ``q``, each
    share worked out as ``idf * f * (K1 + 1) / (f + norm)``: the same numbers however it is done.
    A word in most chunks (an agent's task words, its tool's name: the common case, and the
    costly one) is done a whole column at a time, by ``map`` over its counts and the chunks'
    length norms, where a chunk without it adds exactly 0.0; another, chunk by chunk over its
    posting."""
    lengths = idx.lengths
    n = len(lengths)
    if not n:
        return []
    avg = idx.total / n or 1.0
    postings = [p for p in map(idx.posting, q) if p.numbers]
    if not postings:
        return []
    norm: list[float] | None = None
    scores = [0.0] * n  # 0.0 + share is the share: a chunk's first word starts its score exactly
    for found in postings:
        df = len(found.numbers)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        if 2 * df > n:
            if norm is None:
                by_length = {size: K1 * (1 - B + B * size / avg) for size in set(lengths)}
                norm = list(map(by_length.__getitem__, lengths))
            column = found.dense(n)
            top = {f: idf * f * (K1 + 1) for f in set(column)}  # f = 0: 0.0, and 0.0 / norm is 0.0
            shares = map(operator.truediv, map(top.__getitem__, column), map(operator.add, column, norm))
            scores = list(map(operator.add, scores, shares))
        else:
            for k, f in zip(found.numbers, found.counts, strict=True):
                scores[k] += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * lengths[k] / avg))
    if len(idx.best) >= INDEX_WORDS:
        idx.best.clear()
    # the best by (score descending, chunk number): a stable sort keeps equal scores in chunk order
    order = sorted(range(n), key=scores.__getitem__, reverse=True)[:HISTORY_LIMIT]
    return sorted((k, scores[k]) for k in order if scores[k] > 0.0)


def history_candidates(
    turns: Sequence[Sequence[Message]],
    query: str,
    counter: TokenCounter,
    calibration: float,
    chunks: HistoryChunks | None = None,
) -> list[Item]:
    """One item per archived turn that shares a word with the query, scored by BM25, for the
    ``HISTORY_LIMIT`` best turns. A turn already read into ``chunks`` needs only its message ids
    (its texts may be empty). The words are scored in sorted order (the same sums in every
    process), each over its postings only."""
    q = sorted(set(_terms(query)))
    if not turns or not q:
        return []
    chunks = chunks or HistoryChunks()
    idx = chunks.index(turns)
    read = idx.chunks
    best = idx.best.get(tuple(q))
    if best is None:
        best = idx.best[tuple(q)] = _best(idx, q)
    out = []
    for k, score in best:
        chunk = read[k]
        matched = [w for w in q if w in chunk.tf]
        key = (turns[k][0].id, counter, calibration)
        if chunk.made is None or chunk.made[0] != key:
            text = f"# Earlier in this conversation (archived turn, message {turns[k][0].id}):\n{chunk.doc}"
            made = Item(
                id="history:" + content_id(text),
                section="rag",
                kind=HISTORY_CHUNK,
                title=chunk.title,
                text=text,
                tokens=scaled(counter.count(text) + 1, calibration),
            )
            chunk.made = (key, made)
        out.append(
            msgspec.structs.replace(
                chunk.made[1],
                score=round(score * HISTORY_WEIGHT, 6),
                why=f"older history, bm25 {score:.2f} on {', '.join(matched)} (×{HISTORY_WEIGHT})",
            )
        )
    return out
