"""What the user asked, without the text an assistant's harness writes into user messages.

Assistants put their own text into the user's turn: Claude Code's reminders, Codex's
environment and AGENTS.md blocks, aider's file listings and edit-format reminders. It is not
the question, and words from it ("tasks", "context", "files", "edit") would drive retrieval to
unrelated code. Each rule below names the assistant that writes it; each was read from the
bodies those assistants sent (tests/fixtures/harness/, captured from Claude Code 2.1.197, Codex
0.169 and aider 0.86.2 against the fake upstream) or from their own prompt texts.

- Claude Code: ``<system-reminder>`` blocks (in the first user message of every conversation,
  in tool results, after hooks); the slash-command and ``!``-shell wrappers
  (``<command-name>``, ``<command-message>``, ``<command-args>``, ``<local-command-stdout>``,
  ``<local-command-stderr>``, ``<local-command-caveat>``, ``<bash-input>``, ``<bash-stdout>``,
  ``<bash-stderr>``), hook output (``<user-prompt-submit-hook>``), background task notices
  (``<task-notification>``) and the ``[Request interrupted by user…]`` marker.
- Codex CLI: ``<environment_context>`` (cwd, shell, date, sandbox), the workspace's AGENTS.md as
  ``# AGENTS.md instructions for PATH`` + ``<INSTRUCTIONS>…</INSTRUCTIONS>`` (older versions:
  ``<user_instructions>``), ``<user_shell_command>``, ``<turn_aborted>``,
  ``<subagent_notification>`` and ``<skill>`` blocks, each a user message of its own.
- aider: whole user messages it writes (the files it *added to the chat* with their contents,
  the read-only files, the repo map's "summaries of some files", "I am not sharing any files…",
  "Don't try and edit any existing code…", its summary of the chat so far ("I spoke to you
  previously…"), the worked example's "I switched to a new code base…"), and the edit format's
  reminder it appends to the user's latest message after a blank line (``To suggest changes to
  a file you MUST…``, ``# *SEARCH/REPLACE block* Rules:``, ``# File editing rules:``,
  ``# V4A Diff Format Rules:``, ``NEVER RETURN CODE!``, ``ONLY return code using…``, the lazy /
  overeager prompts, ``Reply in LANGUAGE.``).

The user's own words in the same message are kept. A message that is nothing but harness text
has no words of the user's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Claude Code's and Codex's blocks: a known tag, its content, its closing tag (anywhere in a
# user message; a block never closed is left alone: it may be the user's own text)
CLAUDE_CODE_TAGS = (
    "system-reminder",
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
    "task-notification",
)
CODEX_TAGS = (
    "environment_context",
    "user_instructions",
    "user_shell_command",
    "turn_aborted",
    "subagent_notification",
    "skill",
)
HARNESS_BLOCK = re.compile(
    r"<(" + "|".join(re.escape(t) for t in CLAUDE_CODE_TAGS + CODEX_TAGS) + r")>.*?</\1>",
    re.DOTALL,
)
# Codex: the workspace's AGENTS.md, headed by its path
CODEX_AGENTS_MD = re.compile(r"# AGENTS\.md instructions for [^\n]*\n+<INSTRUCTIONS>.*?</INSTRUCTIONS>", re.DOTALL)
# Claude Code: the marker it leaves where the user stopped a reply
CLAUDE_CODE_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]\n]*\]$", re.MULTILINE)

# aider: user messages that are its own, by how they start (aider/coders/*_prompts.py)
AIDER_MESSAGES = (
    "I have *added these files to the chat* so you can go ahead and edit them.",
    "Here are some READ ONLY files, provided for your reference.",
    "Here are summaries of some files present in my git repository.",
    "I am not sharing any files that you can edit yet.",
    "Don't try and edit any existing code without asking me to add the files to the chat!",
    "I spoke to you previously about a number of things.",  # its summary of the chat so far
    "I switched to a new code base. Please don't consider the above files",
)
# aider: the edit format's reminder, appended to the latest user message after a blank line
AIDER_REMINDER = re.compile(
    r"\n\n\s*(?:"
    r"To suggest changes to a file you MUST return|"
    r"# \*SEARCH/REPLACE block\* Rules:|"
    r"# File editing rules:|"
    r"# V4A Diff Format Rules:|"
    r"NEVER RETURN CODE!|"
    r"ONLY return code using the `|"
    r"You are diligent and tireless!|"
    r"Pay careful attention to the scope of the user's request\.|"
    r"Reply in [^\n]{1,40}\.\s*\Z"
    r")"
)


def user_words(text: str) -> str:
    """The words of a user message that are the user's: the harness text above left out
    (empty when the message is all harness)."""
    if text.startswith(AIDER_MESSAGES):
        return ""
    if "<" in text:
        text = HARNESS_BLOCK.sub("", text)
        if "<INSTRUCTIONS>" in text:
            text = CODEX_AGENTS_MD.sub("", text)
    if "[Request interrupted by user" in text:
        text = CLAUDE_CODE_INTERRUPTED.sub("", text)
    cut = AIDER_REMINDER.search(text)
    if cut is not None:
        text = text[: cut.start()]
    return text.strip()


def is_harness(text: str) -> bool:
    """Whether a user message is all harness text (no word of it is the user's)."""
    return not user_words(text)


def first_words(texts: Iterable[str]) -> str:
    """The user's first words in a conversation's user messages (in order), skipping what is
    all harness and aider's worked example (the user messages before its "I switched to a new
    code base"): what a list names the conversation by."""
    found = ""
    for text in texts:
        if text.startswith(AIDER_MESSAGES[-1]):
            found = ""  # what came before was aider's example, not the user
            continue
        if not found:
            found = user_words(text)
    return found
