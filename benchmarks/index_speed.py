"""How fast the workspace index builds, restarts, re-indexes one file, and plans.

    .venv/bin/python benchmarks/index_speed.py              # synthetic 1,600 files x ~500 lines
    .venv/bin/python benchmarks/index_speed.py PATH         # any workspace (read-only: the
                                                            # database goes to benchmarks/.data/)
    .venv/bin/python benchmarks/index_speed.py --files 200  # a smaller synthetic tree
    .venv/bin/python benchmarks/index_speed.py PATH --processes 0   # one cold-index mode only
    .venv/bin/python benchmarks/index_speed.py PATH --repeat 3 --secrets off,on   # the cost of
                                                            # masking secrets: medians of 3

Prints a table: cold index (empty database) in one process and with the 2-process parse pool
(wall and CPU, the reference-graph share, edges); restart (open + stat revalidation; and a
fresh process from start to its first light-mode plan); the reference-graph update after a
one-file edit (resolution + PageRank, what the watch loop runs once edits pause); the median of
``--edits`` single-file re-indexes of a ~500-line file (each a different one-line edit, through
``update_file``); median search latency; median light- and heavy-mode plan latency through
``Engine.plan``; save → findable (a new function in a buffer, re-indexed and found by a
search); symbols, edges, tokens; the index on disk (database and WAL while open, then closed,
by table and index from SQLite's ``dbstat``) against the size of the source; peak RSS of this
process and of the pool's workers; the core count and the load average (the machine is shared:
quote medians, and the load). Each cold run is followed by the parse floor in the same mode
(read + each file's own parser: ``ast.parse`` for Python, tree-sitter for the other
languages; ``parse_floor.parse_floor``),
and the ratio of the two medians is shown. The third column is the per-line rate (lines of the
indexed files per second), to compare a language's tree with Python's on sympy. The edits are
made in the edited file's own language: a line comment for the re-index, a new function (a
method in the last class for Java) for save → findable. ``--secrets`` runs the cold index with
secret masking on (the default), off, or both; ``--repeat`` runs that many cold builds per mode
and shows median and p95. The synthetic tree is generated once under ``benchmarks/.data/``
(gitignored) and reused. Real trees of other languages: ``polyglot_trees.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctx_lsp.engine import Engine, PlanRequest
from ctx_lsp.workspace.files import WorkspaceWalker
from ctx_lsp.workspace.index import WorkspaceIndex
from ctx_lsp.workspace.languages import language_of
from ctx_lsp.workspace.secrets import SecretMasker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_measures import files_size, median_p95, table_sizes
from parse_floor import parse_floor

# Generated trees and indexes; CTX_BENCH_DATA moves them out of the working tree (the tests do).
DATA = Path(os.environ.get("CTX_BENCH_DATA") or Path(__file__).resolve().parent / ".data")
GENERATOR_VERSION = "5"  # 5: real cross-module calls (a reference graph)

_WORDS = [
    "account",
    "address",
    "amount",
    "batch",
    "buffer",
    "cache",
    "channel",
    "client",
    "config",
    "connection",
    "context",
    "cursor",
    "data",
    "delta",
    "document",
    "entry",
    "event",
    "field",
    "filter",
    "format",
    "frame",
    "graph",
    "handler",
    "header",
    "index",
    "item",
    "key",
    "layer",
    "limit",
    "line",
    "loader",
    "manager",
    "message",
    "metric",
    "model",
    "node",
    "offset",
    "order",
    "packet",
    "page",
    "parser",
    "path",
    "payload",
    "policy",
    "pool",
    "price",
    "queue",
    "record",
    "region",
    "registry",
    "request",
    "resource",
    "result",
    "route",
    "rule",
    "schema",
    "scope",
    "session",
    "signal",
    "source",
    "state",
    "stream",
    "symbol",
    "table",
    "task",
    "token",
    "total",
    "tree",
    "user",
    "value",
    "vector",
    "window",
    "worker",
]
_VERBS = [
    "build",
    "check",
    "collect",
    "compute",
    "convert",
    "create",
    "decode",
    "encode",
    "ensure",
    "fetch",
    "filter",
    "find",
    "flush",
    "format",
    "get",
    "handle",
    "load",
    "merge",
    "normalize",
    "parse",
    "prepare",
    "process",
    "read",
    "refresh",
    "render",
    "reset",
    "resolve",
    "save",
    "scan",
    "select",
    "send",
    "split",
    "store",
    "sync",
    "update",
    "validate",
    "write",
]


def _ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(parts))


def _camel(rng: random.Random) -> str:
    return "".join(rng.choice(_WORDS).capitalize() for _ in range(rng.randint(1, 3)))


def _function(rng: random.Random, indent: str, method: bool, callables: list[str] | None = None) -> list[str]:
    """A function (or method) of 6–16 statements; some call ``callables`` (functions defined
    earlier in the module or imported from siblings), so the tree has a reference graph. The
    function's name is appended to ``callables`` afterwards (module-level functions only)."""
    name = f"{rng.choice(_VERBS)}_{_ident(rng, rng.randint(1, 2))}"
    args = ["self"] if method else []
    args += [f"{_ident(rng, 1)}_{i}: {rng.choice(['int', 'str', 'list[str]', 'dict[str, int]'])}" for i in range(3)]
    out = []
    if rng.random() < 0.2:
        out.append(f"{indent}@{rng.choice(['staticmethod', 'functools.lru_cache(maxsize=256)', 'property'])}")
        if "staticmethod" in out[-1] and method:
            args = args[1:]
        if "property" in out[-1]:
            args = args[:1]
    prefix = "async def" if rng.random() < 0.1 else "def"
    out.append(f"{indent}{prefix} {name}({', '.join(args)}) -> {rng.choice(['int', 'str', 'None', 'bool'])}:")
    body = indent + "    "
    out.append(f'{body}"""{rng.choice(_VERBS).capitalize()} the {rng.choice(_WORDS)} of the {rng.choice(_WORDS)}.')
    out.append("")
    out.append(f"{body}Returns the {rng.choice(_WORDS)} after {rng.choice(_VERBS)}ing the {rng.choice(_WORDS)}.")
    out.append(f'{body}"""')
    for _ in range(rng.randint(6, 16)):
        kind = rng.random()
        # Mostly one-word names and short statements, blank lines between steps: real code
        # averages ~35 bytes per line (sympy 35, the venv's site-packages 35).
        a, b, c = _ident(rng, rng.randint(1, 2)), _ident(rng, rng.randint(1, 2)), _ident(rng, 1)
        if callables and rng.random() < 0.15:
            out.append(f"{body}{a} = {rng.choice(callables)}({b})")
        elif kind < 0.3:
            out.append(f"{body}{a} = {c}.{rng.choice(_VERBS)}({b})")
        elif kind < 0.5:
            out.append(f"{body}if {a} is None:")
            out.append(f"{body}    {b}.append({c})  # keep it")
        elif kind < 0.7:
            out.append(f"{body}for {c} in {a}:")
            out.append(f"{body}    {b}[{c}] = {_camel(rng)}({c})")
        elif kind < 0.85:
            out.append(f'{body}{a} = f"{{{b}}}:{{{c}!r}}"')
        else:
            out.append(f"{body}try:")
            out.append(f"{body}    {a} = self.{b}" if method else f"{body}    {a} = {c}")
            out.append(f"{body}except KeyError as exc:")
            out.append(f"{body}    raise {_camel(rng)}Error({b}) from exc")
        if rng.random() < 0.3:
            out.append("")
    out.append(f"{body}return {_ident(rng)}" if "-> None" not in out[-1] else f"{body}return None")
    out.append("")
    if callables is not None and not method:
        callables.append(name)
    return out


