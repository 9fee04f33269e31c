"""Indexed code as prompt Items: symbol cards and bodies, and the workspace scaffold. Retrieval
decides which symbols and how they rank; this module decides what each looks like in a prompt
and what it costs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Protocol

from ctx_lsp.core.ids import short_hash
from ctx_lsp.core.items import SCAFFOLD, SYMBOL_BODY, SYMBOL_CARD, THIN_CARD_PREFIX, Item, Range
from ctx_lsp.core.tokens import scaled
from ctx_lsp.workspace.languages import NAME_FORMS, comment_mark, display_names, kind_label
from ctx_lsp.workspace.priors import TEST_DIRS, path_role
from ctx_lsp.workspace.secrets import masked_detail

SEPARATOR_TOKENS = 1


class SymbolRow(Protocol):
    id: int
    qualname: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    end_col: int
    signature: str
    docstring: str
    parent: str
    card: str
    body: str
    card_tokens: int
    body_tokens: int
    header_tokens: int  # of ``body_header`` (counted when it was indexed)
    secrets: int  # secrets masked in its lines (its texts show placeholders instead)
    decorators: tuple[str, ...]  # its marks (``languages.DECLARATION_MARK``, tests), Python's decorators


def symbol_range(sym: SymbolRow) -> Range:
    return Range.lines(sym.start_line, sym.end_line, sym.end_col)


def _where(sym: SymbolRow) -> str:
    """Where a symbol's code is, as a comment in the code's own language: ``# pkg/m.py:12-40``."""
    return f"{comment_mark(sym.path)} {sym.path}:{sym.start_line + 1}-{sym.end_line + 1}"


def body_header(sym: SymbolRow) -> str:
    """The line above a symbol's code in a prompt, a comment in the code's own language."""
    return f"{_where(sym)} · {sym.qualname}\n"


def body_text(sym: SymbolRow) -> str:
    return body_header(sym) + sym.body.rstrip()


def card_item(sym: SymbolRow, calibration: float, *, score: float | None = None, why: str | None = None) -> Item:
    return Item(
        id=f"card:{sym.qualname}@{short_hash(sym.card)}",
        section="rag",
        kind=SYMBOL_CARD,
        title=f"{kind_label(sym.kind, sym.signature)} {sym.qualname}",
        text=sym.card.rstrip(),
        tokens=scaled(sym.card_tokens + SEPARATOR_TOKENS, calibration),
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        score=score,
        why=why,
        detail=masked_detail(sym.card, sym.secrets > 0),
    )


def thin_card_item(sym: SymbolRow, count: Callable[[str], int]) -> Item | None:
    """A card's thin form, for a small room: its first line (where the code is), the
    signature and the doc's first line — none of the card's first lines of code. None where the
    card is no longer (a one-line variable) or there is no signature (a module)."""
    if sym.kind == "module" or not sym.signature.strip():
        return None
    # a method's signature does not say whose it is: its line says it as a body's header does
    where = body_header(sym).rstrip("\n") if sym.kind == "method" else _where(sym)
    lines = [where, sym.signature.strip()]
    doc = next((line.strip() for line in sym.docstring.splitlines() if line.strip()), "")
    if doc:
        lines.append(f"{comment_mark(sym.path)} {doc}")
    text = "\n".join(lines)
    tokens = count(text)
    if tokens >= sym.card_tokens:
        return None
    return Item(
        id=f"{THIN_CARD_PREFIX}{sym.qualname}@{short_hash(text)}",
        section="rag",
        kind=SYMBOL_CARD,
        title=f"{kind_label(sym.kind, sym.signature)} {sym.qualname} (signature)",
        text=text,
        tokens=tokens + SEPARATOR_TOKENS,
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        detail=masked_detail(text, sym.secrets > 0),
    )


def body_item(
    sym: SymbolRow,
    calibration: float,
    *,
    section: str = "rag",
    score: float | None = None,
    why: str | None = None,
) -> Item:
    """The symbol's whole code under a one-line header (``body_header``), whose tokens were
    counted when the symbol was indexed: planning never tokenizes it."""
    return Item(
        id=f"body:{sym.qualname}@{short_hash(sym.body)}",
        section=section,  # type: ignore[arg-type]
        kind=SYMBOL_BODY,
        title=f"{kind_label(sym.kind, sym.signature)} {sym.qualname} (body)",
        text=body_text(sym),
        tokens=scaled(sym.body_tokens + sym.header_tokens + SEPARATOR_TOKENS, calibration),
        path=sym.path,
        range=symbol_range(sym),
        symbol=sym.qualname,
        score=score,
        why=why,
        detail=masked_detail(sym.body, sym.secrets > 0),
    )


