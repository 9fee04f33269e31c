"""Line outputs (test runs, builds, linters, stack traces, logs) cut to the lines that matter:
each line is scored once — what it signals (a failure, an assertion's values, a project frame)
and what of the request it holds — and the best lines are kept with their block (the indented
lines under them: a traceback's frames, an assertion's left and right, a linter's problems
under a file), the head and the tail, within a budget; everything else is folded with a count.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ctx_lsp.core.shrink.request import Place, Request, Term, line_scores, line_starts, lines_holding

# What a line signals, strongest first; one pass of each pattern over the whole text.
_FAILURE = (
    r"=+ (?:FAILURES|ERRORS) =+|_{3,} .+ _{3,}|(?:FAIL|ERROR): \S|FAILED |--- FAIL|FAIL\b"
    r"|[ \t]*● |[ \t]*[✕×✗] |[ \t]+\d+\) \S|thread '.*' panicked|Traceback \(most recent|Caused by:"
    r"|Exception in thread|\S+(?:Error|Exception)\b[: \t]|error(?:\[E\d+\])?: |fatal(?: error)?:|\[ERROR\]"
    r"|npm ERR!|Error: |ERROR\b|FATAL\b|CRITICAL\b|panic: "
)
# The same signs in the middle of a line (a compiler's "file:1:2: error", a log's level, a
# linter's undefined name): plain substrings first, a word check only where one is found.
FAILURE_CUES = (
    "panicked at", "<<< FAILURE!", "<<< ERROR!", ": error", "error TS", " error ", "FAILED", "failed",
    "ERROR", "FATAL", "CRITICAL", "ndefined", "not defined", "annot find name", "nresolved",
)  # fmt: skip
FAILURE_WORD = re.compile(
    r"\b(?:[Uu]ndefined|not defined|[Cc]annot find name|[Uu]nresolved|FAILED|failed|ERROR|FATAL|CRITICAL)\b"
    r"|panicked at|<<< |: error|error TS\d|\serror\s"
)
ERROR_NAME = re.compile(r"\w(?:Error|Exception)\b")
_DETAIL = (
    r"[ \t]*(?:E[ \t]|>[ \t]|assert|left:|right:|expected|Expected|received|Received|actual|Actual"
    r"|got:?[ \t]|want:?[ \t]|-->|\^+|-[ \t]+Expected|\+[ \t]+Received)"
)
DETAIL_INSIDE = re.compile(r"but was|expected:? ?<|AssertionError|assertion|\bwant\b.*\bgot\b|\bgot\b.*\bwant\b")
# Cheap tests first: the unanchored patterns run only on lines that hold one of these.
DETAIL_WORDS = ("but was", "expected", "assert", "want")
WARNING = re.compile(r"warning\b|\bwarn\b")
PASSING_CUES = ("PASS", "ok", "✓", "✔", "SUCCESS", "skipped", "SKIP")
PASSING = re.compile(r"\bPASS(?:ED)?\b|\bok\b|✓|✔|\bSUCCESS\b|\bskipped\b|\bSKIP\b")
_FRAME = (
    r"[ \t]*(?:at |File \"|\d+: |#\d+ +(?:0x[0-9a-f]+ in |\S+ \(.*\) at ))"  # gdb's: "#3  0x… in f (…) at x.c:9"
    r"|[ \t]+\S+\.(?:go|rs|py|ts|js|java|c|cc|cpp|h):\d+"
)
FRAME = re.compile(f"(?:{_FRAME})")
# What a line signals by how it starts, in one pass over the text (the first that matches names
# it): a failure, an assertion's detail, a frame. [ \t], never \s, which would cross a line's end.
STARTS = re.compile(f"^(?:(?P<failure>{_FAILURE})|(?P<detail>{_DETAIL})|(?P<frame>{_FRAME}))", re.MULTILINE)
FRAME_END = re.compile(r"\(\S+\.\w+:\d+(?::\d+)?\)\s*$")
THIRD_PARTY = re.compile(
    r"site-packages|dist-packages|/lib/python3|<frozen |node_modules|node:internal|\(node:|/rustc/|cargo/registry"
    r"|/usr/lib/go|/usr/local/go|/go/src/runtime|/go/pkg/mod/|\bruntime/|\bstd::|\bcore::|\balloc::|__rust_|<unknown>"
    r"|at (?:java|javax|jakarta|jdk|sun|com\.sun|kotlin|kotlinx|scala|akka|org\.(?:junit|apache|springframework|gradle"
    r"|eclipse|hibernate|glassfish|jboss|slf4j|mockito|assertj|opentest4j)|com\.(?:fasterxml|google)|ch\.qos"
    r"|io\.(?:netty|undertow|micronaut|vertx)|net\.bytebuddy|okhttp3|reactor)\."
)
# Where a trace's frames start: a Go goroutine, a Python traceback, a Java exception, a Rust panic.
TRACE_HEAD = re.compile(
    r"^goroutine \d+ \[|^Traceback|^Caused by:|^Exception in thread|^thread '.*' panicked|^\S.*(?:Error|Exception)\b"
    r"|^\s*● |^\s+\d+\) \S"  # jest's and mocha's failures
)

# Scores: what a line signals, and what of the request it holds (request.py's weights).
S_FAILURE, S_DETAIL, S_FRAME, S_WARNING = 10, 4, 5, 1
HEAD, TAIL = 8, 12
SECTION = re.compile(r"^(?:_{3,} .+ _{3,}|-{3,} .+ -{3,}|={3,} .+ ={3,})$")
SECTION_LINES = 80  # a section is read up to the next one, or this many lines
SCAN_LINES = 200
TRACE_LINES = 80  # a frame further than this below its trace's first line is shown without it
SAME_PLACE = 6  # at most this many other lines about the same file and line
# A compiler's diagnostic goes on below its first line with these (rustc, gcc, clang, tsc).
CONTINUES = re.compile(r"(?:note:|help:|= |\||\d+\s*\|)")
PLACE = re.compile(r"^\.?/?([^\s:()]+[:(]\d+)[:,)]")
BLOCK_LINES = 40  # at most this many lines of one block are kept whole
LINE_CHARS = 800  # a longer line is cut (minified code, a dumped blob)
FAILURES_OVERRUN = 2  # failures' own lines may take the kept text to this many times the budget


def scores(lines: list[str], terms: tuple[Term, ...], places: tuple[Place, ...] = ()) -> tuple[list[int], set[int]]:
    """What each line signals and holds of the request, and the lines never worth keeping for
    the block they are in: a test's pass (✓, PASSED, ok), a library's or the runtime's frame.
    Each sign is looked for over the whole text (a pattern anchored at line starts, or plain
    substrings), then confirmed on the few lines that have it: no pattern runs on every line."""
    text = "\n".join(lines)
    low = text.lower()
    starts = line_starts(lines)

    def confirmed(source: str, cues: tuple[str, ...], pattern: re.Pattern[str]) -> set[int]:
        found: set[int] = set()
        for cue in cues:
            found |= lines_holding(source, starts, Term(cue, 1))
        return {n for n in found if pattern.search(lines[n])}

    at_start: dict[str, set[int]] = {"failure": set(), "detail": set(), "frame": set()}
    for m in STARTS.finditer(text):
        at_start[m.lastgroup or ""].add(bisect_right(starts, m.start()) - 1)
    failure = at_start["failure"] | confirmed(text, FAILURE_CUES, FAILURE_WORD)
    failure |= confirmed(text, ("Error", "Exception"), ERROR_NAME)
    detail = at_start["detail"] | confirmed(low, DETAIL_WORDS, DETAIL_INSIDE)
    passing = confirmed(text, PASSING_CUES, PASSING)
    warning = confirmed(low, ("warn",), WARNING)
    frames = at_start["frame"] | confirmed(text, (")",), FRAME_END)
    out = [2 * w for w in line_scores(lines, terms, places)]
    for n in failure - (passing - detail):
        out[n] += S_FAILURE
    for n in detail - failure:
        out[n] += S_DETAIL
    for n in warning - failure - detail:
        out[n] += S_WARNING
    library = set()
    for n in frames:
        if THIRD_PARTY.search(lines[n]):
            library.add(n)
        else:
            out[n] += S_FRAME
    return out, (passing - failure) | library


def is_frame(line: str) -> bool:
    return FRAME.match(line) is not None or (line.endswith(")") and FRAME_END.search(line) is not None)


def _trace_heads(lines: list[str]) -> list[int | None]:
    """For each line, the line that opens the trace it would be a frame of (its goroutine,
    exception or panic), or the first line after the blank line above it; None when that is
    more than TRACE_LINES up. One pass."""
    out: list[int | None] = []
    head: int | None = None
    for n, line in enumerate(lines):
        out.append(head if head is not None and n - head <= TRACE_LINES and head != n else None)
        if TRACE_HEAD.match(line):
            head = n
        elif not line.strip():
            head = n + 1
    return out


BLANK = 1 << 30  # a blank line's indent: deeper than any, so it never ends a block by itself


def _indent(line: str) -> int:
    stripped = line.lstrip()
    return len(line) - len(stripped) if stripped else BLANK


def _block(lines: list[str], n: int, line_scores: list[int], indents: list[int]) -> list[int]:
    """Line ``n`` and what belongs to it: the lines after it that are indented deeper (blank
    lines inside) or continue a compiler's diagnostic (``note:``, ``help:``, ``= note``), or,
    for a line that signals a failure, the lines up to the next blank line; a long block keeps
    its first lines, its scored lines and its last line."""
    if SECTION.match(lines[n]):  # pytest's "____ test ____", cargo's "---- test stdout ----"
        end = n + 1
        while end < len(lines) and end - n < SECTION_LINES and not SECTION.match(lines[end]):
            end += 1
        return _trim(list(range(n, end)), line_scores)
    base = indents[n]
    end = n + 1
    last = min(len(lines), n + SCAN_LINES)  # a block is read this far at most (a whole log can be indented)
    while end < last and (indents[end] > base or _continues(lines[end])):
        if indents[end] == BLANK and (end + 1 >= len(lines) or indents[end + 1] <= base):
            break
        end += 1
    if end == n + 1 and line_scores[n] >= S_FAILURE:
        while end < len(lines) and lines[end].strip() and end - n < 12:
            end += 1
    return _trim(list(range(n, end)), line_scores)


def _trim(block: list[int], line_scores: list[int]) -> list[int]:
    """A long block: its first lines, its scored lines and its last line."""
    if len(block) > BLOCK_LINES:
        block = block[:8] + [k for k in block[8:-1] if line_scores[k] > 0][: BLOCK_LINES - 9] + [block[-1]]
    return block


def _continues(line: str) -> bool:
    return CONTINUES.match(line) is not None


def _heads(lines: list[str]) -> list[int | None]:
    """For each line, the line it belongs under (a diagnostic's ``warning:`` above its ``-->``, a
    linter's file above its problems): the nearest line above it at the margin, with no blank
    line between and at most BLOCK_LINES up; None for a line at the margin. One pass."""
    out: list[int | None] = []
    current: int | None = None
    for n, line in enumerate(lines):
        if not line.strip():
            current = None
            out.append(None)
        elif line[0] in " \t" or _continues(line):
            out.append(current if current is not None and n - current < BLOCK_LINES else None)
        else:
            current = n
            out.append(None)
    return out


def _places(lines: list[str]) -> dict[str, list[int]]:
    """Lines by the place they name first (``pkg/mod.py:1746``): what linters say about one line."""
    out: dict[str, list[int]] = {}
    for n, line in enumerate(lines):
        m = PLACE.match(line)
        if m:
            out.setdefault(m.group(1), []).append(n)
    return out


def select(text: str, request: Request, budget_chars: int) -> str:
    """The kept lines in their order, a count for each gap."""
    lines = text.splitlines()
    terms = request.pointing(lines)
    line_scores, filler = scores(lines, terms, request.places)
    indents = [_indent(line) for line in lines]
    places = _places(lines)
    keep: set[int] = set(range(min(HEAD, len(lines)))) | set(range(max(0, len(lines) - TAIL), len(lines)))
    used = sum(min(len(lines[n]), LINE_CHARS) for n in keep)
    # A line under a heading (a linter's ``-->`` under its message) ranks with half its heading's score.
    heads, trace_heads = _heads(lines), _trace_heads(lines)
    rank = {
        n: s + (line_scores[h] // 2 if (h := heads[n]) is not None else 0) for n, s in enumerate(line_scores) if s > 0
    }
    for n in sorted(rank, key=lambda n: (-rank[n], n)):  # a line already kept still brings its block
        if used <= budget_chars:
            block = _block(lines, n, line_scores, indents)
            if n > 0 and lines[n - 1].strip():
                block.append(n - 1)  # the line before says what it is about (a Go frame's function)
            head = trace_heads[n] if is_frame(lines[n]) else heads[n]
            if head is not None:
                block.append(head)
            m = PLACE.match(lines[n])
            if m and line_scores[n] >= S_DETAIL:  # what else was said about the same line
                block += places[m.group(1)][:SAME_PLACE]
            block = [k for k in dict.fromkeys(block) if k not in keep and (k not in filler or line_scores[k] > 0)]
            cost = sum(min(len(lines[k]), LINE_CHARS) + 1 for k in block)
            if used + cost <= budget_chars:
                keep.update(block)
                used += cost
                continue
        own = min(len(lines[n]), LINE_CHARS) + 1
        if n not in keep and line_scores[n] >= S_FAILURE and used + own <= budget_chars * FAILURES_OVERRUN:
            keep.add(n)  # no room for its block: a failure still shows its own line
            used += own
    return render(lines, sorted(keep))


def render(lines: list[str], kept: list[int], heading: str = "") -> str:
    """Kept lines as they are (never folded: each was chosen), a count for each gap."""
    out = [heading] if heading else []
    last = -1
    for n in kept:
        if last + 1 < n:
            out.append(f"… {n - last - 1:,} lines …")
        line = lines[n]
        out.append(line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]}… ({len(line):,} chars)")
        last = n
    if last + 1 < len(lines):
        out.append(f"… {len(lines) - last - 1:,} lines …")
    return "\n".join(out)
