"""The command line behind a tool output, read from the tool call's arguments: which program
printed it (``git log``, ``rg``) and whether it printed a file the model means to read whole
(``cat``, ``head``, ``sed -n``)."""

from __future__ import annotations

import re
import shlex

import msgspec

_COMMAND_KEYS = ("command", "cmd", "script", "commandLine", "command_line")
# The programs whose output is the file itself: what the model reads must reach it whole.
READERS = frozenset(
    {"cat", "head", "tail", "nl", "less", "more", "bat", "batcat", "tac", "type", "get-content", "view"}
)
SUBCOMMANDS = frozenset({"git", "hg", "cargo", "npm", "go", "kubectl", "gh", "docker", "ctx-lsp"})
_SEGMENTS = re.compile(r"\|\||&&|;|\||\n")


def command_of(arguments: str) -> str:
    """The command line in a tool call's arguments (JSON), or "" when it has none. Codex sends
    ``["bash", "-lc", "cat x"]``; Claude Code ``{"command": "cat x"}``."""
    try:
        args = msgspec.json.decode(arguments) if arguments.strip().startswith(("{", "[")) else None
    except msgspec.DecodeError:
        return ""
    if isinstance(args, dict):
        args = next((args[k] for k in _COMMAND_KEYS if k in args), None)
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        shells = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "powershell", "pwsh", "cmd")
        if len(args) >= 3 and args[0] in shells and args[1] in ("-c", "-lc", "-Command", "/c"):
            return args[-1]
        return shlex.join(args)
    return args if isinstance(args, str) else ""


def programs(command: str) -> list[list[str]]:
    """Each pipeline segment's words (environment assignments and ``sudo`` left out)."""
    out = []
    for segment in _SEGMENTS.split(command):
        try:
            words = shlex.split(segment, comments=False)
        except ValueError:
            words = segment.split()
        while words and (re.match(r"^\w+=", words[0]) or words[0] in ("sudo", "env", "time", "command", "exec")):
            words = words[1:]
        if words:
            out.append([words[0].rsplit("/", 1)[-1].lower(), *words[1:]])
    return out


def reads_file(command: str) -> bool:
    """The output is a file's text: every program of the pipeline prints files or a part of
    what it is given (``cat a.py``, ``head -n 200 a.py``, ``sed -n '1,80p' a.py``, ``nl -ba a.py``,
    ``cat a.py | head -100``); ``grep -rn x . | head`` is a search's output, not a file."""
    segments = programs(command)
    return bool(segments) and all(_prints_file(words) for words in segments)


def _prints_file(words: list[str]) -> bool:
    name, args = words[0], words[1:]
    if name in READERS:
        return True
    if name == "sed":
        return "-n" in args and any(re.fullmatch(r"['\"]?\d+(,\d+)?p['\"]?", a) for a in args)
    return name == "awk" and any("NR" in a for a in args)


def program(command: str) -> str:
    """The first program of the command with its subcommand when it has one (``git log``)."""
    segments = programs(command)
    if not segments:
        return ""
    words = segments[0]
    sub = next((w for w in words[1:] if not w.startswith("-")), "")
    return f"{words[0]} {sub}".strip() if words[0] in SUBCOMMANDS else words[0]