def _module(
    rng: random.Random, target_lines: int, siblings: list[str], defined: dict[str, list[str]]
) -> tuple[str, list[str]]:
    """A module's text and its top-level function names; it imports some of ``defined``'s
    (siblings' functions) and calls them."""
    lines = [
        f'"""{_camel(rng)} {rng.choice(_WORDS)}s: {rng.choice(_VERBS)} and {rng.choice(_VERBS)} them."""',
        "",
    ]
    lines += ["from __future__ import annotations", "", "import functools", "import os", ""]
    callables: list[str] = []
    imported = 0
    for sib in rng.sample(siblings, min(3, len(siblings))):
        lines.append(f"from {sib} import {_camel(rng)} as {_camel(rng)}Alias")
        names = defined.get(sib)
        if names:
            picked = sorted(set(rng.sample(names, min(2, len(names)))))
            lines.append(f"from {sib} import {', '.join(picked)}")
            callables += picked
    imported = len(callables)
    lines.append("")
    for _ in range(rng.randint(2, 5)):
        lines.append(f"{_ident(rng).upper()} = {rng.randint(1, 10_000)}")
    lines.append("")
    while len(lines) < target_lines - 45:  # a class adds ~90 lines at once: stop short
        if rng.random() < 0.6:
            lines.append(f"class {_camel(rng)}({rng.choice(['object', 'Exception', 'dict'])}):")
            lines.append(f'    """A {rng.choice(_WORDS)} that {rng.choice(_VERBS)}s {rng.choice(_WORDS)}s."""')
            lines.append("")
            lines.append(f"    {_ident(rng)}: int = {rng.randint(0, 100)}")
            lines.append("")
            for _ in range(rng.randint(2, 6)):
                lines += _function(rng, "    ", method=True, callables=callables)
        else:
            lines += _function(rng, "", method=False, callables=callables)
        lines.append("")
    return "\n".join(lines) + "\n", callables[imported:]


