"""`ctx-lsp serve` with `gateway.listen` set runs the gateway in its own process and event loop:
an SDK request through it shows up in the editor as `ctx/gatewayRequest` and a budget update,
and a pin made over LSP reaches the model in the next request."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import openai
from pytest_lsp import ClientServerConfig

from ctx_lsp.server import protocol as P
from ctx_lsp.trust import record
from tests.gateway.fake_upstream import FakeUpstream
from tests.gateway.harness import KEY
from tests.lsp.conftest import server_command, start
from tests.lsp.test_replies import exactly
from tests.waiting import eventually
from tests.workspaces import copy_sample


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_serve_runs_the_gateway_and_tells_the_editor(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "ws")
    port = _free_port()
    async with FakeUpstream() as up:
        (root / "ctx.toml").write_text(
            f'[gateway]\nlisten = "127.0.0.1:{port}"\nopenai_upstream = "{up.openai_url}"\n'
            f'anthropic_upstream = "{up.anthropic_url}"\n'
        )
        record(root, (root / "ctx.toml").read_bytes())  # the user trusts it: it opens a port
        client = await ClientServerConfig(server_command=server_command()).start()
        seen: list = []

        @client.feature("ctx/gatewayRequest")
        def _gateway(params):
            seen.append(params)

        try:
            await start(client, root, session=None)
            base = f"http://127.0.0.1:{port}/v1"
            async with openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=3) as oai:
                await eventually(lambda: _listening(port))
                messages = [
                    {"role": "system", "content": "Agent"},
                    {"role": "user", "content": "How is stock reserved?"},
                ]
                await oai.chat.completions.create(
                    model="gpt-4o", messages=messages, extra_headers={"X-Ctx-Session": "default"}
                )
                await eventually(lambda: bool(seen))
                note = seen[0]
                exactly(P.GatewayRequest, note)  # exactly its declared type (docs/protocol.schema.json)
                assert note.session == "default" and note.planId and note.inputTokens > 0
                await eventually(lambda: any(m == "ctx/budgetChanged" for m, _ in client.notifications))

                # a pin made in the editor reaches the model in the session's next request
                doc = (root / "shop" / "billing" / "discounts.py").as_uri()
                await client.protocol.send_request_async(
                    "ctx/pinSymbol", {"textDocument": {"uri": doc}, "symbol": "shop.billing.discounts.DiscountRule"}
                )
                messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "thanks"}]
                await oai.chat.completions.create(
                    model="gpt-4o", messages=messages, extra_headers={"X-Ctx-Session": "default"}
                )
                sent = up.model_requests[-1].json["messages"]
                assert any("class DiscountRule" in (m.get("content") or "") for m in sent if m["role"] == "system")
        finally:
            await client.shutdown_session()
        assert not _listening(port)  # shutdown stops the gateway


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_server_without_a_gateway_never_loads_the_http_stack() -> None:
    """aiohttp is 10 MB of a language server's resident memory: only `gateway.listen` loads it."""
    probe = "import sys, ctx_lsp.server.app; print(sorted(m for m in sys.modules if m.startswith('aiohttp')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
