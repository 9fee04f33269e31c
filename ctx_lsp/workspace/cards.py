"""Indexed code as prompt Items: symbol cards and bodies, touchpoint excerpts of long bodies, and
the workspace scaffold. Retrieval decides which symbols and how they rank; this module decides
what each looks like in a prompt and what it costs."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from ctx_lsp.core.ids import short_hash
from ctx_lsp.core.items import SCAFFOLD, SYMBOL_BODY, SYMBOL_CARD, TOUCHPOINT, Item, Range
from ctx_lsp.core.tokens import scaled
from ctx_lsp.workspace.index.terms import query_names, query_terms
from ctx_lsp.workspace.secrets import masked_detail

# Counted once per card or body header: "# path:12-40 · pkg.mod.name\n" is ~10–20 tokens; we
# charge a conservative constant rather than re-tokenizing on the request path.
HEADER_TOKENS = 24
SEPARATOR_TOKENS = 1
# Touchpoints (light mode): excerpt windows around where the query's words occur in a body the
# card does not show in full.
TOUCHPOINT_LINES = 30  # window size, and the body length below which the body itself is small
MAX_TOUCHPOINTS = 12
TOUCHPOINT_SCAN = 40  # best-ranked symbols looked at
TOUCHPOINT_WEIGHT = 0.6  # of the symbol's score
TOUCHPOINT_SKIP_LINES = 6  # the signature and docstring: the card shows them


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
    secrets: int  # secrets masked in its lines (its texts show placeholders instead)


def symbol_range(sym: SymbolRow) -> Range:
    return Range.lines(sym.start_line, sym.end_line, sym.end_col)


def body_header(sym: SymbolRow) -> str:
    return f"# {sym.path}:{sym.start_line + 1}-{sym.end_line + 1} · {sym.qualname}\n"


def body_text(sym: SymbolRow) -> str:
    return body_header(sym) + sym.body.rstrip()


def card_item(sym: SymbolRow, calibration: float, *, score: float | None = None, why: str | None = None) -> Item:
    return Item(
        id=f"card:{sym.qualname}@{short_hash(sym.card)}",
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
        detail=masked_detail(sym.card, sym.secrets > 0),
    )


def body_item(
    sym: SymbolRow,
    calibration: float,
    *,
    section: str = "rag",
    score: float | None = None,
    why: str | None = None,
    count: Callable[[str], int] | None = None,
) -> Item:
    """The symbol's whole code under a one-line header; ``count`` counts the header exactly
    (else HEADER_TOKENS, a conservative allowance, is charged)."""
    header = HEADER_TOKENS if count is None else count(body_header(sym))
    return Item(
        id=f"body:{sym.qualname}@{short_hash(sym.body)}",
        section=section,  # type: ignore[arg-type]
        kind=SYMBOL_BODY,
        title=f"{sym.kind} {sym.qualname} (body)",
        text=body_text(sym),
        tokens=scaled(sym.body_tokens + header + SEPARATOR_TOKENS, calibration),
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        score=score,
        why=why,
        detail=masked_detail(sym.body, sym.secrets > 0),
    )


def _touch_terms(query: str) -> dict[str, int]:
    """What a touchpoint looks for: the query's identifiers (weight 3) and their sub-words
    (weight 1), lower-cased; stopwords and words of one or two letters left out."""
    terms = {t: 1 for t in query_terms(query) if len(t) > 2}
    for name in query_names(query):
        for part in name.split("."):
            if len(part) > 2 and ("_" in part or part in terms or any(c.isupper() for c in part)):
                terms[part.lower()] = 3
    return terms


def touchpoints(
    ranked: list[tuple[SymbolRow, float, str]],
    query: str,
    count: Callable[[str], int],
    calibration: float,
    *,
    limit: int = MAX_TOUCHPOINTS,
) -> list[Item]:
    """Excerpts (≤ TOUCHPOINT_LINES lines) of the best-ranked long bodies, each around where
    the query's identifiers occur most densely past the signature and docstring: where the
    code touches what the question is about, without paying for the whole body. Each names
    its lines and the words it matched; its score is a share of its symbol's."""
    terms = _touch_terms(query)
    if not terms:
        return []
    pattern = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)), re.IGNORECASE)
    out: list[Item] = []
    for sym, score, why in ranked[:TOUCHPOINT_SCAN]:
        if len(out) >= limit:
            break
        if sym.kind == "module" or not sym.body or sym.end_line - sym.start_line + 1 <= TOUCHPOINT_LINES:
            continue
        window = _best_window(sym.body, pattern, terms, _code_start(sym))
        if window is None:
            continue
        first, last, found = window
        lines = sym.body.splitlines()[first : last + 1]
        a, b = sym.start_line + first, sym.start_line + last
        shown = ", ".join(found[:6])
        text = f"# {sym.path}:{a + 1}-{b + 1} · excerpt of {sym.qualname} (mentions {shown})\n" + "\n".join(lines)
        masked = masked_detail(text, sym.secrets > 0)
        out.append(
            Item(
                id=f"touch:{sym.qualname}:{a + 1}@{short_hash(text)}",
                section="rag",
                kind=TOUCHPOINT,
                title=f"touchpoint {sym.qualname}:{a + 1}-{b + 1}",
                text=text,
                tokens=scaled(count(text) + SEPARATOR_TOKENS, calibration),
                path=sym.path,
                range=Range.lines(a, b, len(lines[-1]) if lines else 0),
                score=round(score * TOUCHPOINT_WEIGHT, 6),
                why=f"{why}; touchpoint: mentions {shown} in lines {a + 1}-{b + 1} (×{TOUCHPOINT_WEIGHT})",
                detail=f"excerpt of {sym.qualname}" + (f"; {masked}" if masked else ""),
            )
        )
    return out