def generate(root: Path, files: int, lines: int) -> Path:
    """A deterministic synthetic package tree (reused when already generated)."""
    marker = root / ".generated"
    stamp = f"{GENERATOR_VERSION} {files} {lines}"
    if marker.exists() and marker.read_text() == stamp:
        return root
    if root.exists():
        import shutil

        shutil.rmtree(root)
    rng = random.Random(0)
    packages = [f"pkg{i:02d}" for i in range(max(1, files // 50))]
    modules: list[str] = []
    defined: dict[str, list[str]] = {}  # module → its top-level functions
    for i in range(files):
        pkg = packages[i % len(packages)]
        sub = f"sub{(i // len(packages)) % 4}"
        modules.append(f"{pkg}.{sub}.mod{i:04d}")
    for i, mod in enumerate(modules):
        path = root / (mod.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in (path.parent, path.parent.parent):
            init = parent / "__init__.py"
            if not init.exists():
                init.write_text(f'"""Package {parent.name}."""\n')
        siblings = modules[max(0, i - 20) : i] or modules[:1]
        text, defined[mod] = _module(rng, lines + rng.randint(-60, 60), siblings, defined)
        path.write_text(text)
    marker.write_text(stamp)
    return root


def _cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU time of this process (all threads), or with RUSAGE_CHILDREN of its
    children that ended (a pool's workers, once joined): less noisy than wall time on a
    shared machine, but it includes the token-counting helper thread's work."""
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def _rate(lines: int, seconds: float) -> str:
    """Lines per second, the per-line rate (to compare trees of different languages)."""
    return f"{lines / seconds:,.0f}" if seconds > 0 else "n/a"


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def _fresh_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)


QUERIES = [
    "where is parse_token_total defined",
    "how does the session cache refresh its window",
    "validate request payload schema",
    "RegistryManager",
    "How does solveset handle trigonometric equations with periodic solutions?",
    "why does sympify fail on strings with unicode characters",
    "Matrix determinant bareiss",
    "simplify trigsimp fu",
]

# A fresh process: from its start (imports included) to its first light-mode plan.
_RESTART = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from ctx_lsp.engine import Engine, PlanRequest
t1 = time.perf_counter()
engine = Engine(Path(sys.argv[1]), db_path=Path(sys.argv[2]))
stats = engine.refresh_index()
t2 = time.perf_counter()
engine.plan(PlanRequest(query=sys.argv[3], mode="light"))
t3 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "open_refresh": t2 - t1, "first_plan": t3 - t2, "total": t3 - t0,
                  "parsed": stats.files_indexed, "graph": stats.graph_seconds}))
"""


def _cold(root: Path, db: Path, processes: int, mask: bool = True) -> tuple[object, float, float, float, dict, float]:
    """Index into an empty database; returns (stats, wall seconds, CPU seconds of this
    process, peak RSS so far, bytes of the database files while the index is still open, CPU
    seconds of the pool's workers)."""
    _fresh_db(db)
    idx = WorkspaceIndex(root, db_path=db, masker=SecretMasker() if mask else None)
    cpu0, workers0 = _cpu_seconds(), _cpu_seconds(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    stats = idx.refresh(processes=processes)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    workers = _cpu_seconds(resource.RUSAGE_CHILDREN) - workers0  # the refresh joins its pool
    on_disk = files_size(db)  # before close: what a running server leaves on disk (WAL included)
    idx.close()
    return stats, wall, cpu, _rss_mb(), on_disk, workers


# A new function in the file's own language, found by a search for its name (save → findable).
_PROBES: dict[str, bytes] = {
    "rust": b"fn %s(value: i32) -> i32 { value }",
    "typescript": b"export function %s(value) { return value; }",
    "tsx": b"export function %s(value) { return value; }",
    "javascript": b"export function %s(value) { return value; }",
    "go": b"func %s(value int) int { return value }",
    "java": b"    static int %s(int value) { return value; }",
    "c": b"int %s(int value) { return value; }",
    "cpp": b"int %s(int value) { return value; }",
}


def comment_edit(text_lines: list[bytes], language: str | None, i: int) -> bytes:
    """The file with a line comment inserted near its middle, in its own syntax (``# edit i``
    for Python, ``// edit i`` for the others; not after a line continued with a backslash)."""
    mid = len(text_lines) // 2
    if language == "python":
        return b"\n".join([*text_lines[:mid], b"# edit %d" % i, *text_lines[mid:]])
    while 0 < mid < len(text_lines) and text_lines[mid - 1].rstrip().endswith(b"\\"):
        mid += 1  # inside a C macro continued over lines: a comment line there would end it
    return b"\n".join([*text_lines[:mid], b"// edit %d" % i, *text_lines[mid:]])


def probe_edit(text_lines: list[bytes], language: str | None, name: str) -> bytes:
    """The file with a new function ``name`` in its own language: appended at the end, or for
    Java a static method before the file's last ``}`` (inside its last class)."""
    if language == "python" or language not in _PROBES:
        return b"\n".join([*text_lines, b"def %s(value):" % name.encode(), b"    return value", b""])
    probe = _PROBES[language] % name.encode()
    if language == "java":
        data = b"\n".join(text_lines)
        end = data.rfind(b"}")
        if end >= 0:
            return data[:end] + probe + b"\n" + data[end:]
        probe = b"class CtxProbe%s { %s }" % (name.encode(), probe.strip())
    return b"\n".join([*text_lines, probe, b""])


def _seconds(values: list[float]) -> str:
    """``median X s, p95 Y s (n runs: …)``, or the one value."""
    if len(values) == 1:
        return f"{values[0]:.2f} s"
    med, p95 = median_p95(values)
    return f"median {med:.2f} s, p95 {p95:.2f} s ({len(values)} runs: {', '.join(f'{v:.2f}' for v in sorted(values))})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workspace", nargs="?", type=Path, help="index this tree instead of a synthetic one")
    parser.add_argument("--files", type=int, default=1600)
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--plans", type=int, default=5, help="plans per query for the latency medians")
    parser.add_argument("--processes", default="0,2", help="cold-index modes to run: 0 (one process), 2 (pool)")
    parser.add_argument("--repeat", type=int, default=1, help="cold runs per mode (the median is shown)")
    parser.add_argument("--secrets", default="on", help="cold index with secret masking: on, off or off,on")
    args = parser.parse_args(argv)
    # "on" last: the database the rest of the run uses is masked, as the engine expects by default
    maskings = sorted({m.strip() == "on" for m in args.secrets.split(",") if m.strip() in ("on", "off")})

    DATA.mkdir(parents=True, exist_ok=True)
    if args.workspace is None:
        t = time.perf_counter()
        root = generate(DATA / f"synthetic_{args.files}x{args.lines}", args.files, args.lines)
        print(f"synthetic tree: {root} (ready in {time.perf_counter() - t:.1f} s)")
    else:
        root = args.workspace.resolve()
    key = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    db = DATA / f"index-{key}.sqlite3"
    load_before = _loadavg()
    rows: list[tuple[str, ...]] = [("workspace", str(root))]

    # -- cold index, each mode into an empty database (the last one is kept), each run followed by
    # the parse floor in the same mode, so that both see the same load -------------------------
    sources = [e.path for e in WorkspaceWalker(root, check_content=False).walk()]
    source_bytes = sum(p.stat().st_size for p in sources)
    source_lines = 0
    for p in sources:
        try:
            source_lines += p.read_bytes().count(b"\n")
        except OSError:
            continue
    # Python alone: ast.parse, as before; other languages: each file by its own parser
    python_only = all(language_of(str(p)) == "python" for p in sources)
    floor_of = parse_floor
    floor_what = "ast.parse" if python_only else "parse (tree-sitter; ast for .py)"
    cold = None
    on_disk: dict = {}
    floors: dict[int, list[float]] = {}
    for mode in [int(m) for m in args.processes.split(",") if m.strip()]:
        for mask in maskings:
            runs = []
            for _ in range(max(args.repeat, 1)):
                runs.append(_cold(root, db, mode, mask))
                if mask == maskings[-1]:
                    floors.setdefault(mode, []).append(floor_of(sources, mode))
            walls = [r[1] for r in runs]
            cold, _, cpu, rss, on_disk, workers = sorted(runs, key=lambda r: r[1])[len(runs) // 2]  # the median run
            label = "cold index, 1 process" if cold.processes == 1 else f"cold index, {cold.processes}-process pool"
            label += ", secrets masked" if mask else ", no masking"
            in_workers = f" + {workers:.2f} s in the workers" if cold.processes > 1 else ""
            value = (
                f"{_seconds(walls)}; median run: {cpu:.2f} s CPU here{in_workers} (graph {cold.graph_seconds:.2f} s; "
                f"{cold.files_indexed:,} parsed, {len(cold.errors)} errors); peak RSS so far {rss:.0f} MB"
            )
            if cold.processes > 1:
                value += f", pool workers {_rss_mb(resource.RUSAGE_CHILDREN):.0f} MB each at most"
            rows.append((label, value, _rate(source_lines, median_p95(walls)[0])))
            if mask == maskings[-1]:
                floor = median_p95(floors[mode])[0]
                where = "1 process" if mode <= 1 else f"a pool of {mode}"
                rows.append(
                    (
                        f"  floor: read + {floor_what} only, {where} ({os.cpu_count()} cores)",
                        f"{_seconds(floors[mode])}; cold index / floor = {median_p95(walls)[0] / floor:.2f}x",
                        _rate(source_lines, floor),
                    )
                )
    assert cold is not None, "--processes named no mode"
    tables = table_sizes(db)  # the last cold build's, closed
    closed_size = db.stat().st_size
    idx = WorkspaceIndex(root, db_path=db)
    summary = idx.stats()
    idx.close()

    # -- restart: reopen + stat revalidation, here and in a fresh process -----------------------
    t = time.perf_counter()
    idx = WorkspaceIndex(root, db_path=db)
    warm = idx.refresh()
    warm_total = time.perf_counter() - t
    restart = json.loads(
        subprocess.run(
            [sys.executable, "-c", _RESTART, str(root), str(db), QUERIES[0]],
            check=True,
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        ).stdout
    )

    # -- single-file re-index: the file closest to 500 lines, a different one-line edit each time
    files = [e.path for e in WorkspaceWalker(root, check_content=False).walk()]  # what was indexed
    sizes = []
    total_lines = 0
    total_bytes = 0
    for p in files:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        n = data.count(b"\n")
        total_lines += n
        total_bytes += len(data)
        sizes.append((abs(n - 500), str(p.relative_to(root).as_posix()), n))
    sizes.sort()
    _, rel, n_file = sizes[0]
    language = language_of(rel)
    original = (root / rel).read_bytes()
    text_lines = original.split(b"\n")
    times = []
    for i in range(args.edits):
        edited = comment_edit(text_lines, language, i)
        t = time.perf_counter()
        idx.update_file(rel, edited)
        times.append((time.perf_counter() - t) * 1000)
    # save → findable: a new function in the buffer, re-indexed, then found by a search for it
    findable = []
    for i in range(args.edits):
        name = f"ctx_probe_function_{i}"
        edited = probe_edit(text_lines, language, name)
        t = time.perf_counter()
        idx.update_file(rel, edited)
        hits = idx.search(name, limit=5)
        findable.append((time.perf_counter() - t) * 1000)
        assert hits and hits[0].symbol.name == name, f"{name} not found after its save"
    idx.update_file(rel, original)
    graph_update = idx.update_graph()  # what the watch loop runs once edits pause

    search_ms = []
    for q in QUERIES:
        for _ in range(3):
            t = time.perf_counter()
            idx.search(q, limit=400)
            search_ms.append((time.perf_counter() - t) * 1000)
    idx.close()

    # -- plans through the engine (what a request costs) ----------------------------------------
    engine = Engine(root, db_path=db)
    plan_ms: dict[str, list[float]] = {"light": [], "heavy": []}
    for mode in plan_ms:
        engine.plan(PlanRequest(query=QUERIES[0], mode=mode))  # warm caches
        for _ in range(args.plans):
            for q in QUERIES:
                t = time.perf_counter()
                engine.plan(PlanRequest(query=q, mode=mode))
                plan_ms[mode].append((time.perf_counter() - t) * 1000)
    engine.close()

    rows += [
        ("files / lines / bytes", f"{cold.files_seen:,} / {total_lines:,} / {total_bytes / 1e6:.1f} MB"),
        ("symbols / resolved def→ref edges", f"{summary.symbols:,} / {summary.edges:,}"),
        (
            "restart: reopen + stat revalidation",
            f"{warm_total * 1000:.0f} ms ({warm.files_unchanged:,} unchanged, {warm.files_indexed} parsed)",
        ),
        (
            "restart: fresh process to its first light plan",
            f"{restart['total']:.2f} s (imports {restart['imports']:.2f}, open + revalidate "
            f"{restart['open_refresh']:.2f}, first plan {restart['first_plan']:.2f}; {restart['parsed']} parsed)",
        ),
        (
            f"single-file re-index, median of {args.edits}",
            f"{statistics.median(times):.1f} ms ({rel}, {n_file} lines, {language}; max {max(times):.1f} ms)",
        ),
        (
            f"save → findable (re-index + search for a new function), median of {args.edits}",
            f"{statistics.median(findable):.1f} ms (max {max(findable):.1f} ms)",
        ),
        ("reference graph update after the edits (resolve + PageRank)", f"{graph_update:.2f} s"),
        ("search, median (400 hits)", f"{statistics.median(search_ms):.1f} ms"),
        (
            f"light-mode plan (Engine.plan), median of {len(plan_ms['light'])}",
            f"{statistics.median(plan_ms['light']):.1f} ms (max {max(plan_ms['light']):.0f} ms)",
        ),
        (
            f"heavy-mode plan (Engine.plan), median of {len(plan_ms['heavy'])}",
            f"{statistics.median(plan_ms['heavy']):.1f} ms (max {max(plan_ms['heavy']):.0f} ms)",
        ),
        ("tokens (all files / all cards)", f"{summary.tokens:,} / {summary.card_tokens:,}"),
        (
            "index on disk after a cold build, still open (database + WAL)",
            f"{on_disk['db'] / 1e6:.1f} MB + {on_disk['-wal'] / 1e6:.1f} MB; the source files "
            f"{source_bytes / 1e6:.1f} MB: {(on_disk['db'] + on_disk['-wal']) / max(source_bytes, 1):.1f}x",
        ),
        ("index on disk after a cold build, closed", f"{closed_size / 1e6:.1f} MB, by table and index:"),
        *[(f"  {name}", f"{size / 1e6:.1f} MB") for name, size in tables if size >= 50_000],
        ("peak RSS (this process, whole run)", f"{_rss_mb():.0f} MB"),
        ("load average before / after (1, 5, 15 min)", f"{load_before} / {_loadavg()}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure'.ljust(width)} | value | lines/s |")
    print(f"| {'-' * width} | ----- | ------: |")
    for name, value, *rate in rows:
        print(f"| {name.ljust(width)} | {value} | {rate[0] if rate else ''} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
