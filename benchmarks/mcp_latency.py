"""How fast the MCP face answers an agent: get_symbol and search_code, warm, over the real stdio
protocol (the SDK's client, `ctx-lsp mcp` as a separate process, as an agent runs it).

    .venv/bin/python benchmarks/mcp_latency.py [WORKSPACE] [--calls 60] [--warmup 5]

WORKSPACE: a source tree (default: a generated tree of sympy's size, 1,600 files, under
benchmarks/.data or CTX_BENCH_DATA). The tree is indexed here first (its `.ctx/` store, as the
server keeps it), so the server starts on an indexed workspace, as it does after its first run.
Each timed call is one `tools/call` round trip seen by the client: JSON-RPC over the pipes, the
engine on its worker thread, the typed result validated against its output schema. get_symbol
asks for a different qualified name each call, search_code a different question (the words of
a symbol's name: "how does gcd zero work"; symbols of test files aside, whose names — like
test_sympy__physics__quantum__sho1d__SHOKet — make no question an agent asks) with its default
budget (4,000 tokens of whole items).

Targets (the MCP issue): get_symbol ≤ 10 ms and search_code ≤ 50 ms warm (median and p95).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from index_speed import DATA, _loadavg, generate  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from ctx_lsp.engine import Engine  # noqa: E402
from ctx_lsp.workspace.index import split_identifier  # noqa: E402

TARGETS_MS = {"get_symbol": 10.0, "search_code": 50.0}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def prepare(workspace: Path, count: int) -> tuple[list[str], list[str], str]:
    """Index the tree (as the server would) and pick ``count`` symbols: their qualified names,
    and questions made of the words of their names."""
    engine = Engine(workspace)
    try:
        t0 = time.perf_counter()
        stats = engine.refresh_index()
        seconds = time.perf_counter() - t0
        symbols = engine.index.iter_symbols(("class", "function", "method"))
    finally:
        engine.close()
    rng = random.Random(0)
    picked = rng.sample(symbols, min(count, len(symbols)))
    names = [s.qualname for s in picked]
    library = [s for s in symbols if not s.name.startswith("test") and "test" not in s.path.split("/")[-1]]
    library = [s for s in library if "/tests/" not in f"/{s.path}"] or symbols
    asked = rng.sample(library, min(count, len(library)))
    questions = [f"how does {split_identifier(s.name) or s.name} work" for s in asked]
    summary = f"{stats.files_seen:,} files, {len(symbols):,} classes/functions/methods, indexed in {seconds:.1f} s"
    return names, questions, summary


async def measure(workspace: Path, names: list[str], questions: list[str], warmup: int) -> dict[str, object]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    env["PYTHONPATH"] = str(ROOT)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctx_lsp", "mcp", str(workspace)], env=env, cwd=str(workspace)
    )
    out: dict[str, object] = {}
    t_start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["initialize"] = (time.perf_counter() - t_start) * 1000
        t0 = time.perf_counter()
        first = await session.call_tool("get_symbol", {"name": names[0]})
        out["first"] = (time.perf_counter() - t0) * 1000
        assert not first.is_error, first.content
        for tool, key, values in (("get_symbol", "name", names), ("search_code", "query", questions)):
            for value in values[:warmup]:
                await session.call_tool(tool, {key: value})
            times, sizes, errors = [], [], 0
            for value in values:
                t0 = time.perf_counter()
                result = await session.call_tool(tool, {key: value})
                times.append((time.perf_counter() - t0) * 1000)
                errors += bool(result.is_error)
                sizes.append(sum(len(getattr(c, "text", "")) for c in result.content))
            out[tool] = (times, sizes, errors)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", type=Path)
    ap.add_argument("--calls", type=int, default=60, help="timed calls per tool (at least 30 for a p95)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--files", type=int, default=1600, help="size of the generated tree (no WORKSPACE)")
    ap.add_argument("--lines", type=int, default=330)
    args = ap.parse_args(argv)
    load_before = _loadavg()
    if args.workspace is None:
        DATA.mkdir(parents=True, exist_ok=True)
        workspace = generate(DATA / f"synthetic_{args.files}x{args.lines}", args.files, args.lines)
    else:
        workspace = args.workspace.resolve()
    names, questions, summary = prepare(workspace, args.calls)
    got = asyncio.run(measure(workspace, names, questions, args.warmup))

    print(f"MCP latency · {workspace} · {summary} · {os.cpu_count()} cores")
    print()
    print("| measure | median | p95 | max | target | |")
    print("|---|---:|---:|---:|---:|---|")
    for tool in ("get_symbol", "search_code"):
        times, sizes, errors = got[tool]  # type: ignore[misc]
        target = TARGETS_MS[tool]
        med, p95 = statistics.median(times), pct(times, 0.95)
        verdict = "ok" if p95 <= target else ("median ok" if med <= target else "over")
        what = "qualified name" if tool == "get_symbol" else "a question, default budget"
        label = f"{tool} ({what}), {len(times)} calls, warm"
        if errors:
            label += f", {errors} tool errors"
        print(f"| {label} | {med:.1f} ms | {p95:.1f} ms | {max(times):.1f} ms | ≤ {target:.0f} ms | {verdict} |")
    for tool in ("get_symbol", "search_code"):
        sizes = got[tool][1]  # type: ignore[index]
        print(f"| {tool}: text returned, median | {statistics.median(sizes):,.0f} chars | | | | |")
    print(f"| start to initialized (a separate process) | {got['initialize']:.0f} ms | | | | |")
    print(f"| first call (waits for the start-up index check) | {got['first']:.0f} ms | | | | |")
    print(f"| load average before / after (1, 5, 15 min) | {load_before} / {_loadavg()} | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
