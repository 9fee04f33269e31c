"""Test and build output (pytest, unittest, jest / npm, cargo, make, compilers, type checkers,
linters): failures, errors and tracebacks whole, the summary lines, the head and the tail; runs
of similar lines folded with a count; passing tests' progress dropped."""

from __future__ import annotations

import re
from bisect import bisect_right

from ctx_lsp.core.shrink.fold import fold, head_tail

SIGNS = re.compile(
    r"^=+ (FAILURES|ERRORS|short test summary info|test session starts)|^FAILED |^ERROR "
    r"|^Traceback \(most recent call last\)|::\S+ (PASSED|FAILED|ERROR|SKIPPED|XFAIL)\b"
    r"|^Ran \d+ tests? in|^(FAIL|ERROR): \w|^test result: |^error(\[E\d+\])?: |^npm ERR!|^make(\[\d+\])?: \*\*\*"
    r"|^\S+\.\w+:\d+(:\d+)?: (error|warning)|^ *(FAIL|PASS) +\S+\.(js|ts)x?\b|^\s*\d+ (passed|failed)",
    re.MULTILINE,
)
SECTION = re.compile(r"^=+ (.+?) =+$")
IMPORTANT = re.compile(
    r"^E\s|^>|error|Error|FAIL|fail|Traceback|assert|panicked|^\S+\.\w+:\d+|^\s*File \"|Exception|warning:"
)
SUMMARY = re.compile(
    r"^=+ .*(passed|failed|error|skipped|no tests ran).* =+$|^Ran \d+ tests|^(OK|FAILED)\b|^test result:"
)
PASSING = re.compile(r"\bPASS(ED)?\b|\bok$")
HEAD, TAIL = 8, 12
WHOLE_SECTION_CHARS = 12_000  # failure sections up to this size are kept whole


EDGE_CHARS = 30_000  # a run says what it is at its start (the session header) or its end (the summary)


def looks_like(text: str) -> bool:
    edges = text if len(text) <= 2 * EDGE_CHARS else text[:EDGE_CHARS] + "\n" + text[-EDGE_CHARS:]
    return SIGNS.search(edges) is not None and IMPORTANT.search(text) is not None


def shrink(text: str, query: str) -> tuple[str, str]:
    lines = text.splitlines()
    failures = _failure_sections(lines)
    if failures:
        body = "\n".join(failures)
        kept = failures if len(body) <= WHOLE_SECTION_CHARS else _compact(failures)
        what = "the failures and errors with their tracebacks, the summary, the head and the tail"
    else:
        kept = _important(lines)
        what = "the tracebacks, the lines with errors and failures, the summary, the head and the tail"
    summary = [line for line in lines[-40:] if SUMMARY.search(line.strip("= ").join("==")) or SUMMARY.search(line)]
    out = [*lines[:HEAD], "…", *fold(kept), "…", *[s for s in summary if s not in kept], *lines[-TAIL:]]
    return "\n".join(_dedupe_edges(out, lines)), what


def _failure_sections(lines: list[str]) -> list[str]:
    """pytest's FAILURES / ERRORS sections and the short summary, as they are."""
    out: list[str] = []
    keep = False
    for line in lines:
        m = SECTION.match(line.strip())
        if m:
            title = m.group(1)
            keep = title in ("FAILURES", "ERRORS", "short test summary info") or (
                keep and not re.search(r"passed|failed|error|warnings summary", title)
            )
        if keep:
            out.append(line)
    return out


def _compact(section: list[str]) -> list[str]:
    """Many failures: each one's title, the failing line, its E lines and its location."""
    out = []
    for n, line in enumerate(section):
        if re.match(r"^_{3,} .+ _{3,}$", line) or SECTION.match(line.strip()) or IMPORTANT.search(line):
            out.append(line)
        elif n and re.match(r"^_{3,} ", section[n - 1]):
            out.append(line)  # the first line of a failure (its definition)
    return out


def _important(lines: list[str]) -> list[str]:
    """Tracebacks whole, error lines with the line before them. The patterns run once over the
    whole text (one pass of the regex engine, not one call per line)."""
    text = "\n".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    hit = {bisect_right(starts, m.start()) - 1 for m in IMPORTANT.finditer(text)}
    out: list[str] = []
    in_traceback = False
    for n, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        if in_traceback:
            out.append(line)
            if line and not line[0].isspace() and not line.startswith("Traceback"):
                in_traceback = False  # the exception line ends it
            continue
        if n in hit and not PASSING.search(line):
            if n and lines[n - 1] not in out[-1:]:
                out.append(lines[n - 1])
            out.append(line)
    return out


def _dedupe_edges(out: list[str], lines: list[str]) -> list[str]:
    """A short log's head and tail overlap what was kept: drop the repeats, keep the order."""
    if len(lines) <= HEAD + TAIL:
        return lines
    seen: set[int] = set()
    result = []
    for line in out:
        key = hash(line)
        if line in ("…",) or key not in seen:
            result.append(line)
            seen.add(key)
    return head_tail(result, 10_000, 10_000)
