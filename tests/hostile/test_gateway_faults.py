"""The gateway answered as a careless or hostile client and upstream would have it: every
failure in the API's own shape, limits checked before reading, a client that leaves takes its
upstream request with it, invalid input a 400 (or passed through) without a traceback.

Real HTTP on loopback: the gateway of tests/gateway/harness.py, the fake upstream, and raw TCP
peers (``asyncio.start_server``, ``open_connection``) for what no HTTP library would send."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import MAX_BODY_BYTES, Gateway
from tests.gateway.fake_upstream import Reply
from tests.gateway.harness import KEY, PAID_CONTEXT, running_gateway
from tests.workspaces import copy_sample

ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
CHAT_HEADERS = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)
    return ws


@contextlib.asynccontextmanager
async def raw_upstream(
    answer: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[str]:
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


def _pointed(gw, url: str) -> None:
    """The running gateway's upstreams moved to ``url`` (a raw TCP peer)."""
    old = gw.gateway.options
    gw.gateway.options = GatewayOptions(
        host=old.host, port=old.port, openai_upstream=url + "/v1", anthropic_upstream=url, mode=old.mode
    )


def _in_shape(api: str, body: bytes) -> str:
    data = json.loads(body)
    if api == "anthropic":
        assert data["type"] == "error" and data["error"]["message"]
        return data["error"]["message"]
    assert data["error"]["message"]
    return data["error"]["message"]


MESSAGES = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("api", ["anthropic", "chat"])
@pytest.mark.parametrize("peer", ["closes", "bad status line"])
async def test_an_upstream_that_breaks_the_protocol_is_a_502_in_the_apis_shape(ws: Path, api: str, peer: str) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_head(reader)
        if peer == "bad status line":
            writer.write(b"SPDY/9 banana\r\n\r\n")
            await writer.drain()
        writer.close()

    async with running_gateway(ws) as gw, raw_upstream(answer) as url, aiohttp.ClientSession() as http:
        _pointed(gw, url)
        path, body, headers = (
            ("/v1/messages", MESSAGES, ANTHROPIC_HEADERS)
            if api == "anthropic"
            else ("/v1/chat/completions", CHAT, CHAT_HEADERS)
        )
        async with http.post(gw.url + path, json=body, headers=headers) as resp:
            assert resp.status == 502
            assert resp.content_type == "application/json"
            assert "upstream" in _in_shape(api, await resp.read())


async def test_json_nested_deeper_than_any_request_is_a_400(ws: Path) -> None:
    deep = b'{"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        async with http.post(gw.url + "/v1/messages", data=deep, headers=ANTHROPIC_HEADERS) as resp:
            assert resp.status == 400
            assert "deep" in _in_shape("anthropic", await resp.read())
        assert gw.up.model_requests == []


async def test_a_body_over_the_limit_is_refused_from_its_content_length(ws: Path) -> None:
    """The headers announce more than the limit and no byte of the body follows: the answer comes
    at once (before, the gateway waited to read the whole body first)."""
    async with running_gateway(ws) as gw:
        host, port = gw.url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\n"
            b"content-type: application/json\r\ncontent-length: " + str(MAX_BODY_BYTES + 1).encode() + b"\r\n\r\n{"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 413")
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        assert "limit" in _in_shape("anthropic", await reader.readexactly(length))
        writer.close()


BAD_BODIES = {
    "content 5": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": 5}]},
    "no messages": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": []},
    "max_tokens above the window": {**MESSAGES, "max_tokens": 10_000_000},
    "a message that is a number": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [7]},
}


# the same through the OpenAI APIs: (path, body)
OPENAI_BAD = {
    "chat: content 5": ("/v1/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": 5}]}),
    "chat: no messages": ("/v1/chat/completions", {"model": "gpt-4o", "messages": []}),
    "responses: content 5": (
        "/v1/responses",
        {"model": "gpt-4o", "input": [{"type": "message", "role": "user", "content": 5}]},
    ),
    "responses: output 5": (
        "/v1/responses",
        {"model": "gpt-4o", "input": [{"type": "function_call_output", "call_id": "c", "output": 5}]},
    ),
}


@pytest.mark.parametrize("case", [*BAD_BODIES, *OPENAI_BAD, "invalid utf-8", "invalid utf-8 in tools"])
async def test_invalid_input_is_a_400_or_passes_through_without_a_traceback(
    ws: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    if case == "invalid utf-8":
        raw = b'{"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "\xff\xfe"}]}'
    elif case == "invalid utf-8 in tools":
        raw = json.dumps(MESSAGES).encode()[:-1] + b', "tools": [{"name": "\xc3("}]}'
    elif case in OPENAI_BAD:
        raw = json.dumps(OPENAI_BAD[case][1]).encode()
    else:
        raw = json.dumps(BAD_BODIES[case]).encode()
    path, headers = (OPENAI_BAD[case][0], CHAT_HEADERS) if case in OPENAI_BAD else ("/v1/messages", ANTHROPIC_HEADERS)
    api = "anthropic" if path == "/v1/messages" else "openai"
    caplog.set_level(logging.INFO)
    async with running_gateway(ws) as gw, aiohttp.ClientSession() as http:
        gw.up.queue(Reply.error(400, "the provider's own answer"))
        async with http.post(gw.url + path, data=raw, headers=headers) as resp:
            body = await resp.read()
            assert resp.status == 400, body
            _in_shape(api, body)
        status = gw.gateway.status.snapshot()
    failures = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert failures == [], [r.getMessage() for r in failures]
    assert not status.get("counts", {}).get("fail_open"), status


async def test_a_client_that_leaves_cancels_the_upstream_request(ws: Path) -> None:
    """The upstream says nothing for a long time; the client gives up after half a second: the
    gateway's request upstream is closed within seconds (before: kept open up to 600 s)."""
    closed = asyncio.get_running_loop().create_future()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_head(reader)
        with contextlib.suppress(Exception):
            while await reader.read(65536):  # the body, then EOF when the gateway lets go
                pass
        if not closed.done():
            closed.set_result(time.monotonic())
        writer.close()

    async with running_gateway(ws) as gw, raw_upstream(silent) as url:
        _pointed(gw, url)
        async with aiohttp.ClientSession() as http:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await http.post(gw.url + "/v1/messages", json=MESSAGES, headers=ANTHROPIC_HEADERS)
        left = time.monotonic()
        at = await asyncio.wait_for(closed, 10)
        assert at - left < 5


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
async def test_an_ipv6_listen_address_is_bracketed(ws: Path) -> None:
    async with running_gateway(ws) as gw:
        options = GatewayOptions(
            host="::1", port=0, openai_upstream=gw.up.openai_url, anthropic_upstream=gw.up.anthropic_url
        )
        six = Gateway(gw.sessions, options, gw.gateway.run)
        url = await six.start()
        try:
            assert url.startswith("http://[::1]:")
            async with aiohttp.ClientSession() as http, http.get(url + "/") as resp:
                assert resp.status == 200
        finally:
            await six.close()
