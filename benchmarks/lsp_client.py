"""A plain JSON-RPC client over stdio for benchmarks and scripts: what any editor speaks."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


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

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

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
