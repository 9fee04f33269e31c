"""Runs: the requests through the gateway as a person remembers them — one run of an assistant,
labelled with the assistant, its model, what the user asked first and when — instead of one
"session" per conversation hash.

What a request is labelled with is read when it is recorded (``assistant_of``, ``user_line``,
``one_shot``); how recorded requests make runs is ``runs``. Pure: no I/O, no clock.

The rule for side requests, in one place. An assistant sends requests that are not its
conversation: Claude Code asks for a session title and checks its quota (on its small model when
one is set, with a system prompt of their own, no tools, one user message), aider asks its weak
model for chat summaries and commit messages. Each is a *one-shot* request — no tools, a single
user message, no earlier turn — and, having a system prompt or first message of its own, it gets
a session of its own. So:

1. Requests that carry the same conversation id of the client (Claude Code's
   ``metadata.user_id`` session, Codex's ``prompt_cache_key``) are one run: its conversation, its
   sub-agents, its title and quota requests.
2. A session without such an id, made only of one-shot requests, joins the latest run of the same
   assistant that is still open when it starts (first request to ``RUN_GAP`` seconds after its
   last): aider's weak-model calls, the one-shot calls of a script.
3. A session the client named itself (the ``X-Ctx-Session`` header) is never folded: the client
   said what its conversation is.

Within a run, its conversation is the session with the most requests that are not one-shot (the
first such on a tie; the first session when all are one-shot); the other requests are its side
requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctx_lsp.core.harness import user_words
from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import Message

RUN_GAP = 300.0  # seconds after a run's last request in which a one-shot request still joins it
TITLE_CHARS = 80
# the first product of a User-Agent: name/version
PRODUCT = re.compile(r"^\s*([A-Za-z][\w.+-]*)(?:/([\w.+-]+))?")
# User-Agent products → the assistant's name; SDKs keep their runtime ("OpenAI/Python 2.20.0")
ASSISTANTS = {
    "claude-cli": "Claude Code",
    "claude-code": "Claude Code",
    "codex_exec": "Codex",
    "codex_cli_rs": "Codex",
    "codex_tui": "Codex",
    "codex": "Codex",
    "aider": "aider",
    "litellm": "litellm",
}
SDKS = {
    "openai": "OpenAI SDK",
    "asyncopenai": "OpenAI SDK",
    "anthropic": "Anthropic SDK",
    "asyncanthropic": "Anthropic SDK",
}


def assistant_of(user_agent: str, originator: str = "") -> str:
    """The assistant a request came from, as its User-Agent (and Codex's ``originator`` header)
    names it: "Claude Code 2.1.197", "Codex 0.169.0", "OpenAI SDK (Python 2.20.0)"; the first
    product of any other User-Agent; "" when there is none. Only these two headers are read."""
    m = PRODUCT.match(user_agent or "")
    if not m:
        return ASSISTANTS.get(originator.lower(), originator)[:40] if originator else ""
    name, version = m.group(1), m.group(2) or ""
    low = name.lower()
    if low in ASSISTANTS or originator.lower() in ASSISTANTS:
        label = ASSISTANTS.get(low) or ASSISTANTS[originator.lower()]
        return f"{label} {version}".strip()[:40]
    if low in SDKS:  # "OpenAI/Python 2.20.0": the runtime is the "version" part, the SDK's version follows
        rest = user_agent[m.end() :].strip().split()
        runtime = f"{version} {rest[0]}" if rest else version
        return f"{SDKS[low]} ({runtime})".strip()[:40] if runtime else SDKS[low]
    return f"{name} {version}".strip()[:40]


def user_line(messages: Sequence[Message]) -> str:
    """What the user asked in a request: the first line of the latest user message that holds
    words of the user's own ("" when none does). Whole and not masked: the caller masks it, then
    ``trimmed``, before it is stored."""
    for m in reversed(messages):
        if m.role != "user":
            continue
        words = user_words(m.content)
        if words:
            return next(s.strip() for s in words.splitlines() if s.strip())
    return ""


def trimmed(line: str) -> str:
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def one_shot(messages: Sequence[Message], tools: Sequence[str]) -> bool:
    """A request that is one question and nothing else: no tools, one user message, no turn
    before it (a system prompt aside)."""
    said = [m for m in messages if m.role != "system"]
    return not tools and len(said) == 1 and said[0].role == "user"


# the first word of a session named by the client's own conversation id, by the API it speaks
CLIENT_PREFIX = {"anthropic": "claude", "chat": "chat", "responses": "codex"}


def client_conversation(api: str, client_session: str) -> str:
    """How the sessions of a client's own conversation id (Claude Code's session id, Codex's
    prompt_cache_key) are named, for the client speaking ``api``: this, then what tells its
    sub-agents apart (``gateway.translate.session_of``)."""
    return f"{CLIENT_PREFIX[api]}-{content_id(client_session)[:12]}"


def run_key(named: str | None, client_session: str | None) -> str | None:
    """What ties a request to its run when recorded: a session the client named (``named``, the
    ``X-Ctx-Session`` header) is its own run; else the client's own conversation id, hashed; None
    when the client sends neither (rule 2 decides)."""
    if named:
        return f"named:{named}"
    return f"client:{content_id(client_session)[:12]}" if client_session else None


@dataclass(slots=True)
class Run:
    conversation: str  # the session that is the run's conversation
    sessions: list[str]  # every session folded in, the conversation first
    rows: list[Mapping[str, Any]] = field(default_factory=list)  # in the order recorded

    @property
    def side(self) -> list[str]:
        return self.sessions[1:]


def runs(rows: Iterable[Mapping[str, Any]]) -> list[Run]:
    """Rows of ``gateway_requests`` (in the order recorded) as runs, in order of each run's first
    request (the module's rule)."""
    by_session: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_session.setdefault(r["session"], []).append(r)
    groups: list[list[str]] = []
    by_key: dict[str, list[str]] = {}
    for session, rs in by_session.items():
        key = next((r.get("run") for r in rs if r.get("run")), None)
        if key is not None:
            if key in by_key:
                by_key[key].append(session)
            else:
                by_key[key] = [session]
                groups.append(by_key[key])
            continue
        if all(r.get("one_shot") for r in rs):
            home = _open_run(groups, by_session, rs[0])
            if home is not None:
                home.append(session)
                continue
        groups.append([session])
    out = []
    for sessions in groups:
        every = [r for s in sessions for r in by_session[s]]
        every.sort(key=lambda r: (r.get("created") or 0.0, r.get("seq") or 0))
        main = max(sessions, key=lambda s: (sum(1 for r in by_session[s] if not r.get("one_shot")), -sessions.index(s)))
        out.append(Run(main, [main, *(s for s in sessions if s != main)], every))
    out.sort(key=lambda run: run.rows[0].get("created") or 0.0)
    return out


def _open_run(
    groups: list[list[str]], by_session: Mapping[str, list[Mapping[str, Any]]], first: Mapping[str, Any]
) -> list[str] | None:
    """The latest run of ``first``'s assistant still open when ``first`` was sent (not a run the
    client named)."""
    start = first.get("created") or 0.0
    who = first.get("client") or ""
    for sessions in reversed(groups):
        rs = [r for s in sessions for r in by_session[s]]
        if str(rs[0].get("run") or "").startswith("named:") or (rs[0].get("client") or "") != who:
            continue
        begin = min(r.get("created") or 0.0 for r in rs)
        end = max(r.get("created") or 0.0 for r in rs)
        if begin <= start <= end + RUN_GAP:
            return sessions
    return None
