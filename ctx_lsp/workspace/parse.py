"""Parse one Python module into symbols with the stdlib ``ast`` (never jedi: it is 12–100x
slower and recursed without end on real files; docs/architecture.md has the measurements).

The output is what the index stores and what retrieval renders: a symbol per module, class
(nested classes included), function, method and module-level variable, each with its range,
signature, docstring, a compact "card" and the exact source of its body.

Lines are 0-based (LSP). Columns are ``ast``'s, i.e. UTF-8 byte offsets into the line.

One module on purpose (~760 lines): most of it is ``_Builder``, a single pass over the tree
whose parts share its state (the lines, the scope stack, the words seen); split, each part
would have to take all of it.
"""

from __future__ import annotations

import ast
import bisect
import inspect
import io
import itertools
import keyword
import re
import tokenize
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from ctx_lsp.workspace.languages import language_of

if TYPE_CHECKING:
    from ctx_lsp.workspace.secrets import SecretMasker

SymbolKind = str  # one of KINDS
KINDS = ("module", "class", "function", "method", "variable")

MAX_IDENTIFIERS = 200
_VALUE_CHARS = 80
_CARD_BODY_LINES = 5
_CARD_DOC_LINES = 6  # of a docstring's first paragraph
_CARD_VALUE_LINES = 3  # of an assignment
_CARD_LINE_CHARS = 160
_CARD_NAMES = 12  # members of a class, definitions of a module
_QUOTES = re.compile(r"""^([rRuUbBfF]*)(\"\"\"|\'\'\'|\"|\')""")
_CODE_BEFORE_COMMENT = re.compile(r"([^#]*)")  # good enough for a def line: "#" in its defaults is rare

