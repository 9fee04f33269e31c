"""How a session's plans are kept for replay: the retrieval candidates' texts by reference, each
text stored once (compressed) however many plans offer it, the plan itself compressed; a plan kept
"after the reply" is written before anything reads plans, before any other write, and when the
store closes; replay rebuilds the identical plan from what was kept."""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from ctx_lsp.core import planner
from ctx_lsp.core.items import Message, PlanInput
from ctx_lsp.engine import Engine, PlanRequest
from ctx_lsp.memory.store import MemoryStore
from ctx_lsp.memory.store.plans import CANDIDATE
from ctx_lsp.sessions import SessionEngine, SessionPlanRequest
from ctx_lsp.sessions.exchanges import Exchange
from tests.workspaces import copy_sample

QUERIES = ("how is the invoice total calculated with tax?", "how are discounts applied to an invoice?")


@pytest.fixture
def core(tmp_path: Path) -> Iterator[SessionEngine]:
    core = SessionEngine(Engine(copy_sample(tmp_path / "ws")), MemoryStore(tmp_path / "memory.sqlite3"))
    core.engine.refresh_index()
    yield core
    core.close()


def raw(tmp_path: Path) -> sqlite3.Connection:
    """Another connection to the store's file: what another process would see."""
    return sqlite3.connect(tmp_path / "memory.sqlite3")


def plan(core: SessionEngine, query: str, **kw):
    return core.plan(SessionPlanRequest(session="s", request=PlanRequest(query=query, mode="heavy"), **kw))


def test_candidate_texts_are_kept_once_by_reference_and_replay_rebuilds_the_plan(core: SessionEngine, tmp_path: Path):
    first = plan(core, QUERIES[0])
    texts = {c.text for c in first.inputs.candidates if c.text}
    assert len(texts) > 10
    db = raw(tmp_path)
    blob, refs = db.execute("SELECT inputs, bodies FROM plans WHERE id = ?", (first.result.plan.plan_id,)).fetchone()
    stored = msgspec.msgpack.decode(zlib.decompress(blob), type=PlanInput)
    assert not [c for c in stored.candidates if c.text]  # the texts are not in the inputs ...
    refs = msgspec.json.decode(refs)
    assert len([r for r in refs if r[0] == CANDIDATE]) == len([c for c in first.inputs.candidates if c.text])
    packs = {i: zlib.decompress(data) for i, data in db.execute("SELECT id, data FROM text_packs")}
    rows = db.execute("SELECT pack, start, size FROM texts").fetchall()
    kept = {packs[p][a : a + n].decode() for p, a, n in rows}
    assert texts == kept and len(packs) == 1  # ... but in texts, once each, in one compressed pack
    assert db.execute("SELECT count(*) FROM texts").fetchone()[0] == len(kept)

    second = plan(core, QUERIES[1])
    both = texts | {c.text for c in second.inputs.candidates if c.text}
    assert db.execute("SELECT count(*) FROM texts").fetchone()[0] == len(both)  # shared texts: not again
    (stored_plan,) = db.execute("SELECT plan FROM plans WHERE id = ?", (first.result.plan.plan_id,)).fetchone()
    assert zlib.decompress(stored_plan) == msgspec.json.encode(first.result.plan)  # kept compressed

    for outcome in (first, second):
        identical, result = core.replay(outcome.result.plan.plan_id)
        assert identical and result.plan == outcome.result.plan
    # a fresh process (no remembered hashes, no plan cache) reads the texts back from the store
    other = SessionEngine(Engine(core.engine.root), MemoryStore(tmp_path / "memory.sqlite3"))
    try:
        identical, _ = other.replay(first.result.plan.plan_id)
        rendered = other.outcome("s", first.result.plan.plan_id).render("text").text
        assert identical and rendered == first.render("text").text
    finally:
        other.close()


def test_a_plan_kept_after_the_reply_is_written_before_anything_reads_plans(core: SessionEngine, tmp_path: Path):
    db = raw(tmp_path)
    out = plan(core, QUERIES[0], keep_later=True)
    plan_id = out.result.plan.plan_id
    assert db.execute("SELECT count(*) FROM plans").fetchone()[0] == 0  # not yet: the reply goes first
    assert core.store.latest_plan_id("s") == plan_id  # a read of plans writes it first
    assert db.execute("SELECT id FROM plans").fetchall() == [(plan_id,)]

    later = plan(core, QUERIES[1], keep_later=True)
    core.set_mode("s", "light")  # any write writes it first too
    assert db.execute("SELECT count(*) FROM plans WHERE id = ?", (later.result.plan.plan_id,)).fetchone()[0] == 1


