"""ctx_lsp: a context-window manager for AI coding assistants, served over LSP."""

__version__ = "0.1.0"
