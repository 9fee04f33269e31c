"""Long command output of any other kind: the head, the tail, and the lines between that look like
errors (with the line before each), runs of similar lines folded."""

from __future__ import annotations

import re

from ctx_lsp.core.shrink.fold import fold, pointing, words

ERRORISH = re.compile(r"error|fail|exception|traceback|fatal|denied|not found|cannot|warning|panic", re.IGNORECASE)
HEAD, TAIL = 25, 40
MIDDLE_LINES = 120


def shrink(text: str, query: str) -> tuple[str, str]:
    lines = text.splitlines()
    if len(lines) <= HEAD + TAIL:
        return text, "everything"
    middle = lines[HEAD:-TAIL]
    wanted = pointing(words(query), middle)
    scored = []
    for n, line in enumerate(middle):
        low = line.lower()
        score = 2 * bool(ERRORISH.search(line)) + sum(1 for w in wanted if w in low)
        if score:
            scored.append((-score, n))
    keep = sorted(n for _, n in sorted(scored)[:MIDDLE_LINES])
    picked: list[str] = []
    last = -2
    for n in keep:
        if n - 1 > last and n:  # the line before gives the context
            picked.append(middle[n - 1])
        picked.append(middle[n])
        last = n
    out = [*fold(lines[:HEAD]), f"… {len(middle):,} lines; those that look like errors or match the request:"]
    out += [*fold(picked), "…", *fold(lines[-TAIL:])]
    return "\n".join(out), "the head, the tail and the lines that look like errors or match the request"
