"""Compaction and summarisers: what survives, what is archived, and the llm summariser against
a real OpenAI-compatible server on 127.0.0.1 (normal answer, HTTP 500, timeout, garbage)."""

from __future__ import annotations

import pytest

from ctx_lsp.config import LlmEndpoint
from ctx_lsp.core.conversation import parse_messages
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.memory.capsules import code_hash
from ctx_lsp.memory.compaction import extract_digest, llm_summary, split_for_compaction, summarise
from ctx_lsp.memory.llm import ChatClient, LlmError
from tests.fake_llm import FakeLLM

COUNT = counter_for("cl100k_base").count
TASK = "Add VAT support to calculate_invoice_total in shop/billing/invoice.py and keep the old tests green."


def session_messages(turns: int = 6):
    raw = [{"role": "user", "content": TASK}]
    for k in range(turns):
        raw += [
            {
                "role": "assistant",
                "content": f"I'll read the code first (step {k}).",
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": "run_tests", "arguments": '{"path": "tests/test_invoice.py"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{k}",
                "content": ("FAILED test_vat - AssertionError: 12 != 14\n" if k % 2 else "3 passed\n") + "x" * 800,
            },
            {"role": "assistant", "content": f"We decided to use `Invoice.total` instead of a new helper. TODO: {k}"},
            {"role": "user", "content": f"ok, continue with part {k + 1}? what about discounts?"},
        ]
    return parse_messages(raw)


def test_digest_states_task_decisions_files_tools_failures_and_open_items():
    d = extract_digest(session_messages())
    assert d.task == TASK
    assert any("decided to use" in x for x in d.decisions)
    assert "shop/billing/invoice.py" in d.touched and "tests/test_invoice.py" in d.touched
    assert "Invoice.total" in d.touched
    assert any(t.startswith("run_tests(") and "failed" in t for t in d.tools)
    assert any("AssertionError" in f for f in d.failures)
    assert any("TODO" in o for o in d.open_items)


def test_chained_digests_keep_the_original_task():
    first = extract_digest(session_messages()[:5])
    later = extract_digest(parse_messages([{"role": "user", "content": "now something else"}]), first)
    assert later.task == TASK


def test_split_keeps_the_current_turn_and_turns_whole():
    msgs = session_messages()
    turns: list[list] = []
    for m in msgs:
        if m.role == "user":
            turns.append([m])
        else:
            turns[-1].append(m)

    def cost(ms):
        return sum(COUNT(m.content) + 4 for m in ms)

    archive, kept = split_for_compaction(turns, cost, keep_tokens=cost(turns[-1]) + cost(turns[-2]))
    assert kept == turns[-2] + turns[-1]
    assert archive == [m for t in turns[:-2] for m in t]
    archive, kept = split_for_compaction(turns, cost, keep_tokens=0)
    assert kept == turns[-1]  # the current turn is never archived


def endpoint(url: str, **kw) -> LlmEndpoint:
    return LlmEndpoint(
        base_url=url, model="fake-model", timeout_seconds=kw.pop("timeout", 5), retries=kw.pop("retries", 1), **kw
    )


def test_llm_summary_normal_answer_and_window_respected():
    with FakeLLM("ok") as llm:
        client = ChatClient(endpoint(llm.base_url, context_length=1_500), backoff_seconds=0.01)
        text = llm_summary(client, session_messages(12), None, COUNT, window=1_500, max_output=300)
        assert text.startswith("SUMMARY by fake model")
        assert len(llm.requests) > 1, "a long conversation is chunked, then merged"
        for r in llm.requests:
            sent = sum(COUNT(m["content"]) for m in r["body"]["messages"])
            assert sent + r["body"]["max_tokens"] <= 1_500  # never overflows the summariser's window
            assert r["path"] == "/v1/chat/completions" and r["body"]["model"] == "fake-model"


@pytest.mark.parametrize(
    ("behaviour", "reason"), [("error", "HTTP 500"), ("slow", "within"), ("garbage", "not a chat")]
)
def test_llm_failures_fall_back_to_extractive_and_say_so(behaviour, reason):
    with FakeLLM(behaviour) as llm:
        client = ChatClient(endpoint(llm.base_url, timeout=0.5), backoff_seconds=0.01)
        text, _digest, used, note, _ms = summarise(
            session_messages(), 1, None, None, use_llm=True, client=client, count=COUNT, window=16_000
        )
        assert used == "extractive"
        assert note is not None and reason in note and "extractive" in note
        assert f"Original task: {TASK}" in text
        if behaviour == "error":
            assert len(llm.requests) == 2  # one retry with backoff


def test_llm_summary_is_used_when_the_endpoint_answers():
    with FakeLLM("ok") as llm:
        client = ChatClient(endpoint(llm.base_url), backoff_seconds=0.01)
        text, _d, used, note, _ms = summarise(
            session_messages(), 2, None, None, use_llm=True, client=client, count=COUNT, window=16_000
        )
        assert used == "llm" and note is None
        assert "SUMMARY by fake model" in text and f"Original task: {TASK}" in text


def test_chat_client_reports_a_refused_connection():
    client = ChatClient(endpoint("http://127.0.0.1:9", retries=0, timeout=0.5))
    with pytest.raises(LlmError, match="no answer from"):
        client.complete([{"role": "user", "content": "hi"}], 10)


def test_code_hash_ignores_whitespace_and_comments_but_not_code():
    a = "def f(x):\n    return x + 1\n"
    assert code_hash(a) == code_hash("def f(x):   # add one\n\n    return x+1\n")
    assert code_hash(a) != code_hash("def f(x):\n    return x + 2\n")
    assert code_hash("def broken(:\n") != code_hash("def broken( :\n")
