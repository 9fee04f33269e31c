"""The parse floor of a source tree: read every file and parse it, nothing else. What no index
built on the same parsers can beat, per language.

    .venv/bin/python benchmarks/parse_floor.py TREE [TREE ...]            # one process
    .venv/bin/python benchmarks/parse_floor.py TREE --processes 0,2       # and a pool of 2
    .venv/bin/python benchmarks/parse_floor.py TREE --runs 5              # median of 5

Each file is parsed by tree-sitter with the prebuilt grammar of its extension (``.rs`` Rust,
``.ts``/``.mts``/``.cts`` TypeScript, ``.tsx`` TSX, ``.js``/``.jsx``/``.mjs``/``.cjs``
JavaScript, ``.go``, ``.java``, ``.c`` C, ``.h``/``.cc``/``.cpp``/``.hpp``/``.cxx``/``.hh``
C++), the tree dropped at once; ``.py`` files by ``ast.parse`` (the floor the index is compared
with on sympy). Files are those the index would read: dot-folders,
``node_modules`` and files over 5 MiB are left out. Before the timed runs every file is read once
(the page cache is warm, as it is for an index built after a checkout).

Prints one row per tree and language (and the whole tree when it has several): files, lines,
MB, the median seconds of ``--runs``, lines/s, MB/s, the per-line rate against Python's ``ast``
floor when a Python tree was given too, and how many files tree-sitter parsed with an error
node (a grammar that does not fit the file shows here). In a pool, the pool's start is
included, as it is in the indexer's cold build. The machine is shared: the load average before
and after is printed; quote medians.

``parse_floor(paths, processes)`` is what ``index_speed.py`` compares the index with: the same
loop over a mixed tree (tree-sitter, and ``ast`` for ``.py``).
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ctx_lsp.workspace.languages import LANGUAGES, language_of
from ctx_lsp.workspace.languages.spec import spec_for

MAX_FILE_BYTES = 5 * 1024 * 1024  # the index's cap (ctx_lsp.workspace.files.MAX_FILE_BYTES)
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})

_parsers: dict[str, object] = {}  # per process: one Parser per language, made on first use


def source_files(root: Path) -> list[Path]:
    """Every file under ``root`` in a language above, as the index would walk them: sorted,
    dot-folders and tool folders pruned, files over ``MAX_FILE_BYTES`` left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if language_of(name) and path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
                out.append(path)
    return out


def _parser(language: str):  # -> tree_sitter.Parser
    parser = _parsers.get(language)
    if parser is None:
        from tree_sitter import Language, Parser

        module, func = spec_for(language).grammar  # the grammar the index parses this language with
        parser = Parser(Language(getattr(importlib.import_module(module), func)()))
        _parsers[language] = parser
    return parser


def parse_one(path: str) -> int:
    """Read and parse one file with its language's parser, dropping the tree at once: 0 when it
    parsed cleanly, 1 when tree-sitter's tree has an error node or ``ast`` refused the file (or
    it could not be read)."""
    language = language_of(path)
    try:
        data = Path(path).read_bytes()
        if language == "python":
            ast.parse(data)
            return 0
        return int(_parser(language or "").parse(data).root_node.has_error)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError, KeyError):
        return 1


def _pool_init() -> None:
    gc.disable()  # as the indexer's workers do


def _timed(paths: Sequence[Path], processes: int) -> tuple[float, int]:
    """Seconds to read and parse every file (GC off), in this process (``processes`` ≤ 1) or
    in a pool of that many, pool start included; and how many files parsed with errors."""
    names = [str(p) for p in paths]
    errors = 0
    t0 = time.perf_counter()
    if processes <= 1:
        was = gc.isenabled()
        gc.disable()
        try:
            for name in names:
                errors += parse_one(name)
        finally:
            if was:
                gc.enable()
    else:
        with multiprocessing.get_context("spawn").Pool(processes, initializer=_pool_init) as pool:
            for failed in pool.imap_unordered(parse_one, names, chunksize=4):
                errors += failed
    return time.perf_counter() - t0, errors


def parse_floor(paths: Sequence[Path], processes: int) -> float:
    """Seconds to read and parse every file of a tree of any languages, each by its own parser
    (tree-sitter; ``ast.parse`` for ``.py``), in one process or a pool of ``processes``."""
    return _timed(paths, processes)[0]


