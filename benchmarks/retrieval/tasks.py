"""Derive retrieval tasks from real code, deterministically.

A task is (query, workspace, gold files, gold symbols). Here: the query is the first sentence
of a function's (or method's) docstring with the function's own name removed; the gold is
that function and its file. Functions are chosen by a hash of their qualified name, so the
same source gives the same tasks on any machine.

With ``--callees`` the gold also holds the workspace definitions the function calls (found
with jedi's goto on each call in its body, not with ctx_lsp's graph), up to MAX_CALLEES:
"what do I need to understand this function" — the case graph relevance is for. Only
functions that call at least one workspace definition qualify.

    .venv/bin/python benchmarks/retrieval/tasks.py /tmp/sympy_src/sympy-1.14.0 --name sympy-1.14.0 \\
        --count 60 > benchmarks/retrieval/tasks/sympy-1.14.0.json

Parsed with the stdlib ``ast`` directly (not with ctx_lsp's index, which is what is measured).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ctx_lsp.workspace.files import WorkspaceWalker  # which files count as the workspace
from ctx_lsp.workspace.parse import module_name_for

MAX_CALLEES = 4
MIN_WORDS = 5
MAX_WORDS = 40
_SENTENCE_END = re.compile(r"(?<=[a-z0-9\)\]`'\"])\.(\s|$)")
_GENERIC = re.compile(r"^(see|same as|alias|deprecated|todo|helper|wrapper|internal)\b", re.I)


def first_sentence(doc: str) -> str:
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    m = _SENTENCE_END.search(para)
    return para[: m.start() + 1] if m else para


def strip_name(sentence: str, name: str) -> str:
    """The sentence without the function's own name (``name``, ``name()``, ```name```)."""
    out = re.sub(rf"`*\b{re.escape(name)}\b(\(\))?`*", " ", sentence, flags=re.I)
    return " ".join(out.split())


def _defs(tree: ast.Module, module: str):
    """(qualname, name, node) of module-level functions and methods of (nested) classes."""
    stack = [(module, tree.body)]
    while stack:
        prefix, body = stack.pop()
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{prefix}.{node.name}", node.name, node
            elif isinstance(node, ast.ClassDef):
                stack.append((f"{prefix}.{node.name}", node.body))


def callees(root: Path, rel: str, source: str, node: ast.AST, qualname: str) -> list[tuple[str, str, int, int]]:
    """(qualname, path, first line, last line) of the workspace definitions ``node``'s calls
    go to, per jedi (lines 0-based)."""
    import jedi

    from ctx_lsp.workspace.resolve import _qualname

    script = jedi.Script(code=source, path=root / rel, project=jedi.Project(path=root))
    found: dict[str, tuple[str, int, int]] = {}
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name | ast.Attribute):
            continue
        func = call.func
        line, col = func.end_lineno or func.lineno, (func.end_col_offset or 1) - 1
        try:
            names = script.goto(line, col, follow_imports=True)
        except Exception:  # jedi on odd code: skip that call
            continue
        for n in names:
            if n.type not in ("function", "class") or n.module_path is None:
                continue
            try:
                target_rel = Path(n.module_path).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            target = _qualname(root, n)
            start, end = n.get_definition_start_position(), n.get_definition_end_position()
            if target and start and end and target != qualname and not target.startswith(qualname + "."):
                found.setdefault(target, (target_rel, start[0] - 1, end[0] - 1))
    return [(q, *where) for q, where in sorted(found.items())[:MAX_CALLEES]]


def derive_tasks(
    root: Path, name: str, count: int, *, include_tests: bool = False, with_callees: bool = False
) -> list[dict]:
    candidates = []
    seen_queries: set[str] = set()
    for entry in WorkspaceWalker(root).walk():
        rel = entry.rel
        if not include_tests and ("/tests/" in f"/{rel}" or rel.rsplit("/", 1)[-1].startswith("test_")):
            continue
        try:
            source = entry.path.read_bytes()
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for qualname, fname, node in _defs(tree, module_name_for(rel)):
            if fname.startswith("test") or (fname.startswith("__") and fname.endswith("__")):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            query = strip_name(first_sentence(doc), fname)
            words = query.split()
            if not MIN_WORDS <= len(words) <= MAX_WORDS or _GENERIC.match(query) or ">>>" in query:
                continue
            if query.lower() in seen_queries:
                continue
            seen_queries.add(query.lower())
            key = hashlib.sha1(f"{name}:{qualname}".encode()).hexdigest()
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            task = {
                "query": query,
                "workspace": name,
                "gold_files": [rel],
                "gold_symbols": [qualname],
                # where the definition is (0-based first and last line): for chunk baselines
                "gold_ranges": [[rel, start, (node.end_lineno or node.lineno) - 1]],
            }
            candidates.append((key, (task, source, node)))
    candidates.sort(key=lambda kv: kv[0])
    tasks = []
    for _, (task, source, node) in candidates:
        if len(tasks) >= count:
            break
        if with_callees:
            rel, qualname = task["gold_files"][0], task["gold_symbols"][0]
            extra = callees(root, rel, source.decode("utf-8", "replace"), node, qualname)
            if not extra:
                continue
            task["gold_symbols"] += [q for q, *_ in extra]
            task["gold_files"] = sorted({rel, *(r for _, r, _, _ in extra)})
            task["gold_ranges"] += [[r, start, end] for _, r, start, end in extra]
            task["kind"] = "function + callees"
        tasks.append(task)
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--name", required=True, help="the workspace's name in the tasks (e.g. sympy-1.14.0)")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--include-tests", action="store_true")
    parser.add_argument("--callees", action="store_true", help="gold = the function and what it calls")
    args = parser.parse_args(argv)
    tasks = derive_tasks(
        args.root.resolve(), args.name, args.count, include_tests=args.include_tests, with_callees=args.callees
    )
    json.dump(tasks, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
