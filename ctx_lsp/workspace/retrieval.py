"""Retrieval: ranked candidates for a query, as planner Items, each with the reason it was found.

Scores combine BM25 over the symbol index (names split into sub-words, signatures, docstrings,
identifiers) with named boosts: a symbol the query names outright, and symbols in files the
user has open or focused. Every boost is written into the item's ``why``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Protocol

from ctx_lsp.core.items import SCAFFOLD, SYMBOL_BODY, SYMBOL_CARD, Item, Mode, Range
from ctx_lsp.core.tokens import scaled

# Counted once per card or body header: "# path:12-40 · pkg.mod.name\n" is ~10–20 tokens; we
# charge a conservative constant rather than re-tokenizing on the request path.
HEADER_TOKENS = 24
SEPARATOR_TOKENS = 1
EXACT_NAME_BOOST = 2.0  # the query names the symbol (or its qualified name) outright
OPEN_FILE_BOOST = 1.3  # the symbol lives in a file the user has open
FOCUS_FILE_BOOST = 1.6  # ... in the file the user is focused on
MODE_LIMITS = {"off": 0, "light": 200, "heavy": 400}
# Hits scoring below this fraction of the best hit share only a common word with the query:
# offering them would fill a large budget with noise.
MIN_RELATIVE_SCORE = 0.05

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


class SymbolRow(Protocol):
    qualname: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    end_col: int
    signature: str
    docstring: str
    card: str
    body: str
    card_tokens: int
    body_tokens: int


class Hit(Protocol):
    symbol: SymbolRow
    score: float
    matched: str


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def symbol_range(sym: SymbolRow) -> Range:
    return Range.lines(sym.start_line, sym.end_line, sym.end_col)


def body_text(sym: SymbolRow) -> str:
    return f"# {sym.path}:{sym.start_line + 1}-{sym.end_line + 1} · {sym.qualname}\n{sym.body.rstrip()}"


def card_item(sym: SymbolRow, calibration: float, *, score: float | None = None, why: str | None = None) -> Item:
    return Item(
        id=f"card:{sym.qualname}@{_short_hash(sym.card)}",
        section="rag",
        kind=SYMBOL_CARD,
        title=f"{sym.kind} {sym.qualname}",
        text=sym.card.rstrip(),
        tokens=scaled(sym.card_tokens + SEPARATOR_TOKENS, calibration),
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        score=score,
        why=why,
    )


def body_item(
    sym: SymbolRow,
    calibration: float,
    *,
    section: str = "rag",
    score: float | None = None,
    why: str | None = None,
) -> Item:
    return Item(
        id=f"body:{sym.qualname}@{_short_hash(sym.body)}",
        section=section,  # type: ignore[arg-type]
        kind=SYMBOL_BODY,
        title=f"{sym.kind} {sym.qualname} (body)",
        text=body_text(sym),
        tokens=scaled(sym.body_tokens + HEADER_TOKENS + SEPARATOR_TOKENS, calibration),
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        score=score,
        why=why,
    )


def query_names(query: str) -> set[str]:
    """Identifiers and dotted names the query mentions, lower-cased."""
    return {w.lower().strip(".") for w in _WORD.findall(query) if len(w) > 2}


def rank(
    hits: Iterable[Hit],
    query: str,
    *,
    open_files: Iterable[str] = (),
    focus_path: str | None = None,
) -> list[tuple[SymbolRow, float, str]]:
    """Rescore lexical hits with the named boosts; returns (symbol, score, why), best first."""
    names = query_names(query)
    open_set = set(open_files)
    ranked: list[tuple[SymbolRow, float, str]] = []
    for hit in hits:
        sym = hit.symbol
        score = max(hit.score, 0.0) + 1e-6
        why = [f"bm25 {hit.score:.2f} on {hit.matched}" if hit.matched else f"bm25 {hit.score:.2f}"]
        if sym.name.lower() in names or sym.qualname.lower() in names:
            score *= EXACT_NAME_BOOST
            why.append(f"named in the query (×{EXACT_NAME_BOOST})")
        if focus_path is not None and sym.path == focus_path:
            score *= FOCUS_FILE_BOOST
            why.append(f"in the focused file (×{FOCUS_FILE_BOOST})")
        elif sym.path in open_set:
            score *= OPEN_FILE_BOOST
            why.append(f"in an open file (×{OPEN_FILE_BOOST})")
        ranked.append((sym, round(score, 6), "; ".join(why)))
    ranked.sort(key=lambda r: (-r[1], r[0].qualname, r[0].path, r[0].start_line))
    return ranked


def with_activation(
    ranked: list[tuple[SymbolRow, float, str]],
    activation: dict[str, tuple[float, str]],
    lookup,
    weight: float,
) -> list[tuple[SymbolRow, float, str]]:
    """Reflection's signal: symbols the model and the user have been using score higher
    (× (1 + weight × activation)), and active ones the query did not match come back too."""
    if not activation:
        return ranked
    out = []
    seen = set()
    for sym, score, why in ranked:
        seen.add(sym.qualname)
        act = activation.get(sym.qualname)
        if act is not None:
            score = round(score * (1 + weight * act[0]), 6)
            why = f"{why}; {act[1]} (×{1 + weight * act[0]:.2f})"
        out.append((sym, score, why))
    for qualname in sorted(activation):
        if qualname in seen:
            continue
        sym = lookup(qualname)
        if sym is not None:
            out.append((sym, round(weight * activation[qualname][0], 6), f"recently used: {activation[qualname][1]}"))
    out.sort(key=lambda r: (-r[1], r[0].qualname, r[0].path, r[0].start_line))
    return out


def candidates(ranked: list[tuple[SymbolRow, float, str]], mode: Mode, calibration: float) -> list[Item]:
    """Light mode offers symbol cards; heavy mode offers bodies (a card when the body is the
    module itself) and more of them; off offers nothing."""
    limit = MODE_LIMITS[mode]
    floor = ranked[0][1] * MIN_RELATIVE_SCORE if ranked else 0.0
    out: list[Item] = []
    for sym, score, why in ranked[:limit]:
        if score < floor:
            break
        if mode == "heavy" and sym.kind != "module" and sym.body:
            out.append(body_item(sym, calibration, score=score, why=why))
        else:
            out.append(card_item(sym, calibration, score=score, why=why))
    return out


def scaffold_item(modules: list[tuple[str, int]], central: list[str], root_name: str, counter_count) -> Item:
    """The orientation scaffold: a compact module tree and the most referenced symbols."""
    lines = [f"# Workspace {root_name}: {len(modules)} Python modules (symbols per module)"]
    for path, n in modules:
        lines.append(f"- {path} ({n})")
    if central:
        lines.append("Most central symbols: " + ", ".join(central))
    text = "\n".join(lines)
    return Item(
        id=f"scaffold:{_short_hash(text)}",
        section="system",
        kind=SCAFFOLD,
        title="workspace scaffold (module tree)",
        text=text,
        tokens=counter_count(text) + SEPARATOR_TOKENS,
        priority=0,
    )
