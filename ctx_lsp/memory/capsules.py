"""Capsules: module summaries that know when they are stale.

A capsule is an orientation aid, never ground truth: the module docstring, its public API and
its main relations (extractive), or a model's summary (llm). It is stored with a hash of the
code it summarises, normalised through the syntax tree (Python's ``ast``, tree-sitter's for the
other languages) so that whitespace- and comment-only edits do not count as changes while any
code change does.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from typing import Protocol

from ctx_lsp.memory.llm import ChatClient, LlmError
from ctx_lsp.workspace.languages import language_of

EXTRACTIVE_CONFIDENCE = 0.6
LLM_CONFIDENCE = 0.8
MAX_API_LINES = 25
CAPSULE_INSTRUCTIONS = (
    "Summarise this module for a developer who has not read it: its purpose, its main classes and "
    "functions and how they are used, and what it depends on. At most 12 lines. Do not invent anything."
)


class SymbolLike(Protocol):
    qualname: str
    name: str
    kind: str
    parent: str
    signature: str
    docstring: str


def code_hash(source: str, path: str = "") -> str:
    """A hash of the code's meaning: the syntax tree without positions, so formatting and
    comments do not matter. Source that does not parse is hashed as text (a broken file is a
    change). ``path`` says the language (none: Python)."""
    lang = language_of(path) if path else "python"
    if lang is not None and lang != "python":
        from ctx_lsp.workspace.languages.treesitter import syntax_digest

        digest = syntax_digest(lang, source)
        if digest is not None:
            return digest
    try:
        normal = ast.dump(ast.parse(source), annotate_fields=False, include_attributes=False)
    except (SyntaxError, ValueError):
        normal = "\0unparsable\0" + "\n".join(line.rstrip() for line in source.splitlines())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def extractive_capsule(
    path: str, module: str, symbols: Sequence[SymbolLike], imports: Sequence[str], used_by: Sequence[str]
) -> str:
    mod = next((s for s in symbols if s.kind == "module"), None)
    doc = (mod.docstring.strip().split("\n\n")[0] if mod and mod.docstring else "").strip()
    lines = [f"Capsule of {module} ({path}) — an extract, not the code itself."]
    if doc:
        lines.append(" ".join(doc.split()))
    public = [
        s
        for s in symbols
        if s.parent == module and s.kind in ("class", "function", "variable") and not s.name.startswith("_")
    ]
    if public:
        lines.append("Public API:")
        for s in public[:MAX_API_LINES]:
            entry = f"- {s.signature or s.name}"
            if s.kind == "class":
                methods = [m.name for m in symbols if m.parent == s.qualname and m.kind == "method"]
                public_methods = [m for m in methods if not m.startswith("_") or m == "__init__"]
                if public_methods:
                    entry += f" — methods: {', '.join(public_methods[:10])}"
            if s.docstring:
                entry += f" — {' '.join(s.docstring.split())[:100]}"
            lines.append(entry)
        if len(public) > MAX_API_LINES:
            lines.append(f"- … and {len(public) - MAX_API_LINES} more")
    if imports:
        lines.append(f"Depends on: {', '.join(sorted(set(imports))[:12])}")
    if used_by:
        lines.append(f"Used by: {', '.join(sorted(set(used_by))[:12])}")
    return "\n".join(lines)


def llm_capsule(client: ChatClient, module: str, source: str, count, window: int) -> str:
    room = window - 800 - count(CAPSULE_INSTRUCTIONS)
    text = source
    if count(text) > room:  # keep the head of a long module: its docstring, imports and first defs
        text = text[: max(room, 200) * 3] + "\n# … cut to fit the summariser's window"
    body = client.complete(
        [
            {"role": "system", "content": CAPSULE_INSTRUCTIONS},
            {"role": "user", "content": f"Module {module}:\n\n{text}"},
        ],
        600,
    )
    return f"Capsule of {module} — summary by {client.endpoint.model}, not the code itself.\n{body}"


def make_capsule(
    path: str,
    module: str,
    source: str,
    symbols: Sequence[SymbolLike],
    imports: Sequence[str],
    used_by: Sequence[str],
    *,
    client: ChatClient | None,
    count,
    window: int,
) -> tuple[str, str, float, str | None]:
    """(text, source: extractive | llm, confidence, note)."""
    if client is not None:
        try:
            return llm_capsule(client, module, source, count, window), "llm", LLM_CONFIDENCE, None
        except LlmError as err:
            note = f"llm capsule failed ({err}); extracted instead"
            return (
                extractive_capsule(path, module, symbols, imports, used_by),
                "extractive",
                EXTRACTIVE_CONFIDENCE,
                note,
            )
    return extractive_capsule(path, module, symbols, imports, used_by), "extractive", EXTRACTIVE_CONFIDENCE, None
