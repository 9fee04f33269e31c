"""Priors: what a file's path says about how likely its code is what a request is after.

A user asking about their project means the project's own package: tests, vendored copies of
other projects, generated code and the project's scripts, docs and examples rank lower —
unless the request is about them (it mentions tests, names the vendored project, the folder,
or the file). Each prior is a named multiplier that ``retrieval.rank`` writes into an item's
``why``; a path gets at most one (the first that applies, in the order of ``ROLES``).

Each language's conventions are known (Python, Rust, TypeScript/JavaScript, Go, Java, C, C++):

- test: ``tests/``, ``test/`` (Maven's ``src/test/java``, Rust's integration tests),
  ``__tests__/``, ``__mocks__/``, ``testdata/``, ``e2e/``; ``test_*.py``, ``*_test.go``,
  ``*.test.ts`` / ``*.spec.js`` (every JS/TS extension), ``*Test.java`` / ``*Tests.java`` /
  ``*IT.java``, ``test_*.c`` / ``*_test.cc`` / ``*_unittest.cc``, Rust's ``tests.rs``;
- vendored: ``vendor/`` (Go's ``vendor/github.com/org/repo`` names ``repo``), ``node_modules/``
  (the innermost package, ``@scope/name`` included), ``third_party/``, ``external/``, Cargo's
  ``.cargo/registry`` and Go's ``pkg/mod`` copies (the crate or module, version dropped);
- generated: ``*_pb2.py``, ``*.pb.go``, ``*_generated.go``, ``zz_generated*.go``, ``*.pb.cc`` /
  ``*.pb.h``, ``*_pb.js`` / ``*_pb.d.ts``, ``*.generated.ts``, ``generated/`` folders, build
  output (``dist/``, ``build/``, ``out/``, ``target/``, ``bazel-*``, ``.next/``, ``coverage/``) at
  the top of the tree or of a monorepo's package, and ``*.d.ts`` declarations: with no I/O here
  a hand-written declaration cannot be told from ``tsc``'s, and either restates code that lives
  elsewhere (the ``.js`` it types or the package it describes), so it ranks as generated unless
  the request names the file;
- aux (outside the package): ``docs/``, ``examples/``, ``scripts/``, ``tools/``, ``benches/``,
  ``bench/``, ``hack/``, … at the top; ``setup.py``, Rust's ``build.rs`` (build code, like
  ``setup.py``), JS tool configs (``vite.config.ts``, ``.eslintrc.js``), Storybook stories.
  Go's ``cmd/`` is the project's own binaries, not aux.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ctx_lsp.workspace import request_text
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES, language_of

# Folders whose code is a copy of another project (``requests/packages/urllib3``: a
# ``packages`` folder inside a Python package; at the top of a tree, or in a JavaScript
# workspace, it is a monorepo's own code).
VENDOR_DIRS = frozenset(
    {"vendor", "_vendor", "vendored", "third_party", "thirdparty", "3rdparty", "3rd_party", "externals", "external",
     "extern"}
)  # fmt: skip
INSTALLED_DIRS = frozenset({"site-packages", "dist-packages", "node_modules", "bower_components"})
# Go's module paths: on these hosts a module is ``host/owner/repo``, elsewhere ``host/name``
_FORGES = frozenset({"github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "gitee.com", "golang.org"})
TEST_DIRS = frozenset(
    {"test", "tests", "testing", "testsuite", "unittests", "__tests__", "__mocks__", "__snapshots__", "testdata", "e2e"}
)
_TEST_FILE = re.compile(
    r"^(?:test_.*|.*_tests?|conftest)\.pyi?$"  # Python
    r"|_test\.go$"  # Go
    r"|\.(?:test|spec|e2e-spec|cy)\.[mc]?[jt]sx?$"  # JavaScript / TypeScript (Jest, Vitest, Mocha, Cypress)
    r"|(?:^|[a-z0-9_])(?:Tests?|TestCase)\.java$|[a-z0-9]IT\.java$"  # Java (JUnit, failsafe's integration tests)
    r"|^(?:test_.*|.*_(?:unit)?tests?)\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx)$"  # C / C++ (gtest, ctest)
    r"|^(?:tests?|.*_tests?)\.rs$"  # Rust's ``mod tests;`` in its own file
)
# Top-level folders and files that are not the project's package: its documentation, examples,
# scripts, benchmarks and build files.
AUX_DIRS = frozenset(
    {"doc", "docs", "example", "examples", "demo", "demos", "tutorial", "tutorials", "script", "scripts",
     "tools", "bench", "benches", "benchmark", "benchmarks", "profiling", "gallery", "fuzz", "fuzzing", "sample",
     "samples", "contrib", "hack", "website", ".storybook", ".github"}
)  # fmt: skip
AUX_FILES = frozenset({"setup.py", "noxfile.py", "fabfile.py", "fuzz.py", "toxfile.py", "conanfile.py", "build.rs"})
# JavaScript tools' configuration at a package's root (``vite.config.ts``, ``.eslintrc.js``,
# ``gulpfile.js``; under ``src/`` an ``app.config.ts`` is the application's own), and Storybook's
# stories wherever they sit: the project's tooling and demos
_TOOL_CONFIG = re.compile(
    r"^(?:(?P<tool>[\w\-]+)\.config|\.(?P<rc>\w+)rc|(?P<runner>gulpfile|gruntfile)|(?P<karma>karma)\.conf)\.[mc]?[jt]s$",
    re.I,
)
_STORIES = re.compile(r"\.stories\.[mc]?[jt]sx?$")
_GENERATED_FILE = re.compile(
    r"(_pb2(_grpc)?|_generated|_gen)\.pyi?$"  # Python
    r"|\.pb(?:\.gw)?\.go$|_generated\.go$|^zz_generated.*\.go$"  # Go (protoc, deepcopy-gen)
    r"|\.pb\.(?:cc|h)$"  # C++ (protoc)
    r"|_pb\.js$|_pb\.d\.ts$|\.generated\.[mc]?[jt]sx?$"  # JavaScript / TypeScript (protoc, codegen)
)
GENERATED_DIRS = frozenset({"generated", "_generated", "__generated__", "generated-sources", "gen"})
# Build output: generated when it is the tree's top folder, or the top of a monorepo's package
# (``packages/ui/dist``); deeper it may be the project's own (``src/build``, a Go package ``out``).
OUTPUT_DIRS = frozenset(
    {"dist", "build", "out", "target", "coverage", ".next", ".nuxt", ".svelte-kit", ".output", ".turbo"}
)
_OUTPUT_DIR = re.compile(r"^(?:bazel|cmake-build)-|^build[-_]")
MONOREPO_DIRS = frozenset({"packages", "apps", "libs", "crates", "modules", "services", "projects"})
# Words that make a request about tests.
TEST_WORDS = frozenset(
    {"test", "tests", "testing", "tested", "pytest", "unittest", "fixture", "fixtures", "conftest", "testcase",
     "spec", "specs", "jest", "vitest", "mocha", "jasmine", "junit", "testng", "testify", "gtest", "googletest",
     "e2e"}
)  # fmt: skip

TEST_FACTOR = 0.3  # test code, for a request that is not about tests
TEST_MENTIONED_FACTOR = 0.6  # ... for one that mentions tests among other things
VENDORED_FACTOR = 0.3  # a vendored copy of another project (or an installed one)
GENERATED_FACTOR = 0.4  # generated code (by path or by a "generated, do not edit" header)
AUX_FACTOR = 0.6  # outside the project's package: docs, examples, scripts, benchmarks, setup.py

ROLES = ("vendored", "generated", "test", "aux")
_REQUEST_WORD = re.compile(r"[\w][\w./-]*")
_TEST_WORD = re.compile(r"(?<![\w.])test(?!\w)")  # lower-case: ``Test`` is a class's name
_LONGEST_FIRST = tuple(sorted(SOURCE_SUFFIXES, key=len, reverse=True))  # ``.mts`` before ``.ts``
_VERSION = re.compile(r"-\d+\.\d+\.\d+.*$|\.v\d+$")  # ``serde-1.0.188``, ``yaml.v3``


def request_words(query: str) -> frozenset[str]:
    """The request's words, lower-cased, as ``prior_for`` compares them: identifiers, paths,
    and the parts of dotted names and paths. ``test`` is a word of the request only as the user
    writes it (``cargo test``, ``#[test]``, "the test fails"): a ``test`` variable or a ``Test``
    class in the code they pasted is theirs, not a request about the project's tests."""
    out: set[str] = set()
    for w in _REQUEST_WORD.findall(query.lower()):
        w = w.strip("./-")
        out.add(w)
        if "/" in w or "." in w:
            out.update(p for p in re.split(r"[./]", w) if p)
    out.discard("test")
    if _TEST_WORD.search(request_text.without_blocks(query)):
        out.add("test")
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
    project's name, the folder, a declaration file's name), and ``generated`` says the file's
    header marks it generated."""
    parts = rel.split("/")
    dirs, name = parts[:-1], parts[-1]
    vendored = _vendored(dirs, name, language_of(rel))
    if vendored is not None:
        return "vendored", vendored
    if generated or _GENERATED_FILE.search(name) or any(d in GENERATED_DIRS for d in dirs) or _in_output(dirs):
        return "generated", "generated"
    if name.endswith(".d.ts"):  # see the module's docstring
        return "generated", name
    if any(d in TEST_DIRS for d in dirs) or _TEST_FILE.search(name):
        return "test", "test"
    top = dirs[1] if dirs and dirs[0] == "src" and len(dirs) > 1 else (dirs[0] if dirs else "")
    if top in AUX_DIRS:
        return "aux", top
    if name in AUX_FILES and (not dirs or (name == "build.rs" and "src" not in dirs)):
        return "aux", _stem(name)
    if _STORIES.search(name):
        return "aux", "stories"
    m = _TOOL_CONFIG.match(name) if _package_root(dirs) else None
    if m is not None:
        return "aux", next(g for g in m.groups() if g).lower()
    return None


def _vendored(dirs: list[str], name: str, lang: str | None) -> str | None:
    """The name of the project a path is a vendored or installed copy of, else None."""
    # the innermost node_modules: ``node_modules/.pnpm/x@1/node_modules/x`` and nested installs are x's
    for i in range(len(dirs) - 1, -1, -1):
        if dirs[i] in ("node_modules", "bower_components"):
            rest = dirs[i + 1 :]
            if rest and rest[0].startswith("@") and len(rest) > 1:
                return f"{rest[0]}/{rest[1]}"
            return rest[0] if rest else _stem(name)
    python = lang in ("python", None)
    for i, d in enumerate(dirs):
        rest = dirs[i + 1 :]
        if d == ".cargo":  # ``.cargo/registry/src/<index>/serde-1.0.188/…``, ``.cargo/git/checkouts/<repo>-<hash>/…``
            if rest[:2] == ["registry", "src"] and len(rest) > 3:
                return _VERSION.sub("", rest[3])
            if rest[:2] == ["git", "checkouts"] and len(rest) > 2:
                return re.sub(r"-[0-9a-f]{16}$", "", rest[2])
            return "cargo"
        if d == "mod" and i > 0 and dirs[i - 1] == "pkg" and any("@" in r for r in rest):  # Go's module cache
            return next(r for r in rest if "@" in r).partition("@")[0]
        if d in INSTALLED_DIRS or d in VENDOR_DIRS or (python and d == "packages" and i > 0 and dirs[i - 1] != "src"):
            if not rest:
                return _stem(name)
            if not python and "." in rest[0] and len(rest) > 1:  # Go's ``vendor/github.com/org/repo/…``
                module = rest[1:3] if rest[0] in _FORGES else rest[1:2]
                return _VERSION.sub("", module[-1])
            return rest[0]
    return None


def _in_output(dirs: list[str]) -> bool:
    """A build output folder at the top of the tree or of a monorepo's package (``OUTPUT_DIRS``)."""
    for i in (0, 2):
        if len(dirs) > i and _package_root(dirs[:i]) and (dirs[i] in OUTPUT_DIRS or _OUTPUT_DIR.match(dirs[i])):
            return True
    return False


