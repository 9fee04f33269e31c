"""The MCP face's tools: each translates its arguments into one call of the sessions engine (on
the engine's one worker thread), and the engine's value into a typed result — structured content
with an output schema, and a readable text part (``results``). Bad arguments and what the engine
refuses become the SDK's ``ToolError``, whose message the agent reads; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ctx_lsp import __version__, errors
from ctx_lsp.engine import UserError
from ctx_lsp.mcp import results
from ctx_lsp.sessions import PinIntent, SessionEngine
from ctx_lsp.sessions.values import PinState
from ctx_lsp.workspace.files import workspace_rel
from ctx_lsp.workspace.languages import language_of

log = logging.getLogger("ctx_lsp.mcp")
T = TypeVar("T")
_PATH_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)$")

INSTRUCTIONS = (
    "ctx_lsp knows this workspace's code (Python, Rust, TypeScript, JavaScript, Go, Java, C, C++): an index of "
    "its symbols, a reference graph, retrieval ranked for a "
    "question, and the context plan an editor shows (pins, budget, capsules). Read a function, class or method "
    "by name with get_symbol instead of opening whole files; find code for a question with search_code; see who "
    "calls what with references. Pins are shared with the user's editor (same workspace, same session)."
)

# bounds on what the agent may send: an integer past SQLite's 2^63 (or any number no plan needs)
# and a name of megabytes are a clear error, not "internal error: OverflowError"
MAX_NAME = 2_000
MAX_TEXT = 100_000  # a question or a regex
MAX_TOKENS = 10_000_000
MAX_COUNT = 1_000_000_000  # lines, turns
QUOTED = 120  # an error quotes at most this much of any one value
Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME,
        description="a qualified name (shop.inventory.Inventory.reserve), a short one (Inventory.reserve), or "
        "FILE:NAME for one of several of a name (tools/server.c:usage)",
    ),
]
Budget = Annotated[int | None, Field(ge=1, le=MAX_TOKENS, description="at most this many tokens")]


class Face:
    """What the tools share: the sessions engine once it is open, the session they act in, and
    the one worker thread every engine call runs on (in call order, like the editor's server)."""

    def __init__(self, session: str, worker: ThreadPoolExecutor) -> None:
        self.session = session
        self.worker = worker
        self.sessions: SessionEngine | None = None
        self.ready = asyncio.Event()  # the start-up index refresh is done (or failed and said so)
        self.failure: str | None = None  # why the workspace could not be opened

    async def run(self, fn: Callable[[SessionEngine], T]) -> T:
        """``fn(engine)`` on the worker once the index is ready; what the engine refuses, and a bug
        (logged on stderr with its traceback), become a ToolError with a message to act on."""
        await self.ready.wait()
        sessions = self.sessions
        if sessions is None:
            raise ToolError(self.failure or "the workspace is not open")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.worker, fn, sessions)
        except errors.CtxError as err:  # every kind: the message says what to do
            raise ToolError(short(str(err))) from None
        except ToolError:
            raise
        except OverflowError:  # a number past what the store holds (bounded above; kept as a net)
            raise ToolError("a number is too large") from None
        except Exception as err:
            log.exception("internal error")
            raise ToolError(short(f"internal error: {type(err).__name__}: {err}")) from None


_LONG = re.compile(rf"\S{{{QUOTED + 1},}}")


def short(message: str) -> str:
    """An error message as the agent reads it: a long value it quotes (a name of megabytes)
    shortened to its start, the whole at most a few lines."""
    message = _LONG.sub(lambda m: f"{m[0][:QUOTED]}…[{len(m[0]):,} chars]", message)
    return message if len(message) <= 8 * QUOTED else message[: 8 * QUOTED] + "…"