# Python's own line breaks (not str.splitlines, which also splits on \x0c, \x1c, \u2028, ...
# and would disagree with ast's line numbers).
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# The separators str.splitlines knows and Python does not; without them splitlines is exact.
_EXOTIC_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Dotted name chains (``a``, ``a.b.c``), on bytes (faster than str). One pass gives both the
# identifiers a body mentions (the chains' parts) and its references (the chains themselves).
_CHAIN_BYTES_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Words that say nothing about what a body does; dropped from ``identifiers``.
_NOISE_IDENTIFIERS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self", "cls"}
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone halves of UTF-16 pairs: no UTF-8 for them
_OPEN_SPACE = re.compile(r"([\[({])\s+")
_CLOSE_SPACE = re.compile(r"\s+([\])}])")
_NOISE_BYTES = frozenset(w.encode() for w in _NOISE_IDENTIFIERS)
# Dropped from ``identifiers`` too: 1-character names (i, x, _) say nothing to a search.
_DROP_BYTES = _NOISE_BYTES | frozenset(bytes([c]) for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


class Symbol(msgspec.Struct, frozen=True, kw_only=True):
    """One indexed definition. ``start_line``/``end_line`` are 0-based and inclusive, and the
    range starts at the first decorator."""

    qualname: str
    name: str
    kind: SymbolKind
    path: str
    start_line: int
    end_line: int
    start_col: int
    end_col: int
    signature: str = ""
    docstring: str = ""
    decorators: tuple[str, ...] = ()
    parent: str = ""
    identifiers: str = ""
    body: str = ""
    card: str = ""
    secrets: int = 0  # secrets masked within the symbol's lines (its texts hold the placeholders)


class ParsedModule(msgspec.Struct, kw_only=True):
    """The result of parsing one file. On a syntax error ``error`` is set and ``symbols`` and
    ``imports`` are empty: the caller keeps the last good symbols."""

    rel: str
    module: str
    symbols: list[Symbol] = msgspec.field(default_factory=list)
    # (local name, target qualname); ``("*", "pkg.mod")`` for a star import.
    imports: list[tuple[str, str]] = msgspec.field(default_factory=list)
    error: str | None = None
    encoding: str = "utf-8"
    decode_error: bool = False  # bytes were not valid in ``encoding``; decoded with replacement
    line_count: int = 0
    # The decoded source split into lines (endings kept); the indexer counts tokens from it.
    lines: list[str] = msgspec.field(default_factory=list)
    # References: (source qualname, target, count). ``target`` is the dotted name a definition's
    # text uses, resolved through the module's own top-level names and its imports
    # (``from x import y as z``: ``z.f`` → ``x.y.f``); whether it names an indexed symbol is
    # decided later, against the whole workspace (see ``graph.Resolver``).
    refs: list[tuple[str, str, int]] = msgspec.field(default_factory=list)
    # Secrets masked before parsing: (0-based line, kind). Everything above was built from the
    # masked text.
    secrets: list[tuple[int, str]] = msgspec.field(default_factory=list)
    language: str = "python"


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where Python splits them (\\n, \\r\\n, \\r)."""
    if _EXOTIC_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)
    return _LINE_RE.findall(text)


SOURCE_ROOTS = ("src",)  # layouts whose packages live in a folder that is not imported


def module_name_for(rel: str) -> str:
    """Dotted module path of a workspace-relative file, as its users import it:
    ``pkg/sub/mod.py`` → ``pkg.sub.mod``, ``pkg/__init__.py`` → ``pkg``, and in a ``src/``
    layout ``src/pkg/app.py`` → ``pkg.app`` (what tracebacks and imports say; a namespace
    package without ``__init__.py`` is its path too). A top-level ``__init__.py`` maps to
    ``__init__``, ``src/__init__.py`` to ``src``."""
    path = rel.replace("\\", "/")
    for suffix in (".py", ".pyi"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    parts = [p for p in path.split("/") if p]
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    if len(parts) > 1 and parts[0] in SOURCE_ROOTS:
        parts.pop(0)
    return ".".join(parts)


def decode_source(source: bytes) -> tuple[str, str, bool]:
    """Decode Python source bytes: PEP 263 cookie or BOM first, UTF-8 otherwise.

    Returns ``(text, encoding, ok)``; when the bytes do not decode, the text is decoded as
    UTF-8 with replacement characters and ``ok`` is False.
    """
    encoding = "utf-8"
    # Fast path: no BOM and no cookie in the first two lines → plain UTF-8 (the common case).
    head = source[:512]
    if not head.startswith(b"\xef\xbb\xbf") and b"coding" not in head:
        try:
            return source.decode("utf-8"), encoding, True
        except UnicodeDecodeError:
            return source.decode("utf-8", errors="replace"), encoding, False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding), encoding, True
    except (SyntaxError, LookupError, UnicodeDecodeError):
        text = source.decode("utf-8", errors="replace")
        return text.removeprefix("\ufeff"), encoding, False


def _package_of(module: str, rel: str) -> str:
    """The package a module's relative imports are resolved against."""
    if rel.endswith("__init__.py") or rel.endswith("__init__.pyi"):
        return module
    return module.rpartition(".")[0]


def _resolve_from(module: str, rel: str, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = _package_of(module, rel).split(".") if module else []
    base = [p for p in base if p]
    if level > 1:
        # Going above the top of the workspace is an error for Python; keep what we can.
        base = base[: max(0, len(base) - (level - 1))]
    if target:
        base.append(target)
    return ".".join(base)


def _unparse(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):  # pathological nesting: a placeholder beats a crash
        return "…"


def _text(value: str) -> str:
    """A string literal's value as a text SQLite can store: an escape such as ``"\\ud800"`` makes
    a lone surrogate, which UTF-8 cannot encode (it stopped a whole refresh): replaced."""
    return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value


def _docstring(node: ast.AsyncFunctionDef | ast.FunctionDef | ast.ClassDef | ast.Module) -> str:
    return _text(ast.get_docstring(node) or "")


def _listing(names: list[str]) -> str:
    """Distinct names, the first _CARD_NAMES of them, and how many more there are."""
    distinct = list(dict.fromkeys(names))
    shown = ", ".join(distinct[:_CARD_NAMES])
    return shown + (f" (+{len(distinct) - _CARD_NAMES} more)" if len(distinct) > _CARD_NAMES else "")


def _scan_words(
    text: str, extra: Iterable[str] = (), drop: frozenset[bytes] = _DROP_BYTES
) -> tuple[str, dict[bytes, int]]:
    """The distinct identifiers of ``text`` and the dotted name chains it uses.

    Identifiers: 2+ ASCII characters, no keywords, after ``extra``, in first-seen order,
    capped at MAX_IDENTIFIERS, space-joined. Chains: ``{b"a.b.c": occurrences}``.

    A regex over the source bytes instead of an ``ast`` walk: an ast walk over every
    expression costs about as much as parsing again (measured: docs/architecture.md); this
    stays in C end to end (findall, Counter, join, split, set difference). It also picks up
    argument names and words in comments and strings, which help lexical search (and make
    a reference in a docstring count as a reference).
    """
    chains = Counter(_CHAIN_BYTES_RE.findall(text.encode("utf-8", "surrogatepass")))
    # A word's first occurrence is inside the first chain that contains it: the same order as
    # scanning for words directly.
    words = dict.fromkeys(b" ".join(chains).replace(b".", b" ").split())
    for noise in drop.intersection(words):
        del words[noise]
    if extra:
        words = {**dict.fromkeys(e.encode("utf-8", "surrogatepass") for e in extra), **words}
    keys = list(words)[:MAX_IDENTIFIERS] if len(words) > MAX_IDENTIFIERS else words
    return b" ".join(keys).decode("utf-8", "replace"), chains


class _Builder:
    """Walks statements (never expressions) to find definitions and imports."""

    def __init__(self, rel: str, module: str, text: str, lines: list[str] | None = None) -> None:
        self.rel = rel
        self.module = module
        self.text = text
        self.lines: list[str] = lines if lines is not None else split_lines(text)
        # offsets[i] = where line i starts in text: a body is one slice, not a join of lines
        self.offsets: list[int] = [0, *itertools.accumulate(map(len, self.lines))]
        self.symbols: list[Symbol] = []
        self.imports: list[tuple[str, str]] = []
        # (qualname, kind, parent, chains) of every symbol, resolved into ``refs`` at the end
        self.chains: list[tuple[str, str, str, dict[bytes, int]]] = []

    # -- helpers -------------------------------------------------------------------------

    def _segment(self, start: int, end: int) -> str:
        """Source text of lines ``start..end`` (inclusive, clamped)."""
        offsets = self.offsets
        last = len(offsets) - 1
        return self.text[offsets[min(max(start, 0), last)] : offsets[min(max(end + 1, 0), last)]]

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports.append((alias.asname, alias.name))
                else:  # ``import a.b.c`` binds ``a``
                    top = alias.name.partition(".")[0]
                    self.imports.append((top, top))
            return
        base = _resolve_from(self.module, self.rel, node.level, node.module)
        for alias in node.names:
            if alias.name == "*":
                self.imports.append(("*", base))
            else:
                target = f"{base}.{alias.name}" if base else alias.name
                self.imports.append((alias.asname or alias.name, target))

    def _imports_in(self, body: list[ast.stmt]) -> None:
        """Imports nested anywhere in a function body (local imports break cycles; they still
        tell us what a name in this file refers to)."""
        stack = list(body)
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                self._import(stmt)
            else:
                for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
                    sub = getattr(stmt, attr, None)
                    if sub:
                        stack.extend(sub)

    @staticmethod
    def _compound_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
        """Statement lists under a module- or class-level if/try/with/match: definitions
        there are still module- or class-level (``if TYPE_CHECKING:``, ``try: import``)."""
        if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While):
            return [stmt.body, stmt.orelse]
        if isinstance(stmt, ast.With | ast.AsyncWith):
            return [stmt.body]
        if isinstance(stmt, ast.Try | ast.TryStar):
            return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
        if isinstance(stmt, ast.Match):
            return [c.body for c in stmt.cases]
        return []

    # -- definitions ---------------------------------------------------------------------

    def visit_body(self, body: list[ast.stmt], parent: str, in_class: bool) -> list[tuple[int, int, str]]:
        """Index the definitions in ``body``; returns the line ranges and names of the direct
        child definitions (so the parent can leave them out of its own identifiers)."""
        children: list[tuple[int, int, str]] = []
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                sym = self._function(stmt, parent, in_class)
                children.append((sym.start_line, sym.end_line, sym.name))
            elif isinstance(stmt, ast.ClassDef):
                sym = self._class(stmt, parent)
                children.append((sym.start_line, sym.end_line, sym.name))
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                self._import(stmt)
            elif not in_class and isinstance(stmt, ast.Assign | ast.AnnAssign):
                nxt = body[i + 1] if i + 1 < len(body) else None
                self._variables(stmt, parent, nxt)
            else:
                for sub in self._compound_bodies(stmt):
                    children.extend(self.visit_body(sub, parent, in_class))
        return children

    def _start(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
        line = node.lineno
        for dec in node.decorator_list:
            line = min(line, dec.lineno)
        return line - 1

    def _own_text(self, start: int, end: int, children: list[tuple[int, int, str]]) -> list[str]:
        """The lines of [start, end] outside the child definitions' ranges."""
        out: list[str] = []
        cur = start
        for c_start, c_end, _ in sorted(children):
            if c_start > cur:
                out.append(self._segment(cur, c_start - 1))
            cur = max(cur, c_end + 1)
        if cur <= end:
            out.append(self._segment(cur, end))
        return out

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, parent: str, in_class: bool) -> Symbol:
        start = self._start(node)
        end = (node.end_lineno or node.lineno) - 1
        decorators = tuple(_unparse(d) for d in node.decorator_list)
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        signature = f"{prefix} {node.name}({_unparse(node.args)})"
        if node.returns is not None:
            signature += f" -> {_unparse(node.returns)}"
        docstring = _docstring(node)
        body = self._segment(start, end)
        if "import" in body:  # a text check is far cheaper than walking every statement
            self._imports_in(node.body)

        qualname = f"{parent}.{node.name}"
        kind = "method" if in_class else "function"
        identifiers, chains = _scan_words(body)
        self.chains.append((qualname, kind, parent, chains))
        sym = Symbol(
            qualname=qualname,
            name=node.name,
            kind=kind,
            path=self.rel,
            start_line=start,
            end_line=end,
            start_col=node.col_offset,
            end_col=node.end_col_offset or 0,
            signature=signature,
            docstring=docstring,
            decorators=decorators,
            parent=parent,
            identifiers=identifiers,
            body=body,
            card=self._source_card(node, start, end, docstring),
        )
        self.symbols.append(sym)
        return sym

    def _class(self, node: ast.ClassDef, parent: str) -> Symbol:
        start = self._start(node)
        end = (node.end_lineno or node.lineno) - 1
        decorators = tuple(_unparse(d) for d in node.decorator_list)
        args = [_unparse(b) for b in node.bases] + [_unparse(k) for k in node.keywords]
        signature = f"class {node.name}({', '.join(args)})" if args else f"class {node.name}"
        docstring = _docstring(node)
        qualname = f"{parent}.{node.name}"
        index = len(self.symbols)  # children are appended after this class; keep source order
        children = self.visit_body(node.body, qualname, in_class=True)
        names = [name for _, _, name in children]
        identifiers, chains = _scan_words("".join(self._own_text(start, end, children)), names)
        self.chains.append((qualname, "class", parent, chains))
        members = f"    # members: {_listing(names)}" if names else None
        sym = Symbol(
            qualname=qualname,
            name=node.name,
            kind="class",
            path=self.rel,
            start_line=start,
            end_line=end,
            start_col=node.col_offset,
            end_col=node.end_col_offset or 0,
            signature=signature,
            docstring=docstring,
            decorators=decorators,
            parent=parent,
            identifiers=identifiers,
            body=self._segment(start, end),
            card=self._source_card(node, start, end, docstring, members),
        )
        self.symbols.insert(index, sym)
        return sym

    def _variables(self, node: ast.Assign | ast.AnnAssign, parent: str, nxt: ast.stmt | None) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            return
        start = node.lineno - 1
        end = (node.end_lineno or node.lineno) - 1
        value = self._value_text(node.value) if node.value is not None else ""
        # Attribute docstring convention: a string literal right after the assignment.
        docstring = ""
        docstring_node = None
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            docstring = _text(inspect.cleandoc(nxt.value.value))
            docstring_node = nxt
        body = self._segment(start, end)
        identifiers, chains = _scan_words(body)
        for name in names:
            self.chains.append((f"{parent}.{name}", "variable", parent, chains))
            if isinstance(node, ast.AnnAssign):
                signature = f"{name}: {_unparse(node.annotation)}"
                if value:
                    signature += f" = {value}"
            else:
                signature = f"{name} = {value}"
            self.symbols.append(
                Symbol(
                    qualname=f"{parent}.{name}",
                    name=name,
                    kind="variable",
                    path=self.rel,
                    start_line=start,
                    end_line=end,
                    start_col=node.col_offset,
                    end_col=node.end_col_offset or 0,
                    signature=signature,
                    docstring=docstring,
                    parent=parent,
                    identifiers=identifiers,
                    body=body,
                    card=self._variable_card(start, end, docstring_node),
                )
            )

    def _value_text(self, value: ast.expr) -> str:
        first = value.lineno - 1
        last = (value.end_lineno or value.lineno) - 1
        if last - first <= 2:
            text = _unparse(value)
        else:
            # A big literal (a table, a generated dict): unparsing all of it only to cut it
            # to 80 characters is slow; take the start of its source instead, whitespace
            # collapsed the way unparse would print it.
            text = ""
            for end in range(first, min(last, first + 40) + 1):
                text = self._segment(first, end)
                if len(text) > 4 * _VALUE_CHARS:
                    break
            text = text.encode("utf-8")[value.col_offset :].decode("utf-8", "replace")
            text = _CLOSE_SPACE.sub(r"\1", _OPEN_SPACE.sub(r"\1", " ".join(text.split())))
        if len(text) > _VALUE_CHARS:
            text = text[: _VALUE_CHARS - 1] + "…"
        return text

    # -- cards: the symbol's own source text, cut short ------------------------------------

    def _dedent(self, first: int, last: int, indent: str) -> list[str]:
        """Lines ``first..last`` without their line endings and without ``indent``."""
        out = []
        for line in self.lines[first : last + 1]:
            line = line.rstrip("\r\n")
            out.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
        return out

    def _doc_lines(self, node: ast.stmt, indent: str) -> list[str]:
        """The source of a docstring statement, cut after its first paragraph (at most
        _CARD_DOC_LINES lines), its quotes closed where it was cut."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        lines = self._dedent(first, last, indent)
        keep = 1
        while keep < len(lines) and keep < _CARD_DOC_LINES and lines[keep].strip():
            keep += 1
        if keep >= len(lines):
            return lines
        quote = _QUOTES.match(lines[0].lstrip())
        close = quote.group(2) if quote else '"""'
        shown = lines[:keep]
        if lines[keep].strip():  # cut inside the paragraph
            shown[-1] = shown[-1].rstrip() + " …"
        if shown[-1].rstrip().endswith("\\"):
            shown.append(lines[0][: len(lines[0]) - len(lines[0].lstrip())] + close)
        else:
            shown[-1] = shown[-1].rstrip() + close
        return shown

    def _source_card(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        start: int,
        end: int,
        docstring: str,
        members: str | None = None,
    ) -> str:
        """The card of a function or class, from its source as written: decorators and
        signature, the docstring's first paragraph, then the first _CARD_BODY_LINES non-blank
        lines of the body (a class: its members instead), dedented to the definition."""
        first_line = self.lines[start] if start < len(self.lines) else ""
        indent = first_line[: len(first_line) - len(first_line.lstrip())]
        out = [f"# {self.rel}:{start + 1}-{end + 1}"]
        def_line = node.lineno - 1
        body = node.body
        first_body = body[0].lineno - 1
        if first_body <= def_line:  # ``def f(): return 1``: the statement is its own card
            out.extend(self._dedent(start, end, indent))
            return "\n".join(out)
        header_end = first_body - 1
        for n in range(def_line, first_body):  # the signature ends at the first line ending with ":"
            if _CODE_BEFORE_COMMENT.match(self.lines[n]).group(1).rstrip().endswith(":"):
                header_end = n
                break
        out.extend(self._dedent(start, header_end, indent))
        rest = body
        if docstring and isinstance(body[0], ast.Expr):
            out.extend(self._doc_lines(body[0], indent))
            rest = body[1:]
        if members is not None:
            out.append(members)
        elif rest:
            code: list[str] = []
            for n in range(rest[0].lineno - 1, end + 1):  # non-blank lines, one more than shown
                if self.lines[n].strip():
                    code.extend(self._dedent(n, n, indent))
                    if len(code) > _CARD_BODY_LINES:
                        break
            out.extend(code[:_CARD_BODY_LINES])
            if len(code) > _CARD_BODY_LINES:
                out.append(" " * (len(code[0]) - len(code[0].lstrip())) + "...")
        return "\n".join(out)

    def _variable_card(self, start: int, end: int, docstring: ast.stmt | None) -> str:
        """The first lines of an assignment as written, and its attribute docstring."""
        line = self.lines[start] if start < len(self.lines) else ""
        indent = line[: len(line) - len(line.lstrip())]
        out = [f"# {self.rel}:{start + 1}-{end + 1}"]
        last = min(end, start + _CARD_VALUE_LINES - 1)
        out.extend(
            x if len(x) <= _CARD_LINE_CHARS else x[: _CARD_LINE_CHARS - 1] + "…"
            for x in self._dedent(start, last, indent)
        )
        if end > last:
            out.append("...")
        if docstring is not None:
            out.extend(self._doc_lines(docstring, indent))
        return "\n".join(out)

    def refs(self) -> list[tuple[str, str, int]]:
        """Resolve every symbol's name chains within this file: through the module's own
        top-level definitions and its imports, ``self.x``/``cls.x`` to a member of the enclosing
        class (when this file defines it). Chains that start with anything else (locals,
        parameters, builtins) are dropped."""
        module = self.module
        heads: dict[bytes, str | None] = {}
        for local, target in self.imports:
            if local != "*" and local.isascii():
                heads[local.encode()] = target
        for sym in self.symbols:  # a module-level definition shadows an import of that name
            if sym.parent == module and sym.name.isascii():
                heads[sym.name.encode()] = sym.qualname
        heads[b"self"] = heads[b"cls"] = None
        members = {s.qualname for s in self.symbols if s.kind != "variable"}
        found: dict[tuple[str, str], int] = {}  # overloads share a qualname: one edge each way
        for qualname, kind, parent, chains in self.chains:
            for chain, n in chains.items():
                head, dot, rest = chain.partition(b".")
                if head not in heads:
                    continue
                base = heads[head]
                if base is None:  # self.x / cls.x
                    if kind != "method" or not dot:
                        continue
                    target = f"{parent}.{rest.partition(b'.')[0].decode()}"
                    if target not in members:
                        continue  # an instance attribute, or inherited from another file
                else:
                    target = f"{base}.{rest.decode()}" if dot else base
                if target == qualname or qualname.startswith(target + ".") or target.startswith(qualname + "."):
                    continue  # itself (its own ``def`` line), an enclosing or a nested definition
                key = (qualname, target)
                found[key] = found.get(key, 0) + n
        return [(src, target, n) for (src, target), n in found.items()]

    def module_symbol(self, tree: ast.Module, children: list[tuple[int, int, str]]) -> Symbol:
        end_line = max(len(self.lines) - 1, 0)
        last = self.lines[end_line].rstrip("\r\n") if self.lines else ""
        docstring = _docstring(tree)
        card = f"# {self.rel}:1-{end_line + 1} (module {self.module})"
        names = [name for _, _, name in children]
        if docstring and tree.body and isinstance(tree.body[0], ast.Expr):
            card += "\n" + "\n".join(self._doc_lines(tree.body[0], ""))
        if names:
            card += f"\n# defines: {_listing(names)}"
        identifiers, chains = _scan_words("".join(self._own_text(0, end_line, children)), names)
        self.chains.append((self.module, "module", "", chains))
        return Symbol(
            qualname=self.module,
            name=self.module.rpartition(".")[2],
            kind="module",
            path=self.rel,
            start_line=0,
            end_line=end_line,
            start_col=0,
            end_col=len(last.encode("utf-8")),
            docstring=docstring,
            parent="",
            identifiers=identifiers,
            body="",  # the whole file is not duplicated into the index
            card=card,
        )


def _with_secrets(symbols: list[Symbol], secrets: list[tuple[int, str]]) -> list[Symbol]:
    """Each symbol with the number of masked secrets in its lines (``secrets`` sorted by line)."""
    if not secrets:
        return symbols
    at = [line for line, _ in secrets]
    return [
        msgspec.structs.replace(s, secrets=bisect.bisect_right(at, s.end_line) - bisect.bisect_left(at, s.start_line))
        for s in symbols
    ]


def parse_module(
    rel: str,
    source: bytes | str,
    module: str | None = None,
    *,
    masker: SecretMasker | None = None,
    root: str | None = None,
) -> ParsedModule:
    """Parse one file's source into symbols and imports, in the language its extension says
    (Python here; the others with tree-sitter: ``_parse_tree``).

    ``rel`` is the workspace-relative POSIX path; ``module`` overrides the module name derived
    from it; ``root`` is the workspace folder (a Rust file's crate is named in its
    ``Cargo.toml``). Never raises on bad input: undecodable bytes are replaced (and flagged), a
    file that does not parse returns a module with ``error`` set and no symbols.

    With a ``masker``, secrets are masked in the text before it is parsed, so every text
    derived from it (bodies, cards, signatures, docstrings, identifiers, token counts) is of
    the masked source; lines stay where they were.
    """
    lang = language_of(rel)
    if lang is not None and lang != "python":
        return _parse_tree(lang, rel, source, module, masker, root)
    module = module if module is not None else module_name_for(rel)
    if isinstance(source, str):
        text, encoding, ok = source, "utf-8", True
    else:
        text, encoding, ok = decode_source(source)
    result = ParsedModule(rel=rel, module=module, encoding=encoding, decode_error=not ok)
    lines: list[str] | None = None
    if masker is not None and ok:
        lines, result.secrets = masker.mask_lines(split_lines(text), rel)
        if result.secrets:
            text = "".join(lines)
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        # (A secret outside any string or comment, masked, can make valid code invalid: then
        # the file is not indexed at all, rather than indexed unmasked.)
        masked = " (after masking secrets)" if result.secrets else ""
        result.error = f"SyntaxError: {exc.msg} (line {exc.lineno}){masked}"
        return result
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    builder = _Builder(rel, module, text, lines)
    try:
        children = builder.visit_body(tree.body, module, in_class=False)
        mod = builder.module_symbol(tree, children)
    except RecursionError as exc:  # thousands of nested classes: give up on this file, not the run
        result.error = f"RecursionError: {exc}"
        return result
    result.symbols = _with_secrets([mod, *builder.symbols], result.secrets)
    result.imports = builder.imports
    result.refs = builder.refs()
    result.line_count = len(builder.lines)
    result.lines = builder.lines
    return result


# A file whose lines average this many characters is minified or generated data, not code a
# person reads: its symbols' bodies would each repeat megabytes of one line.
MINIFIED_LINE_CHARS = 500
_MINIFIED_MIN_BYTES = 20_000


def _parse_tree(
    lang: str, rel: str, source: bytes | str, module: str | None, masker: SecretMasker | None, root: str | None
) -> ParsedModule:
    """``parse_module`` for a tree-sitter language (``languages.treesitter``)."""
    from ctx_lsp.workspace.languages.encoding import decode_code
    from ctx_lsp.workspace.languages.modules import module_for
    from ctx_lsp.workspace.languages.reading import ParseFailed
    from ctx_lsp.workspace.languages.spec import load
    from ctx_lsp.workspace.languages.treesitter import build

    name, prefix = module_for(lang, rel, root)
    if module is not None:
        name = prefix = module
    if isinstance(source, str):
        text, encoding = source, "utf-8"
    else:
        decoded = decode_code(lang, source)
        if decoded is None:
            return ParsedModule(rel=rel, module=name, decode_error=True, language=lang)
        text, encoding = decoded
    result = ParsedModule(rel=rel, module=name, encoding=encoding, language=lang)
    if "\x00" in text:
        result.error = "binary: NUL bytes in a source file"
        return result
    lines = split_lines(text)
    if len(text) >= _MINIFIED_MIN_BYTES and len(text) / max(len(lines), 1) > MINIFIED_LINE_CHARS:
        result.error = f"minified or generated: lines of {len(text) // max(len(lines), 1):,} characters on average"
        return result
    if masker is not None:
        lines, result.secrets = masker.mask_lines(lines, rel)
        if result.secrets:
            text = "".join(lines)
    loaded = load(lang)
    if loaded is None:
        result.error = f"no grammar for {lang}: the tree-sitter-{lang} package is not installed"
        return result
    try:
        symbols, imports, refs = build(loaded, rel, text, lines, name, prefix, _scan_words, Symbol)
    except ParseFailed as exc:
        result.error = str(exc)
        return result
    except (RecursionError, MemoryError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    result.symbols = _with_secrets(symbols, result.secrets)
    result.imports = imports
    result.refs = refs
    result.line_count = len(lines)
    result.lines = lines
    return result
