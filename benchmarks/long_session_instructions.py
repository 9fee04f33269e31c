"""The plans of `long_session.py`'s session counted in instructions: does a plan at turn 500
cost what one at turn 1 does? (issue 35: turns 451–500 within ± 10% of turns 1–50)

    python benchmarks/long_session_instructions.py [--turns 500] [--window 50]

Wall and CPU time on a shared 2-core machine move ±15% from run to run; instructions do not.
The same session as `long_session.py` (a pin, the task, then per turn: plan, render, an
assistant tool call with a large result, a reply, the next user message, usage) runs in this
process on the sessions engine — the calls the language server's handlers make — under
valgrind's callgrind, which counts only inside each plan (``SessionEngine.plan`` and
``keep_plan``, what ``ctx/planContext`` runs on the worker), by a client request from a
three-line C helper built here with ``cc``. Prints per window the median instructions of the
plans that compacted first, of those that did not, and of all, with the change against turns
1–50. Takes about 10 minutes for 500 turns.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from long_session import FIXTURE, TASK, turn

HELPER = r"""
#include <valgrind/callgrind.h>
void ir_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void ir_stop(const char *name) {
  CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(name); CALLGRIND_STOP_INSTRUMENTATION;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--tool-tokens", type=int, default=600)
    ap.add_argument("--context-length", type=int, default=12_000)
    ap.add_argument("--window", type=int, default=50, help="turns at each end (and 51–100) compared")
    ap.add_argument("--inside", help=argparse.SUPPRESS)  # the run under valgrind: its output folder
    args = ap.parse_args()
    if args.inside:
        session(args, Path(args.inside))
        return
    if not shutil.which("valgrind") or not shutil.which("cc"):
        sys.exit("needs valgrind and cc (apt install valgrind gcc)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        lib = out / "ir.so"
        (out / "ir.c").write_text(HELPER)
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(out / "ir.c")], check=True)
        cmd = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
            f"--callgrind-out-file={out}/cg.%p", "--dump-instr=no", "--compress-strings=no",
            sys.executable, __file__, "--inside", str(out),
            "--turns", str(args.turns), "--tool-tokens", str(args.tool_tokens),
            "--context-length", str(args.context_length),
        ]  # fmt: skip
        env = {**os.environ, "CTX_IR_HELPER": str(lib), "PYTHONHASHSEED": "0"}
        subprocess.run(cmd, check=True, env=env)
        counts = [int(x) for x in (out / "counts").read_text().split()]
        compacted = [x == "1" for x in (out / "compacted").read_text().split()]
    report(counts, compacted, min(args.window, len(counts) // 3))


def session(args: argparse.Namespace, out: Path) -> None:
    """The session, each plan counted (under valgrind; a plain run counts nothing)."""
    from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest
    from ctx_lsp.sessions import PinIntent, SessionEngine, SessionPlanRequest
    from ctx_lsp.sessions.values import Usage

    ir = ctypes.CDLL(os.environ["CTX_IR_HELPER"])
    counts, compacted = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx"))
        engine = Engine(root)
        engine.refresh_index()
        engine.prepare_search()
        sessions = SessionEngine(engine)
        sid = "bench-long"
        try:
            sessions.open_session(sid)
            sessions.pin(sid, PinIntent(symbol="shop.inventory.Product"))
            sessions.append_raw(sid, None, [{"id": "u0", "role": "user", "content": TASK}])
            for k in range(args.turns):
                req = SessionPlanRequest(
                    session=sid,
                    request=PlanRequest(query=f"part {k}", budget=BudgetOverrides(context_length=args.context_length)),
                    keep_later=True,
                )
                sessions.drain_events()
                ir.ir_start()
                outcome = sessions.plan(req)
                sessions.flush()  # the plan kept, as the server does once it has answered
                ir.ir_stop(f"plan{k}".encode())
                counts.append(_dumped(out))
                compacted.append(any(type(e).__name__ == "Compacted" for e in sessions.drain_events()))
                plan = outcome.result.plan
                outcome.render("text")
                sessions.append_raw(sid, None, turn(k, args.tool_tokens))
                sessions.report_usage(sid, plan.plan_id, Usage(input_tokens=plan.totals.tokens, output_tokens=50))
        finally:
            sessions.close()
    (out / "counts").write_text(" ".join(map(str, counts)))
    (out / "compacted").write_text(" ".join("1" if c else "0" for c in compacted))


def _dumped(out: Path) -> int:
    """The instructions of the dump just written (its ``totals:`` line), the file removed."""
    total = 0
    for f in out.glob("cg.*"):
        for line in f.read_text(errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
        f.unlink()
    return total


def report(counts: list[int], compacted: list[bool], window: int) -> None:
    n = len(counts)
    spans = {
        f"turns 1–{window}": slice(0, window),
        f"turns {window + 1}–{2 * window}": slice(window, 2 * window),
        f"turns {n - window + 1}–{n}": slice(n - window, n),
    }
    print(f"{'window':>16} {'compacted first':>22} {'did not':>22} {'all plans, mean':>22}")
    base: dict[str, float] = {}
    for name, span in spans.items():
        cells = []
        for kind, pick in (("c", True), ("n", False), ("a", None)):
            some = [c for c, f in zip(counts[span], compacted[span], strict=True) if pick is None or f == pick]
            if not some:
                cells.append(f"{'—':>22}")
                continue
            # each kind's median; all plans' mean: the window's work whichever kind a plan is (a
            # median of two kinds falls in either by one plan more or less of a kind)
            value = (statistics.median(some) if pick is not None else statistics.fmean(some)) / 1e6
            base.setdefault(kind, value)
            cells.append(f"{len(some):>3} × {value:>6.1f}M ({(value / base[kind] - 1) * 100:+4.0f}%)")
        print(f"{name:>16} " + " ".join(f"{c:>22}" for c in cells))
    print(f"instructions per plan (SessionEngine.plan + keeping it), change against turns 1–{window}")


if __name__ == "__main__":
    main()