def test_closing_the_store_writes_a_plan_kept_after_the_reply(tmp_path: Path):
    core = SessionEngine(Engine(copy_sample(tmp_path / "ws")), MemoryStore(tmp_path / "memory.sqlite3"))
    core.engine.refresh_index()
    out = plan(core, QUERIES[0], keep_later=True)
    core.close()
    store = MemoryStore(tmp_path / "memory.sqlite3")
    try:
        assert store.latest_plan_id("s") == out.result.plan.plan_id
    finally:
        store.close()


def test_flush_writes_a_plan_kept_after_the_reply(core: SessionEngine, tmp_path: Path):
    out = plan(core, QUERIES[0], keep_later=True)
    core.flush()
    assert raw(tmp_path).execute("SELECT id FROM plans").fetchall() == [(out.result.plan.plan_id,)]
    identical, _ = core.replay(out.result.plan.plan_id)
    assert identical


def test_a_plan_kept_under_the_previous_planner_version_still_replays_identical(core: SessionEngine, tmp_path: Path):
    """Version 2 names a symbol's code in the plan id by the item's id; a plan kept before it
    (version 1 hashed every text) is planned again under its own version: same id, same bytes."""
    out = plan(core, QUERIES[0])
    old = planner.plan(out.inputs, version="1")
    assert old.plan.plan_id != out.result.plan.plan_id
    db = raw(tmp_path)
    with db:  # the row as version 1 kept it
        db.execute(
            "UPDATE plans SET id = ?, plan = ? WHERE id = ?",
            (old.plan.plan_id, zlib.compress(msgspec.json.encode(old.plan), 1), out.result.plan.plan_id),
        )
    other = SessionEngine(Engine(core.engine.root), MemoryStore(tmp_path / "memory.sqlite3"))
    try:
        identical, result = other.replay(old.plan.plan_id)
        assert identical and result.plan == old.plan
        assert other.outcome("s", old.plan.plan_id).result.plan.plan_id == old.plan.plan_id
    finally:
        other.close()


def test_the_plan_id_still_names_every_input_of_a_symbols_code(core: SessionEngine):
    """Without hashing their texts, a card's or body's code is in the plan id by its item id, its
    place and everything else it carries."""
    inputs = plan(core, QUERIES[0]).inputs
    body = next(i for i, c in enumerate(inputs.candidates) if c.kind == "symbol_body")
    base = planner.plan_id_for(inputs)
    for change in ({"id": "body:x@000000000000"}, {"range": None}, {"path": "elsewhere.py"}, {"tokens": 1}):
        candidates = list(inputs.candidates)
        candidates[body] = msgspec.structs.replace(candidates[body], **change)
        assert planner.plan_id_for(msgspec.structs.replace(inputs, candidates=tuple(candidates))) != base, change


def test_a_gateway_request_does_not_write_another_conversations_plan_on_its_time(core: SessionEngine, tmp_path: Path):
    """Thirty new conversations at once queue on the engine: each request's plan wrote the plan
    the one before kept for after its reply (the gateway's 30-stream p99). A request's own writes
    leave them put off; the flush after a reply writes them all, and a put-off write that fails
    loses only itself."""
    db = raw(tmp_path)
    kept = []
    for n in range(3):
        messages = [Message(id="", role="user", content=f"conversation {n}: {QUERIES[n % 2]}")]
        kept.append(core.plan_exchange(Exchange(session=f"c{n}", model="gpt-4o", system="Agent", messages=messages)))
        if n == 0:
            core.store.later(lambda conn: conn.execute("INSERT INTO no_such_table VALUES (1)"))
    assert db.execute("SELECT count(*) FROM plans").fetchone()[0] == 0
    core.flush()
    ids = {k.outcome.result.plan.plan_id for k in kept}
    assert {r[0] for r in db.execute("SELECT id FROM plans")} == ids
    later = plan(core, QUERIES[0], keep_later=True)
    core.set_mode("s", "light")  # a write that is no request's plan still writes what was put off first
    assert db.execute("SELECT count(*) FROM plans WHERE id = ?", (later.result.plan.plan_id,)).fetchone()[0] == 1
