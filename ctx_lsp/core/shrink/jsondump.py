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
from ctx_lsp.core.shrink.request import Request, Term, line_scores, score

STANDS_OUT = tuple(
    Term(w, 1)
    for w in (
        "error",
        "fail",
        "exception",
        "invalid",
        "denied",
        "conflict",
        "crash",
        "backoff",
        "oomkilled",
        "unhealthy",
    )
)
ODD_SHARE = 0.1  # a value (or a key) held by fewer than this share of its siblings stands out
MOST_SHARE = 0.6  # … where at least this share agree on another
IDENTIFYING = re.compile(r'^\s*"(name|id|key|title|uid|namespace|version|number|state|status|phase|kind)"\s*:')
MAX_MATCHES = 60
SMALL = 10  # an object of at most this many lines is shown whole around a match in it
RUN = 6  # more matching siblings than this keep their ends


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
    parent: int  # the line that opens the container it is in (-1 at the top)


def entries(lines: list[str]) -> list[Entry]:
    """Each line's place in the tree: printed JSON opens a container at a line's end and closes
    it at a line's start."""
    out: list[Entry] = []
    stack: list[str] = []
    openers: list[int] = []
    for n, line in enumerate(lines):
        s = line.strip()
        if s[:1] in ("}", "]"):
            if stack:
                stack.pop()
                openers.pop()
            out.append(Entry(n, len(stack), tuple(stack), "", False, openers[-1] if openers else -1))
            continue
        m = re.match(r'"((?:[^"\\]|\\.)*)"\s*:', s)
        key = m.group(1) if m else "[]"
        end = s.rstrip(",")[-1:] if s else ""
        opens = end in ("{", "[")
        out.append(Entry(n, len(stack), (*stack, key), key, opens, openers[-1] if openers else -1))
        if opens:
            stack.append(key)
            openers.append(n)
    return out


def shrink(text: str, request: Request, budget_chars: int) -> tuple[str, str]:
    lines = text.splitlines()
    if len(lines) < 20:  # one line of JSON: print it, then cut the printed lines
        data = msgspec.json.decode(text)
        # at "\n" only: a string may hold U+0085 or U+2028 unescaped, which splitlines() breaks at
        lines = msgspec.json.format(msgspec.json.encode(data), indent=2).decode().split("\n")
    found = entries(lines)
    terms = request.pointing(lines)
    odd = _odd_lines(lines, found)
    keyed = {e.line for e in found if e.key not in ("", "[]") and "[]" in e.path and score(e.key.lower(), terms)}
    shared = Counter(found[n].path for n in keyed)
    wanted = line_scores(lines, terms)
    stands_out = line_scores(lines, STANDS_OUT)
    named = {e.line: score(e.key.lower(), terms) for e in found if e.opens and e.key != "[]"}
    ranked: list[tuple[int, int]] = []
    for e in found:
        s = 0
        if wanted[e.line]:
            line = lines[e.line]
            if e.line in keyed and shared[e.path] >= RUN and e.line not in odd:
                # the key the request names is in every item (restartCount): only its value can point
                s = 2 * score(line.split(":", 1)[-1].lower(), terms)
            else:
                s = 2 * wanted[e.line]
        if not e.opens and e.key != "[]":  # a member of an object the request names (engines → node)
            s += named.get(e.parent, 0)
        s += (3 if e.line in odd else 0) + (1 if stands_out[e.line] else 0)
        if s:
            ranked.append((-s, e.line))
    ranked = _run_edges(ranked, found)
    keep: set[int] = set(range(min(6, len(lines)))) | {len(lines) - 1}
    keep |= {e.line for e in found if (e.depth <= 1 and e.opens) or e.depth == 0}
    used = sum(min(len(lines[n]), LINE_CHARS) for n in keep)
    names: dict[int, set[int]] = {}  # a list item's first line → its identifying entries
    for taken, (_, n) in enumerate(sorted(ranked)):
        if taken >= MAX_MATCHES or used > budget_chars:
            break
        block = _with_context(n, lines, found, names)
        new = block - keep
        keep |= new
        used += sum(min(len(lines[k]), LINE_CHARS) + 1 for k in new)
    shape = "shape: " + _shape(lines, found)
    return render(lines, sorted(keep), shape), (
        "the shape, the entries whose keys or values match the request and the items that stand out, "
        "under the keys that lead to them"
    )


