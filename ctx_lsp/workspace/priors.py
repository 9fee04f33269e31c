"""Priors: what a file's path says about how likely its code is what a request is after.

A user asking about their project means the project's own package: tests, vendored copies of
other projects, generated code and the project's scripts, docs and examples rank lower —
unless the request is about them (it mentions tests, names the vendored project, the folder,
or the file). Each prior is a named multiplier that ``retrieval.rank`` writes into an item's
``why``; a path gets at most one (the first that applies, in the order of ``ROLES``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Folders whose code is a copy of another project (``requests/packages/urllib3``: a
# ``packages`` folder inside a package; at the top of a tree it is a monorepo's own code).
VENDOR_DIRS = frozenset({"vendor", "_vendor", "vendored", "third_party", "thirdparty", "externals", "external"})
INSTALLED_DIRS = frozenset({"site-packages", "dist-packages", "node_modules"})
TEST_DIRS = frozenset({"test", "tests", "testing", "testsuite", "unittests"})
_TEST_FILE = re.compile(r"(^test_.*|.*_tests?|conftest)\.pyi?$")
# Top-level folders and files that are not the project's package: its documentation, examples,
# scripts, benchmarks and build files.
AUX_DIRS = frozenset(
    {"doc", "docs", "example", "examples", "demo", "demos", "tutorial", "tutorials", "script", "scripts",
     "tools", "bench", "benchmark", "benchmarks", "profiling", "gallery", "fuzz", "fuzzing"}
)  # fmt: skip
AUX_FILES = frozenset({"setup.py", "noxfile.py", "fabfile.py", "fuzz.py", "toxfile.py"})
_GENERATED_FILE = re.compile(r"(_pb2(_grpc)?|_generated|_gen)\.pyi?$")
GENERATED_DIRS = frozenset({"generated", "_generated", "gen"})
# Words that make a request about tests.
TEST_WORDS = frozenset(
    {"test", "tests", "testing", "tested", "pytest", "unittest", "fixture", "fixtures", "conftest", "testcase"}
)

TEST_FACTOR = 0.3  # test code, for a request that is not about tests
TEST_MENTIONED_FACTOR = 0.6  # ... for one that mentions tests among other things
VENDORED_FACTOR = 0.3  # a vendored copy of another project (or an installed one)
GENERATED_FACTOR = 0.4  # generated code (by path or by a "generated, do not edit" header)
AUX_FACTOR = 0.6  # outside the project's package: docs, examples, scripts, benchmarks, setup.py

ROLES = ("vendored", "generated", "test", "aux")
_REQUEST_WORD = re.compile(r"[\w][\w./-]*")


def request_words(query: str) -> frozenset[str]:
    """The request's words, lower-cased, as ``prior_for`` compares them: identifiers, paths,
    and the parts of dotted names and paths."""
    out: set[str] = set()
    for w in _REQUEST_WORD.findall(query.lower()):
        w = w.strip("./-")
        out.add(w)
        if "/" in w or "." in w:
            out.update(p for p in re.split(r"[./]", w) if p)
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Prior:
    role: str  # one of ROLES
    factor: float
    why: str


@functools.lru_cache(maxsize=16384)  # a plan asks about the paths of hundreds of hits, mostly the same ones
def path_role(rel: str, generated: bool = False) -> tuple[str, str] | None:
    """``(role, what)`` for a workspace-relative path whose code is not the project's own
    package code, else None. ``what`` is the word a request would use to mean it (the vendored
    project's name, the folder), and ``generated`` says the file's header marks it generated."""
    parts = rel.split("/")
    dirs, name = parts[:-1], parts[-1]
    for i, d in enumerate(dirs):
        if d in INSTALLED_DIRS or d in VENDOR_DIRS or (d == "packages" and i > 0 and dirs[i - 1] != "src"):
            vendored = dirs[i + 1] if i + 1 < len(dirs) else name.removesuffix(".py")
            return "vendored", vendored
    if generated or _GENERATED_FILE.search(name) or any(d in GENERATED_DIRS for d in dirs):
        return "generated", "generated"
    if any(d in TEST_DIRS for d in dirs) or _TEST_FILE.match(name):
        return "test", "test"
    top = dirs[1] if dirs and dirs[0] == "src" and len(dirs) > 1 else (dirs[0] if dirs else "")
    if top in AUX_DIRS:
        return "aux", top
    if not dirs and name in AUX_FILES:
        return "aux", name.removesuffix(".py")
    return None


def prior_for(rel: str, query_words: frozenset[str], generated: bool = False) -> Prior | None:
    """The prior of a path for a request whose words (lower-cased) are ``query_words``; None
    for the project's own code, or when the request is about what the path holds."""
    found = path_role(rel, generated)
    if found is None:
        return None
    role, what = found
    if rel.lower() in query_words or what.lower() in query_words:
        return None  # the request names the file, the folder or the vendored project
    if role == "test":
        if query_words & TEST_WORDS:
            why = f"test code; the request mentions tests (×{TEST_MENTIONED_FACTOR})"
            return Prior(role, TEST_MENTIONED_FACTOR, why)
        return Prior(role, TEST_FACTOR, f"test code (×{TEST_FACTOR})")
    if role == "vendored":
        return Prior(role, VENDORED_FACTOR, f"vendored copy of {what} (×{VENDORED_FACTOR})")
    if role == "generated":
        return Prior(role, GENERATED_FACTOR, f"generated code (×{GENERATED_FACTOR})")
    return Prior(role, AUX_FACTOR, f"outside the package, in {what} (×{AUX_FACTOR})")
