"""``ctx-lsp statusline``: one line for Claude Code's status line command — the active
conversation's budget, whether the provider's prompt cache is still warm (and for how long),
what ctx_lsp saved so far, counted the way you pay, and what it added to the latest request (or,
in a word, why nothing).

Claude Code runs the command with a JSON object on stdin (its ``session_id``, ``cwd``…) and
shows what it prints. ``ctx-lsp wrap claude`` sets it up for the run."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, cache_label, savings_label
from ctx_lsp.core.verdict import context_label
from ctx_lsp.engine import Engine
from ctx_lsp.sessions.engine import SessionEngine


def line(workspace: Path, claude: dict[str, Any], now: float | None = None) -> str:
    sessions = SessionEngine(Engine(workspace))
    try:
        sid = claude.get("session_id")
        run = sessions.gateway_run("anthropic", sid if isinstance(sid, str) else None)
    finally:
        sessions.close()
    if run is None:
        return "ctx · no requests through the gateway yet"
    last, budget = run.last, run.prompt_budget
    used = last.input_tokens or last.forwarded_tokens
    parts = [f"ctx {format_tokens(used)}" + (f"/{format_tokens(budget)}" if budget else "")]
    parts.append(f"cache {cache_label(last.cache_used, now or time.time(), last.cache_ttl or CACHE_TTL_SECONDS)}")
    if saved := savings_label(run.totals, with_share=True):
        parts.append(saved)
    parts.append(context_label(msgspec.structs.asdict(last)))
    return " · ".join(parts)


def main(workspace: Path | None) -> int:
    try:
        claude = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        claude = {}
    root = workspace or Path(claude.get("workspace", {}).get("project_dir") or claude.get("cwd") or ".")
    try:
        print(line(root, claude if isinstance(claude, dict) else {}))
    except Exception as err:  # a status line never fails the assistant
        print(f"ctx · {type(err).__name__}")
    return 0
