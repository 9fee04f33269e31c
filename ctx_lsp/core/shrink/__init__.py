"""Big tool outputs, shrunk once, the needle kept (docs/gateway.md, "Big tool outputs").

A tool result over a threshold that is of a kind we recognise — test and build output, search
output, a JSON dump, long command output — is replaced by a shorter version that keeps what a
model looks for in it (failures and tracebacks, the hits that match the request, the shape and
the odd items, the lines that look like errors), headed by a marker that says plainly what was
cut and how to get the whole of it back. Each shrinker is a pure function of the text (and the
request's words): the same input gives the same bytes, so the shrunk text can be sent again in
every later request and the provider's cache keeps hitting.

Never shrunk: reads of files (edit tools match exact text), outputs already short, anything we do
not recognise from a tool that does not run commands.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ctx_lsp.core.shrink import generic, jsondump, search, testlog

MIN_SAVING = 0.3  # a shrink that saves less than this share is not worth the marker and the doubt
READ_TOOLS = frozenset(
    {"read", "read_file", "readfile", "view", "view_file", "open_file", "cat_file", "get_file", "notebookread"}
    | {"expand", "get_symbol"}  # ctx_lsp's own: the whole output asked for, a symbol's code
)
COMMAND_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "run_command", "run_terminal_cmd", "terminal", "execute_command", "local_shell"}
)


class Shrunk(msgspec.Struct, frozen=True, kw_only=True):
    text: str  # the marker line, then what was kept
    kind: str  # test_log, search, json, command
    original_tokens: int
    tokens: int


# in order: the first that recognises the text shrinks it
SHRINKERS: tuple[tuple[str, Callable[[str], bool], Callable[[str, str], tuple[str, str]]], ...] = (
    ("json", jsondump.looks_like, jsondump.shrink),  # first: one character tells it is not JSON
    ("test_log", testlog.looks_like, testlog.shrink),
    ("search", search.looks_like, search.shrink),
)


def shrink(
    text: str, *, tool: str, query: str, count: Callable[[str], int], threshold: int, expand_id: str
) -> Shrunk | None:
    """The shrunk form of a tool's output, or None when it stays as it is."""
    name = tool.lower().removeprefix("mcp__").split("__")[-1]
    if name in READ_TOOLS:
        return None
    tokens = count(text)
    if tokens <= threshold:
        return None
    found = next(((kind, shrinker) for kind, recognise, shrinker in SHRINKERS if recognise(text)), None)
    if found is not None:
        kind, shrinker = found
    elif name in COMMAND_TOOLS:
        kind, shrinker = "command", generic.shrink
    else:
        return None
    kept, what = shrinker(text, query)
    marker = (
        f"[ctx_lsp shortened this {kind.replace('_', ' ')} output: {tokens:,} tokens → about {count(kept):,}; "
        f"kept {what}. The whole output: expand({expand_id!r}) with the ctx tools.]"
    )
    out = marker + "\n" + kept
    shrunk_tokens = count(out)
    if shrunk_tokens > tokens * (1 - MIN_SAVING):
        return None
    return Shrunk(text=out, kind=kind, original_tokens=tokens, tokens=shrunk_tokens)
