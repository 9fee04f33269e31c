"""Runs of similar lines folded to the first, the last and a count — the shape of a log without
its repetition. Lines are similar when they are equal once digits, hex ids and quoted values are
blanked."""

from __future__ import annotations

import re

_NOISE = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,}\b|\d+(\.\d+)*|'[^']*'|\"[^\"]*\"")
MIN_RUN = 4


def shape(line: str) -> str:
    return _NOISE.sub("#", line.strip())


def fold(lines: list[str]) -> list[str]:
    out: list[str] = []
    n = 0
    while n < len(lines):
        end = n + 1
        key = shape(lines[n])
        while end < len(lines) and shape(lines[end]) == key:
            end += 1
        if end - n >= MIN_RUN:
            out += [lines[n], f"… {end - n - 2} similar lines …", lines[end - 1]]
        else:
            out += lines[n:end]
        n = end
    return out


def head_tail(lines: list[str], head: int, tail: int) -> list[str]:
    if len(lines) <= head + tail + 1:
        return lines
    return [*lines[:head], f"… {len(lines) - head - tail} lines …", *lines[-tail:]]


STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "what",
        "why",
        "how",
        "does",
        "did",
        "not",
        "are",
        "was",
        "were",
        "where",
        "when",
        "which",
        "who",
        "will",
        "would",
        "can",
        "could",
        "should",
        "fix",
        "fails",
        "fail",
        "failing",
        "error",
        "errors",
        "there",
        "their",
        "them",
        "then",
        "than",
        "have",
        "has",
        "had",
        "into",
        "out",
        "about",
        "your",
        "you",
        "our",
        "its",
        "it's",
        "all",
        "any",
        "some",
        "one",
        "two",
        "get",
        "got",
        "use",
        "used",
        "using",
        "make",
        "made",
        "see",
        "show",
        "tell",
        "me",
    ]
)
RARE_SHARE = 0.1  # a word on more than this share of the lines points nowhere


def words(text: str) -> set[str]:
    """The request's words that can point into an output (identifiers, paths, names)."""
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_./-]{2,}", text)} - STOPWORDS


def pointing(wanted: set[str], lines: list[str]) -> set[str]:
    """The words of ``wanted`` that pick few lines of ``lines`` (a word on most lines, like
    "compile" in a compile log, says nothing about which line matters)."""
    if not wanted or not lines:
        return set()
    step = max(1, len(lines) // 2000)  # a sample is enough to tell a common word
    sample = [line.lower() for line in lines[::step]]
    limit = max(1, int(len(sample) * RARE_SHARE))
    return {w for w in wanted if sum(1 for line in sample if w in line) <= limit}
