"""One error vocabulary (ctx_lsp/errors.py): every error the engine raises for a person is one of
four kinds, and each face maps every kind — the language server to its JSON-RPC codes, the MCP
server to a tool error, the CLI to one line and an exit code — so none becomes a traceback."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import get_args

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcServerError

from ctx_lsp import errors
from ctx_lsp.cli import commands
from ctx_lsp.core.conversation import ConversationError
from ctx_lsp.core.items import ContextOverflow, ExcludedReason, IncludedReason
from ctx_lsp.core.planner import InvalidBudget
from ctx_lsp.engine import UserError
from ctx_lsp.mcp.results import PlanEntry
from ctx_lsp.mcp.server import Face
from ctx_lsp.memory.store import InsideCompaction, MemoryUnavailable, StoreError
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import rpc_error
from ctx_lsp.sessions import NotFound
from ctx_lsp.workspace.files import PathRefused

# every domain error a face may meet, with its kind and the language server's answer
DOMAIN = [
    (UserError("bad"), errors.Invalid, None),
    (InvalidBudget("bad budget"), errors.Invalid, None),
    (ConversationError("message 2 has no role"), errors.Invalid, None),
    (PathRefused("../x.py", "outside", "outside the workspace"), errors.Invalid, None),
    (P.ParamsError("query: expected str"), errors.Invalid, None),
    (NotFound("no pin 'p1'"), errors.Missing, P.NOT_FOUND),
    (StoreError("unknown session 's'"), errors.Missing, P.NOT_FOUND),
    (InsideCompaction("inside a compaction"), errors.Missing, P.NOT_FOUND),
    (MemoryUnavailable(Path("/x/memory.sqlite3"), OSError("unreadable")), errors.Unavailable, P.MEMORY_UNAVAILABLE),
    (ContextOverflow(1200, 1000, [("system prompt", 900)]), errors.Overflow, P.CONTEXT_OVERFLOW),
]
IDS = [type(err).__name__ for err, _, _ in DOMAIN]


@pytest.mark.parametrize(("err", "kind", "code"), DOMAIN, ids=IDS)
def test_the_language_server_answers_every_kind_with_its_code(err: Exception, kind: type, code: int | None) -> None:
    assert isinstance(err, kind)
    answer = rpc_error(err)  # type: ignore[arg-type]
    assert str(err) in str(answer)
    if code is None:
        assert isinstance(answer, JsonRpcInvalidParams)
    else:
        assert isinstance(answer, JsonRpcServerError) and answer.code == code
    if kind is errors.Overflow:
        assert answer.data == {"overBy": 200}


@pytest.mark.parametrize(("err", "kind", "code"), DOMAIN, ids=IDS)
def test_the_cli_says_every_kind_in_one_line(
    err: Exception, kind: type, code: int | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fails(_args: object) -> int:
        raise err

    monkeypatch.setattr(commands, "_cmd_models", fails)
    exit_code = commands.main(["models"])
    assert exit_code == (commands.EXIT_OVERFLOW if kind is errors.Overflow else commands.EXIT_USER_ERROR)
    assert capsys.readouterr().err == f"ctx-lsp: {err}\n"


async def test_the_mcp_server_makes_every_kind_a_tool_error() -> None:
    with ThreadPoolExecutor(max_workers=1) as worker:
        face = Face("default", worker)
        face.sessions = object()  # type: ignore[assignment]  # the tools never reach it here
        face.ready.set()
        for err, _, _ in DOMAIN:

            def fails(_sessions: object, err: Exception = err) -> None:
                raise err

            with pytest.raises(ToolError) as told:
                await asyncio.wait_for(face.run(fails), 10)
            assert str(told.value) == str(err)


def test_the_mcp_plan_entry_names_every_reason_of_the_planner() -> None:
    description = PlanEntry.model_fields["reason"].description or ""
    for reason in (*get_args(IncludedReason), *get_args(ExcludedReason)):
        assert reason in description
    assert "cost" in description.split("excluded:")[1]
