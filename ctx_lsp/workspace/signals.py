"""Exact signals in a request: what it points at, not what it is about.

Bug reports and change requests carry pointers a bag of words loses: traceback frames
(``File "…/app.py", line 12, in run``, pytest's ``app.py:12: in run``), paths with or without a
line (``src/app.py:12``), dotted names (``flask.app.Flask.run``, ``Invoice.total``) and the
exception with its message (``KeyError: 'price'``). ``read`` finds them in the text (pure, no
index); ``retrieval.rank`` resolves them against the index and weighs them as named
multipliers. ``Signals.search_text`` is the request with the frames' paths taken out, for the
lexical search: ``/home/me/venv/lib/python3.12/site-packages`` says nothing about the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ``File "/path/to/mod.py", line 12, in func`` (Python's tracebacks)
_PY_FRAME = re.compile(r'^[ \t]*File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[^\s\n]+))?', re.M)
# ``path/to/mod.py:12: in func`` or ``path/to/mod.py:12: ValueError`` (pytest's tracebacks)
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:\"']+\.pyi?):(?P<line>\d+): (?:in (?P<func>\S+)|[A-Z]\w*)", re.M)
# a path, maybe with a line: ``src/app.py``, ``app.py:12``, ``./pkg/mod.py:3:5``
_PATH = re.compile(r"(?<![\w/.\-])(?P<path>(?:\.{0,2}/)?(?:[\w.\-]+/)*[\w\-]+\.pyi?)(?::(?P<line>\d+))?(?![\w/])")
# ``a.b`` or ``A.b.c``: at least one dot between identifiers (not a path, a number or a URL)
_DOTTED = re.compile(r"(?<![\w./\\:-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/\\-]|\.\w)")
# the last line of a traceback: ``pkg.errors.ConfigError: message`` (pytest prefixes ``E   ``)
_EXCEPTION = re.compile(
    r"^(?:E\s+)?(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault))"
    r"(?::[ \t]*(?P<msg>[^\n]*))?$",
    re.M,
)
# what varies in a message (quoted values, numbers, reprs): the rest was written in the code
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|<[^>]*>|\b\d[\w.]*|[{}\[\]()]")
# a pytest node id: ``tests/test_app.py::TestRun::test_port[ipv6]``
_NODE_ID = re.compile(r"(?P<path>[\w./\-]+\.py)::(?P<names>\w+(?:::\w+)*)")
_NOT_NAMES = frozenset({"e.g", "i.e", "etc", "vs"})
_LOCAL_HEADS = frozenset({"self", "cls", "super"})
MAX_DOTTED = 16
MIN_FRAGMENT = 12  # characters of a message fragment worth looking for in code


@dataclass(frozen=True, slots=True)
class Frame:
    path: str  # as written
    line: int  # 1-based
    func: str | None


@dataclass(frozen=True, slots=True)
class Signals:
    frames: tuple[Frame, ...] = ()  # traceback frames, outermost first (the order Python prints)
    locations: tuple[tuple[str, int | None], ...] = ()  # paths mentioned outside frames, with a 1-based line
    dotted: tuple[str, ...] = ()  # dotted names, as written
    exceptions: tuple[str, ...] = ()  # exception class names of error lines (the last part)
    fragments: tuple[str, ...] = ()  # the fixed parts of error messages
    search_text: str = ""  # the request without the frames' paths
    prose: str = ""  # the request without tracebacks and paths: what the user wrote in words


def read(text: str) -> Signals:
    """The exact signals of a request (see the module's docstring)."""
    frames: list[tuple[int, Frame]] = []
    frame_spans: list[tuple[int, int]] = []
    for rx in (_PY_FRAME, _PYTEST_FRAME):
        for m in rx.finditer(text):
            frames.append((m.start(), Frame(m["path"], int(m["line"]), m["func"])))
            frame_spans.append(m.span("path"))
    frames.sort(key=lambda f: f[0])
    spans = list(frame_spans)
    locations: dict[tuple[str, int | None], None] = {}
    for m in _NODE_ID.finditer(text):  # a test's path in its id names the test, not the file
        spans.append(m.span("path"))
    for m in _PATH.finditer(text):
        if any(a <= m.start("path") < b for a, b in spans):
            continue
        locations.setdefault((m["path"], int(m["line"]) if m["line"] else None), None)
        spans.append(m.span())
    exceptions: dict[str, None] = {}
    fragments: dict[str, None] = {}
    for m in _EXCEPTION.finditer(text):
        exceptions.setdefault(m["exc"].rpartition(".")[2], None)
        for piece in _VARYING.split(m["msg"] or ""):
            piece = piece.strip(" :,;.-")
            if len(piece) >= MIN_FRAGMENT and " " in piece:
                fragments.setdefault(piece, None)
    dotted: dict[str, None] = {}
    for m in _NODE_ID.finditer(text):  # a test's id names the test: ``TestRun.test_port``
        dotted.setdefault(m["names"].replace("::", "."), None)
    for m in _DOTTED.finditer(text):
        name = m.group(1)
        if any(a <= m.start() < b for a, b in spans) or name.lower() in _NOT_NAMES or name.endswith((".py", ".pyi")):
            continue
        if name.partition(".")[0] not in _LOCAL_HEADS:
            dotted.setdefault(name, None)
    search_text = _cut(text, sorted(frame_spans))
    prose = _cut(text, sorted(spans))
    for rx in (_PY_FRAME, _PYTEST_FRAME, _EXCEPTION):
        prose = rx.sub(" ", prose)
    return Signals(
        frames=tuple(f for _, f in frames),
        locations=tuple(locations),
        dotted=tuple(dotted)[:MAX_DOTTED],
        exceptions=tuple(exceptions),
        fragments=tuple(fragments),
        search_text=search_text,
        prose=prose,
    )


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the (sorted, non-overlapping) spans replaced by a space."""
    out, at = [], 0
    for a, b in spans:
        if a >= at:
            out.append(text[at:a])
            out.append(" ")
            at = b
    out.append(text[at:])
    return "".join(out)
