"""Huge messages: counted once (and not tokenized at all past the counting limit), stored once,
shown as a stub with their id when a plan cannot hold them, and planning reads only what a plan
can use. Real tiktoken, real SQLite."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import msgspec
import pytest

from ctx_lsp.core.conversation import (
    Sized,
    build_turns,
    conversation_window,
    mask_limit,
    parse_messages,
)
from ctx_lsp.core.items import BudgetSpec, ContextOverflow, Conversation, Message
from ctx_lsp.core.planner import FRAMING_TOKENS, plan
from ctx_lsp.core.tokens import EXACT_COUNT_LIMIT_BYTES, counter_for, utf8_size
from ctx_lsp.engine import Engine, PlanRequest
from ctx_lsp.memory.store import BODY_MIN_BYTES, HEAD_CHARS, MemoryStore, decode_inputs, encode_inputs
from ctx_lsp.sessions import SessionEngine, SessionPlanRequest
from tests.planning import plan_input
from tests.workspaces import copy_sample

COUNTER = counter_for("cl100k_base")


def log(size: int, seed: int = 0) -> str:
    line = f"{seed} INFO worker-3 GET /api/v1/items status=200 latency_ms=12 retry=0\n"
    return (line * (size // len(line) + 1))[:size]


def tool_turn(k: int, content: str, user: str | None = None) -> list[dict]:
    return [
        {"id": f"u{k}", "role": "user", "content": user or f"step {k}: read the log"},
        {
            "id": f"a{k}",
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"id": f"t{k}", "role": "tool", "tool_call_id": f"c{k}", "content": content},
        {"id": f"r{k}", "role": "assistant", "content": f"step {k}: retries on worker-3"},
    ]


def sizes_of(messages: list[Message], unloaded: set[str] = frozenset()) -> dict[str, Sized]:
    out = {}
    for m in messages:
        tokens, exact = COUNTER.measure(m.content)
        out[m.id] = Sized(tokens=tokens, bytes=utf8_size(m.content), exact=exact, loaded=m.id not in unloaded)
    return out


# ---- counting ------------------------------------------------------------------------------------


def test_text_over_the_counting_limit_is_not_tokenized():
    huge = "x" * (EXACT_COUNT_LIMIT_BYTES + 1)  # tiktoken needs ~0.6 s per MB of this
    t0 = time.perf_counter()
    assert COUNTER.measure(huge) == (len(huge), False)
    assert COUNTER.count(huge) == len(huge)
    assert time.perf_counter() - t0 < 0.5
    wide = "é" * (EXACT_COUNT_LIMIT_BYTES // 2 + 1)  # under the limit in characters, over it in bytes
    assert COUNTER.measure(wide) == (2 * len(wide), False)
    small = log(100_000)
    assert COUNTER.measure(small) == (len(COUNTER.encode(small)), True)


@pytest.mark.parametrize("text", ["x" * 5000, "漢字🎉 " * 500, "\n\t  " * 800, log(20_000), "aé" * 900])
def test_utf8_size_bounds_the_token_count(text: str):
    assert len(COUNTER.encode(text)) <= utf8_size(text)


# ---- stubs -------------------------------------------------------------------------------------


def test_a_message_left_in_the_store_is_a_stub_with_its_id_and_size():
    msgs = parse_messages([*tool_turn(1, log(3_000_000)), {"id": "q", "role": "user", "content": "what failed?"}])
    sizes = sizes_of(msgs, unloaded={"t1"})
    msgs = [msgspec.structs.replace(m, content="") if m.id == "t1" else m for m in msgs]
    turns = build_turns(msgs, COUNTER, sizes=sizes)
    episode = turns[0].atoms[1]
    stub = episode.messages[1]
    assert stub.role == "tool" and stub.tool_call_id == "c1"
    assert "message t1" in stub.content and f"{sizes['t1'].bytes:,} bytes" in stub.content
    assert f"{sizes['t1'].tokens:,} tokens" in stub.content
    assert episode.tokens < 100 and episode.masked_tokens is None  # only the stub can be shown
    assert "masked" in (episode.detail or "") and "t1" in episode.detail
    result = plan(plan_input(conv=Conversation(turns=turns)))
    shown = next(i for i in result.plan.included if i.id == episode.id)
    assert shown.reason == "recent" and "message t1" in (shown.detail or "")


def test_a_stub_of_text_past_the_counting_limit_says_it_was_not_counted():
    msgs = parse_messages(tool_turn(1, "x" * (EXACT_COUNT_LIMIT_BYTES + 10)))
    sizes = sizes_of(msgs, unloaded={"t1"})
    assert not sizes["t1"].exact
    turns = build_turns([msgspec.structs.replace(m, content="") for m in msgs], COUNTER, sizes=sizes)
    assert "not tokenized" in turns[0].atoms[1].messages[1].content


def test_the_latest_user_message_too_large_is_an_overflow_that_names_it():
    msgs = parse_messages([{"id": "big-question", "role": "user", "content": log(6_000_000)}])
    sizes = sizes_of(msgs, unloaded={"big-question"})
    turns = build_turns([msgspec.structs.replace(msgs[0], content="")], COUNTER, sizes=sizes)
    assert turns[0].atoms[0].tokens > 6_000_000  # charged whole: it is required
    with pytest.raises(ContextOverflow) as err:
        plan(plan_input(conv=Conversation(turns=turns)))
    assert "message big-question (6.0 MB)" in str(err.value)


def test_a_pending_tool_result_too_large_to_fit_is_masked_not_an_overflow():
    raw = tool_turn(1, log(60_000))[:3]  # user, call, result: the model answers the result next
    result = plan(
        plan_input(
            context_length=8_000, max_completion=1_000, conv=Conversation(build_turns(parse_messages(raw), COUNTER))
        )
    )
    pending = next(i for i in result.plan.included if i.kind == "tool_episode")
    assert pending.reason == "required" and "masked" in (pending.detail or "")
    assert result.plan.totals.tokens <= result.plan.prompt_budget


def test_a_message_of_any_role_over_the_conversation_share_can_be_masked():
    budget = BudgetSpec(context_length=10_000, max_completion_tokens=1_000)
    raw = [
        {"id": "u1", "role": "user", "content": "paste"},
        {"id": "r1", "role": "assistant", "content": log(40_000)},  # ~15k tokens: over the window
        {"id": "u2", "role": "user", "content": "and now?"},
    ]
    turns = build_turns(parse_messages(raw), COUNTER, mask_over=mask_limit(budget))
    reply = turns[0].atoms[1]
    assert reply.masked_tokens is not None and reply.masked_tokens < 100
    assert "assistant message masked by ctx_lsp" in reply.masked_messages[0].content
    result = plan(plan_input(conv=Conversation(turns)))
    kept = {i.id: i for i in result.plan.included}
    assert reply.id in kept and "masked" in (kept[reply.id].detail or "")  # the window stays open
    assert turns[0].atoms[0].id in kept
    small = build_turns(parse_messages([*raw[:1], {"role": "assistant", "content": "ok " * 300}]), COUNTER)
    assert small[0].atoms[1].masked_tokens is None  # under both thresholds: never masked


# ---- the window ----------------------------------------------------------------------------------


def test_the_window_reads_only_what_a_plan_can_use():
    raw = []
    for k in range(150):  # ~80 tokens a turn even with its result masked: more than the window holds
        raw += tool_turn(k, log(2_000 + k, seed=k))  # ~800 tokens each, maskable
    raw.append({"id": "q", "role": "user", "content": "what failed?"})
    msgs = parse_messages(raw)
    sizes = sizes_of(msgs)
    budget = BudgetSpec(context_length=12_000, max_completion_tokens=2_000)
    available = budget.prompt_budget - FRAMING_TOKENS
    window = conversation_window(msgs, sizes, COUNTER, 1.0, available, mask_limit(budget))
    assert 0 < window.start < len(msgs) and msgs[window.start].role == "user"
    assert "q" in window.load
    big = [m.id for m in msgs[window.start :] if m.role == "tool"]
    loaded = [i for i in big if i in window.load]
    assert loaded and loaded == big[len(big) - len(loaded) :]  # the newest large results
    assert sum(sizes[i].tokens for i in loaded) <= available
    # the plan from the window alone: within budget, and nothing older than the window could be in it
    windowed = [m if m.id in window.load else msgspec.structs.replace(m, content="") for m in msgs[window.start :]]
    used = {m.id: msgspec.structs.replace(sizes[m.id], loaded=m.id in window.load) for m in windowed}
    mask_over = mask_limit(budget)
    part = plan(
        plan_input(12_000, 2_000, conv=Conversation(build_turns(windowed, COUNTER, sizes=used, mask_over=mask_over)))
    )
    assert part.plan.totals.tokens <= part.plan.prompt_budget
    assert any(i.reason == "budget" for i in part.plan.excluded if i.section == "conversation")  # the boundary
    whole = plan(plan_input(12_000, 2_000, conv=Conversation(build_turns(msgs, COUNTER, mask_over=mask_over))))
    before = {m.id for m in msgs[: window.start]}
    shown = {m.id for c in whole.chosen for m in c.item.messages}
    assert shown and not shown & before  # planning with everything read would not have used them either


def test_only_large_messages_within_the_allowance_are_read():
    raw = tool_turn(1, log(30_000)) + tool_turn(2, log(30_000, seed=2)) + [{"id": "q", "role": "user", "content": "?"}]
    msgs = parse_messages(raw)
    sizes = sizes_of(msgs)
    one = sizes["t2"].tokens + 10
    window = conversation_window(msgs, sizes, COUNTER, 1.0, one + 200, None)
    assert "t2" in window.load and "t1" not in window.load  # newest first; the older one is a stub
    assert {"u1", "a1", "r1", "u2", "a2", "r2", "q"} <= window.load  # small messages are always read


# ---- the store -----------------------------------------------------------------------------------


def test_large_texts_are_stored_once_and_read_by_head(tmp_path: Path):
    store = MemoryStore(tmp_path / "memory.sqlite3")
    store.ensure_session("s")
    text = log(BODY_MIN_BYTES * 4)
    store.append("s", None, parse_messages([{"id": "a", "role": "tool", "tool_call_id": "c", "content": text}]))
    store.append("s", None, parse_messages([{"id": "b", "role": "tool", "tool_call_id": "c", "content": text}]))
    store.append("s", None, parse_messages([{"id": "c", "role": "user", "content": "short"}]))
    db = sqlite3.connect(tmp_path / "memory.sqlite3")
    assert db.execute("SELECT COUNT(*) FROM bodies").fetchone()[0] == 1
    assert db.execute("SELECT MAX(length(content)) FROM messages").fetchone()[0] == len("short")
    assert [m.content for m in store.path("s")] == [text, text, "short"]
    meta = store.path_meta("s")
    assert [m.bytes for m in meta] == [len(text), len(text), 5]
    heads = store.contents("s", ["a", "c"], prefix=True)
    assert heads["a"].startswith(text[:HEAD_CHARS]) and f"{len(text):,} bytes" in heads["a"]
    assert len(heads["a"]) < HEAD_CHARS + 200 and heads["c"] == "short"
    store.close()


def test_plan_inputs_keep_large_texts_by_reference():
    msgs = parse_messages([*tool_turn(1, log(BODY_MIN_BYTES * 3)), {"role": "user", "content": "and?"}])
    inputs = plan_input(context_length=200_000, max_completion=1_000, conv=Conversation(build_turns(msgs, COUNTER)))
    blob, refs, bodies, candidates = encode_inputs(inputs)
    assert not candidates
    assert len(refs) == 1 and len(bodies) == 1  # the result in its whole form (the masked one is a stub)
    assert len(blob) < BODY_MIN_BYTES
    assert decode_inputs(blob, refs, bodies) == inputs


# ---- sessions ------------------------------------------------------------------------------------


def session(tmp_path: Path) -> SessionEngine:

    root = tmp_path / "ws"
    copy_sample(root)
    core = SessionEngine(Engine(root))
    core.engine.refresh_index()
    return core


def test_counts_are_stored_at_append_and_plans_read_no_large_text(tmp_path: Path, monkeypatch):
    core = session(tmp_path)
    core.append_raw("s", None, tool_turn(1, log(5_000_000)))
    meta = core.store.path_meta("s")
    assert [m.tokens_encoding for m in meta][2] == "utf-8 bytes" and meta[2].tokens == 5_000_000
    assert all(m.tokens is not None for m in meta)
    read: list[list[str]] = []
    contents = core.store.contents
    monkeypatch.setattr(core.store, "contents", lambda s, ids, **kw: read.append(ids) or contents(s, ids, **kw))
    out = core.plan(SessionPlanRequest(session="s", request=PlanRequest(query="what failed in step 1?")))
    assert not any("t1" in ids for ids in read)
    stub = next(i for i in out.result.plan.included if i.kind == "tool_episode")
    assert "message t1" in (stub.detail or "")
    assert out.result.plan.totals.tokens <= out.result.plan.prompt_budget
    identical, _ = core.replay(out.result.plan.plan_id)
    assert identical
    core.close()


def test_a_store_of_an_earlier_version_is_migrated_and_counted_once(tmp_path: Path):
    core = session(tmp_path)
    db_path = core.store.db_path
    core.close()
    db = sqlite3.connect(db_path)  # what an earlier version wrote: the text inline, no counts
    db.execute("DROP TABLE messages")
    db.execute(
        "CREATE TABLE messages(seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, id TEXT NOT NULL, "
        "parent TEXT, role TEXT NOT NULL, content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, name TEXT, "
        "turn INTEGER NOT NULL, archived_by INTEGER, created REAL NOT NULL, UNIQUE(session, id))"
    )
    db.execute("DROP TABLE bodies")
    db.execute("INSERT OR IGNORE INTO sessions(id, created) VALUES ('s', 0)")
    db.execute("INSERT OR IGNORE INTO branches(session, name, head, created) VALUES ('s', 'main', 'u1', 0)")
    text = log(200_000)
    insert = (
        "INSERT INTO messages(session, id, parent, role, content, turn, created) VALUES ('s', ?, ?, 'user', ?, 0, 0)"
    )
    db.execute(insert, ("u0", None, text))
    db.execute(insert, ("u1", "u0", "and?"))
    db.execute("UPDATE branches SET head = 'u1' WHERE session = 's'")
    db.commit()
    db.close()
    core = SessionEngine(Engine(db_path.parent.parent))
    meta = core.store.path_meta("s")
    assert [m.bytes for m in meta] == [len(text), None] and meta[0].tokens is None
    out = core.plan(SessionPlanRequest(session="s", request=PlanRequest(query="and?")))
    assert out.result.plan.totals.tokens <= out.result.plan.prompt_budget
    meta = core.store.path_meta("s")
    assert meta[0].tokens == COUNTER.count(text) and meta[0].tokens_encoding == COUNTER.encoding
    assert core.messages("s").messages[0].content == text
    core.close()


def test_older_history_offers_only_its_best_turns(monkeypatch):
    from ctx_lsp.memory import history

    turns = [
        parse_messages([{"id": f"u{k}", "role": "user", "content": "invoice " * (1 + k % 7) + f"filler {k}"}])
        for k in range(3 * history.HISTORY_LIMIT)
    ]
    capped = history.history_candidates(turns, "invoice", COUNTER, 1.0)
    monkeypatch.setattr(history, "HISTORY_LIMIT", 10**6)
    every = history.history_candidates(turns, "invoice", COUNTER, 1.0)
    assert len(every) == len(turns) and len(capped) == len(turns) // 3
    order = {item.id: n for n, item in enumerate(every)}
    best = sorted(every, key=lambda i: (-i.score, order[i.id]))[: len(capped)]
    assert [i.id for i in capped] == sorted((i.id for i in best), key=order.get)  # the best, in order
