"""The memory store on its own: stores made by earlier versions open and migrate, the schema is
the one the tables declare, pins keep and renew by one codec, a turn ticks TTLs by the rule."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctx_lsp.core.items import Message
from ctx_lsp.memory.store import BODY_MIN_BYTES, SCHEMA, InsideCompaction, MemoryStore, PinRecord
from ctx_lsp.memory.store.codec import Codec
from ctx_lsp.memory.store.schema import PINS, TABLES

# ---- test data: what earlier versions of the store created ------------------------------------

# The first version (sessions, branches, messages, pins, plans, usage): every text inline, no
# request options, no query clusters.
FIRST_VERSION = """
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY, created REAL NOT NULL, mode TEXT, model TEXT,
    branch TEXT NOT NULL DEFAULT 'main', turn INTEGER NOT NULL DEFAULT 0,
    compaction_threshold REAL, rolling INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS branches(
    session TEXT NOT NULL, name TEXT NOT NULL, head TEXT, forked_from TEXT, created REAL NOT NULL,
    PRIMARY KEY(session, name));
CREATE TABLE IF NOT EXISTS messages(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, id TEXT NOT NULL, parent TEXT,
    role TEXT NOT NULL, content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, name TEXT,
    turn INTEGER NOT NULL, archived_by INTEGER, created REAL NOT NULL,
    UNIQUE(session, id));
CREATE TABLE IF NOT EXISTS pins(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, session TEXT NOT NULL,
    branch TEXT NOT NULL, kind TEXT NOT NULL, policy TEXT NOT NULL, ttl INTEGER,
    ttl_remaining INTEGER, lease_scope TEXT NOT NULL DEFAULT 'turn', priority INTEGER NOT NULL,
    created_by TEXT NOT NULL, symbol TEXT, path TEXT, start_line INTEGER, end_line INTEGER,
    title TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'active', created_turn INTEGER NOT NULL,
    created REAL NOT NULL, UNIQUE(session, branch, id));
CREATE TABLE IF NOT EXISTS plans(
    id TEXT NOT NULL, session TEXT NOT NULL, branch TEXT NOT NULL, turn INTEGER NOT NULL,
    created REAL NOT NULL, query TEXT NOT NULL, inputs BLOB NOT NULL, plan BLOB NOT NULL,
    retrieval_set_id TEXT, tokens INTEGER NOT NULL, prompt_budget INTEGER NOT NULL,
    timings TEXT NOT NULL, PRIMARY KEY(id, session));
