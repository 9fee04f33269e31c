"""Code lenses: "Pin to context" above every function, class and method (and struct, trait,
impl, interface … in every language the index reads), "Pinned · ttl · tokens" (with unpin)
above pinned ones. Listing is cheap (parse only); the command is built on resolve, for the
lenses the editor shows."""

from __future__ import annotations

import re

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ctx_lsp.core.meter import format_tokens
from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.parse import parse_module

_DEF_LINE = re.compile(r"\s*(async\s+def|def|class)\s")
# a line of comments, attributes (``#[derive]``), decorators or annotations above a definition
_ABOVE_DEF = re.compile(r"\s*(//|/\*|\*|#\[|#!\[|@\w|$)")


def _is_def_line(line: str, python: bool) -> bool:
    return bool(_DEF_LINE.match(line)) if python else not _ABOVE_DEF.match(line)


def lenses(ls: CtxServer, uri: str) -> list[types.CodeLens] | None:
    try:
        rel = ls.rel(uri)
        text = ls.open_text(uri)
        if text is None:  # not open: read through the same checks as every other file
            text = read_workspace_text(ls.sessions.engine.root, rel)
    except (JsonRpcException, PathRefused, OSError):
        return None
    parsed = parse_module(rel, text, root=str(ls.sessions.engine.root))
    lines = text.splitlines()
    python = parsed.language == "python"
    out = []
    for sym in parsed.symbols:
        if sym.kind in ("class", "function", "method"):
            # on the definition's own line, below decorators, attributes and doc comments
            line = next(
                (
                    n
                    for n in range(sym.start_line, min(sym.end_line, len(lines) - 1) + 1)
                    if _is_def_line(lines[n], python)
                ),
                sym.start_line,
            )
            rng = types.Range(types.Position(line, 0), types.Position(line, 0))
            out.append(types.CodeLens(range=rng, data={"uri": uri, "symbol": sym.qualname}))
    return out


async def resolve(ls: CtxServer, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    symbol = data.get("symbol", "")
    pins = await ls.run(ls.sessions.pins, ls.session_id)
    pin = next((p for p in pins if p.record.symbol == symbol), None)
    if pin is None:
        lens.command = types.Command(
            title="📌 Pin to context", command="ctx.pinSymbol", arguments=[data.get("uri"), symbol]
        )
    else:
        ttl = "no ttl" if pin.record.ttl_remaining is None else f"ttl {pin.record.ttl_remaining}"
        tok = f" · {format_tokens(pin.tokens)} tok" if pin.tokens is not None else ""
        lens.command = types.Command(
            title=f"📌 Pinned · {ttl}{tok} · unpin", command="ctx.unpin", arguments=[pin.record.id]
        )
    return lens


def refresh(ls: CtxServer) -> None:
    """Pins changed: lenses that say "Pin" / "Pinned" are out of date (when the client can refresh)."""
    caps = ls.client_capabilities.workspace
    if caps and caps.code_lens and caps.code_lens.refresh_support:
        ls.spawn(ls.workspace_code_lens_refresh_async(None))
