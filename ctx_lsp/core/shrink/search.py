"""Search output (grep -n, ripgrep, git grep, find): hits grouped by file, the files that match
the request's words ranked first with their hits, counts for the rest."""

from __future__ import annotations

import re
from collections import OrderedDict

from ctx_lsp.core.shrink.fold import pointing, words

HIT = re.compile(r"^(?P<path>[^\s:][^:]*?\.[A-Za-z0-9_]+|[^\s:]+/[^\s:]+)(?::(?P<line>\d+))?[:-](?P<text>.*)$")
PATH_ONLY = re.compile(r"^\.?/?[\w@.+-]+(/[\w@.+-]+)+/?$")
TOP_FILES = 8
HITS_PER_FILE = 12


def looks_like(text: str) -> bool:
    lines = [line for line in text.splitlines()[:400] if line.strip()]
    if len(lines) < 5:
        return False
    hits = sum(1 for line in lines if HIT.match(line) or PATH_ONLY.match(line.strip()))
    return hits >= 0.8 * len(lines)


def shrink(text: str, query: str) -> tuple[str, str]:
    files: OrderedDict[str, list[str]] = OrderedDict()
    for line in text.splitlines():
        m = HIT.match(line)
        path = m.group("path") if m else line.strip()
        if path:
            files.setdefault(path, []).append(line)
    wanted = pointing(words(query), list(files))

    def score(item: tuple[str, list[str]]) -> tuple[int, int]:
        """Request words in the path first, then distinct request words among its hits."""
        path, hits = item
        in_path = sum(1 for w in wanted if w in path.lower())
        text = "\n".join(hits[:50]).lower()
        in_hits = sum(1 for w in wanted if w in text)
        return (-(10 * in_path + in_hits), order[path])

    order = {path: n for n, path in enumerate(files)}
    ranked = sorted(files.items(), key=score)
    total = sum(len(h) for h in files.values())
    out = [f"{total:,} lines in {len(files):,} files; the files that match the request first:"]
    for path, hits in ranked[:TOP_FILES]:
        out += hits[:HITS_PER_FILE]
        if len(hits) > HITS_PER_FILE:
            out.append(f"… {len(hits) - HITS_PER_FILE} more in {path}")
    rest = ranked[TOP_FILES:]
    if rest:
        out.append(f"… and {sum(len(h) for _, h in rest):,} hits in {len(rest):,} more files:")
        out += [f"{path} ({len(hits)})" for path, hits in rest[:200]]
        if len(rest) > 200:
            out.append(f"… {len(rest) - 200} more files")
    return "\n".join(
        out
    ), f"the hits of the {min(TOP_FILES, len(files))} files that match the request best, counts for the rest"