def _package_root(dirs: list[str]) -> bool:
    """Folders that are the tree's root or a monorepo package's (``packages/ui``)."""
    return not dirs or (len(dirs) == 2 and dirs[0] in MONOREPO_DIRS)


def _stem(name: str) -> str:
    """A file's name without its source extension: ``setup`` of ``setup.py``, ``build`` of ``build.rs``."""
    for suffix in _LONGEST_FIRST:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def in_test_module(qualname: str) -> bool:
    """Code inside a Rust ``mod tests`` (the ``#[cfg(test)]`` module every crate keeps beside its
    code): test code in a file that is not."""
    return "::tests::" in qualname or qualname.endswith("::tests")


def prior_for(rel: str, query_words: frozenset[str], generated: bool = False, qualname: str = "") -> Prior | None:
    """The prior of a path (and of a symbol, by its qualified name) for a request whose words
    (lower-cased) are ``query_words``; None for the project's own code, or when the request is
    about what the path holds."""
    found = path_role(rel, generated)
    if found is None and qualname and in_test_module(qualname):
        found = ("test", "test")
    if found is None:
        return None
    role, what = found
    if rel.lower() in query_words or what.lower().lstrip("@") in query_words:
        return None  # the request names the file, the folder or the vendored project
    if role == "test":
        if query_words & TEST_WORDS:
            why = f"test code; the request mentions tests (×{TEST_MENTIONED_FACTOR})"
            return Prior(role, TEST_MENTIONED_FACTOR, why)
        return Prior(role, TEST_FACTOR, f"test code (×{TEST_FACTOR})")
    if role == "vendored":
        return Prior(role, VENDORED_FACTOR, f"vendored copy of {what} (×{VENDORED_FACTOR})")
    if role == "generated" and what.endswith(".d.ts"):
        return Prior(role, GENERATED_FACTOR, f"type declarations, not the code ({what}) (×{GENERATED_FACTOR})")
    if role == "generated":
        return Prior(role, GENERATED_FACTOR, f"generated code (×{GENERATED_FACTOR})")
    return Prior(role, AUX_FACTOR, f"outside the package, in {what} (×{AUX_FACTOR})")
