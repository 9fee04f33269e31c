"""Big tool outputs, shrunk once, the needle kept (docs/gateway.md, "Big tool outputs").

A tool result over a threshold that is of a kind we recognise — a test run or a build, search
output, version control output, a JSON dump, a log or any long command output — is replaced by a
shorter version that keeps what the request asks about in it (``request``: its quoted strings,
paths, names, numbers and words) and what a model looks for in that kind (failures with their
assertions and project frames, definitions before uses, the commits that match, the entries
that stand out), headed by a marker that says plainly what was cut and how to get it back; what
is left out is folded with a count, never silently. Each shrinker is a pure function of the
text and the request: the same input gives the same bytes, so the shrunk text can be sent again
in every later request and the provider's cache keeps hitting.

Never shrunk: what the model reads (a file through a read tool, or ``cat``, ``head``, ``sed -n``
through a shell: edits match exact text and a cut function misleads), outputs already short,
anything we do not recognise from a tool that does not run commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from ctx_lsp.core.shrink import jsondump, lines, search, testlog, vcs
from ctx_lsp.core.shrink.command import program, reads_file
from ctx_lsp.core.shrink.request import Place, Request

MIN_SAVING = 0.3  # a shrink that saves less than this share is not worth the marker and the doubt
# What is kept: about this share of the output's characters, within a floor and a ceiling.
KEEP_SHARE, KEEP_FLOOR, KEEP_CEILING = 0.14, 4_000, 16_000
READ_TOOLS = frozenset(
    {"read", "read_file", "readfile", "view", "view_file", "open_file", "cat_file", "get_file", "notebookread"}
    | {"expand", "get_symbol"}  # ctx_lsp's own: the whole output asked for, a symbol's code
)
COMMAND_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "run_command", "run_terminal_cmd", "terminal", "execute_command", "local_shell"}
)
SEARCH_PROGRAMS = frozenset({"grep", "egrep", "rg", "ag", "ack", "find", "fd", "fdfind", "git grep", "locate"})
VCS_PROGRAMS = frozenset({"git log", "git show", "git diff", "hg log", "hg diff", "diff"})


class Shrunk(msgspec.Struct, frozen=True, kw_only=True):
    text: str  # the marker line, then what was kept
    kind: str  # test_log, search, vcs, json, command
    original_tokens: int
    tokens: int


Shrinker = Callable[[str, Request, int], tuple[str, str]]


def _test_log(text: str, request: Request, budget: int) -> tuple[str, str]:
    return lines.select(text, request, budget), (
        "the failures and errors with their details and project frames, the lines that match the request, "
        "the head and the tail"
    )


def _command(text: str, request: Request, budget: int) -> tuple[str, str]:
    return lines.select(text, request, budget), (
        "the lines that look like errors or match the request with what belongs to them, the head and the tail"
    )


def recognise(text: str, prog: str, runs_commands: bool) -> tuple[str, Shrinker] | None:
    """The kind of an output and its shrinker: by the program that printed it when the tool call
    says, else by its look; None for what we do not recognise from a tool that runs no commands."""
    if prog in SEARCH_PROGRAMS and search.looks_like(text):
        return "search", search.shrink
    if prog in VCS_PROGRAMS and vcs.looks_like(text):
        return "vcs", vcs.shrink
    if jsondump.looks_like(text):  # first: one character tells it is not JSON
        return "json", jsondump.shrink
    if vcs.looks_like(text):
        return "vcs", vcs.shrink
    if testlog.looks_like(text):
        return "test_log", _test_log
    if search.looks_like(text):
        return "search", search.shrink
    if runs_commands:
        return "command", _command
    return None


def _how_to_expand(expand_id: str, tool: bool, shell: bool) -> str:
    """The ways back to what was cut that this client has: the MCP tool, a shell, or both."""
    ways = []
    if tool:
        ways.append(f"expand({expand_id!r}, match=…) with the ctx tools (the whole: expand({expand_id!r}))")
    if shell:
        ways.append(f"`ctx-lsp expand {expand_id} --match REGEX` in a shell (the whole: without --match)")
    return f"Any part: {'; or '.join(ways)}."


# Codex (Responses API) sends an MCP server's tools as one namespace entry, ``mcp__SERVER``, with
# the tools inside it: the name a request's tool list gives is the server's. ``ctx`` is the name
# ``ctx-lsp wrap codex`` and the README's recipe register ctx_lsp's server under.
CTX_NAMESPACES = frozenset({"mcp__ctx"})


def _base_name(tool: str) -> str:
    """A tool's own name, lower case: ``mcp__ctx__expand``, ``ctx.expand`` and ``ctx/expand``
    (how Codex logs a namespaced call) are ``expand``."""
    return tool.lower().removeprefix("mcp__").split("__")[-1].rsplit(".", 1)[-1].rsplit("/", 1)[-1]


def can_expand(tools: Sequence[str]) -> bool:
    """The client was given ctx_lsp's ``expand`` tool (by its MCP server, or any other way): a
    tool of that name, or the namespace Codex gives ctx_lsp's MCP server's tools."""
    return any(_base_name(t) == "expand" or t.lower() in CTX_NAMESPACES for t in tools)


def budget_chars(text: str) -> int:
    return int(min(KEEP_CEILING, max(KEEP_FLOOR, len(text) * KEEP_SHARE)))


def shrink(
    text: str,
    *,
    tool: str,
    query: str,
    count: Callable[[str], int],
    threshold: int,
    expand_id: str,
    command: str = "",
    places: Callable[[Request], tuple[Place, ...]] | None = None,
    expand_tool: bool = True,
) -> Shrunk | None:
    """The shrunk form of a tool's output, or None when it stays as it is. ``command``: the command
    line of the tool call that printed it, when it has one; ``places``: where the names the
    request gives are defined (the workspace index), asked only when the output is shrunk;
    ``expand_tool``: the client has ctx_lsp's ``expand`` tool. What the model cannot bring back
    is never cut: without the tool, only the output of a tool that runs commands is shrunk (the
    model can run ``ctx-lsp expand`` with it)."""
    name = _base_name(tool)
    runs_commands = bool(command) or name in COMMAND_TOOLS
    if name in READ_TOOLS or reads_file(command) or program(command) == "ctx-lsp expand":
        return None
    if not expand_tool and not runs_commands:
        return None
    tokens = count(text)
    if tokens <= threshold:
        return None
    found = recognise(text, program(command), runs_commands)
    if found is None:
        return None
    kind, shrinker = found
    request = Request(query)
    if places is not None:
        request.places = places(request)
    kept, what = shrinker(text, request, budget_chars(text))
    kept_tokens = count(kept)
    marker = (
        f"[ctx_lsp shortened this {kind.replace('_', ' ')} output: {tokens:,} tokens → about {kept_tokens:,}; "
        f"kept {what}; each '…' line counts what was left out. {_how_to_expand(expand_id, expand_tool, runs_commands)}]"
    )
    out = marker + "\n" + kept
    shrunk_tokens = count(marker) + 1 + kept_tokens  # the newline between: one token more at most
    if shrunk_tokens > tokens * (1 - MIN_SAVING):
        return None
    return Shrunk(text=out, kind=kind, original_tokens=tokens, tokens=shrunk_tokens)
