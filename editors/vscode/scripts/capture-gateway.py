"""Capture the gateway fixtures of the unit tests (test/unit/fixtures/gateway-*.json, review-*.json)
from a real `ctx-lsp serve` that runs the gateway, on a copy of tests/fixtures/sample_ws, with the
fake provider of tests/gateway/fake_upstream.py as both upstreams and the openai SDK as the
assistant. The gateway is enabled the way the extension does it: `initializationOptions.settings`
with a `gateway` object (camelCase keys), and no session (requests go to the active conversation).

1. Two conversations (each a first request), then the status, the list, the last body sent and
   the `ctx/gatewayRequest` notifications.
2. A second server with `review: true`: the conversation's first request is sent as planned (it
   becomes the active conversation); its next one waits (`ctx/reviewRequest`), a pin made without
   a session goes to it, Re-plan brings a second `ctx/reviewRequest` of the same review with the
   pinned code, Send releases it and `ctx/reviewResolved` says "sent".

Run from the repo root:

    .venv/bin/python editors/vscode/scripts/capture-gateway.py
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(REPO))

import openai  # noqa: E402

from tests.gateway.fake_upstream import FakeUpstream  # noqa: E402

_spec = importlib.util.spec_from_file_location("capture_reflection", HERE / "capture-reflection.py")
assert _spec and _spec.loader
_reflection = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reflection)
Rpc = _reflection.Rpc
FIXTURE = _reflection.FIXTURE
OUT = _reflection.OUT

FIRST = "How is stock reserved in the inventory?"
SECOND = "how is the invoice total calculated with tax?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(root: Path, up: FakeUpstream, **gateway: Any) -> tuple[Any, str]:
    port = free_port()
    settings = {
        "gateway": {
            "listen": f"127.0.0.1:{port}",
            "openaiUpstream": up.openai_url,
            "anthropicUpstream": up.url,
            **gateway,
        }
    }
    rpc = Rpc([sys.executable, "-m", "ctx_lsp", "serve"], root)
    rpc.request(
        "initialize",
        {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"settings": settings},
        },
    )
    rpc.notify("initialized", {})
    for _ in range(600):
        if rpc.request("ctx/gatewayStatus", {})["listening"]:
            break
        time.sleep(0.05)
    else:
        raise TimeoutError("the gateway did not start")
    return rpc, f"http://127.0.0.1:{port}/v1"


def stop(rpc: Any) -> None:
    rpc.request("shutdown", None)
    rpc.notify("exit", None)
    rpc.proc.wait(10)


def notes(rpc: Any, method: str) -> list[Any]:
    return [p for m, p in rpc.notifications if m == method]


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="ctx-capture-"))
    out: dict[str, Any] = {}
    roots: list[Path] = []
    try:
        with FakeUpstream() as up:
            # 1. two conversations through the gateway
            root = tmp / "ws"
            roots.append(root)
            shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx", "__pycache__"))
            rpc, base = start(root, up)
            try:
                oai = openai.OpenAI(base_url=base, api_key="sk-capture", max_retries=0)
                system = {"role": "system", "content": "You are a coding agent."}
                oai.chat.completions.create(model="gpt-4o", messages=[system, {"role": "user", "content": FIRST}])
                rpc.wait_for(lambda: len(notes(rpc, "ctx/gatewayRequest")) >= 1)
                out["gateway-preview.json"] = rpc.request("ctx/gatewayPreview", {})
                oai.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": SECOND}])
                rpc.wait_for(lambda: len(notes(rpc, "ctx/gatewayRequest")) >= 2)
                time.sleep(0.3)
                out["gateway-status.json"] = rpc.request("ctx/gatewayStatus", {})
                out["gateway-conversations.json"] = rpc.request("ctx/listConversations", {})
                out["gateway-requests.json"] = notes(rpc, "ctx/gatewayRequest")
                stop(rpc)
            finally:
                if rpc.proc.poll() is None:
                    rpc.proc.kill()

            # 2. review before send
            root = tmp / "ws2"
            roots.append(root)
            shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx", "__pycache__"))
            rpc, base = start(root, up, review=True, reviewTimeout=30)
            try:
                oai = openai.OpenAI(base_url=base, api_key="sk-capture", max_retries=0)
                answer: dict[str, Any] = {}
                messages = [{"role": "user", "content": FIRST}]

                def call() -> None:
                    r = oai.chat.completions.create(model="gpt-4o", messages=messages)
                    answer["reply"] = r.choices[0].message.content

                # the conversation's first request, sent as planned: it becomes the active one
                t = threading.Thread(target=call)
                t.start()
                rpc.wait_for(lambda: notes(rpc, "ctx/reviewRequest"))
                first = notes(rpc, "ctx/reviewRequest")[0]
                rpc.request("ctx/reviewDecision", {"reviewId": first["reviewId"], "decision": "send"})
                t.join(30)
                rpc.wait_for(lambda: notes(rpc, "ctx/reviewResolved"))
                # its next request: held; a pin (no session: the active conversation), re-plan, send
                messages += [
                    {"role": "assistant", "content": answer.pop("reply")},
                    {"role": "user", "content": "Which products run low on stock?"},
                ]
                t = threading.Thread(target=call)
                t.start()
                rpc.wait_for(lambda: len(notes(rpc, "ctx/reviewRequest")) >= 2)
                review = notes(rpc, "ctx/reviewRequest")[1]
                out["review-request.json"] = review
                doc = (root / "shop" / "billing" / "discounts.py").as_uri()
                rpc.request(
                    "ctx/pinSymbol",
                    {"textDocument": {"uri": doc}, "symbol": "shop.billing.discounts.DiscountRule"},
                )
                out["review-decision.json"] = rpc.request(
                    "ctx/reviewDecision", {"reviewId": review["reviewId"], "decision": "replan"}
                )
                rpc.wait_for(lambda: len(notes(rpc, "ctx/reviewRequest")) >= 3)
                out["review-replanned.json"] = notes(rpc, "ctx/reviewRequest")[2]
                rpc.request("ctx/reviewDecision", {"reviewId": review["reviewId"], "decision": "send"})
                t.join(30)
                assert answer.get("reply"), "the reviewed request got no answer"
                rpc.wait_for(lambda: len(notes(rpc, "ctx/reviewResolved")) >= 2)
                out["review-resolved.json"] = notes(rpc, "ctx/reviewResolved")[1]
                stop(rpc)
            finally:
                if rpc.proc.poll() is None:
                    rpc.proc.kill()
        for name, value in out.items():  # the temporary roots and ports become stable values
            text = json.dumps(value, indent=1, ensure_ascii=False)
            for root in roots:
                text = text.replace(root.as_uri(), "file:///ws").replace(str(root), "/ws")
            (OUT / name).write_text(text + "\n")
            print(f"wrote {OUT / name}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
