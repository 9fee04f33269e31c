"""What the store and the sessions engine keep in memory between plans gives what reading
everything again gives: a session's path after appends, compactions and recounts; its
compactions; usage statistics after reports, and warmed before any is asked for; another
process's writes seen at once. Older-history retrieval over an index grown turn by turn ranks
like one made at once, and like the plain BM25 loop it replaces."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import msgspec

from ctx_lsp.core.conversation import group_turns, parse_messages
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.memory import history, reflection
from ctx_lsp.memory.store import MemoryStore

COUNTER = counter_for("cl100k_base")


def messages(start: int, turns: int) -> list:
    raw = []
    for k in range(start, start + turns):
        raw += [
            {"id": f"u{k}", "role": "user", "content": f"turn {k}: fix the invoice rounding and the discount rules"},
            {
                "id": f"a{k}",
                "role": "assistant",
                "content": f"step {k}: rounding done in shop/billing.py " * (k % 5 + 1),
            },
        ]
    return parse_messages(raw)


def fresh(path: Path, session: str, branch: str | None = None) -> tuple[list, list]:
    """The path and compactions as a store that has read nothing before sees them."""
    store = MemoryStore(path)
    try:
        return store.path_meta(session, branch), store.compactions(session)
    finally:
        store.close()


def test_the_kept_path_and_compactions_are_what_the_store_holds(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    store = MemoryStore(db)
    store.ensure_session("s")
    store.append("s", None, messages(0, 3), [(10, "cl100k_base")] * 6)
    assert store.path_meta("s") == fresh(db, "s")[0]  # read once, kept
    store.append("s", None, messages(3, 2), [(12, "cl100k_base")] * 4)  # the kept path grows
    assert store.path_meta("s") == fresh(db, "s")[0]
    store.add_compaction("s", "main", "summary one", None, ["u0", "a0", "u1", "a1"], 100, 20, 1.0, "trim", None)
    assert (store.path_meta("s"), store.compactions("s")) == fresh(db, "s")
    store.add_compaction("s", "main", "summary two", None, ["u2", "a2"], 80, 20, 1.0, "trim", None)
    assert (store.path_meta("s"), store.compactions("s")) == fresh(db, "s")
    store.set_counts("s", [("u3", 50, 14, "o200k_base")])
    assert store.path_meta("s") == fresh(db, "s")[0]
    store.fork("s", "a3", "side")
    store.append("s", None, messages(9, 1))
    assert store.path_meta("s") == fresh(db, "s")[0] and [m.id for m in store.path_meta("s")][-3:] == ["a3", "u9", "a9"]
    assert store.path_meta("s", "main") == fresh(db, "s", "main")[0]

    # another process appends and compacts: seen at once
    other = MemoryStore(db)
    other.append("s", "main", messages(20, 1))
    other.add_compaction("s", "main", "theirs", None, ["u3", "a3"], 10, 5, 1.0, "trim", None)
    other.close()
    assert (store.path_meta("s", "main"), store.compactions("s")) == fresh(db, "s", "main")
    assert [m.id for m in store.path_meta("s", "main")][-2:] == ["u20", "a20"]
    store.close()


def report(store: MemoryStore, n: int, model: str, rng: random.Random) -> None:
    """A usage report of plan ``n``: an estimate, its raw form, and what the provider counted."""
    estimate = rng.randint(100, 5000)
    raw, actual = estimate - rng.randint(0, 50), estimate + rng.randint(-300, 900)
    store.record_usage(f"p{n}", f"s{n % 3}", model, estimate, raw, actual, 0, 10)


def test_usage_statistics_kept_in_order_match_reading_them_all(tmp_path: Path):
    db = tmp_path / "memory.sqlite3"
    store = MemoryStore(db)
    rng = random.Random(4)
    for n in range(40):
        report(store, n, "gpt-4o", rng)
        for session in ("s0", "s1", None):
            kept = store.usage_stats("gpt-4o", session)
            again = MemoryStore(db)
            assert kept == again.usage_stats("gpt-4o", session)
            again.close()
    store.close()


def test_warmed_usage_statistics_are_read_before_the_first_plan_asks(tmp_path: Path):
    # a store with months of reports made a face's first plan read them all (3-13 ms for 6,454),
    # and thirty requests arriving with it waited; warmed at start, a plan reads no report
    db = tmp_path / "memory.sqlite3"
    writer = MemoryStore(db)
    rng = random.Random(5)
    for n in range(60):
        report(writer, n, ("gpt-4o", "claude-sonnet-4-5")[n % 2], rng)
    writer.close()
    cold, warm = MemoryStore(db), MemoryStore(db)
    warm.warm_usage()
    read: list[str] = []
    warm._conn.set_trace_callback(read.append)
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        assert warm.usage_stats(model) == cold.usage_stats(model)  # the same statistics
    assert not [sql for sql in read if "FROM usage" in sql]
    cold.close()
    warm.close()


def reference(turns, query: str) -> list[tuple[str, float, str]]:
    """The plain BM25 loop over every chunk (query words in sorted order)."""
    q = sorted(set(history._terms(query)))
    read = [history._Chunk(t) for t in turns]
    avg = sum(c.length for c in read) / len(read) or 1.0
    df = Counter(w for c in read for w in q if w in c.tf)
    n = len(read)
    scored = []
    for k, chunk in enumerate(read):
        score, matched = 0.0, []
        for w in q:
            f = chunk.tf.get(w, 0)
            if f:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                score += (
                    idf * f * (history.K1 + 1) / (f + history.K1 * (1 - history.B + history.B * chunk.length / avg))
                )
                matched.append(w)
        if score > 0:
            scored.append((score, k, matched))
    best = sorted(sorted(scored, key=lambda s: (-s[0], s[1]))[: history.HISTORY_LIMIT], key=lambda s: s[1])
    return [(turns[k][0].id, round(s * history.HISTORY_WEIGHT, 6), ", ".join(m)) for s, k, m in best]


def test_history_ranked_over_a_growing_index_as_over_a_new_one():
    rng = random.Random(7)
    words = ["invoice", "rounding", "discount", "tax", "cart", "refund", "stock", "price", "total", "coupon"]
    raw = []
    for k in range(120):
        raw.append({"id": f"u{k}", "role": "user", "content": " ".join(rng.choices(words, k=rng.randint(2, 8)))})
        raw.append({"id": f"a{k}", "role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(5, 60)))})
    turns = group_turns(parse_messages(raw))
    chunks = history.HistoryChunks()
    shown = turns[:40]
    for size in (40, 41, 80, 80, 120):  # the same lists, growing as compactions archive more
        shown = shown + turns[len(shown) : size]
        for query in ("invoice rounding", "refund coupon stock", "tax tax total price cart"):
            got = history.history_candidates(shown, query, COUNTER, 1.0, chunks)
            plain = history.history_candidates(shown, query, COUNTER, 1.0)  # a new index
            want = reference(shown, query)
            assert [msgspec.to_builtins(i) for i in got] == [msgspec.to_builtins(i) for i in plain]
            assert [(i.text.split("message ", 1)[1].split(")", 1)[0], i.score) for i in got] == [w[:2] for w in want]
            assert all(w[2] in (i.why or "") for i, w in zip(got, want, strict=True))


def test_history_ranked_like_the_plain_loop_when_chunks_tie():
    """An agent's turns alike but for their numbers: chunks of equal length, equal scores; the
    best are then the earliest, however the scores are sorted."""
    raw = []
    for k in range(150):
        raw.append({"id": f"u{k}", "role": "user", "content": f"Part {k}: check the discount rules."})
        raw.append({"id": f"a{k}", "role": "assistant", "content": "log line " * (200 + k % 3)})
    turns = group_turns(parse_messages(raw))
    chunks = history.HistoryChunks()
    for size in (20, 33, 90, 150):
        for query in ("part 7", "discount part", "log rules"):
            got = history.history_candidates(turns[:size], query, COUNTER, 1.0, chunks)
            assert [(i.text.split("message ", 1)[1].split(")", 1)[0], i.score) for i in got] == [
                w[:2] for w in reference(turns[:size], query)
            ]


def split(metas: list) -> tuple[list, list]:
    return [m for m in metas if m.archived_by is not None], [m for m in metas if m.archived_by is None]


def test_the_kept_path_parts_are_the_path_split(tmp_path: Path):
    """``path_parts`` after appends, compactions of the oldest turns and of others, recounts, a
    fork and another process's writes is the split of the path a fresh store reads; its archived
    tuple stays the same object until something more is archived."""
    db = tmp_path / "memory.sqlite3"
    store = MemoryStore(db)
    store.ensure_session("s")

    seen: list[tuple] = []  # every archived tuple handed out

    def check(branch: str | None = None) -> tuple:
        archived, active = store.path_parts("s", branch)
        assert (list(archived), active) == split(fresh(db, "s", branch)[0])
        # a tuple of an earlier one's lineage begins with all of it (older history grows on that)
        assert all(archived[: len(e)] == e for e in seen if archived.extends(e))
        seen.append(archived)
        assert store.path_meta("s", branch) == fresh(db, "s", branch)[0]
        assert store.path_length("s", branch) == len(fresh(db, "s", branch)[0])  # the kept path's length
        return archived

    store.append("s", None, messages(0, 6), [(10, "cl100k_base")] * 12)
    first = check()
    store.append("s", None, messages(6, 2))
    assert check() is first  # appends archive nothing: the same tuple
    store.add_compaction("s", "main", "one", None, ["u0", "a0", "u1", "a1"], 100, 20, 1.0, "trim", None)
    second = check()
    assert second is not first and second[: len(first)] == first and second.extends(first)
    assert check() is second
    store.add_compaction("s", "main", "not the oldest", None, ["u4", "a4"], 50, 20, 1.0, "trim", None)
    check()
    store.add_compaction("s", "main", "the gap", None, ["u2", "a2", "u3", "a3"], 50, 20, 1.0, "trim", None)
    check()
    store.add_compaction("s", "main", "again", None, ["u5", "a5", "a4"], 50, 20, 1.0, "trim", None)
    check()
    store.set_counts("s", [("u6", 50, 14, "o200k_base")])
    check()
    store.fork("s", "a6", "side")
    store.append("s", None, messages(30, 2))
    check()
    check("main")
    store.add_compaction("s", "side", "side one", None, ["u6", "a6", "u30", "a30"], 50, 20, 1.0, "trim", None)
    check()
    check("main")

    other = MemoryStore(db)  # another process appends and compacts: seen at once
    other.append("s", "main", messages(40, 2))
    other.add_compaction("s", "main", "theirs", None, ["u7", "a7"], 10, 5, 1.0, "trim", None)
    other.close()
    check("main")
    check("side")
    store.close()


def test_a_kept_centroid_compares_and_grows_as_the_whole_one():
    rng = random.Random(3)
    words = ["invoice", "rounding", "discount", "tax", "cart", "refund", "the", "part", "7", "42", "x"]
    centroid, kept = Counter(), reflection.Centroid(Counter())
    for _ in range(300):
        q = reflection.terms(" ".join(rng.choices(words, k=rng.randint(0, 6))) + f" {rng.randint(0, 500)}")
        assert kept.cosine(q) == reflection.cosine(q, centroid)
        centroid = centroid + q
        kept.add(q)
        assert kept.counts == centroid and kept.square == sum(v * v for v in centroid.values())


def agent_turn(k: int) -> list[dict]:
    """One turn of an agent loop (as benchmarks/long_session.py sends): a tool call, its large
    result, a reply, the next question."""
    return [
        {"id": f"a{k}", "role": "assistant", "content": f"Step {k}: running the tests.",
         "toolCalls": [{"id": f"c{k}", "name": "run_tests", "arguments": '{"path": "tests/test_invoice.py"}'}]},
        {"id": f"t{k}", "role": "tool", "toolCallId": f"c{k}", "content": f"log line {k % 4} " * 600},
        {"id": f"r{k}", "role": "assistant", "content": f"Step {k} done; we keep Invoice.total."},
        {"id": f"u{k + 1}", "role": "user", "content": f"Part {k + 1}: check the discount rules."},
    ]  # fmt: skip


def test_a_long_session_plans_as_a_fresh_process_would(tmp_path: Path):
    """What the sessions engine keeps between plans (the path's parts, older history's turns and
    index, the query cluster's centroid) changes no plan: at every turn of a long session —
    compacting every other turn, forked, written to by another process — a process that has kept
    nothing plans the same question identically."""
    from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest
    from ctx_lsp.sessions import SessionEngine, SessionPlanRequest
    from tests.workspaces import copy_sample

    db = tmp_path / "memory.sqlite3"
    core = SessionEngine(Engine(copy_sample(tmp_path / "ws")), MemoryStore(db))
    core.engine.refresh_index()
    core.append_raw("s", None, [{"id": "u0", "role": "user", "content": "Add VAT to calculate_invoice_total."}])
    budget = BudgetOverrides(context_length=12_000)

    def ask(engine: SessionEngine, query: str, dry: bool) -> tuple:
        req = PlanRequest(query=query, budget=budget)
        plan = engine.plan(SessionPlanRequest(session="s", request=req, dry_run=dry)).result.plan
        return plan.plan_id, [(i.id, i.tokens) for i in plan.included], [i.id for i in plan.excluded]

    compactions = 0
    for k in range(40):
        query = f"part {k}" if k % 5 else f"how is the invoice total rounded with tax {k}?"
        if k == 24:  # back to where the latest compaction ends: its summary covers the new branch
            core.branch("s", core.store.compactions("s")[-1]["archivedIds"][-1], "side")
        if k in (12, 30):  # another process writes: an exchange of its own, and a compaction
            other = SessionEngine(Engine(core.engine.root), MemoryStore(db))
            other.append_raw("s", None, agent_turn(100 + k))
            other.compact("s", "trim")
            ask(other, f"where are refunds of coupons stored {k}?", dry=False)  # another task: a new cluster
            other.close()
        for after in (False, True):  # before the turn's plan (which may compact first), and after it
            kept = ask(core, query, dry=True)
            fresh = SessionEngine(Engine(core.engine.root), MemoryStore(db))
            assert ask(fresh, query, dry=True) == kept
            fresh.close()
            if not after:
                ask(core, query, dry=False)
                compactions += sum(type(e).__name__ == "Compacted" for e in core.drain_events())
        core.append_raw("s", None, agent_turn(k))
    assert compactions > 10 and len(core.store.compactions("s")) > 12
    core.close()
