"""Side requests: one-shot calls an assistant makes beside the user's conversation — a title for
the session, a summary of the chat so far, a commit message, a quota check. Retrieved code cannot
help them, and added to them it costs many times the request (Claude Code's title request is
~900 tokens; a context block is several thousand), so they get none. ``ctx-lsp stats`` folds
them into the run they belong to.

The rule, read from the assistants' own requests (tests/fixtures/harness/):

1. A request that offers tools, or carries a tool exchange, is an agent's turn: never a side
   request.
2. One that allows at most ``TINY_OUTPUT`` tokens of reply is a check (Claude Code's quota
   check asks for 1 token).
3. One whose instructions — the system prompt, or the only user message when there is none —
   are short and open by asking for a title, a summary of the conversation, a commit message or
   whether the topic changed: Claude Code's title request ("Generate a concise, sentence-case
   title…", no tools, a JSON schema for ``title``), aider's chat summary ("*Briefly* summarize
   this partial conversation…") and commit message ("…generates concise, one-line Git commit
   messages…") requests, which its weak model sends.

The model is not part of the rule: a side request usually goes to a smaller model, but not
always (Claude Code sends it to the main model when no small one is set), and a user's own
script may ask a small model a real question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctx_lsp.core.items import Message

TINY_OUTPUT = 16  # tokens of reply: a check, not an answer
SHORT_INSTRUCTIONS = 6_000  # characters: a side task's instructions are short; an agent's are not
INSTRUCTIONS_HEAD = 400  # characters of them where the task is said
SIDE_TASKS = (
    ("title", re.compile(r"\b(?:generate|write|create|suggest|give|produce|come up with)\b[^.\n]{0,80}\btitle\b")),
    (
        "summary",
        re.compile(
            r"\bsummari[sz]e\b[^.\n]{0,60}\b(?:conversation|chat|session|discussion)\b"
            r"|\bsummary of (?:the|this) (?:conversation|chat|session)\b"
        ),
    ),
    ("commit message", re.compile(r"\bcommit messages?\b")),
    ("topic", re.compile(r"\bnew conversation topic\b")),
)


def side_request(system: str, messages: Sequence[Message], tools: Sequence[str], max_output: int | None) -> str | None:
    """What kind of side request this is ("title", "summary", "commit message", "topic",
    "check"), or None for a request of the user's conversation. ``system``: the client's
    system prompt as text; ``tools``: the names of the tools it offers."""
    if tools or any(m.role == "tool" or m.tool_calls for m in messages):
        return None
    if max_output is not None and max_output <= TINY_OUTPUT:
        return "check"
    instructions = system.strip()
    if not instructions:
        users = [m for m in messages if m.role == "user"]
        instructions = users[0].content.strip() if len(users) == 1 else ""
    if not instructions or len(instructions) > SHORT_INSTRUCTIONS:
        return None
    head = instructions[:INSTRUCTIONS_HEAD].lower()
    return next((kind for kind, pattern in SIDE_TASKS if pattern.search(head)), None)


def is_side_request(system: str, messages: Sequence[Message], tools: Sequence[str], max_output: int | None) -> bool:
    """Whether a request is a side request (``side_request``): it gets no added context."""
    return side_request(system, messages, tools, max_output) is not None