def layout_note(modules: list[tuple[str, int]], central: list[str], files: list[str] | None = None) -> str:
    """One paragraph on how to find one's way around the code, from its package layout
    (``modules``: files, or folders ending in ``/``). ``files`` (every indexed file): what the
    workspace is written in and where its tests are, which folders cannot tell."""
    tops: Counter[str] = Counter()
    folders = set()
    tests = 0
    for path, n in modules:
        head, slash, _ = path.partition("/")
        tops[head] += n
        if slash:
            folders.add(head)
        if "/tests/" in f"/{path}" or "/test_" in f"/{path}" or path.startswith("tests"):
            tests += n
    parts = []
    main = [f"{name}/" if name in folders else name for name, _ in tops.most_common(3)]
    if main:
        parts.append(f"Most code is under {', '.join(main)}.")
    if files is not None:
        if note := _tests_note(files):
            parts.append(note)
    elif tests:
        nested = any("/tests/" in f"/{p}" and not p.startswith("tests/") for p, _ in modules)
        where = "in tests/ folders next to the code they test" if nested else "under tests/"
        parts.append(f"Tests live {where}.")
    names = display_names(files if files is not None else [path for path, _ in modules])
    example = next((c for c in central if c.count(".") >= 1 or "::" in c), None)
    if names and names != ["Python"]:  # each language writes its names its own way
        forms = "; ".join(f"{n} {NAME_FORMS[n]}" for n in names if n in NAME_FORMS)
        parts.append(
            f"Qualified names are written the way each language writes them ({forms})"
            + (f", e.g. {example}." if example else ".")
        )
    elif example:
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


def _tests_note(files: list[str]) -> str | None:
    """Where the tests are, by the test conventions of the files' languages (``priors``): in
    test folders at the top or beside the code, or in files named as tests beside the code they
    test (``*_test.go``, ``*.test.ts``, ``FooTest.java``)."""
    tests = [f for f in files if path_role(f) == ("test", "test")]
    if not tests:
        return None
    in_dirs: Counter[str] = Counter()
    named: Counter[str] = Counter()
    top = 0
    for path in tests:
        dirs = path.split("/")[:-1]
        folder = next((d for d in dirs if d in TEST_DIRS), None)
        if folder is None:
            named[_test_pattern(path.rpartition("/")[2])] += 1
        else:
            in_dirs[folder] += 1
            top += dirs[0] == folder
    if sum(named.values()) > sum(in_dirs.values()):
        total = sum(named.values())
        shown = ", ".join(f"`{p}`" for p, n in named.most_common(3) if 10 * n >= total)
        return f"Tests sit beside the code they test ({shown})."
    folder = in_dirs.most_common(1)[0][0]
    if 2 * top >= sum(in_dirs.values()):
        return f"Tests live under {folder}/."
    return f"Tests live in {folder}/ folders next to the code they test."


def _test_pattern(name: str) -> str:
    """The naming convention a test file follows: ``*_test.go`` for ``server_test.go``."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        return name
    if stem.startswith("test_"):
        return f"test_*.{ext}"
    for tail in (".test", ".spec", "_test", "_tests", "Tests", "Test", "IT"):
        if stem.endswith(tail):
            return f"*{tail}.{ext}"
    return name


def scaffold_item(
    modules: list[tuple[str, int]],
    central: list[str],
    root_name: str,
    counter_count,
    *,
    files: list[str] | None = None,
) -> Item:
    """The orientation scaffold: a compact module tree, a short note on how to navigate the
    code, and the 1–3 most central symbols (PageRank over the reference graph). A large
    workspace's ``modules`` are its folders with the most symbols, of its ``files`` (every
    indexed file, whose languages folder names cannot tell)."""
    central = central[:3]
    names = display_names(files if files is not None else [path for path, _ in modules])
    python = names in ([], ["Python"])
    if files is not None and len(files) > len(modules):
        langs = "Python" if python else ", ".join(names)
        head = f"{len(files):,} files in {langs}; the {len(modules)} folders with the most symbols (symbols per folder)"
    else:
        head = f"{len(modules)} " + ("Python modules" if python else f"modules in {', '.join(names)}")
        head += " (symbols per module)"
    lines = [f"# Workspace {root_name}: {head}"]
    for path, n in modules:
        lines.append(f"- {path} ({n})")
    if central:
        lines.append("Most central symbols (most referenced, directly and indirectly): " + ", ".join(central))
    lines.append("How to navigate: " + layout_note(modules, central, files))
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
