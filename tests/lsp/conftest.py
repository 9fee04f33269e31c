"""A real `ctx-lsp serve` over stdio (pytest-lsp), on a copy of the fixture workspace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.workspaces import copy_sample

SESSION = "test-session"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp") / "ws"
    copy_sample(root)
    return root


def server_command() -> list[str]:
    return [sys.executable, "-m", "ctx_lsp", "serve"]


async def start(client: LanguageClient, root: Path, session: str | None = SESSION, **options) -> None:
    client.notifications = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params):  # pytest-lsp's client has no handler of its own
        return None

    for method in (
        "ctx/budgetChanged",
        "ctx/planChanged",
        "ctx/askRepin",
        "ctx/compacted",
        "ctx/capsulesStale",
        "ctx/reflected",
    ):

        @client.feature(method)
        def _collect(params, method=method):
            client.notifications.append((method, params))  # type: ignore[attr-defined]

    init = dict(options)
    if session:
        init["session"] = session
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                workspace=types.WorkspaceClientCapabilities(
                    did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
                ),
            ),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
            initialization_options=init,
        )
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command()))
async def client(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace)
    yield lsp_client
    await lsp_client.shutdown_session()


async def save(client: LanguageClient, path: Path, text: str) -> None:
    """Write ``path`` and tell the server it was saved, as an editor does; give it half a second."""
    import asyncio

    path.write_text(text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
    await asyncio.sleep(0.5)


async def capsules_stale(client: LanguageClient) -> list:
    """The ``ctx/capsulesStale`` notifications received, waiting up to 5 s for a first one (a
    loaded machine may take longer than a save's half second)."""
    import asyncio

    for _ in range(100):
        stale = [p for m, p in client.notifications if m == "ctx/capsulesStale"]  # type: ignore[attr-defined]
        if stale:
            return stale
        await asyncio.sleep(0.05)
    return []