def reply(value: BaseModel, text: str) -> CallToolResult:
    """A tool's result: ``value`` as structured content (checked against the output schema by
    the SDK), ``text`` for the agent to read."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=value.model_dump(mode="json")
    )


class Tools:
    """The tools, one method each: its docstring is the description the agent reads."""

    def __init__(self, face: Face) -> None:
        self.face = face

    async def get_symbol(self, name: Name) -> Annotated[CallToolResult, results.SymbolResult]:
        """Read one function, class, method or variable by name: its code, file, lines, tokens and
        whether it is pinned; cheaper than the whole file. An ambiguous or unknown name is an
        error that lists the candidates or close names."""
        session = self.face.session

        def work(engine: SessionEngine) -> tuple[Any, str | None]:
            sym = engine.symbol(name)
            return sym, engine.pinned(session, sym.qualname)

        sym, pin_id = await self.face.run(work)
        return reply(*results.symbol(sym, pin_id))

    async def expand(
        self,
        id: Annotated[str, Field(min_length=1, max_length=MAX_NAME, description="the id its marker names")],
        match: Annotated[
            str | None, Field(max_length=MAX_TEXT, description="only lines matching this regex (case-insensitive)")
        ] = None,
        context: Annotated[int, Field(ge=0, le=50, description="lines around each match")] = 3,
        start_line: Annotated[int | None, Field(ge=1, le=MAX_COUNT, description="first line (1-based)")] = None,
        max_lines: Annotated[int | None, Field(ge=1, le=MAX_COUNT, description="at most this many lines")] = None,
    ) -> Annotated[CallToolResult, results.ExpandResult]:
        """A tool output ctx_lsp shortened (its marker names the id), whole or in part: `match`
        (e.g. "test_tax_rate") gives only the matching lines, numbered, with `context` lines
        around each — much cheaper; start_line / max_lines a range."""

        def work(engine: SessionEngine) -> tuple[str, Any, int]:
            return engine.expand(id, start_line=start_line, max_lines=max_lines, match=match, context=context)

        kind, part, tokens = await self.face.run(work)
        value = results.ExpandResult(
            id=id, kind=kind, text=part.text, tokens=tokens, total_lines=part.total_lines, matches=part.matches
        )
        return reply(value, part.text)

    async def search_code(
        self,
        query: Annotated[str, Field(min_length=1, max_length=MAX_TEXT, description="a question, words or names")],
        budget: Budget = None,
    ) -> Annotated[CallToolResult, results.SearchResult]:
        """Search the workspace's code for a question: symbols ranked best first, each whole (its
        body, else its card) and with why it was chosen, within `budget` tokens (default 4000)."""
        session = self.face.session
        found = await self.face.run(lambda engine: engine.search_code(session, query, budget))
        return reply(*results.search(found))

    async def plan_context(
        self,
        query: Annotated[str, Field(min_length=1, max_length=MAX_TEXT, description="the question or task")],
        budget: Annotated[
            int | None, Field(ge=0, le=MAX_TOKENS, description="tokens of retrieved code (default 6000)")
        ] = None,
        mode: Annotated[
            Literal["off", "light", "heavy"] | None,
            Field(description="off: none; light: cards (default); heavy: bodies"),
        ] = None,
    ) -> Annotated[CallToolResult, results.ContextResult]:
        """Plan the context for a question as ctx_lsp plans prompts (pins, layout, module
        summaries, retrieved code): the context to read, and each item included or excluded with
        its reason and tokens. The user's editor shows the plan."""
        session = self.face.session
        planned = await self.face.run(lambda engine: engine.agent_context(session, query, budget, mode))
        return reply(*results.context(planned))

    async def pin(
        self,
        name_or_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_NAME,
                description="a symbol's name, or path:LINE (1-based) inside it",
            ),
        ],
        kind: Annotated[
            Literal["sticky", "leased", "ephemeral"],
            Field(description="sticky stays; leased lasts ttl turns; ephemeral: a thin card"),
        ] = "sticky",
        ttl: Annotated[int | None, Field(ge=0, le=MAX_COUNT, description="turns it lasts (default: no limit)")] = None,
        policy: Annotated[
            Literal["automatic", "ask", "unlimited"],
            Field(description="at the ttl's end: automatic drops it; ask asks the user"),
        ] = "automatic",
    ) -> Annotated[CallToolResult, results.PinResult]:
        """Pin a symbol: keep its code in every plan of the session (the user's editor shows the
        pin). Pinning it again renews the pin."""
        session = self.face.session

        def work(engine: SessionEngine) -> PinState:
            return engine.pin(session, _pin_intent(engine.engine.root, name_or_path, kind, ttl, policy))

        return reply(*results.pinned(await self.face.run(work), "pinned"))

    async def unpin(
        self, pin_id: Annotated[str, Field(min_length=1, max_length=MAX_NAME, description="as list_pins shows it")]
    ) -> Annotated[CallToolResult, results.PinResult]:
        """Remove a pin of the session (one the agent or the user made), by its id."""
        session = self.face.session
        try:
            state = await self.face.run(lambda engine: engine.unpin(session, pin_id))
        except ToolError as err:
            raise ToolError(f"{err}; list_pins shows the pins and their ids") from None
        return reply(*results.pinned(state, "unpinned"))

    async def list_pins(self) -> Annotated[CallToolResult, results.PinsResult]:
        """The session's pins (the user's and the agent's), with what each costs in a prompt now."""
        session = self.face.session
        states = await self.face.run(lambda engine: engine.pins(session))
        return reply(*results.pins(session, states))

    async def show_budget(self) -> Annotated[CallToolResult, results.BudgetResult]:
        """The session's budget meter: model, prompt budget, its latest plan's tokens per section,
        how tokens are estimated."""
        session = self.face.session
        meter = await self.face.run(lambda engine: engine.meter(session))
        return reply(*results.budget(meter))

    async def list_capsules(
        self, stale_only: Annotated[bool, Field(description="only those whose module changed")] = False
    ) -> Annotated[CallToolResult, results.CapsulesResult]:
        """Summaries of the workspace's most central modules (orientation, not ground truth), each
        stale once its code changed."""
        found = await self.face.run(lambda engine: engine.capsules())
        return reply(*results.capsules([c for c in found if c.stale or not stale_only]))

    async def references(self, name: Name) -> Annotated[CallToolResult, results.ReferencesResult]:
        """Callers and callees of a symbol in the reference graph (by name, not proven calls),
        heaviest first. Names resolve as in get_symbol."""
        refs = await self.face.run(lambda engine: engine.references(name))
        return reply(*results.references(refs))


