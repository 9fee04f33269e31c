"""The watchfiles loop on a real file system: edits, deletes and renames reach the index within
about a second; ignored folders never do; buffers open in the editor keep priority."""

from __future__ import annotations

import asyncio
from pathlib import Path

from watchfiles import Change

from ctx_lsp.workspace.index import WorkspaceIndex
from ctx_lsp.workspace.watch import WatchFilter, WorkspaceWatcher, apply_changes, normalise
from tests.waiting import eventually


async def started(watcher: WorkspaceWatcher) -> None:
    watcher.start()
    await asyncio.sleep(0.3)  # the inotify watches are in place


async def test_edit_delete_and_rename_reach_the_index(ws: Path) -> None:
    index = WorkspaceIndex(ws)
    index.refresh()
    told: list[list[str]] = []

    async def on_files(rels: list[str]) -> None:
        told.append(rels)

    watcher = WorkspaceWatcher(ws, index, on_files=on_files, graph_quiet_s=0.3)
    await started(watcher)
    try:
        # edit
        (ws / "shop/config.py").write_text('"""Settings."""\n\nNEW_SETTING = 1\n')
        await eventually(lambda: index.get("shop.config.NEW_SETTING") is not None)
        assert index.get("shop.config.TAX_RATE") is None
        await eventually(lambda: ["shop/config.py"] in told)  # told after the index has it: a moment later
        # a new file, then a rename: the old path leaves no ghost symbols or edges
        (ws / "shop/extra.py").write_text("from shop.inventory import Product\n\ndef make():\n    return Product()\n")
        await eventually(lambda: index.get("shop.extra.make") is not None)
        (ws / "shop/extra.py").rename(ws / "shop/moved.py")
        await eventually(lambda: index.get("shop.moved.make") is not None and index.get("shop.extra.make") is None)
        callers = {n for _, n, rel, _ in index.neighbours(["shop.inventory.Product"], 50) if rel == "called by"}
        assert "shop.moved.make" in callers and "shop.extra.make" not in callers
        # delete
        (ws / "shop/moved.py").unlink()
        await eventually(lambda: index.get("shop.moved.make") is None)
        # centrality catches up once the workspace is quiet
        await eventually(lambda: not index.graph_dirty())
    finally:
        await watcher.close()
        index.close()
    assert watcher.task is not None and watcher.task.done()


async def test_ignored_paths_and_open_buffers_are_left_alone(ws: Path) -> None:
    index = WorkspaceIndex(ws)
    index.refresh()
    open_files = {"shop/inventory.py"}
    watcher = WorkspaceWatcher(ws, index, is_open=lambda rel: rel in open_files)
    await started(watcher)
    try:
        (ws / ".gitignore").write_text("generated/\n")
        for rel in ("generated/gen.py", "node_modules/x/y.py", "build/out.py", ".git/hooks/h.py", "venv/lib/v.py"):
            path = ws / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if rel.startswith("venv/"):
                (ws / "venv/pyvenv.cfg").write_text("home = /usr\n")
            path.write_text("def ignored_function():\n    return 1\n")
        # the open buffer is the truth for inventory.py: a write on disk is not indexed over it
        (ws / "shop/inventory.py").write_text("def from_disk():\n    return 1\n")
        (ws / "shop/marker.py").write_text("def marker():\n    return 1\n")  # a change that does get in
        await eventually(lambda: index.get("shop.marker.marker") is not None)
        await asyncio.sleep(0.2)
        rows = index._reader().execute("SELECT qualname FROM symbols WHERE name = 'ignored_function'").fetchall()
        assert rows == []
        assert index.get("shop.inventory.from_disk") is None and index.get("shop.inventory.Inventory") is not None
    finally:
        await watcher.close()
        index.close()


def test_filter_and_normalise(ws: Path) -> None:
    f = WatchFilter(ws)
    (ws / ".gitignore").write_text("secret_*.py\n")
    assert f(Change.modified, str(ws / "shop/config.py"))
    assert not f(Change.modified, str(ws / "shop/secret_keys.py"))
    assert not f(Change.modified, str(ws / "shop/__pycache__/config.py"))
    assert not f(Change.modified, str(ws / "shop/notes.txt"))
    assert not f(Change.modified, str(ws.parent / "elsewhere.py"))
    assert f(Change.modified, str(ws / ".gitignore"))
    batch = normalise(
        {(Change.modified, str(ws / "shop/config.py")), (Change.deleted, str(ws / "shop/gone.py"))},
        f,
    )
    assert batch == [("changed", "shop/config.py"), ("deleted", "shop/gone.py")]


def test_apply_changes_skips_open_files_and_survives_errors(ws: Path) -> None:
    class Flaky:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def update_file(self, rel: str, source: bytes | None) -> bool:
            self.calls.append(rel)
            if rel == "bad.py":
                raise OSError("disk on fire")
            return True

        def remove_file(self, rel: str) -> bool:
            self.calls.append(f"-{rel}")
            return True

    idx = Flaky()
    batch = [("changed", "a.py"), ("changed", "bad.py"), ("deleted", "c.py"), ("changed", "open.py")]
    assert apply_changes(idx, batch, lambda rel: rel == "open.py") == ["a.py", "c.py"]  # type: ignore[arg-type]
    assert idx.calls == ["a.py", "bad.py", "-c.py"]
