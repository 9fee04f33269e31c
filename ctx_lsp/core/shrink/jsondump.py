"""JSON and other structured dumps: the shape (keys, types, lengths), the first items, the items
that match the request's words or stand out (errors), counts for the rest."""

from __future__ import annotations

from collections import deque
from typing import Any

import msgspec

from ctx_lsp.core.shrink.fold import words

FIRST = 3
ITEM_CHARS = 600
MATCHES = 10
NAMED_DEPTH = 8  # how deep keys are looked at for the names the request gives
STANDS_OUT = ("error", "fail", "exception", "invalid", "denied", "conflict")


def looks_like(text: str) -> bool:
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return True


def shrink(text: str, query: str) -> tuple[str, str]:
    data = msgspec.json.decode(text)
    wanted = words(query)
    lines = ["shape: " + _shape(data)]
    for path, items in _arrays(data, "$"):
        lines.append(f"{path}: {len(items):,} items; the first {min(FIRST, len(items))}:")
        lines += ["  " + _short(x) for x in items[:FIRST]]
        picked = [x for x in items[FIRST:] if _matches(x, wanted)][:MATCHES]
        if picked:
            lines.append(f"  items that match the request or stand out ({len(picked)}):")
            lines += ["  " + _short(x) for x in picked]
    if len(lines) == 1:  # an object without long arrays: its top level, shortened
        lines.append(_short(data, 4000))
    named = _named(data, wanted)
    if named:  # keys the request names, however deep (a package in ``npm ls --all --json``)
        lines.append(f"entries whose key the request names ({len(named)}):")
        lines += [f"  {path}: {_short({key: value})}" for path, key, value in named]
    return "\n".join(lines), "the shape, the first items and those that match the request or stand out"


def _named(data: Any, wanted: set[str]) -> list[tuple[str, str, Any]]:
    """``(path, key, value)`` of the entries whose key holds a word of the request, best first
    (the key is the word itself, then more words, then shallower), at most MATCHES. A word in the
    keys of more than MATCHES entries (``version`` in every package) points at none of them."""
    found: list[tuple[int, str, str, Any, set[str]]] = []  # (depth, path, key, value, words held)
    todo: deque[tuple[Any, str, int]] = deque([(data, "$", 0)])
    while todo and len(found) < 10_000:
        value, path, depth = todo.popleft()  # breadth first: shallower entries first
        if isinstance(value, dict) and depth < NAMED_DEPTH:
            for key, inner in value.items():
                held = {w for w in wanted if w in str(key).lower()}
                if held:
                    found.append((depth, path, str(key), inner, held))
                todo.append((inner, f"{path}.{key}", depth + 1))
        elif isinstance(value, list) and depth < NAMED_DEPTH:
            todo.extend((x, f"{path}[{n}]", depth + 1) for n, x in enumerate(value[:FIRST]))
    common = {w for w in wanted if sum(1 for f in found if w in f[4]) > MATCHES}
    ranked = [f for f in found if f[4] - common]
    ranked.sort(key=lambda f: (f[2].lower() not in wanted, -len(f[4] - common), f[0]))
    return [(path, key, value) for _, path, key, value, _ in ranked[:MATCHES]]


def _shape(v: Any, depth: int = 0) -> str:
    if isinstance(v, dict):
        if depth > 2:
            return "{…}"
        inner = ", ".join(f"{k}: {_shape(x, depth + 1)}" for k, x in list(v.items())[:20])
        more = f", … {len(v) - 20} more keys" if len(v) > 20 else ""
        return "{" + inner + more + "}"
    if isinstance(v, list):
        return f"[{len(v)} × {_shape(v[0], depth + 1)}]" if v else "[]"
    return type(v).__name__


def _arrays(v: Any, path: str, depth: int = 0) -> list[tuple[str, list[Any]]]:
    """The long arrays of a value, with their paths (outermost first)."""
    found: list[tuple[str, list[Any]]] = []
    if isinstance(v, list):
        if len(v) > FIRST:
            found.append((path, v))
        elif depth < 4:
            for n, x in enumerate(v):
                found += _arrays(x, f"{path}[{n}]", depth + 1)
    elif isinstance(v, dict) and depth < 4:
        for k, x in v.items():
            found += _arrays(x, f"{path}.{k}", depth + 1)
    return found[:10]


def _matches(item: Any, wanted: set[str]) -> bool:
    text = msgspec.json.encode(item).decode().lower()
    return any(w in text for w in wanted) or any(s in text for s in STANDS_OUT)


def _short(v: Any, limit: int = ITEM_CHARS) -> str:
    text = msgspec.json.encode(v).decode()
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} chars)"