_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ANNOTATIONS = {
    "get_symbol": _READ_ONLY,
    "search_code": _READ_ONLY,
    "plan_context": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    "pin": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    "unpin": ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    "list_pins": _READ_ONLY,
    "show_budget": _READ_ONLY,
    "list_capsules": _READ_ONLY,
    "references": _READ_ONLY,
    "expand": _READ_ONLY,
}


def build_server(face: Face) -> MCPServer:
    server: MCPServer = MCPServer("ctx", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = Tools(face)
    for name, hints in ANNOTATIONS.items():
        server.add_tool(getattr(tools, name), name=name, annotations=hints)
    return server


def _pin_intent(root: Path, target: str, kind: str, ttl: int | None, policy: str) -> PinIntent:
    """A name, or ``path:LINE`` (1-based; the path absolute or workspace-relative), as the
    engine's pin intent. A path must name a line: pins hold symbols, not whole files."""
    target = target.strip()
    m = _PATH_LINE.match(target)
    if m is None and not ("/" in target or language_of(target) is not None):
        return PinIntent(symbol=target, kind=kind, ttl=ttl, policy=policy, created_by="agent")  # type: ignore[arg-type]
    if m is None or int(m["line"]) < 1:
        raise UserError(
            f"{target!r}: give path:LINE (1-based) of a line inside a function, class or method, or a "
            "qualified name — a pin holds a symbol, not a whole file"
        )
    rel = workspace_rel(root, m["path"])
    line = int(m["line"]) - 1
    return PinIntent(path=rel, line=line, kind=kind, ttl=ttl, policy=policy, created_by="agent")  # type: ignore[arg-type]
