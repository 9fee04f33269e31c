"""Long command output of any other kind: the head, the tail, and the lines between that look like
errors (with the line before each), runs of similar lines folded."""

from __future__ import annotations

import re

from ctx_lsp.core.shrink.fold import fold, words

ERRORISH = re.compile(r"error|fail|exception|traceback|fatal|denied|not found|cannot|warning|panic", re.IGNORECASE)
HEAD, TAIL = 25, 40
MIDDLE_LINES = 120


def shrink(text: str, query: str) -> tuple[str, str]:
    lines = text.splitlines()
    if len(lines) <= HEAD + TAIL:
        return text, "everything"
    wanted = words(query)
    middle = lines[HEAD:-TAIL]
    picked: list[str] = []
    for n, line in enumerate(middle):
        low = line.lower()
        if ERRORISH.search(line) or any(w in low for w in wanted):
            if n and middle[n - 1] not in picked[-1:]:
                picked.append(middle[n - 1])
            picked.append(line)
    picked = fold(picked)[:MIDDLE_LINES]
    out = [
        *fold(lines[:HEAD]),
        f"… {len(middle):,} lines; those that look like errors or match the request:",
        *picked,
        "…",
    ]
    return "\n".join([*out, *fold(lines[-TAIL:])]), "the head, the tail and the lines that look like errors"
