"""The plain baseline: BM25 over ~40-line chunks of every file, packed best-first under the
same token budgets. No code awareness beyond splitting words on non-alphanumerics (so
``snake_case`` splits, ``camelCase`` does not)."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ctx_lsp.core.tokens import counter_for
from ctx_lsp.workspace.files import WorkspaceWalker

CHUNK_LINES = 40
K1 = 1.2
B = 0.75
_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "a an and are as at be been but by for from has have in into is it its of on or that the their then "
    "there these this those to was were will with"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1]


@dataclass(slots=True)
class Chunk:
    path: str
    start: int  # 0-based first line
    end: int  # 0-based last line (inclusive)
    tokens: int


class ChunkIndex:
    """BM25 over fixed-size line chunks of a workspace's Python files."""

    def __init__(self, root: Path, chunk_lines: int = CHUNK_LINES) -> None:
        count = counter_for("cl100k_base").count
        self.chunks: list[Chunk] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        for entry in WorkspaceWalker(root).walk():
            lines = entry.path.read_text(encoding="utf-8", errors="replace").splitlines()
            for start in range(0, max(len(lines), 1), chunk_lines):
                part = lines[start : start + chunk_lines]
                text = f"# {entry.rel}:{start + 1}-{start + len(part)}\n" + "\n".join(part)
                i = len(self.chunks)
                self.chunks.append(Chunk(entry.rel, start, start + max(len(part), 1) - 1, count(text) + 1))
                terms = Counter(words(text))
                lengths.append(sum(terms.values()))
                for term, tf in terms.items():
                    self.postings.setdefault(term, []).append((i, tf))
        self.lengths = lengths
        self.avg = sum(lengths) / max(len(lengths), 1)

    def search(self, query: str) -> list[tuple[int, float]]:
        n = len(self.chunks)
        scores: dict[int, float] = {}
        for term in set(words(query)):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for i, tf in plist:
                norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[i] / self.avg))
                scores[i] = scores.get(i, 0.0) + idf * norm
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))

    def pack(self, query: str, budget: int) -> list[Chunk]:
        """The best chunks that fit ``budget`` tokens, greedily (a chunk that does not fit is
        skipped, smaller ones after it may still fit)."""
        out = []
        room = budget
        for i, _ in self.search(query):
            chunk = self.chunks[i]
            if chunk.tokens <= room:
                out.append(chunk)
                room -= chunk.tokens
                if room < 20:
                    break
        return out
