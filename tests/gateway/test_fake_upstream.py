"""The fake provider against the official SDKs: what a gateway test may rely on."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import anthropic
import openai
import pytest

from tests.gateway.fake_upstream import DEFAULT_REPLY, FakeUpstream, Reply, cacheable

ROOT = Path(__file__).resolve().parents[2]
WEATHER = {"name": "get_weather", "description": "Weather in a city", "input_schema": {"type": "object"}}
OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


@pytest.fixture
async def up():
    async with FakeUpstream() as server:
        yield server


@pytest.fixture
async def oai(up: FakeUpstream):
    async with openai.AsyncOpenAI(base_url=up.openai_url, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
async def ant(up: FakeUpstream):
    async with anthropic.AsyncAnthropic(base_url=up.anthropic_url, api_key="sk-ant-test", max_retries=0) as client:
        yield client


# --- OpenAI Chat -------------------------------------------------------------------------------


async def test_chat_plain(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    r = await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == DEFAULT_REPLY
    assert r.choices[0].finish_reason == "stop"
    req = up.requests[-1]
    assert req.path == "/v1/chat/completions" and req.api == "chat"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.json["messages"] == [{"role": "user", "content": "hi"}]
    assert r.usage.prompt_tokens == len(req.body) // 4
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.prompt_tokens_details.cached_tokens == 0


async def test_chat_stream_usage_only_when_asked(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    stream = await oai.chat.completions.create(model="m", messages=msgs, stream=True)
    chunks = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == DEFAULT_REPLY
    assert all(c.usage is None for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"

    opts = {"include_usage": True}
    stream = await oai.chat.completions.create(model="m", messages=msgs, stream=True, stream_options=opts)
    chunks = [c async for c in stream]
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == len(up.requests[-1].body) // 4


async def test_chat_stream_ends_with_done(up: FakeUpstream) -> None:
    async with aiohttp.ClientSession() as s:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
        async with s.post(up.openai_url + "/chat/completions", json=body) as r:
            assert r.headers["Content-Type"].startswith("text/event-stream")
            text = await r.text()
    lines = [line for line in text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"


async def test_chat_tool_call_round_trip(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    up.queue(Reply.tool_call("get_weather", {"city": "Paris"}), Reply.text("It is sunny."))
    msgs: list = [{"role": "user", "content": "weather?"}]
    r = await oai.chat.completions.create(model="m", messages=msgs, tools=[OPENAI_TOOL], stream=True)
    acc = {"id": "", "name": "", "args": ""}
    finish = None
    async for c in r:
        for tc in c.choices[0].delta.tool_calls or [] if c.choices else []:
            acc["id"] = tc.id or acc["id"]
            acc["name"] = (tc.function.name or "") or acc["name"]
            acc["args"] += tc.function.arguments or ""
        if c.choices and c.choices[0].finish_reason:
            finish = c.choices[0].finish_reason
    assert finish == "tool_calls" and acc["name"] == "get_weather" and json.loads(acc["args"]) == {"city": "Paris"}
    call = {"id": acc["id"], "type": "function", "function": {"name": acc["name"], "arguments": acc["args"]}}
    msgs += [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "tool_call_id": acc["id"], "content": "sun"}]
    r2 = await oai.chat.completions.create(model="m", messages=msgs, tools=[OPENAI_TOOL])
    assert r2.choices[0].message.content == "It is sunny."
    assert up.requests[-1].json["messages"][-1]["tool_call_id"] == acc["id"]


# --- OpenAI Responses --------------------------------------------------------------------------


async def test_responses_plain_and_streamed(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    r = await oai.responses.create(model="m", input="hi")
    assert r.output_text == DEFAULT_REPLY
    assert r.usage.input_tokens == len(up.requests[-1].body) // 4
    assert up.requests[-1].path == "/v1/responses"

    types, text = [], ""
    async with oai.responses.stream(model="m", input="hi") as stream:
        async for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
        final = await stream.get_final_response()
    assert text == DEFAULT_REPLY and final.output_text == DEFAULT_REPLY
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens


async def test_responses_stream_wire_format(up: FakeUpstream) -> None:
    async with aiohttp.ClientSession() as s:
        body = {"model": "m", "input": "x", "stream": True}
        async with s.post(up.openai_url + "/responses", json=body) as r:
            text = await r.text()
    events = [e for e in text.split("\n\n") if e]
    seqs, kinds = [], []
    for e in events:
        head, data = e.split("\n")
        kind = head.removeprefix("event: ")
        payload = json.loads(data.removeprefix("data: "))
        assert payload["type"] == kind
        kinds.append(kind)
        seqs.append(payload["sequence_number"])
    assert seqs == list(range(len(events)))
    expected = ["response.created", "response.output_item.added", "response.content_part.added"]
    assert kinds[:3] == expected
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert set(kinds[3:-4]) == {"response.output_text.delta"}


async def test_responses_function_call(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    up.queue(Reply.tool_call("shell", {"cmd": ["ls"]}), Reply.tool_call("shell", {"cmd": ["pwd"]}), api="responses")
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    r = await oai.responses.create(model="m", input="list", tools=tools)
    (item,) = r.output
    assert item.type == "function_call" and item.name == "shell" and json.loads(item.arguments) == {"cmd": ["ls"]}
    async with oai.responses.stream(model="m", input="list", tools=tools) as stream:
        final = await stream.get_final_response()
    assert final.output[0].type == "function_call" and json.loads(final.output[0].arguments) == {"cmd": ["pwd"]}


# --- Anthropic ---------------------------------------------------------------------------------


async def test_messages_plain_and_streamed(up: FakeUpstream, ant: anthropic.AsyncAnthropic) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    r = await ant.messages.create(model="claude-x", max_tokens=100, messages=msgs)
    assert r.content[0].text == DEFAULT_REPLY and r.stop_reason == "end_turn"
    req = up.requests[-1]
    assert req.path == "/v1/messages"
    # the Python SDK 2.x sends its api_key as a Bearer token; Claude Code sends x-api-key
    assert "sk-ant-test" in (req.headers.get("x-api-key"), req.headers.get("authorization", "").removeprefix("Bearer "))
    assert "anthropic-version" in req.headers
    assert r.usage.input_tokens + r.usage.cache_read_input_tokens == len(req.body) // 4

    async with ant.messages.stream(model="claude-x", max_tokens=100, messages=msgs) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text == DEFAULT_REPLY and final.usage.output_tokens == len(DEFAULT_REPLY) // 4


async def test_messages_beta_query_string_kept(up: FakeUpstream, ant: anthropic.AsyncAnthropic) -> None:
    # Claude Code posts to /v1/messages?beta=true (the Python SDK 2.x sends only the header)
    r = await ant.beta.messages.create(
        model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}], betas=["foo-2025-01-01"]
    )
    assert r.content[0].text == DEFAULT_REPLY
    assert up.requests[-1].headers["anthropic-beta"] == "foo-2025-01-01"
    body = {"model": "c", "max_tokens": 5, "messages": [], "stream": True}
    async with aiohttp.ClientSession() as s, s.post(up.url + "/v1/messages?beta=true", json=body) as resp:
        assert "event: message_stop" in await resp.text()
    assert up.requests[-1].path == "/v1/messages?beta=true" and up.requests[-1].api == "messages"


async def test_messages_tool_use_round_trip(up: FakeUpstream, ant: anthropic.AsyncAnthropic) -> None:
    up.queue(Reply.tool_call("get_weather", {"city": "Paris"}), Reply.text("Sunny in Paris."))
    msgs: list = [{"role": "user", "content": "weather in Paris?"}]
    async with ant.messages.stream(model="c", max_tokens=100, messages=msgs, tools=[WEATHER]) as stream:
        first = await stream.get_final_message()
    assert first.stop_reason == "tool_use"
    (use,) = first.content
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Paris"}
    msgs += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
    ]
    second = await ant.messages.create(model="c", max_tokens=100, messages=msgs, tools=[WEATHER])
    assert second.content[0].text == "Sunny in Paris."
    assert up.requests[-1].json["messages"][-1]["content"][0]["tool_use_id"] == use.id
    # the second turn repeats the first: the simulated prompt cache reads the common prefix
    assert second.usage.cache_read_input_tokens > 0


async def test_count_tokens_models_and_root(
    up: FakeUpstream, oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    n = await ant.messages.count_tokens(model="c", messages=[{"role": "user", "content": "hello"}])
    assert n.input_tokens == len(up.requests[-1].body) // 4
    models = await oai.models.list()
    assert "fake-model" in [m.id for m in models.data]
    async with aiohttp.ClientSession() as s:
        async with s.head(up.url + "/") as r:
            assert r.status == 200
        async with s.get(up.url + "/") as r:
            assert r.status == 200
        async with s.get(up.url + "/v1/nothing?x=1") as r:
            assert r.status == 404
    assert [r.method for r in up.requests[-3:]] == ["HEAD", "GET", "GET"]
    assert up.requests[-1].path == "/v1/nothing?x=1"


# --- scripted failures -------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 429, 500])
async def test_errors_are_provider_shaped(
    up: FakeUpstream, status: int, oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    up.queue(Reply.error(status, "nope"), Reply.error(status, "nope"))
    with pytest.raises(openai.APIStatusError) as e:
        await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert e.value.status_code == status and e.value.body["message"] == "nope"
    with pytest.raises(anthropic.APIStatusError) as e2:
        await ant.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert e2.value.status_code == status and e2.value.body["error"]["message"] == "nope"
    assert e2.value.body["type"] == "error"
    # the queue is used up: the default answers again
    r = await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert r.choices[0].message.content == DEFAULT_REPLY


async def test_slow_stream(up: FakeUpstream) -> None:
    up.queue(Reply.text("a b c d", delay=0.1))
    async with aiohttp.ClientSession() as s:
        body = {"model": "m", "messages": [], "stream": True}
        async with s.post(up.openai_url + "/chat/completions", json=body) as r:
            arrivals = []
            async for _ in r.content.iter_any():
                arrivals.append(time.monotonic())
    # role, 4 deltas, finish, [DONE]: 6 gaps of 0.1 s
    assert arrivals[-1] - arrivals[0] >= 0.5


async def test_stream_cut_midway(up: FakeUpstream) -> None:
    # "drop": the connection closes inside the chunked body
    up.queue(Reply.text("one two three four", cut_after=3))
    body = {"model": "c", "max_tokens": 5, "messages": [], "stream": True}
    async with aiohttp.ClientSession() as s, s.post(up.url + "/v1/messages", json=body) as r:
        got = b""
        with pytest.raises(aiohttp.ClientPayloadError):
            async for chunk in r.content.iter_any():
                got += chunk
    assert got.count(b"event: ") == 3 and b"message_stop" not in got

    # "end": a complete HTTP body that lacks the closing events
    up.queue(Reply.text("one two three four", cut_after=3, cut="end"))
    body = {"model": "m", "messages": [], "stream": True}
    async with aiohttp.ClientSession() as s, s.post(up.openai_url + "/chat/completions", json=body) as r:
        text = await r.text()
    assert text.count("data: ") == 3 and "[DONE]" not in text


async def test_gzip_reply(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    up.queue(Reply.text("compressed", gzip=True), Reply.text("compressed", gzip=True))
    r = await oai.chat.completions.create(model="m", messages=[])
    assert r.choices[0].message.content == "compressed"
    body = {"model": "m", "messages": []}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as s,
        s.post(up.openai_url + "/chat/completions", json=body) as r,
    ):
        assert r.headers["Content-Encoding"] == "gzip"
        assert json.loads(gzip.decompress(await r.read()))["choices"][0]["message"]["content"] == "compressed"


async def test_per_api_queue(up: FakeUpstream, oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic) -> None:
    up.queue(Reply.text("for messages"), api="messages")
    up.queue(Reply.text("for anyone"))
    r = await oai.chat.completions.create(model="m", messages=[])
    assert r.choices[0].message.content == "for anyone"
    m = await ant.messages.create(model="c", max_tokens=5, messages=[])
    assert m.content[0].text == "for messages"


# --- the simulated prompt cache ----------------------------------------------------------------


async def test_openai_cache_is_the_common_prefix_in_128_token_steps(up: FakeUpstream, oai: openai.AsyncOpenAI) -> None:
    system = {"role": "system", "content": "x" * 5000}
    r1 = await oai.chat.completions.create(model="m", messages=[system, {"role": "user", "content": "a"}])
    assert r1.usage.prompt_tokens_details.cached_tokens == 0
    r2 = await oai.chat.completions.create(model="m", messages=[system, {"role": "user", "content": "b"}])
    key = cacheable("chat", up.requests[-1].json)
    common = key.index(b'"b"') + 1  # the bytes both requests share
    assert r2.usage.prompt_tokens_details.cached_tokens == common // 4 // 128 * 128 == 1152
    # a changed first byte: nothing cached
    r3 = await oai.chat.completions.create(model="m", messages=[{"role": "system", "content": "y" * 5000}])
    assert r3.usage.prompt_tokens_details.cached_tokens == 0


async def test_key_order_breaks_the_cache_whitespace_does_not(up: FakeUpstream) -> None:
    tools = [{"name": "t", "description": "d" * 2000, "input_schema": {"type": "object"}}]
    reordered = [{"description": "d" * 2000, "name": "t", "input_schema": {"type": "object"}}]
    base = {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    async with aiohttp.ClientSession() as s:

        async def cached(body: bytes) -> int:
            async with s.post(up.url + "/v1/messages", data=body) as r:
                return (await r.json())["usage"]["cache_read_input_tokens"]

        await cached(json.dumps({**base, "tools": tools}).encode())
        assert await cached(json.dumps({**base, "tools": tools}, indent=2).encode()) > 500
        assert await cached(json.dumps({**base, "tools": reordered}).encode()) <= 2  # only [[{" is shared


# --- thread mode and script mode ---------------------------------------------------------------


def test_thread_mode_with_sync_clients() -> None:
    with (
        FakeUpstream(reply="from a thread") as server,
        openai.OpenAI(base_url=server.openai_url, api_key="k", max_retries=0) as o,
        anthropic.Anthropic(base_url=server.anthropic_url, api_key="k", max_retries=0) as a,
    ):
        r = o.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert r.choices[0].message.content == "from a thread"
        assert a.messages.create(model="c", max_tokens=5, messages=[]).content[0].text == "from a thread"
        assert [r.api for r in server.requests] == ["chat", "messages"]


def test_script_mode_records_jsonl(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    queue = json.dumps([{"kind": "error", "status": 429}])
    args = ["--port", "0", "--record", str(record), "--reply", "scripted", "--queue", queue]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.gateway.fake_upstream", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening http://127.0.0.1:")
        url = line.split()[1]
        with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
            with pytest.raises(openai.RateLimitError):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "é"}])
            r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "é"}])
        assert r.choices[0].message.content == "scripted"
    finally:
        proc.terminate()
        assert proc.wait(5) == 0
        proc.stdout.close()
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["status"] for r in rows] == [429, 200]
    assert rows[0]["path"] == "/v1/chat/completions" and rows[0]["headers"]["authorization"] == "Bearer k"
    assert json.loads(rows[1]["body"])["messages"][0]["content"] == "é"


async def test_big_body_accepted(up: FakeUpstream, ant: anthropic.AsyncAnthropic) -> None:
    big = "z" * (3 * 1024 * 1024)
    r = await ant.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": big}])
    assert r.content[0].text == DEFAULT_REPLY
    assert len(up.requests[-1].body) > 3 * 1024 * 1024


async def test_a_moved_cache_control_marker_keeps_the_cache(up: FakeUpstream) -> None:
    # Claude Code moves its last cache_control marker to the newest user block each turn
    mark = {"type": "ephemeral"}
    first = [{"role": "user", "content": [{"type": "text", "text": "q" * 4000, "cache_control": mark}]}]
    second = [
        {"role": "user", "content": [{"type": "text", "text": "q" * 4000}]},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "next", "cache_control": mark}]},
    ]
    async with aiohttp.ClientSession() as s:
        for messages in (first, second):
            async with s.post(up.url + "/v1/messages", json={"model": "c", "max_tokens": 5, "messages": messages}) as r:
                usage = (await r.json())["usage"]
    assert usage["cache_read_input_tokens"] >= 1000
