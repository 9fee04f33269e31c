"""A plain JSON-RPC client over stdio for benchmarks and scripts: what any editor speaks."""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux): less noisy than wall time on a shared
    machine, where a request's wall time is mostly waiting for a core."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_mb(pid: int, key: str = "VmRSS:") -> float:
    """A memory line of a process's ``/proc/PID/status`` (``VmRSS:`` now, ``VmHWM:`` its peak),
    in MB; NaN where there is none."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_ns(pid: int) -> int | None:
    """CPU time all of a process's threads have used, in nanoseconds (Linux schedstat): precise
    enough to time one request, where ``cpu_seconds`` counts in clock ticks. None without it."""
    try:
        return sum(int((t / "schedstat").read_text().split()[0]) for t in Path(f"/proc/{pid}/task").iterdir())
    except (OSError, ValueError, IndexError):
        return None


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        self.code = error.get("code")
        super().__init__(f"{error.get('code')}: {error.get('message')}")


class StdioClient:
    def __init__(self, root: Path, session: str | None = None, options: dict[str, Any] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ctx_lsp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = itertools.count(1)
        self._buf = b""
        self.notifications: list[dict[str, Any]] = []
        init = dict(options or {})
        if session:
            init["session"] = session
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.resolve().as_uri(),
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": init,
            },
        )
        self.notify("initialized", {})

    def _send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _fill(self) -> None:
        assert self.proc.stdout is not None
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise EOFError("the server closed its output")
        self._buf += chunk

    def _read(self) -> dict[str, Any]:
        """One message, from our own buffer (so select() on the pipe never misses buffered data)."""
        while b"\r\n\r\n" not in self._buf:
            self._fill()
        head, _, rest = self._buf.partition(b"\r\n\r\n")
        length = next(
            int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.lower() == b"content-length"
        )
        while len(rest) < length:
            self._buf = head + b"\r\n\r\n" + rest
            self._fill()
            head, _, rest = self._buf.partition(b"\r\n\r\n")
        self._buf = rest[length:]
        return json.loads(rest[:length])

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            msg = self._read()
            if "method" in msg and "id" in msg:  # a request from the server (progress, registration)
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") == msg_id:
                if "error" in msg:
                    raise RpcError(msg["error"])
                return msg.get("result")

    def next_notification(self, method: str, timeout: float = 5.0) -> dict[str, Any]:
        """Block until the server sends ``method`` (reading only: no request is sent meanwhile)."""
        deadline = time.monotonic() + timeout
        while True:
            for n in self.notifications:
                if n["method"] == method:
                    self.notifications.remove(n)
                    return n
            assert self.proc.stdout is not None
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            if b"\r\n\r\n" not in self._buf:
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise TimeoutError(method)
            msg = self._read()
            if "method" in msg and "id" in msg:
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "method" in msg:
                self.notifications.append(msg)

    def peak_rss_mb(self) -> float:
        """The server process's peak resident set size (Linux)."""
        return status_mb(self.proc.pid, "VmHWM:")

    def rss_mb(self) -> float:
        """The server process's resident set size now (Linux)."""
        return status_mb(self.proc.pid)

    def wait_for(self, method: str, timeout_requests: int = 200) -> dict[str, Any]:
        """Pump messages (by sending cheap requests) until a notification arrives."""
        for _ in range(timeout_requests):
            for n in self.notifications:
                if n["method"] == method:
                    self.notifications.remove(n)
                    return n
            self.request("ctx/listPins", {})
        raise TimeoutError(method)

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
