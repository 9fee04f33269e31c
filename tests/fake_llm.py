"""A small OpenAI-compatible chat-completions server on 127.0.0.1, started by the tests.

Behaviours: ``ok`` (answers with a summary that names how much it read), ``error`` (HTTP 500),
``slow`` (answers after the client's timeout), ``garbage`` (200 with a body that is not JSON).
Every request is recorded, so tests can check what was sent (and that it fit the window).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLLM:
    def __init__(self, behaviour: str = "ok") -> None:
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if owner.behaviour == "error":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"internal error")
                    return
                if owner.behaviour == "slow":
                    time.sleep(1.5)
                if owner.behaviour == "garbage":
                    payload = b"<html>not json"
                else:
                    chars = sum(len(m["content"]) for m in body["messages"])
                    content = f"SUMMARY by fake model of {chars} chars: the task, decisions, files, tools."
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(payload)
                except BrokenPipeError:  # the client gave up (timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
