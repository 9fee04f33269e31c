"""Bug reports with tracebacks, from real failing code: a task set of another shape than the dev
set's commit messages, for ``real.py --set``.

    python benchmarks/retrieval/bugs/make.py --dev ../shared/retrieval-dev --python PY \\
        [--per-project 15] [--out benchmarks/retrieval/bugs/tasks.jsonl]

For each project below (a tree of the dev set, so its code is on disk here), functions of the
project's own package are taken in an order fixed by a hash of their names; each gets one small
mutation (a comparison flipped, a return value dropped, a boolean or an operator swapped, a
number off by one: the bugs people write), and the project's own test suite runs on the
mutated copy. When a test that passed before now fails, its failure as pytest prints it (the
test's id and a Python traceback with the error) is the bug report, and the mutated function
is the gold: the code that has to change. The traceback names the gold only when the error
surfaces inside it; often it fails in a caller, or only in the test's assertion.

``PY`` is a Python with pytest and the projects' test dependencies (MarkupSafe,
ephemeral-port-reserve, pytest-timeout, trio, simplejson, python-dateutil, pytz); the dev set's
trees hold their ``.py`` files only, so tests that need data files fail before any mutation
and are left out (``--deselect``). The retrieval tree of a task is the unmutated tree: the
mutation changes one line of the gold function, nothing else.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (repo, tag of a dev-set tree, package folder, pytest arguments)
PROJECTS = [
    ("pallets/jinja", "f54fa113d3", "src/jinja2", ["--ignore=tests/test_async.py"]),
    (
        "pallets/werkzeug",
        "f282943ddc",
        "src/werkzeug",
        [
            "--ignore=tests/test_serving.py",
            "--ignore=tests/test_debug.py",
            "--ignore=tests/live_apps",
            "--ignore=tests/middleware/test_http_proxy.py",
        ],
    ),
    ("marshmallow-code/marshmallow", "bdcd9500a8", "src/marshmallow", []),
]
PYTEST = ["-p", "no:cacheprovider", "-q", "--timeout=30", "--continue-on-collection-errors"]
MAX_TRIES = 80  # functions tried per project
MAX_QUERY_CHARS = 6000  # a report longer than this keeps its end (the innermost frames, the error)

_SWAP_CMP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def mutations(func: ast.AST) -> list[tuple[ast.AST, ast.AST, str]]:
    """``(node, replacement, what)`` for every one-line mutation site in a function."""
    out = []
    for node in ast.walk(func):
        if getattr(node, "lineno", None) != getattr(node, "end_lineno", -1):
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SWAP_CMP:
            new = ast.Compare(node.left, [_SWAP_CMP[type(node.ops[0])]()], node.comparators)
            out.append((node, new, "comparison flipped"))
        elif isinstance(node, ast.BoolOp):
            new = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
            out.append((node, new, "and/or swapped"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((node, node.operand, "negation dropped"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            out.append((node, ast.Constant(not node.value), "boolean flipped"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            out.append((node, ast.Constant(node.value + 1), "number off by one"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            new = ast.BinOp(node.left, ast.Sub() if isinstance(node.op, ast.Add) else ast.Add(), node.right)
            out.append((node, new, "operator swapped"))
        elif isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
            out.append((node, ast.Return(ast.Constant(None)), "return value dropped"))
    return out


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def functions(tree: Path, package: str) -> list[tuple[str, str, str, ast.AST]]:
    """``(rel, name, kind, node)``: top-level functions and methods of top-level classes."""
    out = []
    for path in sorted((tree / package).rglob("*.py")):
        rel = path.relative_to(tree).as_posix()
        module = ast.parse(path.read_text(encoding="utf-8"))
        for node in module.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((rel, node.name, "function", node))
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                        out.append((rel, f"{node.name}.{sub.name}", "method", sub))
    return out


def run_tests(py: str, work: Path, args: list[str], deselect: list[str], first: bool) -> str:
    cmd = [py, "-m", "pytest", *PYTEST, *args, *(f"--deselect={d}" for d in deselect)]
    cmd += ["-x", "--tb=native", "-rf"] if first else ["--tb=no", "-rfE"]
    env = {**os.environ, "PYTHONPATH": f"{work / 'src'}:{work}", "PYTHONDONTWRITEBYTECODE": "1"}
    res = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600, env=env, check=False)
    return res.stdout


def failing(output: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^(?:FAILED|ERROR) (\S+)", output, re.M)]


def first_failure(output: str) -> tuple[str, str] | None:
    """The failing test's id and its native traceback, from ``pytest -x --tb=native`` output."""
    ids = failing(output)
    m = re.search(r"^_{3,} (.+?) _{3,}\n(.*?)(?=^(?:-{3,} Captured|={3,}|_{3,} ))", output, re.M | re.S)
    if not ids or m is None:
        return None
    return ids[0], m.group(2).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--python", required=True, help="a Python with pytest and the projects' test dependencies")
    ap.add_argument("--per-project", type=int, default=15)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ctx-bug-reports"))
    ap.add_argument("--out", type=Path, default=HERE / "tasks.jsonl")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("retrieval_dev_run", args.dev / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    tasks = []
    for repo, tag, package, pytest_args in PROJECTS:
        tree = run.tree_for({"repo": repo, "tag": tag}, args.work / "cache")
        work = args.work / repo.split("/")[1]  # where a user's checkout would be
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(tree, work, ignore=shutil.ignore_patterns(".ctx", ".complete"))
        broken = failing(run_tests(args.python, work, pytest_args, [], first=False))
        print(f"{repo}: {len(broken)} tests fail before any mutation (left out)", file=sys.stderr)
        found = 0
        candidates = functions(work, package)
        candidates.sort(key=lambda f: hashlib.sha256(f"{repo}:{f[0]}:{f[1]}".encode()).hexdigest())
        for rel, name, kind, node in candidates[:MAX_TRIES]:
            if found >= args.per_project:
                break
            sites = mutations(node)
            if not sites:
                continue
            pick = int(hashlib.sha256(f"{repo}:{rel}:{name}:site".encode()).hexdigest(), 16) % len(sites)
            target, replacement, what = sites[pick]
            path = work / rel
            original = path.read_text(encoding="utf-8")
            lines = original.splitlines(keepends=True)
            i = target.lineno - 1
            line = lines[i].encode()
            new_text = ast.unparse(replacement)
            mutated = line[: target.col_offset] + new_text.encode() + line[target.end_col_offset :]
            lines[i] = mutated.decode()
            path.write_text("".join(lines), encoding="utf-8")
            try:
                found_failure = first_failure(run_tests(args.python, work, pytest_args, broken, first=True))
            finally:
                path.write_text(original, encoding="utf-8")
            if found_failure is None:
                continue
            test_id, traceback = found_failure
            mutated_line = lines[i].strip()
            query = f"{test_id} fails:\n\n{traceback}"
            if len(query) > MAX_QUERY_CHARS:
                query = "…\n" + query[-MAX_QUERY_CHARS:]
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found += 1
            tasks.append(
                {
                    "id": f"{repo.replace('/', '__')}@bug{found:02d}",
                    "repo": repo,
                    "tag": tag,
                    "query": query,
                    "gold_files": [rel],
                    "gold_symbols": [{"path": rel, "name": name, "kind": kind, "start": start, "end": node.end_lineno}],
                    "mutation": {"line": i + 1, "what": what, "before": line.decode().strip(), "after": mutated_line},
                    "gold_in_traceback": f'{rel}", line' in traceback,
                }
            )
            print(f"  {name}: {what} → {test_id}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    print(f"{len(tasks)} tasks → {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
