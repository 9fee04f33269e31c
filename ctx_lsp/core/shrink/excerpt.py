"""A part of a shortened output, for ``expand``: a range of lines, or the lines that match a
pattern with some lines around each — so the model pays for the line it looks for, not for the
whole output again."""

from __future__ import annotations

import re

import msgspec

MAX_MATCHES = 50  # a pattern that matches more shows the first ones and says how many
MAX_CONTEXT = 50


class Excerpt(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    total_lines: int
    matches: int | None = None  # with a pattern: how many lines matched


def pattern_of(match: str) -> re.Pattern[str]:
    """A regular expression, case-insensitive; text that is not one is matched as it is."""
    try:
        return re.compile(match, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(match), re.IGNORECASE)


def excerpt(
    text: str,
    *,
    start_line: int | None = None,
    max_lines: int | None = None,
    match: str | None = None,
    context: int = 3,
) -> Excerpt:
    """Lines ``start_line`` (1-based) on, at most ``max_lines``; with ``match``, only the lines of
    that range that match, each with ``context`` lines before and after, numbered, groups
    separated by ``--`` (as ``grep -n -C``)."""
    lines = text.splitlines()
    first = max(0, (start_line or 1) - 1)
    last = len(lines) if max_lines is None else min(len(lines), first + max_lines)
    if not match:
        return Excerpt(text="\n".join(lines[first:last]), total_lines=len(lines))
    found = pattern_of(match)
    context = max(0, min(context, MAX_CONTEXT))
    hits = [n for n in range(first, last) if found.search(lines[n])]
    shown: list[int] = []
    for n in hits[:MAX_MATCHES]:
        shown += range(max(first, n - context), min(last, n + context + 1))
    out: list[str] = []
    previous = -2
    for n in sorted(set(shown)):
        if previous >= 0 and n > previous + 1:
            out.append("--")
        out.append(f"{n + 1}{':' if n in hits else '-'}{lines[n]}")
        previous = n
    if len(hits) > MAX_MATCHES:
        out.append(f"… {len(hits) - MAX_MATCHES:,} more matching lines: narrow the pattern or give start_line")
    if not hits:
        out.append(f"no line of the {len(lines):,} matches {match!r}")
    return Excerpt(text="\n".join(out), total_lines=len(lines), matches=len(hits))
