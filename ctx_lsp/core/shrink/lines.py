"""Line outputs (test runs, builds, linters, stack traces, logs) cut to the lines that matter:
each line is scored once — what it signals (a failure, an assertion's values, a project frame)
and what of the request it holds — and the best lines are kept with their block (the indented
lines under them: a traceback's frames, an assertion's left and right, a linter's problems
under a file), the head and the tail, within a budget; everything else is folded with a count.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ctx_lsp.core.shrink.request import Request, Term, line_scores, line_starts

# What a line signals, strongest first; one pass of each pattern over the whole text.
FAILURE = re.compile(
    r"^(?:=+ (?:FAILURES|ERRORS) =+|_{3,} .+ _{3,}|(?:FAIL|ERROR): \S|FAILED |--- FAIL|FAIL\b"
    r"|\s*● |\s*[✕×✗] |thread '.*' panicked|Traceback \(most recent|Caused by:|Exception in thread"
    r"|\S+(?:Error|Exception)\b[:\s]|error(?:\[E\d+\])?: |fatal(?: error)?:|\[ERROR\]|npm ERR!|Error: |ERROR\b|FATAL\b"
    r"|CRITICAL\b|panic: )",
    re.MULTILINE,
)
# The same signs in the middle of a line (a compiler's "file:1:2: error", a log's level): no
# anchor, so one linear pass finds them all.
FAILURE_INSIDE = re.compile(
    r"panicked at|<<< (?:FAILURE|ERROR)!|: error\b|\berror TS\d+|\s error\s|\bFAILED\b|\bfailed\b"
    r"|\b(?:ERROR|FATAL|CRITICAL)\b|\w(?:Error|Exception)\b"
)
DETAIL = re.compile(
    r"^\s*(?:E\s|>\s|assert|left:|right:|expected|Expected|received|Received|actual|Actual|got:?\s|want:?\s"
    r"|-->|\^+|\d+ \||=\s*(?:note|help):|note:|help:|-\s+Expected|\+\s+Received)",
    re.MULTILINE,
)
DETAIL_INSIDE = re.compile(r"but was|expected:? ?<|AssertionError|assertion|\bwant\b.*\bgot\b|\bgot\b.*\bwant\b")
# Cheap tests first: the unanchored patterns run only on lines that hold one of these.
FAILURE_WORDS = ("error", "fail", "exception", "panic", "fatal", "critical")
DETAIL_WORDS = ("but was", "expected", "assert", "want")
WARNING = re.compile(r"warning\b|\bwarn\b")
PASSING = re.compile(r"\bPASS(?:ED)?\b|\bok\b|✓|✔|\bSUCCESS\b|\bskipped\b|\bSKIP\b")
FRAME = re.compile(r"\s*(?:at |File \"|\d+: |#\d+ )|\s+\S+\.(?:go|rs|py|ts|js|java|c|cc|cpp|h):\d+")
FRAME_END = re.compile(r"\(\S+\.\w+:\d+(?::\d+)?\)$")
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
)

# Scores: what a line signals, and what of the request it holds (request.py's weights).
S_FAILURE, S_DETAIL, S_FRAME, S_WARNING = 6, 4, 5, 1
HEAD, TAIL = 8, 12
BLOCK_LINES = 40  # at most this many lines of one block are kept whole
LINE_CHARS = 800  # a longer line is cut (minified code, a dumped blob)


def hits(pattern: re.Pattern[str], text: str, starts: list[int]) -> set[int]:
    """The numbers of the lines a pattern matches, in one pass over the text."""
    return {bisect_right(starts, m.start()) - 1 for m in pattern.finditer(text)}


def scores(lines: list[str], terms: tuple[Term, ...]) -> list[int]:
    text = "\n".join(lines)
    starts = line_starts(lines)
    failure, detail = hits(FAILURE, text, starts), hits(DETAIL, text, starts)  # anchored: one fast pass
    out = []
    wanted = line_scores(lines, terms)
    for n, line in enumerate(lines):
        low = line.lower()
        s = wanted[n] * 2
        is_detail = n in detail or (any(w in low for w in DETAIL_WORDS) and DETAIL_INSIDE.search(line) is not None)
        is_failure = n in failure or (any(w in low for w in FAILURE_WORDS) and FAILURE_INSIDE.search(line) is not None)
        if is_failure and not (PASSING.search(line) and not is_detail):
            s += S_FAILURE
        elif is_detail:
            s += S_DETAIL
        elif "warn" in low and WARNING.search(low):
            s += S_WARNING
        if is_frame(line) and not THIRD_PARTY.search(line):
            s += S_FRAME
        out.append(s)
    return out


def is_frame(line: str) -> bool:
    return FRAME.match(line) is not None or (line.endswith(")") and FRAME_END.search(line) is not None)


def _trace_head(lines: list[str], n: int) -> int | None:
    """The line that opens the trace a frame is in (its goroutine, exception or panic), or the
    first line after the blank line above it; None when that is far."""
    for k in range(n - 1, max(-1, n - 80), -1):
        if TRACE_HEAD.match(lines[k]):
            return k
        if not lines[k].strip():
            return k + 1 if k + 1 < n else None
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip()) if line.strip() else 1 << 30


def _block(lines: list[str], n: int, line_scores: list[int]) -> list[int]:
    """Line ``n`` and what belongs to it: the lines after it that are indented deeper (blank
    lines inside), or, for a line that signals a failure, the lines up to the next blank line;
    a long block keeps its first lines, its scored lines and its last line."""
    base = _indent(lines[n])
    end = n + 1
    while end < len(lines) and (_indent(lines[end]) > base or not lines[end].strip()):
        if not lines[end].strip() and (end + 1 >= len(lines) or _indent(lines[end + 1]) <= base):
            break
        end += 1
    if end == n + 1 and line_scores[n] >= S_FAILURE:
        while end < len(lines) and lines[end].strip() and end - n < 12:
            end += 1
    block = list(range(n, end))
    if len(block) > BLOCK_LINES:
        block = block[:8] + [k for k in block[8:-1] if line_scores[k] > 0][: BLOCK_LINES - 9] + [block[-1]]
    return block


def select(text: str, request: Request, budget_chars: int, heading: str = "") -> str:
    """The kept lines in their order, folds with counts between them."""
    lines = text.splitlines()
    terms = request.pointing(lines)
    line_scores = scores(lines, terms)
    keep: set[int] = set(range(min(HEAD, len(lines)))) | set(range(max(0, len(lines) - TAIL), len(lines)))
    used = sum(min(len(lines[n]), LINE_CHARS) for n in keep)
    ranked = sorted((n for n, s in enumerate(line_scores) if s > 0), key=lambda n: (-line_scores[n], n))
    for n in ranked:
        if n in keep:
            continue
        block = [k for k in _block(lines, n, line_scores) if k not in keep]
        if n > 0 and lines[n - 1].strip() and (n - 1) not in keep:
            block.append(n - 1)  # the line before says what it is about (a Go frame's function)
        if is_frame(lines[n]):
            head = _trace_head(lines, n)
            if head is not None and head not in keep:
                block.append(head)
        cost = sum(min(len(lines[k]), LINE_CHARS) + 1 for k in block)
        if used + cost > budget_chars and used > 0:
            if line_scores[n] < S_FAILURE or used + min(len(lines[n]), LINE_CHARS) > budget_chars * 1.5:
                continue
            block = [n]  # over budget: a failure keeps at least its own line
            cost = min(len(lines[n]), LINE_CHARS)
        keep.update(block)
        used += cost
    return render(lines, sorted(keep), heading)


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
