"""The benchmark scripts run (on tiny generated workspaces), so CI keeps them working. Nothing
here is timed: the numbers are for people, on real trees (benchmarks/retrieval/RESULTS.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workspaces import copy_sample

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


@pytest.fixture(autouse=True)
def _data_outside_the_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated trees and indexes go to a temporary folder, not benchmarks/.data."""
    monkeypatch.setenv("CTX_BENCH_DATA", str(tmp_path / "bench-data"))


def run(*args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_index_speed_prints_its_table() -> None:
    out = run(str(BENCH / "index_speed.py"), "--files", "24", "--lines", "100", "--edits", "3", "--plans", "1")
    for row in (
        "cold index, 1 process",
        "cold index, 2-process pool",
        "symbols / resolved def→ref edges",
        "restart: reopen + stat revalidation",
        "restart: fresh process to its first light plan",
        "single-file re-index, median of 3",
        "reference graph update after the edits",
        "light-mode plan (Engine.plan)",
        "peak RSS",
        "load average",
    ):
        assert f"| {row}" in out, out
    edges = next(line for line in out.splitlines() if "def→ref edges" in line)
    assert int(edges.split("/")[-1].strip(" |").replace(",", "")) > 0  # the generated tree has a graph


def test_retrieval_harness_on_a_generated_workspace(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from index_speed import generate
    finally:
        sys.path.remove(str(BENCH))
    ws = generate(tmp_path / "ws", 20, 100)
    tasks = run(str(BENCH / "retrieval" / "tasks.py"), str(ws), "--name", "tiny", "--count", "8")
    parsed = json.loads(tasks)
    assert len(parsed) == 8 and all(t["gold_symbols"] and t["gold_ranges"] for t in parsed)
    task_file = tmp_path / "tasks.json"
    task_file.write_text(tasks)
    out = run(
        str(BENCH / "retrieval" / "harness.py"),
        "--workspace",
        f"tiny={ws}",
        "--ablation",
        "--processes",
        "0",
        str(task_file),
    )
    lines = out.splitlines()
    assert lines[0].startswith("| workspace (tasks) | system | 2k file / symbol | 8k file / symbol | 32k")
    for system in ("ctx_lsp light", "ctx_lsp heavy", "ctx_lsp light, no graph", "bm25 chunks"):
        assert any(f"| tiny (8) | {system} |" in line for line in lines), out
    assert "load average" in out


DEV_SET = ROOT.parent / "shared" / "retrieval-dev"


@pytest.mark.skipif(
    not (DEV_SET / "run.py").exists(), reason="the retrieval dev set (shared/) is not beside this clone"
)
def test_real_tasks_runner_scores_a_dev_task_and_a_bug_report(tmp_path: Path) -> None:
    out = run(
        str(BENCH / "retrieval" / "real.py"),
        *("--dev", str(DEV_SET), "--set", str(BENCH / "retrieval" / "bugs" / "tasks.jsonl")),
        *("--tasks", "3c75c961b4", "pallets__jinja@bug01", "--budgets", "2000", "--warm", "1", "--baseline"),
        *("--cache", str(tmp_path / "cache")),
        timeout=300,
    )
    for retriever in ("ctx-lsp light", "ctx-lsp heavy", "bm25 (reference)"):
        assert f"| {retriever} | 2k |" in out, out
        assert (
            f"| {retriever} · pallets/jinja | 2k |" in out and out.count(f"| {retriever} · pallets/jinja | 2k |") == 1
        )
    assert out.splitlines()[0].startswith("| retriever | budget | file recall | symbol recall |")


def test_large_messages_prints_its_table() -> None:
    out = run(str(BENCH / "large_messages.py"), "--sizes", "0.05", "--stored", "2", "--repeat", "1", "--plans", "1")
    for row in (
        "0.05 MB message: append",
        "0.05 MB message: answer behind append",
        "0.05 MB message: plan after append",
        "0.05 MB message: shutdown",
        "0.05 MB message: exit",
        "0.05 MB message: plan after restart",
        "0.05 MB message: peak RSS MB",
        "2 MB stored in 1-MB results: first plan",
        "2 MB stored in 1-MB results: plan",
        "cores",
        "load average",
    ):
        assert f"| {row}" in out, out
    answered = [line for line in out.splitlines() if "plans answered" in line]
    assert len(answered) == 2 and all(line.rstrip().endswith("| ok |") for line in answered), out


def test_gateway_latency_prints_its_table() -> None:
    out = run(
        str(BENCH / "gateway_latency.py"),
        str(ROOT / "tests" / "fixtures" / "sample_ws"),
        "--turns",
        "6",
        "--result-chars",
        "800",
        "--chunks",
        "20",
        "--streams",
        "1,3",
        "--stream-requests",
        "2",
        "--reply-seconds",
        "0.2",
        "--reply-jitter",
        "0.5",
        timeout=120,
    )
    for row in (
        "added latency per request",
        "gateway CPU per request",
        "time to first byte through the gateway",
        "per-chunk overhead",
        "gateway RSS",
        "input repeating the previous request",
        "cache-weighted input cost",
        "3 streams: first byte through / straight / added, ms p50",
        "3 streams, later requests: first byte through / straight / added, ms p99",
        "replies streamed over 0.2 s ± 50%",
    ):
        assert row in out, out
    assert re.search(r"^requests the gateway could not plan .* 0$", out, re.M), out  # none failed open


def test_warm_plan_prints_its_table(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    out = run(str(BENCH / "warm_plan.py"), str(ws), "--runs", "3", "--db", str(tmp_path / "index.sqlite3"))
    for mode in ("light", "heavy"):
        for kind in ("re-plans | 3", "first sight", "after a save | 3"):
            assert f"| {mode} | {kind} |" in out, out
    assert "cores:" in out and "load average" in out and "floor: planner alone" in out
    assert re.search(r"^search postings in memory in [\d.]+ s, resident memory \d+ → \d+ MB$", out, re.M), out
    # split by the engine's own timings: each stage took some time, also after a save emptied the memo
    assert "| mode | plans | search | rank | items |" in out, out
    assert re.search(r"^light: each save's re-index \(postings followed\) took [\d.]+ ms median", out, re.M), out
    assert re.search(r"^resident memory after the plans above: \d+ MB$", out, re.M), out
    split = out.split("| mode | plans | search")[1]
    for kind in ("first sight", "after a save"):
        stages = re.search(rf"^\| light \| {kind} \| (.*) \|$", split, re.M)
        assert stages and all(float(s.split()[0]) > 0 for s in stages.group(1).split(" | ")), out


def test_lsp_plan_latency_prints_its_table(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    args = ("--runs", "2", "--pins", "1", "--turns", "2", "--edits", "3", "--settle", "0.3")
    out = run(str(BENCH / "lsp_plan_latency.py"), str(ws), *args, timeout=120)
    assert "| all (8 questions) | 16 |" in out, out
    assert "| after an edit (3 plans, each after a re-index) | 3 |" in out, out
    assert "session: 1 pins, 2 turns" in out and "server CPU per plan" in out and "load average" in out
    memory = re.search(r"resident memory: (\d+) MB once started .*, (\d+) MB after the plans; peak (\d+) MB", out)
    assert memory and 0 < int(memory.group(1)) <= int(memory.group(3)), out


def test_long_session_prints_its_table() -> None:
    out = run(str(BENCH / "long_session.py"), "--turns", "6", "--window", "2", timeout=120)
    assert "plan request, median of turns 1–2" in out and "of turns 5–6" in out, out
    assert "plans that compacted / did not" in out, out
    last = out.splitlines()[1].split()
    assert last[0] == "6" and last[5] == "0" and last[6] == "0", out  # none over budget, none lost


@pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("cc")), reason="needs valgrind and cc")
def test_long_session_instructions_counts_each_plan() -> None:
    out = run(str(BENCH / "long_session_instructions.py"), "--turns", "3", "--window", "1", timeout=300)
    rows = [line for line in out.splitlines() if line.strip().startswith("turns ")]
    assert len(rows) == 3, out
    # counted, not zero: a plan is millions of instructions; the first window is the baseline
    counts = [float(m) for m in re.findall(r"× +([\d.]+)M", out)]
    assert counts and all(c > 1 for c in counts), out
    assert "(  +0%)" in rows[0], out


def test_tool_outputs_prints_its_table() -> None:
    out = run(str(BENCH / "tool_outputs.py"), timeout=300)
    assert "needles kept in" in out and "median saved on" in out and "ms per 10k tokens" in out, out
    assert "language " in out and "kind " in out, out  # the tables per kind and per language


def test_mcp_latency_prints_its_table(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    out = run(str(BENCH / "mcp_latency.py"), str(ws), "--calls", "3", "--warmup", "1", timeout=120)
    for row in (
        "| get_symbol (qualified name), 3 calls, warm |",
        "| search_code (a question, default budget), 3 calls, warm |",
        "| get_symbol: text returned, median |",
        "| start to initialized (a separate process) |",
        "| first call (waits for the start-up index check) |",
        "| load average before / after",
    ):
        assert row in out, out
    assert "tool errors" not in out, out
    assert "≤ 10 ms" in out and "≤ 50 ms" in out


def test_gateway_cost_prints_its_table() -> None:
    sample = str(ROOT / "tests" / "fixtures" / "sample_ws")
    out = run(str(BENCH / "gateway_cost.py"), sample, "--turns", "6", "--modes", "off", "light", timeout=300)
    assert "claude 6" in out and "codex 6" in out and "ratio" in out, out
    assert "light vs off: " in out, out  # the target, in dollars (the ratios are rounded)


def test_gateway_parse_prints_its_table() -> None:
    sample = str(ROOT / "tests" / "fixtures" / "sample_ws")
    out = run(str(BENCH / "gateway_parse.py"), sample, "--turns", "12", "--last", "4", "--runs", "1", timeout=300)
    rows = [
        line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| claude") or line.startswith("| codex")
    ]
    assert [r[1].strip() for r in rows] == ["anthropic", "responses"], out
    assert all(float(r[3]) > 0 for r in rows), out


def test_parse_floor_prints_its_table(tmp_path: Path) -> None:
    tree = tmp_path / "poly"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "lib.rs").write_text("/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n")
    (tree / "web.ts").write_text("export function greet(name: string): string {\n  return `hi ${name}`;\n}\n")
    (tree / "main.go").write_text("package main\n\nfunc main() {\n\tprintln(1)\n}\n")
    (tree / "broken.go").write_text("package main\n\nfunc broken( {\n")  # parses, with an error node
    (tree / "notes.txt").write_text("not source\n")
    (tree / "node_modules" / "x").mkdir(parents=True)
    (tree / "node_modules" / "x" / "index.ts").write_text("export const x = 1;\n")  # left out, as the index does
    out = run(str(BENCH / "parse_floor.py"), str(tree), "--runs", "1", "--processes", "0,2")
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| poly |")]
    got = {(r[1].strip(), r[6].strip()): [c.strip() for c in r] for r in rows}
    assert set(got) == {
        (lang, mode) for lang in ("rust", "typescript", "go", "all") for mode in ("1 process", "pool of 2")
    }
    for mode in ("1 process", "pool of 2"):
        # files, lines, files with errors
        assert [got["rust", mode][i] for i in (3, 4, 11)] == ["1", "4", "0"], out
        assert [got["typescript", mode][i] for i in (3, 4, 11)] == ["1", "3", "0"], out
        assert [got["go", mode][i] for i in (3, 4, 11)] == ["2", "8", "1"], out
        assert [got["all", mode][i] for i in (3, 4, 11)] == ["4", "15", "1"], out
        assert got["all", mode][2] == "each its own" and got["go", mode][2] == "tree-sitter"
        assert float(got["all", mode][8].replace(",", "")) > 0  # lines/s
    assert out.splitlines()[0].startswith("| tree | language | parser | files | lines | MB | mode | seconds")
    assert "load average" in out and "tree-sitter 0." in out


def test_index_speed_edits_each_file_in_its_own_language() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from index_speed import comment_edit, probe_edit
        from parse_floor import _parser
    finally:
        sys.path.remove(str(BENCH))
    python = b'"""Doc."""\n\n\ndef f(x):\n    return x\n'.split(b"\n")
    # Python: the edits index_speed has always made
    assert comment_edit(python, "python", 7) == b"\n".join([*python[:3], b"# edit 7", *python[3:]])
    assert probe_edit(python, "python", "probe") == b"\n".join(
        [*python, b"def probe(value):", b"    return value", b""]
    )
    samples = {
        "rust": b"/// Doc.\nfn f(x: i32) -> i32 {\n    x\n}\n",
        "typescript": b"export function f(x: number): number {\n  return x;\n}\n",
        "javascript": b"function f(x) {\n  return x;\n}\nmodule.exports = f;\n",
        "go": b"package p\n\nfunc f(x int) int {\n\treturn x\n}\n",
        "java": b"package p;\n\npublic class A {\n    int f(int x) {\n        return x;\n    }\n}\n",
        # the middle falls inside a macro continued over lines: the comment goes after it
        "c": b"int a;\nint b;\n#define TWICE(x) \\\n    ((x) + \\\n     (x))\n"
        b"int f(int x) {\n    return TWICE(x);\n}\n",
        "cpp": b"namespace n {\nint f(int x) {\n    return x;\n}\n}  // namespace n\n",
    }
    for language, source in samples.items():
        lines = source.split(b"\n")
        for edited in (comment_edit(lines, language, 3), probe_edit(lines, language, "probe_fn")):
            root = _parser(language).parse(edited).root_node
            assert not root.has_error, (language, edited)
        assert b"// edit 3" in comment_edit(lines, language, 3)
        assert b"probe_fn(" in probe_edit(lines, language, "probe_fn")
    java = probe_edit(samples["java"].split(b"\n"), "java", "probe_fn")
    assert java.rstrip().endswith(b"return value; }\n}"), java  # inside the class


def test_index_work_prints_where_the_per_file_work_goes(tmp_path: Path) -> None:
    from tests.workspaces import copy_poly

    tree = copy_poly(tmp_path / "poly")
    out = run(str(BENCH / "index_work.py"), str(tree), "--repeat", "1", timeout=120)
    rows = ("whole (what a pool worker does)", "no token counting", "no secret masking", "parse floor (read + parse)")
    for row in rows:
        assert f"| {row} |" in out, out
    counted = {
        line.split("|")[1].strip(): int(line.split("|")[2].replace(",", ""))
        for line in out.splitlines()
        if line.startswith(("| bodies and own lines", "| cards", "| body headers"))
    }
    assert set(counted) == {"bodies and own lines", "cards", "body headers"}, out
    assert all(chars > 0 for chars in counted.values()), out  # each kind is told apart
    assert "whole / parse floor:" in out and "load average" in out
