"""Capture the reflection fixtures of the unit tests (test/unit/fixtures/reflection-*.json) from
a real `ctx-lsp serve` on a copy of tests/fixtures/sample_ws, session `probe`, ragBudget 300.

The scripted session: each turn the user asks about the invoice total, the plan is made, the
assistant's reply names `calculate_invoice_total` (turn 1 adds a ```ctx-suggest block naming
`shop.config.TAX_RATE` and `shop/storage.py`) and the usage is reported. The server promotes the
retrieved card to an automatic lease. Saved: the plan that has the lease (clusterId, reason
pinned), ctx/listPins, ctx/listSuggestions, ctx/listReflections, and the ctx/reflected
notifications including the demotion that a question on another subject (a new task) causes.
Run from the repo root:

    .venv/bin/python editors/vscode/scripts/capture-reflection.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "sample_ws"
OUT = HERE.parent / "test" / "unit" / "fixtures"
SESSION = "probe"


class Rpc:
    """A minimal LSP client over stdio: requests wait for their answer, notifications are kept."""

    def __init__(self, cmd: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.seq = 0
        self.answers: dict[int, Any] = {}
        self.notifications: list[tuple[str, Any]] = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            msg = json.loads(out.read(length))
            with self.cv:
                if "id" in msg and "method" in msg:  # a request from the server: answer null
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif "id" in msg:
                    self.answers[msg["id"]] = msg
                else:
                    self.notifications.append((msg["method"], msg.get("params")))
                self.cv.notify_all()

    def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        with self.cv:
            self.seq += 1
            rid = self.seq
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            if not self.cv.wait_for(lambda: rid in self.answers, timeout=60):
                raise TimeoutError(method)
            msg = self.answers.pop(rid)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def notify(self, method: str, params: Any) -> None:
        with self.cv:
            self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, pred, timeout: float = 30) -> None:
        with self.cv:
            if not self.cv.wait_for(pred, timeout=timeout):
                raise TimeoutError("notification")


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="ctx-capture-"))
    root = tmp / "ws"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx", "__pycache__"))
    rpc = Rpc([sys.executable, "-m", "ctx_lsp", "serve"], root)
    try:
        rpc.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"session": SESSION},
            },
        )
        rpc.notify("initialized", {})
        rpc.wait_for(lambda: any(m == "$/progress" and p["value"]["kind"] == "end" for m, p in rpc.notifications))
        promoted_plan = None
        for k in range(6):
            question = f"how is the invoice total computed with discounts and tax, step {k}?"
            reply = f"Step {k}: calculate_invoice_total sums the lines, then applies the discount and the tax."
            if k == 1:
                reply += "\n```ctx-suggest\n- shop.config.TAX_RATE  # the rate every total uses\n- shop/storage.py\n```"
            rpc.request("ctx/appendMessages", {"messages": [{"id": f"u{k}", "role": "user", "content": question}]})
            plan = rpc.request("ctx/planContext", {"query": question, "ragBudget": 300})
            print(f"turn {k}: {plan['planId']} task {plan['clusterId']}", file=sys.stderr)
            if any(i["reason"] == "pinned" for i in plan["included"]) and promoted_plan is None:
                promoted_plan = plan
            rpc.request("ctx/appendMessages", {"messages": [{"id": f"a{k}", "role": "assistant", "content": reply}]})
            usage = {"planId": plan["planId"], "inputTokens": plan["totals"]["tokens"], "outputTokens": 40}
            rpc.request("ctx/reportUsage", usage)
            if promoted_plan is not None:
                break
        assert promoted_plan is not None, "no promotion in 6 turns"
        time.sleep(0.5)
        out = {
            "reflection-plan.json": promoted_plan,
            "reflection-pins.json": rpc.request("ctx/listPins", {}),
            "reflection-suggestions.json": rpc.request("ctx/listSuggestions", {}),
            "reflection-reflections.json": rpc.request("ctx/listReflections", {}),
        }
        # another subject: a new task, and the task-scoped lease ends (a demotion)
        question = "where does the warehouse keep stock records on disk?"
        rpc.request("ctx/appendMessages", {"messages": [{"id": "u-storage", "role": "user", "content": question}]})
        plan = rpc.request("ctx/planContext", {"query": question, "ragBudget": 300})
        print(f"storage turn: {plan['planId']} task {plan['clusterId']}", file=sys.stderr)
        time.sleep(0.5)
        out["reflection-reflected.json"] = [p for m, p in rpc.notifications if m == "ctx/reflected"]
        assert any(p["kind"] == "demote" for p in out["reflection-reflected.json"]), "no demotion"
        for name, value in out.items():  # the temporary root becomes /ws: stable fixtures
            text = json.dumps(value, indent=1, ensure_ascii=False).replace(root.as_uri(), "file:///ws")
            (OUT / name).write_text(text.replace(str(root), "/ws") + "\n")
            print(f"wrote {OUT / name}", file=sys.stderr)
        rpc.request("shutdown", None)
        rpc.notify("exit", None)
        rpc.proc.wait(10)
    finally:
        if rpc.proc.poll() is None:
            rpc.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
