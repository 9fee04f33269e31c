"""Exact signals in a request: what it points at, not what it is about.

Bug reports and change requests carry pointers a bag of words loses: stack frames, paths with or
without a line (``src/app.py:12``, ``src/main.rs:40:9``), dotted and ``::`` names
(``flask.app.Flask.run``, ``Invoice.total``, ``fd::exec::run``) and the error with its message
(``KeyError: 'price'``). ``read`` finds them in the text (pure, no index); ``retrieval.rank``
resolves them against the index and weighs them as named multipliers. ``Signals.search_text``
is the request with the frames' paths taken out, for the lexical search:
``/home/me/venv/lib/python3.12/site-packages`` or ``/rustc/…/library/core`` says nothing about
the code.

Every language the index reads (``languages.EXTENSIONS``) is understood as its tools print it:

- Python: tracebacks (``File "…/app.py", line 12, in run``), pytest's ``app.py:12: in run`` and
  node ids, ``KeyError: 'price'``;
- JavaScript / TypeScript: V8's ``at Class.method (src/x.ts:12:5)`` and ``at file:///…/x.mjs:3:7``,
  Node's ``TypeError [ERR_X]: msg`` and plain ``Error: msg``;
- Rust: ``thread 'main' panicked at src/main.rs:40:9:`` with its message, RUST_BACKTRACE frames
  (``3: fd::exec::run`` then ``at ./src/exec/mod.rs:40:9``), ``Error: …`` from ``main``;
- Go: goroutine traces (``main.(*Server).Handle(…)`` then ``/home/u/proj/server.go:88 +0x1d``,
  ``created by …``) and ``panic: …``;
- Java: ``at com.x.Y.z(Y.java:31)``, ``Exception in thread "main" …``, ``Caused by: …``;
- C / C++: sanitizer frames (``#0 0x4005d6 in foo(int) /src/a.cpp:10:3``), gdb's ``bt``
  (``#0  foo (x=1) at src/a.c:10``), ``terminate called after throwing … what(): …``.

Frames come out outermost first and the innermost (where it failed) last, as Python prints
them: traces that print the innermost first (all the others) are reversed, a ``Caused by`` or
``[cause]`` comes after what it caused, and the sanitizer's "freed by" / "allocated by" stacks
and Go's other goroutines come before the failing stack. A frame's ``func`` is the function as
that language's users write it, as the index names it (Go's ``main.(*Server).Handle`` is
``main.Server.Handle``, Java's ``Invoice$Line.total`` is ``Invoice.Line.total``, Rust's
``fd::exec::Runner::pick`` stays, a C++ frame's parameter list is dropped).
``foreign_path`` tells a frame in a toolchain's or a downloaded dependency's code (``/rustc/…``,
``.cargo/registry``, Go's module cache, ``node_modules``) from one that may be the project's.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ctx_lsp.workspace import request_text
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES

# the source extensions as a regex alternation, longest first (``.cpp`` before ``.c``)
_EXT = "|".join(re.escape(s[1:]) for s in sorted(SOURCE_SUFFIXES, key=len, reverse=True))

# ``File "/path/to/mod.py", line 12, in func`` (Python's tracebacks)
_PY_FRAME = re.compile(r'^[ \t]*File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[^\s\n]+))?', re.M)
# ``path/to/mod.py:12: in func`` or ``path/to/mod.py:12: ValueError`` (pytest's tracebacks)
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:\"']+\.pyi?):(?P<line>\d+): (?:in (?P<func>\S+)|[A-Z]\w*)", re.M)
# ``thread 'main' (4892) panicked at src/main.rs:40:9:`` and the message on the next line
# (Rust ≥ 1.73; before: ``panicked at 'message', src/main.rs:40:9``)
_RUST_PANIC = re.compile(
    r"^thread '[^'\n]*'(?: \(\d+\))? panicked at (?:'(?P<msg>[^\n]*)', )?(?P<path>[^\s'][^\n]*?):(?P<line>\d+):\d+:?"
    r"[ \t]*$(?:\n(?!note: |stack backtrace:)(?P<next>[^\n]+))?",
    re.M,
)
# RUST_BACKTRACE: ``  4: fd::exec::run`` (``=full``: ``4:     0x55c4… - fd::exec::run::h1a2b…``)
# then ``             at ./src/exec/mod.rs:12:74``; a frame without an ``at`` line has no place
_RUST_FRAME = re.compile(
    r"^[ \t]*\d+:[ \t]+(?:0x[0-9a-f]+ - )?(?P<func>[^\s\n][^\n]*?)[ \t]*\n"
    r"[ \t]+at (?P<path>[^\s\n][^\n]*?):(?P<line>\d+)(?::\d+)?[ \t]*$",
    re.M,
)
# Go: ``main.(*Server).Handle(0xc000010018, {0x4b3f22, 0x5})`` or ``created by main.main in
# goroutine 1``, then ``\t/home/u/proj/server.go:88 +0x1d``
_GO_FRAME = re.compile(
    r"^(?:created by (?P<creator>\S+)(?: in goroutine \d+)?|(?P<func>[^\s(][^\s]*)\([^\n]*\))[ \t]*\n"
    r"[ \t]+(?P<path>[^\s:][^\s]*?\.(?:go|s|c)):(?P<line>\d+)(?: \+0x[0-9a-f]+)?[ \t]*$",
    re.M,
)
# Java: ``\tat com.x.Y$Inner.z(Y.java:31)``, maybe after a module or class loader
# (``java.base/``, ``app//``); ``(Native Method)`` and ``(Unknown Source)`` frames have no place
_JAVA_FRAME = re.compile(
    r"^[ \t]*at (?:[\w.$@\-]*/+){0,2}(?P<func>[\w$.<>\-]+)\((?P<path>[\w$\-]+\.java):(?P<line>\d+)\)", re.M
)
# sanitizers (ASan, TSan, UBSan, LSan): ``    #0 0x4005d6 in foo(int) const /src/a.cpp:10:3``
_NATIVE_FRAME = re.compile(
    r"^[ \t]*#\d+ 0x[0-9a-fA-F]+ in (?P<func>[^\n]+?) (?P<path>[^\s()]+?):(?P<line>\d+)(?::\d+)?[ \t]*$", re.M
)
# gdb's ``bt``: ``#0  0x0000555555555164 in cart_total (c=0x7ffe…) at src/cart.c:8``
_GDB_FRAME = re.compile(
    r"^#\d+[ \t]+(?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s(][^\n(]*?) \([^\n]*\) at (?P<path>\S+?):(?P<line>\d+)[ \t]*$",
    re.M,
)
# V8 (Node, Chrome, Deno, Bun): ``    at Class.method (/abs/src/x.ts:12:5)``, ``    at async run
# (file:///app/x.mjs:3:7)``, ``    at new Invoice (…)``, ``    at src/x.js:3:7`` (`` {`` when the
# error's properties follow)
_V8_FRAME = re.compile(
    r"^[ \t]*at (?:async )?(?:(?P<func>[^\s(][^\n(]*?)(?: \[as [^\]\n]+\])? \((?P<path>[^()\s]+?):(?P<line>\d+):\d+\)"
    r"|(?P<bare>[^()\s]+?):(?P<bare_line>\d+):\d+)(?: \{)?[ \t]*$",
    re.M,
)
# frames without a place: V8's ``at Array.map (<anonymous>)``, Java's ``(Native Method)``, Rust's
# and sanitizers' frames without debug info (``5:     0x55c4… - core::fmt::write``, ``in _start (/bin/x+0x1190)``)
_PLACELESS_FRAME = re.compile(
    r"^[ \t]*(?:at [^\n]*\((?:<anonymous>|native|index \d+|Native Method|Unknown Source)\)"
    r"|\d+:[ \t]+0x[0-9a-f]+ - [^\n]*|#\d+ 0x[0-9a-fA-F]+ in [^\n]*\([^\n]*\+0x[0-9a-fA-F]+\))[ \t]*$",
    re.M,
)
# Lines that repeat the innermost frame's place: Node's header above the failing line and its
# caret, gdb's stop line, a sanitizer's summary. Part of the trace when a frame has that place.
_TRACE_PLACES = (
    re.compile(rf"^(?P<path>(?:file://)?[^\s:][^\s]*?\.(?:{_EXT})):(?P<line>\d+)\n[^\n]*\n[ \t]*\^+[ \t]*$", re.M),
    re.compile(r"^0x[0-9a-fA-F]+ in [^\n]*? at (?P<path>\S+?):(?P<line>\d+)[ \t]*$", re.M),
    re.compile(r"^SUMMARY: \w+Sanitizer: \S+ (?P<path>\S+?):(?P<line>\d+)(?::\d+)?(?: in [^\n]*)?$", re.M),
)
# Where a trace (or a cause inside it) starts: frames on either side belong to different stacks.
_TRACE_START = re.compile(
    r"^(?:[ \t]*(?:Caused by|Suppressed|\[cause\]): \S"
    r"|Exception in thread "
    r"|goroutine \d+ \["
    r"|thread '[^'\n]*'(?: \(\d+\))? panicked at "
    r"|==\d+==ERROR: "
    r"|[^\n#]*\b[Tt]hread T\d+\b"
    r"|[ \t]*(?:Uncaught )?(?:[\w$]+\.)*(?:Error|Exception|[A-Z][\w$]*(?:Error|Exception))(?: \[\w+\])?: )",
    re.M,
)
# stacks that are not where it failed: what a sanitizer says about the memory, Go's other goroutines
_SECONDARY = re.compile(r"(?:freed|allocated) by thread|created by T\d|^goroutine \d+ \[(?!running)")
# a path, maybe with a line (and a column): ``src/app.py``, ``app.py:12``, ``./lib/a.js:3:5``,
# tsc's ``src/x.ts(12,5)``
_PATH = re.compile(
    rf"(?<![\w/.\-])(?P<path>(?:\.{{0,2}}/)?(?:[\w.\-]+/)*[\w\-][\w.\-]*?\.(?:{_EXT}))"
    r"(?::(?P<line>\d+)(?::\d+)?|\((?P<tsc_line>\d+),\d+\))?(?![\w/]|\.\w)"
)
# A code host's link to a file, at a line or not: GitHub's and Gitea's ``…/blob/<ref>/pkg/mod.py#L1525``
# (``#L344-L345``) and ``…/blame/<ref>/…``, GitLab's ``…/-/blob/<ref>/…`` and ``…/-/blame/…``,
# Bitbucket's ``…/src/<ref>/…#lines-12``. The path after the ref is the repository's own: a report
# links the line it means (at its ref, which may be a later commit than the tree: a line that
# moved points near)
_CODE_LINK = re.compile(
    rf"://[^\s/]+/(?:[^\s/]+/)+?(?:-/)?(?:blob|blame|src)/[^\s/]+/(?P<path>[^\s#?)\]>]+\.(?:{_EXT}))"
    r"(?:\?[^\s#)\]>]*)?(?:#(?:L|lines-)(?P<line>\d+))?"
)
# products named like a file: not a path in the workspace
_NOT_PATHS = frozenset(
    {"node.js", "next.js", "vue.js", "nuxt.js", "express.js", "react.js", "three.js", "d3.js", "chart.js",
     "nest.js", "ember.js", "angular.js", "backbone.js", "moment.js", "socket.io.js", "p5.js"}
)  # fmt: skip
# ``a.b`` or ``A.b.c``: at least one dot between identifiers (not a path, a number or a URL)
_DOTTED = re.compile(r"(?<![\w./\\:-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/\\-]|\.\w)")
# ``a::b::C``: Rust and C++ paths, as written
_SCOPED = re.compile(r"(?<![\w.:$])((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*)(?!\w|::\w)")
# the last line of a traceback: ``pkg.errors.ConfigError: message`` (pytest prefixes ``E   ``),
# Java's ``Exception in thread "main" java.lang.X: msg`` / ``Caused by: …``, Node's
# ``TypeError [ERR_X]: msg`` (indented in Jest's report)
_EXCEPTION = re.compile(
    r"^[ \t]*(?:E\s+|Exception in thread \"[^\"\n]*\" |(?:Caused by|Suppressed|\[cause\]): |Uncaught )?"
    r"(?P<exc>(?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault))"
    r"(?: \[\w+\])?(?::[ \t]*(?P<msg>[^\n]*))?$",
    re.M,
)
# error lines without an exception class: ``Error: msg`` (Rust's ``main``, anyhow, JavaScript's
# plain Error), Go's ``panic: msg``, C++'s uncaught exception and its ``what()``
_PLAIN_ERROR = re.compile(r"^[ \t]*(?:Uncaught )?Error(?: \[\w+\])?: (?P<msg>[^\n]+)$", re.M)
_GO_PANIC = re.compile(r"^[ \t]*panic: (?P<msg>[^\n]+?)(?: \[recovered\])?[ \t]*$", re.M)
_CPP_THROW = re.compile(
    r"^terminate called after throwing an instance of '(?P<exc>[^'\n]+)'[ \t]*\n[ \t]*what\(\):[ \t]*(?P<msg>[^\n]*)$",
    re.M,
)
# what varies in a message (quoted values, numbers, reprs): the rest was written in the code
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|<[^>]*>|\b\d[\w.]*|[{}\[\]()]")
# ... and in Rust's and Go's: a value's ``Debug`` (``Os { code: 2, .. }``, Go's ``{a 3}``)
_DEBUG_VALUE = re.compile(r"\{[^{}\n]*\}")
# the runtime's own words before a message (not in the project's code)
_RUNTIME_TEXT = re.compile(
    r"^(?:called `(?:Result|Option)::\w+\(\)` on an? `\w+` value|assertion `left [!=]= right` failed"
    r"|assertion failed|runtime error)(?::\s*|$)"
)
# a pytest node id: ``tests/test_app.py::TestRun::test_port[ipv6]``
_NODE_ID = re.compile(r"(?P<path>[\w./\-]+\.py)::(?P<names>\w+(?:::\w+)*)")
_NOT_NAMES = frozenset({"e.g", "i.e", "etc", "vs"})
_LOCAL_HEADS = frozenset({"self", "cls", "super", "this", "Self"})
# Rust's symbol hash and crate disambiguator (``::h1a2b…``, ``std[e282…]``); Go's method receiver
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$|\[[0-9a-f]{16}\]")
_GO_RECEIVER = re.compile(r"^(?P<package>[\w\-~.%]*)\.\(\*?(?P<type>\w+)(?:\[[^\]]*\])?\)\.")
_JAVA_LAMBDA = re.compile(r"\.lambda\$(\w+)\$\d+$")
# Paths of a toolchain's or a downloaded dependency's code in a frame: never the project's, though
# their last parts may read like its files (a crate's ``…/serde-1.0.188/src/lib.rs``, Go's
# ``/usr/local/go/src/net/http/server.go``, a package's ``node_modules/x/index.js``)
_FOREIGN = re.compile(
    r"^/rustc/[0-9a-f]{7,40}/|(?:^|/)\.cargo/(?:registry|git)/|(?:^|/)\.rustup/toolchains/"  # Rust
    r"|(?:^|/)pkg/mod/[^/]+\.[^/]+/|(?:^|/)go(?:\d[\w.]*)?/src/(?![^/]+\.[^/]+/)|^\$GOROOT/"  # Go (GOPATH: not foreign)
    r"|(?:^|/)(?:node_modules|site-packages|dist-packages)/|^node:"  # JavaScript, Python
    r"|^/usr/include/|^(?:\.\./)+(?:sysdeps|csu|nptl)/|/libsanitizer/"  # C, C++: the C library, the sanitizer
)
MAX_DOTTED = 16
# Code the user quotes: a backticked or quoted span, or a bare command-line flag, that holds code
# punctuation (a plain word or name is the search's); a flag as code writes it, without its dashes
# (clap's ``.long("one-file-system")``, argparse's ``"--x"`` holds it too).
_QUOTED = re.compile(
    r"`([^`\n]{3,80})`|\"([^\"\n]{3,80})\"|'([^'\n]{3,80})'|(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+)\b"
)
_CODE_PUNCTUATION = re.compile(r"[-./:=()\[\]{}<>]")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # a name (``nodes.Module``): the names' signals
MIN_LITERAL = 4
MAX_LITERALS = 8
MIN_FRAGMENT = 12  # characters of a message fragment worth looking for in code


@dataclass(frozen=True, slots=True)
class Frame:
    path: str  # as written (a URL's ``file://`` dropped; a Java frame names only the file: ``Y.java``)
    line: int  # 1-based
    func: str | None  # as that language's users write it (see the module's docstring); None if unnamed


@dataclass(frozen=True, slots=True)
class Signals:
    frames: tuple[Frame, ...] = ()  # stack frames, outermost first, the innermost (where it failed) last
    locations: tuple[tuple[str, int | None], ...] = ()  # paths mentioned outside frames, with a 1-based line
    dotted: tuple[str, ...] = ()  # dotted and ``::`` names, as written
    exceptions: tuple[str, ...] = ()  # exception class names of error lines (the last part)
    fragments: tuple[str, ...] = ()  # the fixed parts of error messages
    literals: tuple[str, ...] = ()  # code the request quotes (``--one-file-system``, `ky().json()`), as code has it
    search_text: str = ""  # the request without the frames' paths
    prose: str = ""  # the request without traces and paths: what the user wrote in words

    def points_at_code(self) -> bool:
        """A request that points at code (a stack trace, an error's message or exception):
        its answer is code, before breadth (``retrieval.candidates``: thin cards)."""
        return bool(self.frames or self.fragments or self.exceptions)


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    path_span: tuple[int, int]
    frame: Frame
    innermost_first: bool  # printed innermost first (every trace but Python's)


def read(text: str) -> Signals:
    """The exact signals of a request (see the module's docstring), read from what the user
    wrote (``request_text.clean``: the issue template's comments, images, versions left out);
    ``search_text`` leaves out pasted output, links' addresses and byte escapes too."""
    text = request_text.clean(text)
    found = _frames(text)
    frames = _ordered(text, found)
    frame_spans = [f.path_span for f in found]
    whole_spans = [(f.start, f.end) for f in found]  # a frame's names are the frame's, not names the user wrote
    if found:
        at_line: dict[int, list[str]] = {}
        for f in found:
            at_line.setdefault(f.frame.line, []).append(f.frame.path)
        for rx in _TRACE_PLACES:
            for m in rx.finditer(text):
                place = (m["path"].removeprefix("file://"), int(m["line"]))
                if any(_same_place(place, (path, place[1])) for path in at_line.get(place[1], ())):
                    frame_spans.append(m.span("path"))
                    whole_spans.append(m.span())
        whole_spans += [m.span() for m in _PLACELESS_FRAME.finditer(text)]
    spans = list(frame_spans)
    locations: dict[tuple[str, int | None], None] = {}
    node_ids = list(_NODE_ID.finditer(text)) if "::" in text else []
    for m in node_ids:  # a test's path in its id names the test, not the file
        spans.append(m.span("path"))
    in_paths, in_frames = _Inside(spans), _Inside(whole_spans)
    for m in _PATH.finditer(text):
        if in_paths(m.start("path")) or in_frames(m.start()):
            continue
        if m["line"] is None and "/" not in m["path"] and m["path"].lower() in _NOT_PATHS:
            continue
        line = m["line"] or m["tsc_line"]
        locations.setdefault((m["path"], int(line) if line else None), None)
        spans.append(m.span())
    for m in _CODE_LINK.finditer(text) if "://" in text else ():
        locations.setdefault((m["path"], int(m["line"]) if m["line"] else None), None)
    exceptions: dict[str, None] = {}
    fragments: dict[str, None] = {}
    error_spans: list[tuple[int, int]] = []  # error lines the prose leaves out
    for m in _EXCEPTION.finditer(text):
        exceptions.setdefault(re.split(r"[.$]", m["exc"])[-1], None)
        fragments.update(dict.fromkeys(_pieces(m["msg"] or "")))
    for m in _CPP_THROW.finditer(text) if "terminate called" in text else ():
        exceptions.setdefault(m["exc"].rpartition("::")[2], None)
        fragments.update(dict.fromkeys(_chain_pieces(m["msg"])))
        error_spans.append(m.span())
    for rx, marker in ((_PLAIN_ERROR, "Error: "), (_GO_PANIC, "panic: ")):
        for m in rx.finditer(text) if marker in text else ():
            fragments.update(dict.fromkeys(_chain_pieces(m["msg"])))
            error_spans.append(m.span())
    for m in _RUST_PANIC.finditer(text) if "panicked at" in text else ():
        fragments.update(dict.fromkeys(_chain_pieces(m["msg"] or m["next"] or "")))
    dotted: dict[str, None] = {}
    for m in node_ids:  # a test's id names the test: ``TestRun.test_port``
        dotted.setdefault(m["names"].replace("::", "."), None)
    names = [(m.start(), m.group(1), ".") for m in _DOTTED.finditer(text)]
    if "::" in text:
        names += [(m.start(), m.group(1), "::") for m in _SCOPED.finditer(text)]
        names.sort()
    in_paths = _Inside(spans)
    for start, name, sep in names:
        if in_paths(start) or in_frames(start):
            continue
        if name.lower() in _NOT_NAMES or name.endswith(SOURCE_SUFFIXES):
            continue
        if name.partition(sep)[0] not in _LOCAL_HEADS:
            dotted.setdefault(name, None)
    literals: dict[str, None] = {}
    for m in _QUOTED.finditer(text) if any(c in text for c in "`\"'-") else ():
        quoted = next(g for g in m.groups() if g).strip()
        if " " in quoted or not _CODE_PUNCTUATION.search(quoted) or quoted.endswith(SOURCE_SUFFIXES):
            continue
        if _DOTTED_NAME.fullmatch(quoted):
            continue
        quoted = quoted.lstrip("-") if quoted.startswith("--") else quoted
        if len(quoted) >= MIN_LITERAL:
            literals.setdefault(quoted, None)
    # the search reads neither the frames' paths nor pasted output, links and addresses
    search_text = request_text.for_search(_cut(text, frame_spans + request_text.output_spans(text)))
    prose = _cut(text, spans + whole_spans + error_spans)
    for rx in (_PY_FRAME, _PYTEST_FRAME, _EXCEPTION):
        prose = rx.sub(" ", prose)
    return Signals(
        frames=frames,
        locations=tuple(locations),
        dotted=tuple(dotted)[:MAX_DOTTED],
        exceptions=tuple(exceptions),
        fragments=tuple(fragments),
        literals=tuple(literals)[:MAX_LITERALS],
        search_text=search_text,
        prose=prose,
    )


def foreign_path(path: str) -> bool:
    """Whether a frame's path is a toolchain's or a downloaded dependency's (Rust's ``/rustc/…``
    and ``.cargo/registry``, Go's module cache and standard library, ``node_modules``,
    ``site-packages``, ``node:internal``, the C library): such a frame is outside the project
    even when the end of its path matches one of the project's files."""
    return _FOREIGN.search(path) is not None


def _frames(text: str) -> list[_Found]:
    """Every frame in ``text``, in text order. A line claimed by one trace format is not read
    again by another (a Rust frame's ``at ./src/x.rs:3:5`` is not a V8 frame)."""
    found: list[_Found] = []
    starts: list[int] = []  # the claimed spans, sorted and disjoint
    ends: list[int] = []

    def add(m: re.Match[str], path_group: str, line_group: str, func: str | None, innermost_first: bool) -> None:
        start, end = m.span()
        k = bisect.bisect_left(ends, start + 1)  # the first claimed span ending after ``start``
        if k < len(starts) and starts[k] < end:
            return
        starts.insert(k, start)
        ends.insert(k, end)
        path = m[path_group]
        frame = Frame(path.removeprefix("file://"), int(m[line_group]), func or None)
        found.append(_Found(start, end, m.span(path_group), frame, innermost_first))

    for rx in (_PY_FRAME, _PYTEST_FRAME):
        for m in rx.finditer(text):
            add(m, "path", "line", m["func"], False)
    if "panicked at" in text:
        for m in _RUST_PANIC.finditer(text):
            add(m, "path", "line", None, True)
    if " at " in text:
        for m in _RUST_FRAME.finditer(text):
            add(m, "path", "line", _RUST_HASH.sub("", m["func"]), True)
    if ".go:" in text or ".s:" in text:
        for m in _GO_FRAME.finditer(text):
            add(m, "path", "line", _go_func(m["creator"] or m["func"]), True)
    if ".java:" in text:
        for m in _JAVA_FRAME.finditer(text):
            add(m, "path", "line", _java_func(m["func"]), True)
    if "#" in text:
        for m in _NATIVE_FRAME.finditer(text):
            add(m, "path", "line", _native_func(m["func"]), True)
        for m in _GDB_FRAME.finditer(text):
            add(m, "path", "line", m["func"], True)
    if "at " in text:
        for m in _V8_FRAME.finditer(text):
            if m["path"] is not None:
                func = m["func"].removeprefix("new ")
                add(m, "path", "line", None if func == "<anonymous>" else func, True)
            else:
                add(m, "bare", "bare_line", None, True)
    found.sort(key=lambda f: f.start)
    return found


def _ordered(text: str, found: list[_Found]) -> tuple[Frame, ...]:
    """The frames outermost first, innermost last (see the module's docstring): the frames in
    text order split into stacks where a trace or a cause starts; a stack printed innermost
    first is reversed; secondary stacks go first."""
    if not any(f.innermost_first for f in found):
        return tuple(f.frame for f in found)
    starts = [(m.start(), m.group(0)) for m in _TRACE_START.finditer(text)]
    positions = [s for s, _ in starts]
    stacks: list[tuple[bool, bool, list[_Found]]] = []  # (innermost first, secondary, frames)
    prev_end = -1
    for f in found:
        k = bisect.bisect_right(positions, f.start) - 1
        marker = starts[k] if k >= 0 and starts[k][0] >= prev_end else None
        if stacks and marker is None and stacks[-1][0] == f.innermost_first:
            stacks[-1][2].append(f)
        else:
            line = text[marker[0] :].partition("\n")[0] if marker else ""
            stacks.append((f.innermost_first, bool(_SECONDARY.search(line)), [f]))
        prev_end = f.end
    out: list[Frame] = []
    for secondary in (True, False):
        for innermost_first, second, stack in stacks:
            if second != secondary:
                continue
            frames = [f.frame for f in stack]
            if innermost_first:
                # a panic's place without a name, repeated by a named frame: one frame
                named = [(g.path, g.line) for g in frames if g.func]
                frames = [f for f in frames if f.func or not any(_same_place((f.path, f.line), p) for p in named)]
                frames.reverse()
            out.extend(frames)
    return tuple(out)


class _Inside:
    """Whether a position lies inside one of some spans, in O(log n)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in sorted(spans):
            if self.ends and a <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], b)
            else:
                self.starts.append(a)
                self.ends.append(b)

    def __call__(self, pos: int) -> bool:
        k = bisect.bisect_right(self.starts, pos) - 1
        return k >= 0 and pos < self.ends[k]


def _same_place(a: tuple[str, int], b: tuple[str, int]) -> bool:
    """The same file and line, written relative (``src/x.rs``, ``./src/x.rs``) or absolute."""
    (pa, la), (pb, lb) = a, b
    if la != lb:
        return False
    pa, pb = pa.removeprefix("./"), pb.removeprefix("./")
    return pa == pb or pa.endswith("/" + pb) or pb.endswith("/" + pa)


def _go_func(func: str) -> str:
    """Go's ``package.Receiver.Method`` / ``package.Func`` with the package's import path, as
    Go prints it (the index finds ``internal/pkg.Func`` by ``github.com/org/repo/internal/pkg.Func``):
    a method ``main.(*Server).Handle`` → ``main.Server.Handle``; type parameters (``Map[...]``)
    dropped."""
    path, slash, func = func.rpartition("/")
    m = _GO_RECEIVER.match(func)
    if m is not None:
        func = f"{m['package']}.{m['type']}.{func[m.end() :]}"
    return path + slash + re.sub(r"\[[^\]]*\]", "", func)


def _java_func(func: str) -> str:
    """``com.x.Invoice$Line.total`` → ``com.x.Invoice.Line.total``; a lambda
    (``Invoice.lambda$total$0``) is its method's (``Invoice.total``); a constructor
    (``Invoice$Line.<init>``) is named as declared (``Invoice.Line.Line``); anonymous classes
    (``$1``) stay."""
    func = re.sub(r"\$(?=[A-Za-z_])", ".", _JAVA_LAMBDA.sub(r".\1", func))
    if func.endswith(".<init>"):
        owner = func[: -len(".<init>")]
        func = f"{owner}.{owner.rpartition('.')[2]}"
    return func


def _native_func(func: str) -> str:
    """A C/C++ frame's function without its parameter list and qualifiers:
    ``shop::Invoice::total(int) const`` → ``shop::Invoice::total``."""
    at = 0
    while (paren := func.find("(", at)) >= 0:
        if func.startswith("(anonymous namespace)", paren):
            at = paren + len("(anonymous namespace)")
        elif func.endswith("operator", 0, paren) and func.startswith("()", paren):
            at = paren + 2
        elif paren > 0:
            return func[:paren]
        else:
            at = paren + 1
    return func


def _pieces(msg: str) -> list[str]:
    """The fixed parts of a message worth looking for in code (long enough, more than a word)."""
    out = []
    for piece in _VARYING.split(msg):
        piece = piece.strip(" :,;.-")
        if len(piece) >= MIN_FRAGMENT and " " in piece:
            out.append(piece)
    return out


def _chain_pieces(msg: str) -> list[str]:
    """``_pieces`` of a Rust, Go or C++ message: the runtime's own words and values' ``Debug``
    left out, and each link of an error chain (``loading invoice 42: open x: no such file``,
    Go's ``%w`` and Rust's ``context``) read on its own, as each was written separately."""
    msg = _DEBUG_VALUE.sub(" ", _RUNTIME_TEXT.sub("", msg.strip()))
    return [p for link in msg.split(": ") for p in _pieces(link)]


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the spans (overlapping or not) replaced by a space."""
    out, at = [], 0
    for a, b in sorted(spans):
        if a >= at:
            out.append(text[at:a])
            out.append(" ")
            at = b
        elif b > at:
            at = b
    out.append(text[at:])
    return "".join(out)
