"""Plan latency of the pure planner for 1k / 10k / 100k retrieval candidates.

    python benchmarks/plan_latency.py [--runs N]

Prints a table of median and p99 latency per candidate count, with the floor it is compared
to: a pure-Python greedy pack of the same pre-counted items.
Target (issue 2): 10k candidates in ≤ 20 ms median on a 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from ctx_lsp.core.conversation import build_turns, parse_messages
from ctx_lsp.core.items import BudgetSpec, Conversation, EstimatorInfo, Item, PinnedItem, PinSpec, PlanInput, Range
from ctx_lsp.core.planner import plan
from ctx_lsp.core.tokens import counter_for


def make_input(n: int, seed: int = 0) -> PlanInput:
    rng = random.Random(seed)
    counter = counter_for("cl100k_base")
    candidates = tuple(
        Item(
            id=f"card:pkg.m{i % 300}.f{i}",
            section="rag",
            kind="symbol_card",
            title=f"function pkg.m{i % 300}.f{i}",
            tokens=rng.randint(5, 400),
            path=f"pkg/m{i % 300}.py",
            range=Range.lines(i, i + 10),
            symbol=f"pkg.m{i % 300}.f{i}",
            score=rng.random() * 20,
        )
        for i in range(n)
    )
    messages = []
    for t in range(20):
        messages.append({"role": "user", "content": f"question {t} about the parser " * 10})
        messages.append({"role": "assistant", "content": f"answer {t} with some detail " * 30})
    turns = build_turns(parse_messages(messages), counter)
    pins = tuple(
        PinnedItem(
            PinSpec(pin_id=f"p{k}", kind="sticky" if k % 2 else "leased", ttl_remaining=3, seq=k),
            Item(id=f"pin-item{k}", section="system", kind="symbol_body", title=f"pin {k}", tokens=300),
        )
        for k in range(5)
    )
    return PlanInput(
        model="gpt-4o",
        budget=BudgetSpec(context_length=128_000, max_completion_tokens=4_096, safety_buffer=2_048),
        estimator=EstimatorInfo(encoding="cl100k_base", exact=False),
        required=(Item(id="sys", section="system", kind="system_prompt", title="system prompt", tokens=120),),
        pins=pins,
        conversation=Conversation(turns=turns),
        candidates=candidates,
    )


def greedy_floor(inp: PlanInput) -> None:
    room = 32_768
    for it in sorted(inp.candidates, key=lambda i: -(i.score or 0.0)):
        if it.tokens <= room:
            room -= it.tokens


def measure(fn, arg, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn(arg)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    return statistics.median(times), p99


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=0, help="runs per size (default: 200 / 50 / 10)")
    args = ap.parse_args()
    print(f"{'candidates':>10} {'plan median':>12} {'plan p99':>10} {'greedy floor':>13} {'ratio':>6} {'runs':>5}")
    for n, default_runs in ((1_000, 200), (10_000, 50), (100_000, 10)):
        runs = args.runs or default_runs
        inp = make_input(n)
        plan(inp)  # warm-up
        med, p99 = measure(plan, inp, runs)
        floor_med, _ = measure(greedy_floor, inp, runs)
        print(f"{n:>10,} {med:>10.2f}ms {p99:>8.2f}ms {floor_med:>11.2f}ms {med / floor_med:>5.1f}x {runs:>5}")


if __name__ == "__main__":
    main()
