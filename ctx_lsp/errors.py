"""The errors the engine raises for a person to act on: one base and four kinds. Each face maps a
kind once (the language server to a JSON-RPC error code, the MCP server to a tool error, the CLI
to an exit code and one line on stderr); anything else is a bug, answered as an internal error.

The domain errors keep their own names where they are raised (``engine.UserError``,
``core.items.ContextOverflow``, ``sessions.NotFound``, ``memory.store.StoreError``, …) and say
their kind by subclassing one of these. This module imports nothing: every layer may use it."""

from __future__ import annotations


class CtxError(Exception):
    """Something a user or a client can act on; ``str(err)`` says what and how."""


class Invalid(CtxError):
    """The request cannot be served as asked: a bad value, path, budget or conversation."""


class Missing(CtxError):
    """The request names something that is not there: a session, message, pin, plan, symbol."""


class Unavailable(CtxError):
    """A part the request needs cannot be used now (the memory store cannot be read)."""


class Overflow(CtxError):
    """What must go into the prompt does not fit its budget; ``over_by`` tokens too many."""

    over_by: int = 0
