"""The server's file watcher: files changed on disk outside the editor reach the index (and
capsule staleness) without any document event from the client."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import LanguageClient

from tests.waiting import eventually


async def plan_symbols(client: LanguageClient, query: str) -> set[str]:
    plan = await client.protocol.send_request_async("ctx/planContext", {"query": query, "dryRun": True})
    return {i.symbol for i in plan.included if i.section == "rag" and i.symbol}


async def test_disk_edits_reach_the_index_and_capsules(client: LanguageClient, workspace: Path):
    query = "where is frobnicate_widget_inventory defined?"
    await client.protocol.send_request_async("ctx/planContext", {"query": "warm up"})  # indexing done
    new = workspace / "shop" / "widgets.py"
    new.write_text('def frobnicate_widget_inventory():\n    """Frobnicate."""\n    return 1\n')

    async def present() -> bool:
        return "shop.widgets.frobnicate_widget_inventory" in await plan_symbols(client, query)

    await eventually(present)
    new.unlink()

    async def gone() -> bool:
        return not await present()

    await eventually(gone)

    capsules = await client.protocol.send_request_async("ctx/listCapsules", {})
    assert capsules, "the server makes capsules for central modules at start-up"
    rel = capsules[0]["path"]
    path = workspace / rel
    path.write_text(path.read_text() + "\n\ndef added_on_disk():\n    return 2\n")

    async def stale_notified() -> bool:
        return any(m == "ctx/capsulesStale" for m, _ in client.notifications)  # type: ignore[attr-defined]

    await eventually(stale_notified)
    note = next(p for m, p in client.notifications if m == "ctx/capsulesStale")  # type: ignore[attr-defined]
    assert rel in note.files
