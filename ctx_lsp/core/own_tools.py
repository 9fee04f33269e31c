"""ctx_lsp's own tools in an assistant's request: the MCP server's (``ctx-lsp mcp``) that
``ctx-lsp wrap`` registers, as the assistant names them — ``mcp__ctx__get_symbol`` (Claude Code
and Codex both spell an MCP tool ``mcp__SERVER__TOOL``). Their definitions are sent with every
request, so they are ours to count: in every comparison with sending direct, where they would
not be."""

from __future__ import annotations

# the tools of ctx_lsp.mcp.server (a test keeps the two lists the same)
CTX_TOOLS = frozenset(
    {
        "get_symbol",
        "expand",
        "search_code",
        "plan_context",
        "pin",
        "unpin",
        "list_pins",
        "show_budget",
        "list_capsules",
        "references",
    }
)
CTX_SERVERS = frozenset({"ctx", "ctx_lsp", "ctx-lsp"})  # the server names users give it


def is_ctx_tool(name: str) -> bool:
    """Whether a tool of a request is one of ctx_lsp's MCP tools: ``mcp__ctx__TOOL`` (or
    ``ctx__TOOL``, the server named ctx, ctx_lsp or ctx-lsp)."""
    parts = name.lower().split("__")
    return len(parts) >= 2 and parts[-1] in CTX_TOOLS and parts[-2] in CTX_SERVERS
