"""The wire and LSP's lifecycle, in raw bytes against the real `ctx-lsp serve` (a subprocess over
stdio, and once over TCP): every request gets an answer with the exact error code, and a valid
request afterwards is still answered.

- before `initialize`: -32003 at once (ctx/ methods, commands, standard requests);
- a second `initialize`: -32600, the first workspace stays;
- after `shutdown`: -32600 for every request, `exit` ends the process (0; 1 without shutdown);
- a body that is not JSON: -32700 with id null; JSON that is not a JSON-RPC message: -32600;
- a message over the size limit: -32600 with its id, its body skipped as it streams in (the
  server's peak memory stays low), the stream stays in step;
- malformed headers: -32700 with id null, reading resumes at the next message.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 60  # no answer at all: a hang (what must be prompt is timed on its own, below)
CAP = 256 * 2**20  # the server's default --max-message-bytes


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def request(msg_id: Any, method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return frame(json.dumps(msg))


def notification(method: str, params: Any = None) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}}))


def read_messages(stream, out: queue.Queue) -> None:
    """Server → client messages, parsed strictly (a framing bug of the server fails the test)."""
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                out.put(None)
                return
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "the server sent a message without Content-Length"
        out.put(json.loads(stream.read(length)))


class Raw:
    """A raw client: bytes in, parsed messages out."""

    def __init__(self, proc: subprocess.Popen, write, messages: queue.Queue) -> None:
        self.proc = proc
        self.write = write
        self.messages = messages
        self.notifications: list[dict] = []

    def response(self, msg_id: Any, timeout: float = TIMEOUT) -> dict:
        """The response with this id (notifications on the way are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no response to {msg_id!r} within {timeout} s") from None
            assert msg is not None, f"the server closed its output before answering {msg_id!r}"
            if msg.get("method") == "window/workDoneProgress/create":  # only with that capability
                self.write(frame(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": None})))
                continue
            if "method" in msg:
                assert "id" not in msg, f"unexpected server request {msg}"
                self.notifications.append(msg)
                continue
            assert msg.get("id") == msg_id, f"expected the response to {msg_id!r}, got {msg}"
            return msg

    def error(self, msg_id: Any, code: int, timeout: float = TIMEOUT) -> dict:
        msg = self.response(msg_id, timeout)
        assert "error" in msg and "result" not in msg, msg
        assert msg["error"]["code"] == code, msg
        assert "Traceback" not in msg["error"]["message"]
        return msg["error"]

    def initialize(self, root: Path, msg_id: Any = "init", capabilities: dict | None = None) -> dict:
        params = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}
        self.write(request(msg_id, "initialize", params))
        result = self.response(msg_id)["result"]
        self.write(notification("initialized"))
        return result

    def still_serving(self, msg_id: Any) -> None:
        """A valid request afterwards is answered."""
        self.write(request(msg_id, "ctx/showBudget", {}))
        assert self.response(msg_id)["result"]["session"] == "default"

    def no_popups(self) -> None:
        assert not [n for n in self.notifications if n["method"] == "window/showMessage"], self.notifications


def start(ws: Path, tmp_path: Path, *args: str) -> Raw:
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctx_lsp", "serve", *args],
        cwd=ws,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
    )
    messages: queue.Queue = queue.Queue()
    threading.Thread(target=read_messages, args=(proc.stdout, messages), daemon=True).start()

    def write(data: bytes) -> None:
        proc.stdin.write(data)
        proc.stdin.flush()

    return Raw(proc, write, messages)


@pytest.fixture
def raw(ws: Path, tmp_path: Path):
    client = start(ws, tmp_path)
    yield client
    if client.proc.poll() is None:
        client.proc.kill()
    client.proc.wait(timeout=TIMEOUT)


def exit_code(client: Raw) -> int:
    client.proc.stdin.close()
    return client.proc.wait(timeout=TIMEOUT)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


# ---- lifecycle --------------------------------------------------------------------------------


def test_requests_before_initialize_get_32003_at_once(raw: Raw, ws: Path):
    uri = (ws / "shop/billing/invoice.py").as_uri()
    # the process is up (its start-up alone can take seconds on a loaded machine): what follows is timed
    raw.write(request(0, "ctx/showBudget", {}))
    raw.error(0, -32003, timeout=60)
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    raw.write(notification("textDocument/didOpen", {"textDocument": doc}))  # dropped
    started = time.monotonic()
    raw.write(request(1, "ctx/planContext", {"query": "how is the invoice total calculated?"}))
    raw.write(request(2, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"}))
    raw.write(request(3, "workspace/executeCommand", {"command": "ctx.pinSymbol", "arguments": [uri, "x"]}))
    raw.write(request(4, "textDocument/codeLens", {"textDocument": {"uri": uri}}))
    for msg_id, method in ((1, "ctx/planContext"), (2, "ctx/pinSymbol"), (3, "workspace/executeCommand")):
        err = raw.error(msg_id, -32003, timeout=5)
        assert "not initialized" in err["message"] and method in err["message"]
    raw.error(4, -32003, timeout=5)
    assert time.monotonic() - started < 5
    raw.initialize(ws)
    raw.still_serving(5)
    raw.write(request(6, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"}))
    assert raw.response(6)["result"]["symbol"] == "shop.inventory.Product"
    raw.no_popups()
    raw.write(notification("exit"))
    assert exit_code(raw) == 1  # exit without shutdown


def test_second_initialize_is_refused_and_the_first_workspace_stays(raw: Raw, ws: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "elsewhere.py").write_text("def somewhere_else():\n    return 1\n")
    raw.initialize(ws)
    raw.write(request(1, "initialize", {"processId": None, "rootUri": other.as_uri(), "capabilities": {}}))
    err = raw.error(1, -32600)
    assert "already initialized" in err["message"] and str(ws.resolve()) in err["message"]
    raw.write(request(2, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"}))
    assert raw.response(2)["result"]["path"] == "shop/inventory.py"
    raw.write(request(3, "ctx/pinSymbol", {"symbol": "elsewhere.somewhere_else"}))
    raw.error(3, -32002)
    assert not (other / ".ctx").exists()
    raw.still_serving(4)


def test_a_failed_initialize_may_be_sent_again(raw: Raw, ws: Path, tmp_path: Path):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    raw.write(request(1, "initialize", {"processId": None, "rootUri": not_a_folder.as_uri(), "capabilities": {}}))
    err = raw.error(1, -32602)
    assert "is not a directory" in err["message"] and "data" not in err  # no traceback
    raw.write(request(2, "ctx/showBudget", {}))
    raw.error(2, -32003)
    raw.initialize(ws)
    raw.still_serving(3)


def test_requests_after_shutdown_get_invalid_request_and_exit_ends_the_process(raw: Raw, ws: Path):
    raw.initialize(ws)
    raw.still_serving(1)
    raw.write(request(2, "shutdown"))
    assert raw.response(2) == {"jsonrpc": "2.0", "id": 2, "result": None}
    raw.write(request(3, "ctx/planContext", {"query": "x"}))
    raw.write(notification("textDocument/didSave", {"textDocument": {"uri": (ws / "shop/config.py").as_uri()}}))
    raw.write(request(4, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"}))
    raw.write(request(5, "shutdown"))
    for msg_id in (3, 4, 5):
        err = raw.error(msg_id, -32600, timeout=5)
        assert "shut down" in err["message"] and "`exit`" in err["message"]
    raw.write(notification("exit"))
    assert raw.proc.wait(timeout=TIMEOUT) == 0


def test_shutdown_during_start_up_indexing_stops_it_and_the_next_server_finishes_it(ws: Path, tmp_path: Path):
    n = 1500  # indexing takes seconds: `shutdown` arrives while it runs
    for i in range(n):
        module = ws / "gen" / f"mod{i:04}.py"
        module.parent.mkdir(exist_ok=True)
        module.write_text("".join(f"def func_{i}_{j}(x):\n    return x + {j}\n\n" for j in range(10)))
    first = start(ws, tmp_path)
    first.initialize(ws, capabilities={"window": {"workDoneProgress": True}})  # indexing shows progress
    first.write(request(0, "ctx/showBudget", {}))  # meanwhile the progress bar is created
    first.response(0)

    def reported() -> bool:
        progress = [n["params"]["value"] for n in first.notifications if n["method"] == "$/progress"]
        return any(p["kind"] == "report" for p in progress)

    while not reported():
        msg = first.messages.get(timeout=TIMEOUT)
        assert msg is not None and "id" not in msg, msg
        first.notifications.append(msg)
    first.write(request(1, "shutdown"))  # while indexing runs
    assert first.response(1) == {"jsonrpc": "2.0", "id": 1, "result": None}
    first.write(notification("exit"))
    assert first.proc.wait(timeout=TIMEOUT) == 0
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "ERROR" not in log, log
    assert "indexing stopped after" in log  # the store closed after the refresh stopped, not under it
    db = sqlite3.connect(ws / ".ctx" / "index.sqlite3")
    indexed = db.execute("SELECT count(*) FROM files").fetchone()[0]
    db.close()
    assert indexed < n  # it stopped instead of finishing first

    second = start(ws, tmp_path)
    second.initialize(ws)
    second.write(request(2, "ctx/pinSymbol", {"symbol": f"gen.mod{n - 1:04}.func_{n - 1}_9"}))  # waits for the index
    assert second.response(2)["result"]["symbol"] == f"gen.mod{n - 1:04}.func_{n - 1}_9"
    second.write(request(3, "shutdown"))
    second.response(3)
    second.write(notification("exit"))
    assert second.proc.wait(timeout=TIMEOUT) == 0


# ---- malformed messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "reply_id", "says"),
    [
        (b"{not json", -32700, None, "not valid JSON"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ctx/showBudget", "params": {"x": NaN}}', -32700, None, "NaN"),
        (b"\xff\xfe{}", -32700, None, "not valid JSON"),
        (b"", -32700, None, "not valid JSON"),
        (b"[]", -32600, None, "empty array"),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ctx/showBudget"}]', -32600, None, "batches"),
        (b"42", -32600, None, "object"),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600, 7, "method"),
        (b'{"jsonrpc": "1.0", "id": 8, "method": "ctx/showBudget"}', -32600, 8, "2.0"),
        (b'{"id": 9, "method": "ctx/showBudget"}', -32600, 9, "2.0"),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ctx/showBudget"}', -32600, None, "id"),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ctx/showBudget"}', -32600, None, "id"),
        (b'{"jsonrpc": "2.0", "id": 10}', -32600, 10, "neither"),
        (b'{"jsonrpc": "2.0", "method": 3, "params": "bar"}', -32600, None, "method"),
        (
            b'{"jsonrpc": "2.0", "id": 11, "method": "textDocument/codeLens", "params": {"textDocument": 5}}',
            -32602,
            11,
            "textDocument/codeLens",
        ),
    ],
)
def test_malformed_messages_get_an_error_reply_and_the_server_keeps_serving(
    raw: Raw, ws: Path, body: bytes, code: int, reply_id: Any, says: str
):
    raw.initialize(ws)
    raw.write(frame(body))
    err = raw.error(reply_id, code)
    assert says in err["message"], err
    raw.still_serving("after")
    raw.no_popups()


# ---- framing ----------------------------------------------------------------------------------


def test_malformed_headers_are_answered_and_reading_resumes(raw: Raw, ws: Path):
    raw.initialize(ws)
    valid = json.dumps({"jsonrpc": "2.0", "id": "a", "method": "ctx/showBudget", "params": {}}).encode()
    cases = [
        (b"Content-Length: abc\r\n\r\n" + valid, "Content-Length is not a number"),
        (b"Content-Length: 12\r\nthis is no header\r\n\r\n" + valid, "not a header line"),
        (b"Content-Type: application/json\r\n\r\n" + valid, "no Content-Length"),
        (b"X-" + b"a" * 10_000 + b": 1\r\n\r\n" + valid, "longer than 4096 bytes"),
        (b"hello, server\n", "not a header line"),
    ]
    for n, (junk, says) in enumerate(cases):
        raw.write(junk)
        err = raw.error(None, -32700)
        assert says in err["message"] and "skipped to the next message" in err["message"], err
        raw.still_serving(f"after-{n}")
    # LSP headers are case-insensitive, and blank lines between messages do no harm
    raw.write(b"\r\ncontent-length:%d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(valid))
    raw.write(valid)
    assert raw.response("a")["result"]["session"] == "default"
    raw.no_popups()


def test_many_megabyte_bodies_are_accepted(raw: Raw, ws: Path):
    raw.initialize(ws)
    raw.write(request("big", "ctx/showBudget", {"pad": "x" * (20 * 2**20)}))
    assert raw.response("big", timeout=60)["result"]["session"] == "default"
    raw.still_serving("after")


def test_a_message_over_the_limit_is_refused_and_skipped_without_buffering(raw: Raw, ws: Path):
    """The default limit: a body of limit + 1 bytes is answered with its id and streamed past
    (the server's peak memory stays far below the body's size); the next message is read."""
    raw.initialize(ws)
    raw.still_serving("before")
    baseline = peak_rss_mb(raw.proc.pid)
    length = CAP + 1
    head = b'{"jsonrpc": "2.0", "id": 31, "method": "ctx/showBudget", "params": {"pad": "'
    tail = b'"}}'
    raw.write(b"Content-Length: %d\r\n\r\n" % length + head)
    err = raw.error(31, -32600, timeout=10)  # answered before the body is there
    assert "over the server's limit" in err["message"] and err["data"] == {"length": length, "limit": CAP}
    chunk = b"a" * 2**20
    left = length - len(head) - len(tail)
    while left > 0:
        raw.write(chunk[:left])
        left -= len(chunk)
    raw.write(tail)
    raw.still_serving("after")
    peak = peak_rss_mb(raw.proc.pid)
    assert peak - baseline < 64, f"peak RSS went from {baseline:.0f} MB to {peak:.0f} MB: the body was buffered"
    raw.no_popups()


def test_an_absurd_content_length_is_answered_at_once(raw: Raw, ws: Path):
    """10**12 bytes announced: the answer comes before the body (pygls' reader ran out of memory
    and stopped reading); the server is still alive, skipping what comes, and exits when the
    client closes the stream."""
    raw.initialize(ws)
    raw.write(b'Content-Length: 1000000000000\r\n\r\n{"jsonrpc": "2.0", "id": 41, "method": "ctx/planContext", ')
    err = raw.error(41, -32600, timeout=10)
    assert "1,000,000,000,000 bytes" in err["message"]
    raw.write(b"b" * (8 * 2**20))
    time.sleep(0.2)
    assert raw.proc.poll() is None
    assert peak_rss_mb(raw.proc.pid) < 1024
    assert exit_code(raw) == 0  # the input ended: a normal end, no traceback


def test_limit_is_configurable(ws: Path, tmp_path: Path):
    client = start(ws, tmp_path, "--max-message-bytes", "1000")
    try:
        client.initialize(ws)
        client.write(request(51, "ctx/showBudget", {"pad": "x" * 2000}))
        assert "limit of 1,000 bytes" in client.error(51, -32600)["message"]
        client.still_serving("after")
    finally:
        client.proc.kill()
        client.proc.wait(timeout=TIMEOUT)


def test_tcp_transport_has_the_same_hygiene(ws: Path, tmp_path: Path):
    # the server takes a free port itself and says which: a port found free and handed over
    # can be taken by a parallel test in between
    log_path = tmp_path / "server.log"
    log = open(log_path, "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctx_lsp", "serve", "--tcp", "127.0.0.1:0", "--max-message-bytes", "5000"],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (found := re.search(rb"serving on \('127\.0\.0\.1', (\d+)\)", log_path.read_bytes())):
            assert proc.poll() is None and time.monotonic() < deadline, "the TCP server did not start"
            time.sleep(0.1)
        sock = socket.create_connection(("127.0.0.1", int(found[1])), timeout=TIMEOUT)
        with sock:
            messages: queue.Queue = queue.Queue()
            reader = sock.makefile("rb")
            threading.Thread(target=read_messages, args=(reader, messages), daemon=True).start()
            client = Raw(proc, sock.sendall, messages)
            client.write(request(1, "ctx/showBudget", {}))
            client.error(1, -32003)
            client.initialize(ws)
            client.write(frame(b"{oops"))
            client.error(None, -32700)
            client.write(b"Content-Length: x\r\n\r\n{}")
            client.error(None, -32700)
            client.write(request(2, "ctx/showBudget", {"pad": "y" * 6000}))
            client.error(2, -32600)
            client.still_serving(3)
            client.write(request(4, "shutdown"))
            client.response(4)
            client.write(request(5, "ctx/showBudget", {}))
            client.error(5, -32600)
            client.write(notification("exit"))
            assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=TIMEOUT)
        log.close()


def test_no_stray_output_on_stdout(raw: Raw, ws: Path):
    """Everything the server writes on stdout is a framed message (logs go to stderr)."""
    raw.initialize(ws)
    raw.write(frame(b"{bad"))
    raw.error(None, -32700)
    raw.still_serving(1)
    raw.write(request(2, "shutdown"))
    raw.response(2)
    raw.write(notification("exit"))
    assert raw.proc.wait(timeout=TIMEOUT) == 0
    assert raw.messages.get(timeout=TIMEOUT) is None  # the reader saw a clean end, no junk
