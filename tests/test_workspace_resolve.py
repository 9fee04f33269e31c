"""jedi at the cursor: across modules, through ``import ... as``, on attributes; UTF-16 columns;
the time limit and the RecursionError guard; the engine's fallback to it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from ctx_lsp.engine import Engine
from ctx_lsp.sessions import PinIntent, SessionEngine
from ctx_lsp.workspace import resolve
from ctx_lsp.workspace.resolve import is_attribute, resolve_at, utf16_to_codepoint
from tests.workspaces import copy_sample

# Two classes with an ``add_product`` method: the name alone cannot say which one is meant.
WAREHOUSE = '''"""Warehouses (a second class with add_product)."""

from shop.billing import calculate_invoice_total as total_of
from shop.inventory import Inventory


class Warehouse:
    def add_product(self, product, quantity):
        return quantity


def restock(book: Inventory, depot: Warehouse, product):
    book.add_product(product, 1)
    depot.add_product(product, 2)
    label = "📦 box"; return total_of([])
'''


@pytest.fixture(autouse=True)
def _jedi_log(caplog: pytest.LogCaptureFixture) -> None:
    """A failed assertion shows why jedi had no answer."""
    caplog.set_level(logging.DEBUG, logger=resolve.__name__)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    copy_sample(root)
    (root / "shop" / "warehouse.py").write_text(WAREHOUSE, encoding="utf-8")
    return root


def position(text: str, needle: str, nth: int = 0, offset: int = 0) -> tuple[int, int]:
    """(line, UTF-16 column) of the ``nth`` occurrence of ``needle`` (+ ``offset`` chars)."""
    seen = 0
    for i, line in enumerate(text.splitlines()):
        start = 0
        while (col := line.find(needle, start)) >= 0:
            if seen == nth:
                prefix = line[: col + offset]
                return i, len(prefix.encode("utf-16-le")) // 2
            seen += 1
            start = col + 1
    raise AssertionError(f"{needle!r} not found")


# What jedi answers is tested here, not how fast: a first jedi call on a loaded machine can take
# longer than the server's 1 s budget (that latency is a benchmark's business).
SLACK_S = 30.0


def test_resolves_across_modules_through_aliases_and_attributes(ws: Path) -> None:
    text = (ws / "shop/warehouse.py").read_text()
    rel = "shop/warehouse.py"
    # book: Inventory → book.add_product is Inventory's
    assert (
        resolve_at(ws, rel, text, *position(text, "book.add_product", offset=5), timeout_s=SLACK_S)
        == "shop.inventory.Inventory.add_product"
    )
    # depot: Warehouse → this module's class
    line, col = position(text, "depot.add_product", offset=6)
    assert resolve_at(ws, rel, text, line, col, timeout_s=SLACK_S) == "shop.warehouse.Warehouse.add_product"
    # ``import calculate_invoice_total as total_of``, re-exported by shop.billing
    line, col = position(text, "total_of([])", offset=2)
    assert resolve_at(ws, rel, text, line, col, timeout_s=SLACK_S) == "shop.billing.invoice.calculate_invoice_total"
    storage = (ws / "shop/storage.py").read_text()
    line, col = position(storage, "StockBook()")  # ``Inventory as StockBook``
    assert resolve_at(ws, "shop/storage.py", storage, line, col, timeout_s=SLACK_S) == "shop.inventory.Inventory"
    # nothing there
    assert resolve_at(ws, rel, text, 1, 0, timeout_s=SLACK_S) is None
    assert resolve_at(ws, rel, text, 999, 0, timeout_s=SLACK_S) is None


def test_utf16_columns_are_converted() -> None:
    line = 'label = "📦 box"; return total_of([])'
    utf16 = len(line[: line.index("total_of")].encode("utf-16-le")) // 2
    assert utf16 == line.index("total_of") + 1  # the emoji is two UTF-16 units, one code point
    assert utf16_to_codepoint(line, utf16) == line.index("total_of")
    assert utf16_to_codepoint(line, 10_000) == len(line)


def test_attribute_detection(ws: Path) -> None:
    text = (ws / "shop/warehouse.py").read_text()
    rel = "shop/warehouse.py"
    line, col = position(text, "book.add_product", offset=7)
    assert is_attribute(ws, rel, text, line, col)
    line, col = position(text, "book.add_product", offset=1)
    assert not is_attribute(ws, rel, text, line, col)


def test_a_slow_jedi_times_out(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow(*args):
        release.wait(5)
        return "never.used"

    monkeypatch.setattr(resolve, "_goto", slow)
    t = time.perf_counter()
    assert resolve_at(ws, "shop/storage.py", None, 0, 0, timeout_s=0.2) is None
    assert time.perf_counter() - t < 1.0
    # a call queued behind the stuck one gives up within its own limit too
    t = time.perf_counter()
    assert resolve_at(ws, "shop/storage.py", None, 0, 0, timeout_s=0.2) is None
    assert time.perf_counter() - t < 1.0
    release.set()


def test_recursion_and_errors_inside_jedi_give_no_answer(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def recurse(*args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(resolve, "_goto", recurse)
    assert resolve_at(ws, "shop/storage.py", None, 0, 0) is None
    monkeypatch.setattr(resolve, "_goto", lambda *a: 1 / 0)
    assert resolve_at(ws, "shop/storage.py", None, 0, 0) is None


def test_a_cache_file_cut_short_by_another_process_is_not_read_again(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """parso keeps parsed modules on disk, shared by every process and written in place: another
    process may be writing one (a second server, a test worker), or may have been killed while
    it did. The answer comes all the same, and this process keeps its own cache from then on."""
    import jedi
    import parso.cache

    shared = tmp_path / "shared-cache"
    monkeypatch.setattr(jedi.settings, "cache_directory", str(shared))
    parso.cache.parser_cache.clear()  # nothing parsed in memory yet: as a process that just started
    resolve._PROJECTS.clear()
    monkeypatch.setattr(resolve, "DEFAULT_TIMEOUT_S", 30.0)
    text = (ws / "shop/warehouse.py").read_text()
    line, col = position(text, "depot.add_product", offset=8)
    assert resolve_at(ws, "shop/warehouse.py", None, line, col) == "shop.warehouse.Warehouse.add_product"
    cut = list(shared.rglob("*.pkl"))
    assert cut  # the shared cache holds the modules parsed
    for p in cut:
        p.write_bytes(b"")  # as a writer killed at the start of its write leaves it
    parso.cache.parser_cache.clear()  # another process started since
    resolve._PROJECTS.clear()
    assert resolve_at(ws, "shop/warehouse.py", None, line, col) == "shop.warehouse.Warehouse.add_product"
    assert jedi.settings.cache_directory != str(shared)
    assert resolve_at(ws, "shop/warehouse.py", None, line, col) == "shop.warehouse.Warehouse.add_product"


def test_session_engine_pins_the_attribute_jedi_infers(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "DEFAULT_TIMEOUT_S", 30.0)  # jedi's answer, however loaded the machine
    engine = Engine(ws)
    engine.refresh_index()
    core = SessionEngine(engine)
    try:
        text = (ws / "shop/warehouse.py").read_text()
        line, col = position(text, "depot.add_product", offset=8)
        sym = core.resolve(PinIntent(path="shop/warehouse.py", line=line, character=col))
        assert sym.qualname == "shop.warehouse.Warehouse.add_product"
        line, col = position(text, "book.add_product", offset=8)
        sym = core.resolve(PinIntent(path="shop/warehouse.py", line=line, character=col))
        assert sym.qualname == "shop.inventory.Inventory.add_product"
        # an unsaved buffer: the name is resolved in the buffer's text
        buffer = text.replace("depot.add_product(product, 2)", "depot.add_product(product, 2); total_of([])")
        line, col = position(buffer, "total_of([])", nth=0, offset=1)
        sym = core.resolve(PinIntent(path="shop/warehouse.py", line=line, character=col, text=buffer))
        assert sym.qualname == "shop.billing.invoice.calculate_invoice_total"
    finally:
        core.close()