def _run_edges(ranked: list[tuple[int, int]], found: list[Entry]) -> list[tuple[int, int]]:
    """Of many matching siblings (the 8.x releases in a list of versions) the first two and the
    last two: the ends say where the series starts and stops, the folds count the rest."""
    siblings: dict[tuple[int, int], list[int]] = {}
    for s, n in ranked:
        if not found[n].opens:
            siblings.setdefault((found[n].parent, s), []).append(n)
    drop: set[int] = set()
    for group in siblings.values():
        if len(group) > RUN:
            drop.update(sorted(group)[2:-2])
    return [(s, n) for s, n in ranked if n not in drop]


def _with_context(n: int, lines: list[str], found: list[Entry], names: dict[int, set[int]]) -> set[int]:
    """The entry, the lines that open the containers above it, its siblings when the object it
    is in is small (an exit code beside the reason), the identifying entries of the list item it
    is in (its name, id, status) and, for an entry that opens, its first lines."""
    e = found[n]
    out = {n}
    item_start = None
    p = e.parent
    while p >= 0:
        out.add(p)
        if item_start is None and found[p].key == "[]":
            item_start = p
        p = found[p].parent
    if not e.opens and e.parent >= 0:
        end = e.parent + 1
        while end < len(lines) and found[end].depth > found[e.parent].depth and end - e.parent <= SMALL:
            end += 1
        if end - e.parent <= SMALL:
            out.update(range(e.parent, end + 1 if end < len(lines) else end))
    if item_start is not None:
        if item_start not in names:
            inner = found[item_start].depth + 1
            k = item_start + 1
            named: set[int] = set()
            while k < len(lines) and found[k].depth >= inner and k - item_start < 400:
                if found[k].depth <= inner + 1 and IDENTIFYING.match(lines[k]):
                    named.add(k)
                k += 1
            names[item_start] = named
        out |= names[item_start]
    if e.opens:
        k = n + 1
        while k < len(lines) and found[k].depth > e.depth and k - n <= 12:
            out.add(k)
            k += 1
    return out


def _odd_lines(lines: list[str], found: list[Entry]) -> set[int]:
    """Leaves of list items that stand out from their siblings: a value few share where most
    agree (restartCount 23 among zeros), or a key only a few items have at all (the pod whose
    last state is "terminated")."""
    by_path: dict[tuple[str, ...], list[int]] = {}
    for e in found:
        if not e.opens and e.key not in ("", "[]") and "[]" in e.path:
            by_path.setdefault(e.path, []).append(e.line)
    items: Counter[tuple[str, ...]] = Counter()
    for path, at in by_path.items():
        prefix = path[: path.index("[]") + 1]
        items[prefix] = max(items[prefix], len(at))
    out: set[int] = set()
    for path, at in by_path.items():
        many = items[path[: path.index("[]") + 1]]
        if many >= 10 and len(at) <= ODD_SHARE * many:
            out.update(at)  # a key few siblings have
            continue
        if len(at) < 5:
            continue
        values = Counter(_value(lines[n]) for n in at)
        top_count = values.most_common(1)[0][1]
        if top_count < MOST_SHARE * len(at):
            continue
        out.update(n for n in at if values[_value(lines[n])] <= max(1, ODD_SHARE * len(at)))
    return out


def _value(line: str) -> str:
    return line.strip().rstrip(",").split(":", 1)[-1].strip()


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
