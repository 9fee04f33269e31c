"""Version control output (``git log -p``, ``git show``, ``git diff``, ``git log --stat``): the
commits and files that match the request whole with their diffs, the others one header line
each — so a question about one commit in a long history pays for that commit."""

from __future__ import annotations

import re

from ctx_lsp.core.shrink.lines import LINE_CHARS, render
from ctx_lsp.core.shrink.request import Request, Term, score

COMMIT = re.compile(r"^commit [0-9a-f]{7,40}\b", re.MULTILINE)
FILE = re.compile(r"^diff --git ", re.MULTILINE)
HUNK = re.compile(r"^@@ ")
WHOLE = 3  # at most this many commits or files are shown whole


def looks_like(text: str) -> bool:
    head = text[:20_000]
    return COMMIT.search(head) is not None or FILE.search(head) is not None


def shrink(text: str, request: Request, budget_chars: int) -> tuple[str, str]:
    lines = text.splitlines()
    splitter = COMMIT if COMMIT.search(text[:20_000]) else FILE
    starts = [n for n, line in enumerate(lines) if splitter.match(line)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    parts = [lines[a:b] for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    terms = request.pointing([p[0] + " " + " ".join(p[1:6]) for p in parts] + lines[:: max(1, len(lines) // 2000)])
    scored = []
    for n, part in enumerate(parts):
        header = "\n".join(_header(part)).lower()
        changed = "\n".join(line for line in part if line[:1] in "+-" and line[:3] not in ("+++", "---")).lower()
        scored.append((-(4 * score(header, terms) + score(changed, terms)), n))
    best = min(scored)[0] if scored else 0
    chosen = {n for s, n in sorted(scored)[:WHOLE] if s < 0 and s <= best / 2}  # the clear matches only
    what = "commit" if splitter is COMMIT else "file"
    out = [f"{len(parts):,} {what}s; those that match the request whole, one line for each other:"]
    used = 0
    for n, part in enumerate(parts):
        if n in chosen:
            kept = part if used + _size(part) <= budget_chars else _hunks(part, terms, budget_chars - used)
            out += kept
            used += _size(kept)
        else:
            out.append(_one_line(part))
    kind = "commits" if splitter is COMMIT else "files"
    return "\n".join(out), f"the {kind} that match the request whole, one line for each of the others"


def _header(part: list[str]) -> list[str]:
    """A commit's header and message, or a file's diff header (up to its first hunk)."""
    end = next((n for n, line in enumerate(part) if FILE.match(line) or HUNK.match(line)), len(part))
    return part[: max(1, end)]


def _one_line(part: list[str]) -> str:
    first = part[0]
    if first.startswith("commit "):
        date = next((line[5:].strip() for line in part[1:6] if line.startswith("Date:")), "")
        subject = next((line.strip() for line in part[1:12] if line.startswith("    ") and line.strip()), "")
        files = sum(1 for line in part if FILE.match(line))
        added = sum(1 for line in part if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in part if line.startswith("-") and not line.startswith("---"))
        stat = f" ({files} files, +{added} −{removed})" if files else ""
        return f"{first[7:19]} {date} {subject}{stat}"
    added = sum(1 for line in part if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in part if line.startswith("-") and not line.startswith("---"))
    return f"{first.removeprefix('diff --git ')} (+{added} −{removed}, {len(part):,} lines)"


def _size(lines: list[str]) -> int:
    return sum(min(len(line), LINE_CHARS) + 1 for line in lines)


def _hunks(part: list[str], terms: tuple[Term, ...], room: int) -> list[str]:
    """A part too big to show whole: its header, each file's name, and the changed lines that
    match the request (best first, two lines around each, within ``room``) under their hunk's
    ``@@`` line; every gap counted."""
    header = len(_header(part))
    keep = set(range(header)) | {n for n, line in enumerate(part) if FILE.match(line)}
    hunk_of: list[int] = []
    current = 0
    for n, line in enumerate(part):
        if HUNK.match(line) or FILE.match(line):
            current = n
        hunk_of.append(current)
    ranked = sorted(
        (n for n in range(header, len(part)) if part[n][:1] in "+-" and part[n][:3] not in ("+++", "---")),
        key=lambda n: (-score(part[n].lower(), terms), n),
    )
    used = _size([part[n] for n in keep])
    room = max(room, 2000)
    for n in ranked:
        if score(part[n].lower(), terms) == 0 or used > room:
            break
        new = {k for k in range(max(header, n - 2), min(len(part), n + 3))} | {hunk_of[n]}
        new -= keep
        keep |= new
        used += _size([part[k] for k in new])
    return render(part, sorted(keep)).splitlines()
