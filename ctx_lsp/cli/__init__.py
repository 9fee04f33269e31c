"""`ctx-lsp`: the command line, the fourth face (the others: server/, gateway/, mcp/).

    ctx-lsp plan WORKSPACE --query "..."     plan context for a question, print the tree
    ctx-lsp index WORKSPACE                  build or refresh the workspace index
    ctx-lsp models                           list the built-in model registry
    ctx-lsp report [WORKSPACE]               estimator accuracy and plan statistics
    ctx-lsp report --html [WORKSPACE]        the gateway's savings as an HTML page with charts
    ctx-lsp replay PLAN_ID                   rebuild a stored plan and check it is identical
    ctx-lsp serve                            the language server, for editors (stdio)
    ctx-lsp gateway [WORKSPACE]              the proxy between an assistant and its model provider
    ctx-lsp wrap ASSISTANT [ARGS…]           run claude, codex, aider (or -- COMMAND) through the gateway
    ctx-lsp stats [WORKSPACE]                what the gateway sent, saved and cost vs sending direct
    ctx-lsp statusline                       one line for Claude Code's status line
    ctx-lsp mcp [WORKSPACE]                  the MCP server for agents (stdio): symbols, search, plans, pins
    ctx-lsp trust [WORKSPACE] [--forget]     let this folder's ctx.toml set [llm], the gateway's listen…

`commands` parses and runs each command; `render` prints plans and trees, `stats` the gateway's
records (`ctx-lsp stats`, `report --html`), `statusline` Claude Code's status line, `wrap` and
`wrap_upstream` run an assistant through a gateway on a thread.

User errors print one line on stderr and exit 2; nothing a user did prints a traceback.
"""

from ctx_lsp.cli.commands import main

__all__ = ["main"]
