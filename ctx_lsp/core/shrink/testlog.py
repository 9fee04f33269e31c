"""Is it the output of a test run, a build, a type checker or a linter? (The cut itself is
``lines.select``'s; this only names the kind in the marker.)"""

from __future__ import annotations

import re

SIGNS = re.compile(
    r"^=+ (FAILURES|ERRORS|short test summary info|test session starts)|^FAILED |^ERROR "
    r"|^Traceback \(most recent call last\)|::\S+ (PASSED|FAILED|ERROR|SKIPPED|XFAIL)\b"
    r"|^Ran \d+ tests? in|^(FAIL|ERROR): \w|^test result: |^error(\[E\d+\])?: |^warning: |^npm ERR!"
    r"|^make(\[\d+\])?: \*\*\*|^\S+\.\w+:\d+(:\d+)?: (error|warning)|^ *(FAIL|PASS) +\S+\.(js|ts|mjs|cjs)x?\b"
    r"|^\s*\d+ (passed|failed)|^--- (FAIL|PASS): |^(ok|FAIL)\s+\S+\s+[\d.]+s|^=== RUN |^running \d+ tests?"
    r"|^\[(INFO|ERROR|WARNING)\] |Tests run: \d+, Failures: |^Tests:\s+\d+|^Test Suites: |\(\d+,\d+\): error TS\d+"
    r"|^\s+\d+:\d+\s+(error|warning)\s|^✖ \d+ problems?|^Found \d+ errors?|^\s+Compiling \S+ v\d"
    r"|^#\d+ \[|^Step \d+/\d+ :|^ERROR: failed to solve",
    re.MULTILINE,
)
EDGE_CHARS = 30_000  # a run says what it is at its start (the session header) or its end (the summary)


def looks_like(text: str) -> bool:
    edges = text if len(text) <= 2 * EDGE_CHARS else text[:EDGE_CHARS] + "\n" + text[-EDGE_CHARS:]
    return SIGNS.search(edges) is not None
