"""Big tool outputs, shrunk: is the needle kept, how much is saved, how fast — on outputs of real
tools run on real code here, each with a needle defined by how the case was made.

    python benchmarks/tool_outputs.py [--sympy PATH] [--quick]

Cases (generated into benchmarks/.data/tool_outputs, or $CTX_BENCH_DATA):
- pytest -v on a generated project with planted failures (needle: the failing test's id and its
  assertion line); the same run under unittest;
- ruff check over a source tree with a planted undefined name (needle: its file:line and code);
- grep -rn over a source tree for a word the request names (needle: the definition in the
  file the request is about);
- pip's verbose log of a failed install (needle: the error line);
- npm ls --all --json of the VS Code client (needle: the entry the request names);
- git log -p of this repository (needle: the commit the request names);
- a long compile log (needle: the syntax error).
Targets: needle kept in 100% of cases, tokens saved ≥ 70% on outputs over 2k tokens, ≤ 5 ms per
10k tokens of output.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctx_lsp.core.shrink import shrink  # noqa: E402
from ctx_lsp.core.tokens import counter_for  # noqa: E402

DATA = Path(os.environ.get("CTX_BENCH_DATA") or ROOT / "benchmarks" / ".data") / "tool_outputs"
COUNT = counter_for("cl100k_base").count
BIN = Path(sys.executable).parent


@dataclass
class Case:
    kind: str
    name: str
    tool: str
    query: str
    text: str
    needles: list[str]


def run(argv: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    return done.stdout + done.stderr


def pytest_cases(base: Path, quick: bool) -> list[Case]:
    proj = base / "proj"
    shutil.rmtree(proj, ignore_errors=True)
    proj.mkdir(parents=True)
    n = 150 if quick else 1200
    body = [f"def test_ok_{i}():\n    assert sorted([{i}, 1]) == sorted([1, {i}])\n" for i in range(n)]
    body.insert(
        n // 3, "def test_invoice_rounding():\n    total = round(2.675, 2)\n    assert total == 2.68, f'got {total}'\n"
    )
    reserve = "def test_reserve_stock():\n    stock = {'widget': 1}\n"
    body.insert(2 * n // 3, reserve + "    assert stock.get('gadget', 0) > 0, 'no gadget in stock'\n")
    (proj / "test_shop.py").write_text("\n".join(body))
    (proj / "test_units.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n"
        + "".join(f"    def test_{i}(self):\n        self.assertEqual({i}, {i})\n" for i in range(n))
        + "    def test_tax_rate(self):\n        self.assertAlmostEqual(0.2 * 3, 0.61, places=3, msg='tax rate off')\n"
    )
    py = str(BIN / "python")
    out = run([py, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_shop.py"], proj)
    uni = run([py, "-m", "unittest", "-v", "test_units"], proj)
    return [
        Case(
            "test log",
            "pytest -v, 2 planted failures",
            "Bash",
            "why do the invoice and stock tests fail?",
            out,
            ["test_invoice_rounding", "got 2.67", "test_reserve_stock", "no gadget in stock"],
        ),
        Case(
            "test log",
            "unittest -v, 1 planted failure",
            "Bash",
            "fix the tax rate test",
            uni,
            ["test_tax_rate", "tax rate off"],
        ),
    ]


def ruff_case(base: Path, tree: Path) -> Case:
    target = base / "lint"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tree, target, ignore=shutil.ignore_patterns(".ctx", "__pycache__", "*.pyc"))
    planted = target / "planted_module.py"
    planted.write_text("def compute_total(items):\n    return sum(items) + undefined_discount\n")
    out = run(
        [str(BIN / "ruff"), "check", "--no-cache", "--select", "E,F,W,B,UP", "--output-format", "concise", "."], target
    )
    return Case(
        "lint",
        "ruff check (E,F,W,B,UP) + a planted undefined name",
        "Bash",
        "why does compute_total in planted_module fail with a NameError?",
        out,
        ["planted_module.py:2", "undefined_discount"],
    )


def grep_case(tree: Path, word: str, file_hint: str, needle: str) -> Case:
    out = run(["grep", "-rn", "--include=*.py", word, "."], tree)
    return Case("search", f"grep -rn {word}", "Bash", f"where is {word} defined in {file_hint}?", out, [needle])


def pip_case() -> Case:
    out = run(
        [str(BIN / "python"), "-m", "pip", "install", "-v", "--no-deps", "--dry-run", "six", "ctx-no-such-pkg-xyz==9.9"]
    )
    return Case(
        "command",
        "pip install -v, one missing package",
        "Bash",
        "why did pip fail to install?",
        out,
        ["No matching distribution found for ctx-no-such-pkg-xyz"],
    )


def npm_case() -> Case | None:
    vscode = ROOT / "editors" / "vscode"
    if not (vscode / "node_modules").is_dir() or shutil.which("npm") is None:
        return None
    out = run(["npm", "ls", "--all", "--json"], vscode)
    return Case(
        "json",
        "npm ls --all --json (VS Code client)",
        "Bash",
        "which version of vscode-languageclient do we have?",
        out,
        ['"vscode-languageclient"'],
    )


def git_case() -> Case | None:
    if not (ROOT / ".git").exists():
        return None
    out = run(["git", "log", "-p", "-n", "60", "--", "ctx_lsp"], ROOT)
    subjects = re.findall(r"^    (Gateway: .{20,60})", out, re.MULTILINE)
    if not subjects:
        return None
    return Case(
        "command", "git log -p -n 60", "Bash", f"when did we change this: {subjects[-1][:50]}", out, [subjects[-1][:50]]
    )


def compile_case(base: Path, tree: Path) -> Case:
    target = base / "compile"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tree, target, ignore=shutil.ignore_patterns(".ctx", "__pycache__", "*.pyc"))
    (target / "broken_module.py").write_text("def f(:\n    return 1\n")
    out = run([str(BIN / "python"), "-m", "compileall", "-f", "."], target)
    return Case(
        "command",
        "python -m compileall -f (one syntax error)",
        "Bash",
        "why does broken_module not compile?",
        out,
        ["broken_module.py", "SyntaxError"],
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sympy", type=Path, help="a sympy source tree (default: this repository's sources)")
    ap.add_argument("--quick", action="store_true", help="small cases (the smoke test)")
    args = ap.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    tree = args.sympy or ROOT / "ctx_lsp"
    cases = [*pytest_cases(DATA, args.quick), ruff_case(DATA, tree), compile_case(DATA, tree), pip_case()]
    if args.sympy:
        cases.append(grep_case(tree, "def simplify", "simplify/simplify.py", "sympy/simplify/simplify.py"))
        cases.append(grep_case(tree, "class Poly", "polys/polytools.py", "sympy/polys/polytools.py"))
    else:
        cases.append(grep_case(ROOT, "def plan", "core/planner.py", "ctx_lsp/core/planner.py"))
    cases += [c for c in (npm_case(), git_case()) if c is not None]
    print(f"{'kind':<9} {'case':<52} {'tokens':>8} {'shrunk':>8} {'saved':>6} {'needle':>7} {'ms/10k':>7}")
    kept = big = saved_ok = 0
    for c in cases:
        tokens = COUNT(c.text)  # counted once, as the gateway's counter caches it
        t0 = time.perf_counter()
        for _ in range(3):
            out = shrink(c.text, tool=c.tool, query=c.query, count=COUNT, threshold=2000, expand_id="m-bench")
        ms = (time.perf_counter() - t0) / 3 * 1000
        text = out.text if out else c.text
        needle = all(n in text for n in c.needles)
        kept += needle
        saved = 1 - (out.tokens / tokens) if out else 0.0
        if tokens > 2000:
            big += 1
            saved_ok += saved >= 0.7
        print(
            f"{c.kind:<9} {c.name[:52]:<52} {tokens:>8,} {(out.tokens if out else tokens):>8,} {saved:>6.0%} "
            f"{'yes' if needle else 'NO':>7} {ms / max(1, tokens) * 10_000:>7.2f}"
        )
    print(f"needle kept in {kept}/{len(cases)}; ≥ 70% saved on {saved_ok}/{big} outputs over 2k tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
