"""Is it the output of a test run, a build, a type checker or a linter? (The cut itself is
``lines.select``'s; this only names the kind in the marker.)"""

from __future__ import annotations

import re

SIGNS = re.compile(
    r"^=+ (FAILURES|ERRORS|short test summary info|test session starts)|^FAILED |^ERROR "
    r"|^Traceback \(most recent call last\)"
    r"|^Ran \d+ tests? in|^(FAIL|ERROR): \w|^test result: |^error(\[E\d+\])?: |^warning: |^npm ERR!"
    r"|^make(\[\d+\])?: \*\*\*|^\S+\.\w+:\d+(:\d+)?: (error|warning)|^ *(FAIL|PASS) +\S+\.(js|ts|mjs|cjs)x?\b"
    r"|^\s*\d+ (passed|failed)|^--- (FAIL|PASS): |^(ok|FAIL)\s+\S+\s+[\d.]+s|^=== RUN |^running \d+ tests?"
    r"|^\[(INFO|ERROR|WARNING)\] |^Tests:\s+\d+|^Test Suites: "
    r"|^\s+\d+:\d+\s+(error|warning)\s|^✖ \d+ problems?|^Found \d+ errors?|^\s+Compiling \S+ v\d"
    r"|^#\d+ \[|^Step \d+/\d+ :|^ERROR: failed to solve",
    re.MULTILINE,
)
# Signs in the middle of a line, looked for only where a plain substring says they may be.
INSIDE = {
    "::": re.compile(r"::\S+ (PASSED|FAILED|ERROR|SKIPPED|XFAIL)\b"),
    "Tests run:": re.compile(r"Tests run: \d+, Failures: "),
    "error TS": re.compile(r"\(\d+,\d+\): error TS\d+"),
}
EDGE_CHARS = 30_000  # a run says what it is at its start (the session header) or its end (the summary)


def looks_like(text: str) -> bool:
    edges = text if len(text) <= 2 * EDGE_CHARS else text[:EDGE_CHARS] + "\n" + text[-EDGE_CHARS:]
    if SIGNS.search(edges) is not None:
        return True
    return any(cue in edges and pattern.search(edges) is not None for cue, pattern in INSIDE.items())
