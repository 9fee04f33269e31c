"""Where a cold index's per-file work goes: what a pool worker does for every file (read, hash,
mask secrets, parse, walk the tree into symbols, search texts, token counts, packed texts), over
a whole tree in one process, then again with one part left out at a time, and the parse floor
(read + parse only, as ``parse_floor.py``).

    .venv/bin/python benchmarks/index_work.py TREE [--repeat 3]

Prints a table: the CPU seconds of the whole per-file work and of each variant, each run in a
fresh process as a pool worker starts (median of ``--repeat`` runs, interleaved: the machine is
shared, and one run moves ±10%), what each part costs (whole − without it) and its share of
the whole; the parse floor, and the rest (the walk into symbols and cards, hashing, reading).
Then the counted text: characters tokenized per kind (bodies and a container's own lines,
cards, body headers), and how many of them are in lines counted before in the same process
(what a per-line cache of counts could save at most). This is what the cold index's ratio to
the parse floor is made of (``index_speed.py`` measures the ratio itself, with the pool and
the database writes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctx_lsp.workspace.index import prepare, texts
from ctx_lsp.workspace.languages import comment_mark
from ctx_lsp.workspace.secrets import SecretMasker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parse_floor import parse_one, source_files

ENCODING = "cl100k_base"
VARIANTS = ("whole", "no token counting", "no secret masking", "no search texts", "no packed texts", "parse floor")


def _files(root: Path) -> list[tuple[str, str, int, int, None]]:
    """The files the index would read (``parse_floor.source_files``), as ``pool_prepare`` takes them."""
    out = []
    for path in source_files(root):
        st = path.stat()
        out.append((path.relative_to(root).as_posix(), str(path), st.st_size, st.st_mtime_ns, None))
    return out


def _run(files: list[tuple[str, str, int, int, None]], variant: str) -> float:
    """CPU seconds of ``pool_prepare`` over every file with ``variant``'s part left out."""
    prepare.pool_init(ENCODING, None)  # the worker's own setup: its counter, gc off
    prepare._worker_masker = None if variant == "no secret masking" else SecretMasker()
    saved: dict[str, Callable] = {"fts_texts": prepare.fts_texts, "pack": texts.pack, "plan": prepare.token_plan}
    if variant == "no token counting":  # nor the planning of what to count (``token_plan``)
        prepare.token_plan = lambda parsed: ([], lambda counts: [(0, 0, 0)] * len(parsed.symbols))
    if variant == "no search texts":
        prepare.fts_texts = lambda parsed: []
    if variant == "no packed texts":
        texts.pack = lambda card, docstring, body: None
    try:
        t0 = time.process_time()
        if variant == "parse floor":
            for _, path, *_ in files:
                parse_one(path)
        else:
            for args in files:
                prepare.pool_prepare(args)
        return time.process_time() - t0
    finally:
        prepare.fts_texts, texts.pack, prepare.token_plan = saved["fts_texts"], saved["pack"], saved["plan"]


def _counted(files: list[tuple[str, str, int, int, None]]) -> dict[str, list[int]]:
    """Characters tokenized per kind of text, and how many of them are in lines counted before."""
    seen: set[str] = set()
    out = {"bodies and own lines": [0, 0], "cards": [0, 0], "body headers": [0, 0]}
    masker = SecretMasker()
    for rel, path, size, mtime_ns, _ in files:
        work = prepare.prepare_file(rel, Path(path), size, mtime_ns, None, masker)
        if work.parsed is None:
            continue
        to_count, _ = prepare.token_plan(work.parsed)
        place = f"{comment_mark(rel)} {rel}:"  # each file's ``// path:``, cut off as ``token_plan`` does
        cards = {c for s in work.parsed.symbols for c in prepare._card_pieces(s.card, place)}
        headers = {h for s in work.parsed.symbols for h in prepare._header_pieces(s, place)}
        for text in to_count:
            kind = "cards" if text in cards else "body headers" if text in headers else "bodies and own lines"
            out[kind][0] += len(text)
            for line in text.splitlines(keepends=True):
                if line in seen:
                    out[kind][1] += len(line)
                else:
                    seen.add(line)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant, interleaved (median shown)")
    ap.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one run, in a process of its own
    args = ap.parse_args()
    files = _files(args.tree.resolve())
    if args.variant:
        print(_run(files, args.variant))
        return 0
    for _, path, *_ in files:  # the page cache warm, as after a checkout
        Path(path).read_bytes()
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeat):
        for variant in VARIANTS:  # each in a fresh process, as a pool worker starts: no memo or heap of another run
            cmd = [sys.executable, __file__, str(args.tree), "--variant", variant]
            times[variant].append(float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
    med = {v: statistics.median(t) for v, t in times.items()}
    whole = med["whole"]
    print(f"{args.tree}: {len(files):,} files; CPU seconds in one process, median of {args.repeat}\n")
    print("| per-file work | CPU s | its part | share of the whole |")
    print("|---|---:|---:|---:|")
    print(f"| whole (what a pool worker does) | {whole:.2f} | | 100% |")
    parts = 0.0
    for v in VARIANTS[1:-1]:
        part = whole - med[v]
        parts += part
        print(f"| {v} | {med[v]:.2f} | {part:.2f} | {100 * part / whole:.0f}% |")
    floor = med["parse floor"]
    print(f"| parse floor (read + parse) | {floor:.2f} | {floor:.2f} | {100 * floor / whole:.0f}% |")
    rest = whole - floor - parts
    print(f"| the rest: the walk into symbols and cards, hashing | | {rest:.2f} | {100 * rest / whole:.0f}% |")
    print(f"\nwhole / parse floor: {whole / floor:.2f}x\n")
    print("| counted text | characters | in lines counted before |")
    print("|---|---:|---:|")
    for kind, (chars, again) in _counted(files).items():
        print(f"| {kind} | {chars:,} | {again:,} ({100 * again / max(chars, 1):.0f}%) |")
    print(f"\ncores: {os.cpu_count()}; load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