CREATE INDEX IF NOT EXISTS plans_session ON plans(session, created);
CREATE TABLE IF NOT EXISTS usage(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, plan_id TEXT NOT NULL, session TEXT NOT NULL,
    model TEXT NOT NULL, estimate INTEGER NOT NULL, raw_estimate INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS usage_model ON usage(model);
"""

# A store the first version made, as the version before the store became a package left it:
# the tables later versions created, and the columns their migrations added (the previous
# version's own CREATE statements have the same columns, in one table in another order).
PREVIOUS_VERSION = (
    FIRST_VERSION
    + """
CREATE TABLE IF NOT EXISTS compactions(
    session TEXT NOT NULL, number INTEGER NOT NULL, branch TEXT NOT NULL, summary TEXT NOT NULL,
    digest BLOB, archived_ids TEXT NOT NULL, tokens_before INTEGER NOT NULL, tokens_after INTEGER NOT NULL,
    milliseconds REAL NOT NULL, summarizer TEXT NOT NULL, note TEXT, created REAL NOT NULL,
    PRIMARY KEY(session, number));
CREATE TABLE IF NOT EXISTS reflection_state(
    session TEXT PRIMARY KEY, activation BLOB, cluster TEXT, centroid TEXT, next_cluster INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS reflections(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, turn INTEGER NOT NULL, kind TEXT NOT NULL,
    item TEXT NOT NULL, pin_id TEXT, reason TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS suggestions(
    session TEXT NOT NULL, item TEXT NOT NULL, turn INTEGER NOT NULL, reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', PRIMARY KEY(session, item));
CREATE TABLE IF NOT EXISTS bodies(
    hash TEXT PRIMARY KEY, bytes INTEGER NOT NULL, head TEXT, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS capsules(
    path TEXT PRIMARY KEY, module TEXT NOT NULL, text TEXT NOT NULL, code_hash TEXT NOT NULL,
    source TEXT NOT NULL, confidence REAL NOT NULL, created REAL NOT NULL, stale INTEGER NOT NULL DEFAULT 0,
    stale_since REAL, current_hash TEXT);
ALTER TABLE plans ADD COLUMN options TEXT;
ALTER TABLE plans ADD COLUMN cluster TEXT;
ALTER TABLE plans ADD COLUMN bodies TEXT;
ALTER TABLE pins ADD COLUMN cluster TEXT;
ALTER TABLE reflections ADD COLUMN cluster TEXT;
ALTER TABLE messages ADD COLUMN bytes INTEGER;
ALTER TABLE messages ADD COLUMN tokens INTEGER;
ALTER TABLE messages ADD COLUMN tokens_encoding TEXT;
ALTER TABLE messages ADD COLUMN body TEXT;
"""
)

LARGE = "log line\n" * (BODY_MIN_BYTES // 4)  # large enough for `bodies`


def old_store(path: Path, schema: str) -> Path:
    """A store as an earlier version left it: its schema, a session with two messages (one
    large, inline), a pin with a TTL, a plan and a usage report."""
    db = sqlite3.connect(path)
    db.executescript(schema)
    db.execute("INSERT INTO sessions(id, created) VALUES ('s', 0)")
    db.execute("INSERT INTO branches(session, name, head, created) VALUES ('s', 'main', 'u1', 0)")
    insert = "INSERT INTO messages(session, id, parent, role, content, turn, created) VALUES ('s', ?, ?, ?, ?, 0, 0)"
    db.execute(insert, ("t0", None, "tool", LARGE))
    db.execute(insert, ("u1", "t0", "user", "and now?"))
    db.execute(
        "INSERT INTO pins(id, session, branch, kind, policy, ttl, ttl_remaining, priority, created_by, symbol, "
        "title, created_turn, created) VALUES ('p1', 's', 'main', 'leased', 'ask', 1, 1, 0, 'user', 'pkg.f', "
        "'pkg.f', 0, 0)"
    )
    db.execute(
        "INSERT INTO plans(id, session, branch, turn, created, query, inputs, plan, tokens, prompt_budget, timings) "
        "VALUES ('plan1', 's', 'main', 0, 0, 'q', x'00', '{}', 10, 100, '{}')"
    )
    db.execute(
        "INSERT INTO usage(plan_id, session, model, estimate, raw_estimate, input_tokens, cached_input_tokens, "
        "output_tokens, created) VALUES ('plan1', 's', 'm', 100, 100, 130, 0, 5, 0)"
    )
    db.commit()
    db.close()
    return path


def columns(db_path: Path) -> dict[str, set[str]]:
    db = sqlite3.connect(db_path)
    try:
        return {t.name: {r[1] for r in db.execute(f"PRAGMA table_info({t.name})")} for t in TABLES}
    finally:
        db.close()


@pytest.mark.parametrize("schema", [FIRST_VERSION, PREVIOUS_VERSION], ids=["first", "previous"])
def test_a_store_of_an_earlier_version_opens_and_migrates(tmp_path: Path, schema: str):
    """(Large texts are moved to `bodies` when `messages.body` is added: in the previous version's
    store the column is there already, and what is in it stays where it is.)"""
    path = old_store(tmp_path / "memory.sqlite3", schema)
    store = MemoryStore(path)
    assert columns(path) == {t.name: set(t.names) for t in TABLES}  # every column of the schema, nothing else
    assert store.session("s").branch == "main"
    assert [m.content for m in store.path("s")] == [LARGE, "and now?"]
    raw = sqlite3.connect(path)
    moved = raw.execute("SELECT content = '', body IS NOT NULL, bytes FROM messages WHERE id = 't0'").fetchone()
    # a turn's messages (reflection reads them every turn) are found by the index the store adds
    plan = raw.execute("EXPLAIN QUERY PLAN SELECT seq FROM messages WHERE session = 's' AND turn = 0").fetchall()
    raw.close()
    assert moved == ((1, 1, len(LARGE)) if schema is FIRST_VERSION else (0, 0, None))
    assert "messages_turn" in " ".join(str(r[-1]) for r in plan)
    (pin,) = store.pins("s", "main")
    assert (pin.id, pin.policy, pin.ttl_remaining, pin.status) == ("p1", "ask", 1, "active")
    row = store.plan_row("plan1")
    assert row["options"] == {} and row["bodies"] == []
    assert store.usage_stats("m").factor == 1.3
    store.append("s", None, [Message(id="a2", role="assistant", content="done")])
    turn, asked, expired = store.advance_turn("s")
    assert turn == 1 and [p.id for p in asked] == ["p1"] and not expired
    store.fork("s", "u1", "other")
    assert [p.id for p in store.pins("s", "other")] == ["p1"]
    store.close()
    again = MemoryStore(path)  # opening a migrated store changes nothing more
    assert [m.id for m in again.path("s", "main")] == ["t0", "u1", "a2"]
    again.close()


def test_a_new_store_has_exactly_the_declared_schema(tmp_path: Path):
    MemoryStore(tmp_path / "memory.sqlite3").close()
    db = sqlite3.connect(tmp_path / "memory.sqlite3")
    for table in TABLES:
        assert tuple(r[1] for r in db.execute(f"PRAGMA table_info({table.name})")) == table.names
    db.close()
    fresh = sqlite3.connect(":memory:")
    fresh.executescript(SCHEMA)  # the published schema text is the same tables
    assert {r[0] for r in fresh.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} >= {
        t.name for t in TABLES
    }


def test_every_table_of_sessions_is_found_by_session_without_a_scan(tmp_path: Path):
    # a new conversation's first plan reads its session's rows in several tables; a table read by
    # session without an index is scanned whole, and grows with every reply the store keeps (the
    # usage table: 2.1 ms a new conversation at 25k replies)
    MemoryStore(tmp_path / "memory.sqlite3").close()
    db = sqlite3.connect(tmp_path / "memory.sqlite3")
    unindexed = []
    for table in TABLES:
        if "session" not in table.names:
            continue
        firsts = {
            db.execute(f"PRAGMA index_info({r[1]})").fetchone()[2]
            for r in db.execute(f"PRAGMA index_list({table.name})")
        }
        if "session" not in firsts:
            unindexed.append(table.name)
    last_report = db.execute(
        "EXPLAIN QUERY PLAN SELECT estimate, input_tokens FROM usage WHERE session = 's' ORDER BY seq DESC LIMIT 1"
    ).fetchall()
    db.close()
    assert unindexed == []
    assert "usage_session" in " ".join(str(r[-1]) for r in last_report)


# ---- pins ------------------------------------------------------------------------------------------


def pin(pid: str, *, policy: str = "automatic", ttl: int | None = None, title: str = "t") -> PinRecord:
    return PinRecord(
        id=pid,
        session="s",
        branch="main",
        kind="leased" if ttl is not None else "sticky",
        policy=policy,  # type: ignore[arg-type]
        ttl=ttl,
        ttl_remaining=ttl,
        lease_scope="turn",
        priority=0,
        created_by="user",
        symbol=f"pkg.{pid}",
        path="pkg/m.py",
        start_line=1,
        end_line=3,
        title=title,
        status="active",
        created_turn=0,
        seq=0,
    )


@pytest.fixture
def store(tmp_path: Path):
    s = MemoryStore(tmp_path / "memory.sqlite3")
    s.ensure_session("s")
    yield s
    s.close()


def test_a_pin_reads_back_as_it_was_written(store: MemoryStore):
    written = pin("a", policy="ask", ttl=3)
    read = store.add_pin(written)
    assert read.seq > 0
    assert read == PinRecord(**{**{f: getattr(written, f) for f in PinRecord.__struct_fields__}, "seq": read.seq})


def test_re_pinning_renews_the_pin_and_keeps_its_place(store: MemoryStore):
    first = store.add_pin(pin("a", ttl=1))
    store.advance_turn("s")
    assert store.pin("s", "main", "a").status == "expired"
    renewed = store.add_pin(pin("a", policy="unlimited", ttl=5, title="other title"))
    assert (renewed.status, renewed.policy, renewed.ttl_remaining) == ("active", "unlimited", 5)
    assert renewed.seq == first.seq and renewed.title == "t"  # renewed, not a new pin
    assert len(store.pins("s", "main", include_inactive=True)) == 1


def test_a_turn_ticks_ttls_by_the_rule(store: MemoryStore):
    for p in (
        pin("auto", ttl=1),
        pin("ask", policy="ask", ttl=1),
        pin("forever", policy="unlimited", ttl=1),
        pin("sticky"),
        pin("later", ttl=3),
    ):
        store.add_pin(p)
    store.remove_pin("s", "main", "sticky")
    turn, asked, expired = store.advance_turn("s")
    assert turn == 1 and [p.id for p in asked] == ["ask"] and [p.id for p in expired] == ["auto"]
    assert asked[0].status == "grace" and asked[0].ttl_remaining == 0
    left = {p.id: (p.ttl_remaining, p.status) for p in store.pins("s", "main", include_inactive=True)}
    assert left == {
        "auto": (0, "expired"),
        "ask": (0, "grace"),
        "forever": (1, "active"),
        "sticky": (None, "removed"),
        "later": (2, "active"),
    }
    _, asked, expired = store.advance_turn("s")
    assert not asked and [p.id for p in expired] == ["ask"]  # the grace turn is one turn


def test_a_fork_copies_the_live_pins_whole(store: MemoryStore):
    store.append("s", None, [Message(id="u1", role="user", content="hi")])
    store.add_pin(pin("a", ttl=4))
    store.add_pin(pin("b"))
    store.remove_pin("s", "main", "b")
    store.set_pin_cluster("s", "main", "a", "c1")
    store.fork("s", "u1", "f")
    (copied,) = store.pins("s", "f", include_inactive=True)
    original = store.pin("s", "main", "a")
    assert copied.branch == "f" and copied.seq != original.seq
    same = {f for f in PinRecord.__struct_fields__ if f not in ("branch", "seq")}
    assert {f: getattr(copied, f) for f in same} == {f: getattr(original, f) for f in same}
    assert store.task_pins_outside("s", "f", "c2") == []  # lease scope 'turn': not a task pin
    assert store.session("s").branch == "f"


def test_no_branch_ends_inside_a_compactions_archived_turns(store: MemoryStore):
    """A branch may end at the last turn a compaction archived, or after it, not inside: there it
    would start with archived turns whose summary covers turns that are not on it."""
    turns = [Message(id=f"m{n}", role="user" if n % 2 == 0 else "assistant", content=f"turn {n}") for n in range(6)]
    store.append("s", None, turns)
    store.add_compaction("s", "main", "the first four", None, ["m0", "m1", "m2", "m3"], 40, 10, 1.0, "extractive", None)
    for inside in ("m0", "m2"):
        with pytest.raises(InsideCompaction, match="compaction 1"):
            store.fork("s", inside, None)
        with pytest.raises(InsideCompaction):  # a client's resent history that leaves the store there
            store.follow("s", [f"m{n}" for n in range(int(inside[1]) + 1)] + ["new"])
    assert store.session("s").branch == "main"
    assert store._read("SELECT count(*) FROM branches WHERE session = ?", ("s",)) == [(1,)]
    assert store.fork("s", "m3", "at-its-end")["head"] == "m3"
    assert store.follow("s", ["m0", "m1", "m2", "m3", "m4", "other"]) == (5, "branch-2")
    assert [m.archived_by for m in store.path_meta("s")] == [1, 1, 1, 1, None]


def test_no_branch_ends_where_another_branchs_compaction_archived_the_turns_they_share(store: MemoryStore):
    turns = [Message(id=f"m{n}", role="user" if n % 2 == 0 else "assistant", content=f"turn {n}") for n in range(6)]
    store.append("s", None, turns)
    store.fork("s", "m3", "b")  # a rewind: the other branch goes on from m3, and compacts
    other = [Message(id="b4", role="user", content="other"), Message(id="b5", role="assistant", content="ok")]
    store.append("s", "b", other)
    store.add_compaction("s", "b", "m0 to b4", None, ["m0", "m1", "m2", "m3", "b4"], 50, 10, 1.0, "extractive", None)
    with pytest.raises(InsideCompaction, match="compaction 1"):  # back to the first branch's history
        store.follow("s", [f"m{n}" for n in range(6)] + ["new"])
    with pytest.raises(InsideCompaction):
        store.fork("s", "m5", None)
    assert store.follow("s", ["m0", "m1", "m2", "m3", "b4", "b5", "next"]) == (6, "b")  # the compacted one goes on


def test_codecs_and_inserts_name_only_declared_columns(store: MemoryStore):
    with pytest.raises(ValueError, match="no column nope in table pins"):
        Codec.dicts(PINS, ("id", "nope"))
    with pytest.raises(ValueError, match="no column nope in table pins"), store.write() as conn:
        PINS.insert(conn, {"id": "x", "nope": 1})


def test_a_long_resent_history_is_followed_from_its_end_and_a_deep_rewind_still_forks(store: MemoryStore):
    """An agent resends its whole history and appends: the stored ids are found from the chain's
    end; a client that rewound further back than that is still found where it left the store."""
    turns = [Message(id=f"m{n}", role="user" if n % 2 == 0 else "assistant", content=f"turn {n}") for n in range(40)]
    store.append("s", None, turns)
    assert store.follow("s", [f"m{n}" for n in range(40)] + ["new"]) == (40, "main")
    assert store.follow("s", [f"m{n}" for n in range(38)] + ["x38", "x39"]) == (38, "branch-1")  # a short rewind
    deep = [f"m{n}" for n in range(10)] + [f"y{n}" for n in range(10, 40)]  # 30 messages back
    assert store.follow("s", deep) == (10, "branch-2")
    assert store.follow("s", [f"z{n}" for n in range(30)])[0] == 0  # nothing of it stored