def _code_start(sym: SymbolRow) -> int:
    """The first body line (0-based, in the body) past the signature and the docstring: the
    card already shows those."""
    body = sym.body
    if sym.docstring:
        for quote in ('"""', "'''"):
            opening = body.find(quote)
            if opening >= 0:
                closing = body.find(quote, opening + 3)
                if closing >= 0:
                    return body.count("\n", 0, closing) + 1
    return TOUCHPOINT_SKIP_LINES


def _best_window(
    body: str, pattern: re.Pattern[str], terms: dict[str, int], skip: int = TOUCHPOINT_SKIP_LINES
) -> tuple[int, int, list[str]] | None:
    """The ≤ TOUCHPOINT_LINES-line window of ``body`` (0-based first and last line) with the
    most distinct matched terms, then the most weight; and the terms it matched."""
    starts = [0]
    for m in re.finditer("\n", body):
        starts.append(m.end())
    hits: list[tuple[int, str]] = []
    for m in pattern.finditer(body):
        line = bisect.bisect_right(starts, m.start()) - 1
        if line >= skip:
            hits.append((line, m.group(0).lower()))
    if not hits:
        return None
    best: tuple[int, int, int, int] | None = None  # (distinct, weight, -first, last)
    j = 0
    for i in range(len(hits)):  # windows starting at each hit
        while j < len(hits) and hits[j][0] - hits[i][0] < TOUCHPOINT_LINES - 4:
            j += 1
        seen = Counter(t for _, t in hits[i:j])
        key = (len(seen), sum(terms.get(t, 1) for t in seen), -hits[i][0], hits[j - 1][0])
        if best is None or key[:3] > best[:3]:
            best = key
    assert best is not None
    first_hit, last_hit = -best[2], best[3]
    pad = max(0, (TOUCHPOINT_LINES - (last_hit - first_hit + 1)) // 2)
    first = max(skip, first_hit - min(pad, 3))
    last = min(len(starts) - 1, first + TOUCHPOINT_LINES - 1, last_hit + pad)
    found = sorted({t for line, t in hits if first <= line <= last}, key=lambda t: (-terms.get(t, 1), t))
    return first, last, found


def layout_note(modules: list[tuple[str, int]], central: list[str]) -> str:
    """One paragraph on how to find one's way around the code, from its package layout."""
    tops: Counter[str] = Counter()
    tests = 0
    for path, n in modules:
        head = path.split("/", 1)[0] if "/" in path else path
        tops[head] += n
        if "/tests/" in f"/{path}" or "/test_" in f"/{path}" or path.startswith("tests"):
            tests += n
    parts = []
    main = [f"{name}/" if not name.endswith(".py") else name for name, _ in tops.most_common(3)]
    if main:
        parts.append(f"Most code is under {', '.join(main)}.")
    if tests:
        nested = any("/tests/" in f"/{p}" and not p.startswith("tests/") for p, _ in modules)
        where = "in tests/ folders next to the code they test" if nested else "under tests/"
        parts.append(f"Tests live {where}.")
    example = next((c for c in central if c.count(".") >= 1), None)
    if example:
        module, _, name = example.rpartition(".")
        parts.append(
            f"A qualified name is the module path plus the name: {example} is {name} in "
            f"{module.replace('.', '/')}.py (or its package's __init__.py)."
        )
    parts.append(
        "Symbol cards show a signature, the docstring's first paragraph and the first lines; "
        "ask for a symbol by its qualified name to see its whole body."
    )
    return " ".join(parts)


def scaffold_item(modules: list[tuple[str, int]], central: list[str], root_name: str, counter_count) -> Item:
    """The orientation scaffold: a compact module tree, a short note on how to navigate the
    code, and the 1–3 most central symbols (PageRank over the reference graph)."""
    central = central[:3]
    lines = [f"# Workspace {root_name}: {len(modules)} Python modules (symbols per module)"]
    for path, n in modules:
        lines.append(f"- {path} ({n})")
    if central:
        lines.append("Most central symbols (most referenced, directly and indirectly): " + ", ".join(central))
    lines.append("How to navigate: " + layout_note(modules, central))
    text = "\n".join(lines)
    return Item(
        id=f"scaffold:{short_hash(text)}",
        section="system",
        kind=SCAFFOLD,
        title="workspace scaffold (module tree)",
        text=text,
        tokens=counter_count(text) + SEPARATOR_TOKENS,
        priority=0,
    )
