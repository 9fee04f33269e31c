"""The MCP face: the engine's symbols, retrieval, plans and pins as tools for agents (Claude Code,
Codex CLI, Cursor, Continue) over the Model Context Protocol on stdio — ``ctx-lsp mcp``.
``server`` registers the tools, ``results`` shapes what they return, ``run`` serves them over
one workspace with the index kept current."""
