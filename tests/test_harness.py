"""What the user asked, on bodies the real assistants sent (tests/fixtures/harness/: Claude Code
2.1.197, Codex 0.169, aider 0.86.2 against the fake upstream, paths and ids scrubbed): the query
is the user's words, the harness text is left out, and side requests are told apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctx_lsp.core.exchange import exchange_query
from ctx_lsp.core.harness import first_words, is_harness, user_words
from ctx_lsp.core.items import Message
from ctx_lsp.core.side_requests import is_side_request, side_request
from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.proxy import ANTHROPIC, CHAT, RESPONSES
from ctx_lsp.gateway.translate import exchange, session_of

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
QUESTION = "How does the session store keep messages? Do not edit any file."
APIS = {"claude_code": ANTHROPIC, "codex": RESPONSES, "aider": CHAT}


def _exchange(name: str):
    api = next(a for prefix, a in APIS.items() if name.startswith(prefix))
    parsed = api.parse(b.obj((FIXTURES / name).read_bytes()))
    return exchange(api, parsed, "s", None)


@pytest.mark.parametrize(
    "name",
    [
        "claude_code_2.1.197_read.json",  # a <system-reminder> block ahead of the prompt, then a Read round trip
        "codex_0.169_agents_md.json",  # AGENTS.md and <environment_context> as user messages of their own
        "aider_0.86.2_file.json",  # a file added to the chat, the edit format's reminder after the prompt
        "aider_0.86.2_git.json",  # the repo map and "Don't try and edit…" ahead of the prompt
    ],
)
def test_the_query_is_what_the_user_asked(name: str) -> None:
    ex = _exchange(name)
    users = [m.content for m in ex.messages if m.role == "user"]
    assert any(text != QUESTION and QUESTION in text for text in users) or len(users) > 1  # harness text was there
    query = exchange_query(ex.messages)
    if ex.messages[-1].role == "tool":  # the agent loop: the recent tool calls join the question
        assert query.startswith(QUESTION + "\n") and "Read" in query
    else:
        assert query == QUESTION
    # and every other user message is the harness's, or the user's own words
    others = [user_words(t) for t in users]
    assert [w for w in others if w] == [QUESTION] or name.startswith("aider"), others


def test_aider_worked_example_and_listings_are_not_the_title() -> None:
    users = [m.content for m in _exchange("aider_0.86.2_git.json").messages if m.role == "user"]
    assert users[0] == "Change the greeting to be more casual"  # aider's example, sent as the user
    assert first_words(users) == QUESTION


def test_user_words_inside_a_harness_message_are_kept() -> None:
    text = (
        "<system-reminder>\nThe user opened shop/config.py in the IDE.\n</system-reminder>\n"
        "Why does refund_total round twice?\n"
        "<system-reminder>\nAs you answer the user's questions, you can use the following context\n</system-reminder>"
    )
    assert user_words(text) == "Why does refund_total round twice?"
    assert user_words("[Request interrupted by user for tool use]\nno, look at invoice.py") == "no, look at invoice.py"
    assert is_harness("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
    assert is_harness("I spoke to you previously about a number of things.\nWe looked at refunds.")  # aider
    # a tag the user types without its closing tag is the user's text
    assert user_words("what does <system-reminder> mean here?") == "what does <system-reminder> mean here?"
    # aider's ask-mode reminder is only "Reply in LANGUAGE." at the very end
    assert user_words("Where is tax computed?\n\nReply in English.\n") == "Where is tax computed?"
    assert user_words("Reply in English. Where is tax computed?") == "Reply in English. Where is tax computed?"


def test_a_message_that_is_all_harness_gives_way_to_the_users_last_words() -> None:
    messages = [
        Message(id="1", role="user", content="Why does refund_total round twice?"),
        Message(id="2", role="assistant", content="Let me look."),
        Message(id="3", role="user", content="<system-reminder>\nTodo list changed.\n</system-reminder>"),
    ]
    assert exchange_query(messages) == "Why does refund_total round twice?"


def test_claude_codes_title_request_is_a_side_request() -> None:
    ex = _exchange("claude_code_2.1.197_title.json")
    assert ex.tools == ()
    assert side_request(ex.system, ex.messages, ex.tools, ex.max_output) == "title"


@pytest.mark.parametrize(
    "name", ["claude_code_2.1.197_read.json", "codex_0.169_agents_md.json", "aider_0.86.2_file.json"]
)
def test_the_assistants_own_turns_are_not_side_requests(name: str) -> None:
    ex = _exchange(name)
    assert not is_side_request(ex.system, ex.messages, ex.tools, ex.max_output)


def test_side_request_rule() -> None:
    ask = [Message(id="1", role="user", content="How does Inventory.reserve work?")]
    # a user's own one-shot question, no tools, a short system prompt: not a side request
    assert side_request("You are a helpful assistant.", ask, (), 1024) is None
    assert side_request("", ask, (), None) is None
    # a quota check: one token of reply
    assert side_request("", [Message(id="1", role="user", content="quota")], (), 1) == "check"
    # aider's weak-model calls (aider/prompts.py)
    summary = "*Briefly* summarize this partial conversation about programming.\nInclude less detail about older parts"
    assert side_request(summary, ask, (), None) == "summary"
    commit = "You are an expert software engineer that generates concise, one-line Git commit messages based on the"
    assert side_request(commit, ask, (), None) == "commit message"
    # an agent's turn offers tools, whatever its system prompt says
    assert side_request("Generate a concise title", ask, ("Read",), None) is None
    # a long system prompt that mentions titles somewhere is an assistant's own
    assert side_request("You are a coding agent. " * 400 + "Generate a title", ask, (), None) is None


def test_fixtures_hold_no_secrets() -> None:
    for path in FIXTURES.iterdir():
        text = path.read_text()
        assert "sk-" not in text and "/tmp/" not in text, path.name
        json.loads(text)


def test_two_aider_runs_with_different_questions_are_two_conversations() -> None:
    """aider sends the same worked example first in every run: the user's first words tell its
    conversations apart (no header, no id of its own)."""
    raw = json.loads((FIXTURES / "aider_0.86.2_git.json").read_text())
    other = json.loads(json.dumps(raw).replace(QUESTION, "Where is the tax rate set?"))
    sessions = []
    for body in (raw, other, raw):
        parsed = CHAT.parse(b.obj(json.dumps(body).encode()))
        sessions.append(session_of(CHAT, parsed, None))
    assert sessions[0] == sessions[2] != sessions[1]
