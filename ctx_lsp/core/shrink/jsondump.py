"""JSON dumps (``npm view --json``, ``kubectl get -o json``, ``gh api``, ``pip inspect``): the
shape, the entries whose keys or values match the request (with the words users say for them:
"Node.js versions" is ``engines.node``), the items of a list that stand out from their siblings
(the one pod waiting in CrashLoopBackOff), each shown as the lines of the dump itself under the
keys that lead to it; counts for the rest.

Printed JSON (one entry per line, as every tool here prints it) is cut by lines, so what is kept
reads exactly as the tool printed it; JSON on one line is printed by entry paths instead.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec

from ctx_lsp.core.shrink.lines import LINE_CHARS, render
from ctx_lsp.core.shrink.request import Request, Term, score

STANDS_OUT = re.compile(
    r"error|fail|exception|invalid|denied|conflict|crash|backoff|oomkilled|unhealthy|deprecated", re.IGNORECASE
)
ODD_SHARE = 0.1  # a value held by fewer than this share of its siblings, where most agree, stands out
IDENTIFYING = re.compile(r'^\s*"(name|id|key|title|uid|namespace|version|number|state|status|phase|kind)"\s*:')
MAX_MATCHES = 60


def looks_like(text: str) -> bool:
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return True


class Entry(msgspec.Struct):
    line: int
    depth: int
    path: tuple[str, ...]  # keys from the top; list items as "[]"
    key: str
    opens: bool  # the line opens an object or a list


def entries(lines: list[str]) -> list[Entry]:
    """Each line's place in the tree: printed JSON opens a container at a line's end and closes
    it at a line's start."""
    out: list[Entry] = []
    stack: list[str] = []
    for n, line in enumerate(lines):
        s = line.strip()
        if s[:1] in ("}", "]"):
            if stack:
                stack.pop()
            out.append(Entry(n, len(stack), tuple(stack), "", False))
            continue
        m = re.match(r'"((?:[^"\\]|\\.)*)"\s*:', s)
        key = m.group(1) if m else "[]"
        end = s.rstrip(",")[-1:] if s else ""
        opens = end in ("{", "[")
        out.append(Entry(n, len(stack), (*stack, key), key, opens))
        if opens:
            stack.append(key)
    return out


def shrink(text: str, request: Request, budget_chars: int) -> tuple[str, str]:
    lines = text.splitlines()
    if len(lines) < 20:  # one line of JSON: print it, then cut the printed lines
        data = msgspec.json.decode(text)
        lines = msgspec.json.format(msgspec.json.encode(data), indent=2).decode().splitlines()
    found = entries(lines)
    terms = request.pointing(lines)
    odd = _odd_lines(lines, found)
    ranked: list[tuple[int, int]] = []
    for e in found:
        low = lines[e.line].lower()
        s = 2 * score(low, terms) + (3 if e.line in odd else 0) + (1 if STANDS_OUT.search(low) else 0)
        s += _path_score(e, terms)
        if s:
            ranked.append((-s, e.line))
    keep: set[int] = set(range(min(6, len(lines)))) | {len(lines) - 1}
    keep |= {e.line for e in found if (e.depth <= 1 and e.opens) or e.depth == 0}
    used = sum(min(len(lines[n]), LINE_CHARS) for n in keep)
    for taken, (_, n) in enumerate(sorted(ranked)):
        if taken >= MAX_MATCHES or used > budget_chars:
            break
        block = _with_context(n, lines, found)
        new = block - keep
        keep |= new
        used += sum(min(len(lines[k]), LINE_CHARS) + 1 for k in new)
    shape = "shape: " + _shape(lines, found)
    return render(lines, sorted(keep), shape), (
        "the shape, the entries whose keys or values match the request and the items that stand out, "
        "under the keys that lead to them"
    )


def _path_score(e: Entry, terms: tuple[Term, ...]) -> int:
    """A leaf under keys the request names (``engines`` → ``node``)."""
    if e.opens or not terms:
        return 0
    parents = " ".join(e.path[:-1]).lower()
    return sum(t.weight for t in terms if t.text in parents) if parents else 0


def _with_context(n: int, lines: list[str], found: list[Entry]) -> set[int]:
    """The entry, the lines that open the containers above it, the identifying entries of the
    list item it is in (its name, id, status) and, for an entry that opens, its first lines."""
    e = found[n]
    out = {n}
    depth = e.depth
    item_start = None
    k = n - 1
    while k >= 0 and depth > 0:
        if found[k].opens and found[k].depth < depth:
            out.add(k)
            depth = found[k].depth
            if found[k].key == "[]" and item_start is None:
                item_start = k
        k -= 1
    if item_start is not None:
        inner = found[item_start].depth + 1
        k = item_start + 1
        while k < len(lines) and found[k].depth >= inner and k - item_start < 400:
            if found[k].depth <= inner + 1 and IDENTIFYING.match(lines[k]):
                out.add(k)
            k += 1
    if e.opens:
        k = n + 1
        while k < len(lines) and found[k].depth > e.depth and k - n <= 12:
            out.add(k)
            k += 1
    return out


def _odd_lines(lines: list[str], found: list[Entry]) -> set[int]:
    """Leaves of list items whose value few siblings share while most share another."""
    by_path: dict[tuple[str, ...], list[int]] = {}
    for e in found:
        if not e.opens and e.key not in ("", "[]") and "[]" in e.path:
            by_path.setdefault(e.path, []).append(e.line)
    out: set[int] = set()
    for at in by_path.values():
        if len(at) < 5:
            continue
        values = Counter(lines[n].strip().rstrip(",").split(":", 1)[-1].strip() for n in at)
        top, top_count = values.most_common(1)[0]
        if top_count < 0.8 * len(at):
            continue
        for n in at:
            value = lines[n].strip().rstrip(",").split(":", 1)[-1].strip()
            if value != top and values[value] <= max(1, ODD_SHARE * len(at)):
                out.add(n)
    return out


def _shape(lines: list[str], found: list[Entry]) -> str:
    """The containers near the top with how many entries each holds: where the bulk is."""
    counts: dict[int, int] = {}
    open_at: list[int] = []
    for e in found:
        if not e.key:  # a closing line
            if open_at:
                open_at.pop()
            continue
        if open_at:
            counts[open_at[-1]] += 1
        if e.opens:
            open_at.append(e.line)
            counts[e.line] = 0
    parts = []
    for e in found:
        if e.opens and 0 < e.depth <= 2 and len(parts) < 12:
            is_list = lines[e.line].rstrip().rstrip(",").endswith("[")
            name = ".".join(p for p in e.path if p != "[]") or "[]"
            parts.append(f"{name}: {counts[e.line]:,} {'items' if is_list else 'keys'}")
    return "; ".join(dict.fromkeys(parts))