def treesitter_floor(paths: Sequence[Path], processes: int) -> tuple[float, int]:
    """``parse_floor`` of the files tree-sitter parses (``.py`` files left out), and how many
    parsed with an error node."""
    return _timed([p for p in paths if language_of(str(p)) not in (None, "python")], processes)


def _count(paths: Sequence[Path]) -> tuple[int, int]:
    """Lines (newlines, as ``index_speed`` counts them) and bytes; reading warms the page cache."""
    lines = size = 0
    for p in paths:
        data = p.read_bytes()
        lines += data.count(b"\n")
        size += len(data)
    return lines, size


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    grammars = {spec.grammar[0] for lang in LANGUAGES if (spec := spec_for(lang)) is not None}
    for dist in ("tree-sitter", *sorted(m.replace("_", "-") for m in grammars)):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} missing")
    return ", ".join(out)


@dataclass
class Row:
    """One line of the table: a tree's files of one language (or all of them) in one mode."""

    tree: str
    language: str
    files: int
    lines: int
    bytes: int
    mode: int
    runs: list[float]
    errors: int | None  # files tree-sitter parsed with an error node; None for ``ast``

    @property
    def seconds(self) -> float:
        return statistics.median(self.runs)

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.seconds if self.seconds else 0.0

    @property
    def parser(self) -> str:
        return {"python": "ast.parse", "all": "each its own"}.get(self.language, "tree-sitter")


def measure(trees: Sequence[Path], modes: Sequence[int], runs: int) -> list[Row]:
    """Time each tree's languages (and each mixed tree whole) in each mode, median of ``runs``."""
    rows: list[Row] = []
    for tree in trees:
        files = source_files(tree)
        groups: dict[str, list[Path]] = {}
        for p in files:
            groups.setdefault(language_of(str(p)) or "", []).append(p)
        if len(groups) > 1:
            groups["all"] = files
        for language, paths in groups.items():
            lines, size = _count(paths)
            for mode in modes:
                timed = [_timed(paths, mode) for _ in range(runs)]
                seconds = [t for t, _ in timed]
                errors = None if language == "python" else timed[0][1]
                rows.append(Row(tree.name, language, len(paths), lines, size, mode, seconds, errors))
    return rows


def table(rows: Sequence[Row]) -> list[str]:
    """The rows as a Markdown table; the per-line rate is also shown against the Python row's
    of the same mode, when there is one."""
    python = {r.mode: r.lines_per_s for r in rows if r.language == "python"}
    runs = max((len(r.runs) for r in rows), default=0)
    out = [
        f"| tree | language | parser | files | lines | MB | mode | seconds (median of {runs}) | lines/s | MB/s "
        "| lines/s vs Python | files with errors |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        mode = "1 process" if r.mode <= 1 else f"pool of {r.mode}"
        versus = f"{r.lines_per_s / python[r.mode]:.2f}x" if python.get(r.mode) else "—"
        errors = "—" if r.errors is None else f"{r.errors:,}"
        mb_s = r.bytes / 1e6 / r.seconds if r.seconds else 0.0
        out.append(
            f"| {r.tree} | {r.language} | {r.parser} | {r.files:,} | {r.lines:,} | {r.bytes / 1e6:.1f} | {mode} "
            f"| {r.seconds:.2f} | {r.lines_per_s:,.0f} | {mb_s:.1f} | {versus} | {errors} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (any languages; a Python one for ast)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per row (the median is shown)")
    parser.add_argument("--processes", default="0", help="modes: 0 (one process), 2 (a pool of 2), or 0,2")
    args = parser.parse_args(argv)
    modes = [int(m) for m in args.processes.split(",") if m.strip()]
    for tree in args.trees:
        if not tree.is_dir():
            parser.error(f"{tree} is not a folder")
    load_before = _loadavg()
    rows = measure([t.resolve() for t in args.trees], modes, max(args.runs, 1))
    print("\n".join(table(rows)))
    print(f"\ncores: {os.cpu_count()}; load average before / after: {load_before} / {_loadavg()}")
    print(f"python {sys.version.split()[0]}; {_versions()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
