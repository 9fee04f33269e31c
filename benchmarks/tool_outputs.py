"""Big tool outputs, shrunk: is every needle kept, how much is saved, how fast — on the corpus of
real outputs in benchmarks/tool_corpus/ (real tools run on real code from PyPI, npm and Debian;
each case with the request a user typed and the needles an engineer needs to answer it, decided
before the shrinker ran; benchmarks/tool_corpus/README.md says how they were made).

    python benchmarks/tool_outputs.py [--case SUBSTRING] [--show ID]

A row per case, then per kind and per language. "head+tail" says whether a plain cut of the
same size (the first and last lines) would have kept every needle too: a case it passes tests
nothing. Targets (issue 30): needles kept in 100% of cases; median tokens saved ≥ 75% on outputs
over 4k tokens and ≥ 30% on every output over 8k tokens (file reads excepted: never shrunk);
≤ 5 ms per 10k tokens.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctx_lsp.core.shrink import shrink  # noqa: E402
from ctx_lsp.core.shrink.command import command_of  # noqa: E402
from ctx_lsp.core.tokens import counter_for  # noqa: E402

CORPUS = ROOT / "benchmarks" / "tool_corpus" / "cases"
COUNT = counter_for("cl100k_base").count
THRESHOLD = 2000  # the gateway's default shrink_tokens


class Case(msgspec.Struct):
    id: str
    kind: str
    language: str
    tool: str
    command: str
    request: str
    needles: list[str]
    why: str = ""
    made_by: str = ""


def load(corpus: Path = CORPUS) -> list[tuple[Case, str]]:
    """Every case with its output text, in id order."""
    out = []
    for meta in sorted(corpus.glob("*.json")):
        case = msgspec.json.decode(meta.read_bytes(), type=Case)
        text = gzip.decompress((corpus / f"{case.id}.out.gz").read_bytes()).decode("utf-8")
        out.append((case, text))
    return out


def run_case(case: Case, text: str) -> tuple[str | None, float]:
    """The shrunk text (None: sent as it is) and the milliseconds one shrink took (best of 3)."""
    best = float("inf")
    out = None
    args = msgspec.json.encode({"command": case.command}).decode()
    for _ in range(3):
        t0 = time.perf_counter()
        done = shrink(
            text,
            tool=case.tool,
            query=case.request,
            count=COUNT,
            threshold=THRESHOLD,
            expand_id="m-bench",
            command=command_of(args),
        )
        best = min(best, time.perf_counter() - t0)
        out = done.text if done else None
    return out, best * 1000


def head_tail(text: str, chars: int) -> str:
    """The first and the last lines of ``text`` within ``chars``: the cut a case must beat."""
    lines = text.splitlines()
    head: list[str] = []
    tail: list[str] = []
    used = 0
    a, b = 0, len(lines) - 1
    while a <= b and used < chars:
        head.append(lines[a])
        used += len(lines[a]) + 1
        a += 1
        if a <= b and used < chars:
            tail.append(lines[b])
            used += len(lines[b]) + 1
            b -= 1
    return "\n".join(head + tail[::-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="", help="only the cases whose id holds this")
    ap.add_argument("--show", default="", help="print this case's shrunk text and the needles it lost")
    args = ap.parse_args(argv)
    cases = [(c, t) for c, t in load() if args.case in c.id]
    print(
        f"{'kind':<9} {'lang':<10} {'case':<34} {'tokens':>7} {'shrunk':>7} {'saved':>6} {'needles':>8} "
        f"{'head+tail':>9} {'ms/10k':>7}"
    )
    rows = []
    losses: list[str] = []
    for case, text in cases:
        tokens = COUNT(text)
        out, ms = run_case(case, text)
        shown = out if out is not None else text
        kept = sum(1 for n in case.needles if n in shown)
        shrunk = COUNT(out) if out is not None else tokens
        saved = 1 - shrunk / tokens
        naive = head_tail(text, len(out) if out is not None else len(text) // 4)
        naive_ok = all(n in naive for n in case.needles)
        rows.append((case, tokens, saved, kept == len(case.needles), naive_ok, ms / tokens * 10_000))
        lost = [n for n in case.needles if n not in shown]
        if lost:
            losses.append(f"{case.id}: lost {lost}")
        print(
            f"{case.kind:<9} {case.language:<10} {case.id[:34]:<34} {tokens:>7,} {shrunk:>7,} {saved:>6.0%} "
            f"{kept:>4}/{len(case.needles):<3} {'passes' if naive_ok else 'fails':>9} {ms / tokens * 10_000:>7.2f}"
        )
        if args.show == case.id:
            print(shown)
            print("lost:", [n for n in case.needles if n not in shown])
    if not rows:
        print("no cases")
        return 1
    print()
    for label, key in (("kind", lambda r: r[0].kind), ("language", lambda r: r[0].language)):
        groups: dict[str, list] = {}
        for r in rows:
            groups.setdefault(key(r), []).append(r)
        print(f"{label:<10} {'cases':>5} {'needles kept':>13} {'median saved':>13} {'max ms/10k':>11}")
        for name, rs in sorted(groups.items()):
            print(
                f"{name:<10} {len(rs):>5} {sum(r[3] for r in rs):>9}/{len(rs):<3} "
                f"{statistics.median(r[2] for r in rs):>13.0%} {max(r[5] for r in rs):>11.2f}"
            )
        print()
    shrinkable = [r for r in rows if r[0].kind != "file_read"]
    over4 = [r for r in shrinkable if r[1] > 4000]
    over8 = [r for r in shrinkable if r[1] > 8000]
    reads = [r for r in rows if r[0].kind == "file_read"]
    ms = sorted(r[5] for r in rows)
    print(f"needles kept in {sum(r[3] for r in rows)}/{len(rows)} cases (target: all)")
    for line in losses:
        print("  " + line)
    print(f"head+tail cut of the same size would keep them in {sum(r[4] for r in rows)}/{len(rows)}")
    if over4:
        print(
            f"median saved on {len(over4)} outputs over 4k tokens: {statistics.median(r[2] for r in over4):.0%} "
            "(target ≥ 75%)"
        )
    if over8:
        print(
            f"outputs over 8k tokens saving ≥ 30%: {sum(r[2] >= 0.3 for r in over8)}/{len(over8)} (target: all); "
            f"least {min(r[2] for r in over8):.0%}"
        )
    if reads:
        print(f"file reads left whole: {sum(r[2] == 0 for r in reads)}/{len(reads)} (target: all)")
    print(
        f"ms per 10k tokens: median {statistics.median(ms):.2f}, p95 {ms[int(0.95 * (len(ms) - 1))]:.2f}, "
        f"max {ms[-1]:.2f} (target ≤ 5)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
