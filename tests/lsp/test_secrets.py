"""Secrets over the real server: ctx/planContext and ctx/renderPrompt never carry a secret
value; items say what was masked; maskSecrets turns it off, at start or at run time."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import server_command, start
from tests.lsp.test_server import req
from tests.test_secrets import QUERY, leaks, secret_ws

HEAVY = {"query": QUERY, "mode": "heavy"}


async def prompt_of(client: LanguageClient, params: dict) -> tuple[object, str]:
    plan = await req(client, "ctx/planContext", params)
    prompt = await req(client, "ctx/renderPrompt", {"planId": plan.planId, "format": "text"})
    return plan, prompt.text


async def test_plan_and_prompt_never_carry_secrets(tmp_path: Path):
    ws = secret_ws(tmp_path)
    client = await ClientServerConfig(server_command=server_command()).start()
    try:
        await start(client, ws, session="secrets")
        pin = await req(client, "ctx/pinSymbol", {"symbol": "app.settings.PRIVATE_KEY"})
        for params in ({"query": QUERY}, HEAVY):
            plan, text = await prompt_of(client, params)
            assert "[secret masked: AWS Access Key]" in text
            assert leaks(text) == []
            for fmt in ("openai", "anthropic"):
                rendered = await client.protocol.send_request_async(
                    "ctx/renderPrompt", {"planId": plan.planId, "format": fmt}
                )
                assert leaks(repr(rendered)) == []
        details = {i.title: i.detail or "" for i in plan.included}
        assert details["agent instructions: AGENTS.md"] == "masked 1 secret: GitHub Token"
        assert details["variable app.settings.PRIVATE_KEY (body)"].startswith("masked 1 secret: Private Key · ")
        assert details["variable app.settings.AWS_ACCESS_KEY_ID (body)"].startswith("masked 1 secret: AWS Access Key")
        assert any(i.pinId == pin.id for i in plan.included)
        # capsules summarise masked symbols; the plan's capsule item says so
        capsules = await req(client, "ctx/refreshCapsules", {"paths": ["app/settings.py"]})
        assert leaks(repr(capsules)) == []
        plan, text = await prompt_of(client, HEAVY)
        capsule = next(i for i in plan.included if i.kind == "capsule" and i.path == "app/settings.py")
        assert "masked" in capsule.detail and leaks(text) == []
    finally:
        await client.shutdown_session()


async def test_mask_secrets_off_at_start_and_on_at_run_time(tmp_path: Path):
    ws = secret_ws(tmp_path)
    client = await ClientServerConfig(server_command=server_command()).start()
    client.set_configuration({"maskSecrets": False}, section="ctx")
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(configuration=True)),
                root_uri=ws.as_uri(),
                initialization_options={"session": "toggle", "settings": {"maskSecrets": False}},
            )
        )
        _, text = await prompt_of(client, HEAVY)
        assert "AKIAIOSFODNN7EXAMPLE" in text and "[secret masked" not in text  # off: the values are there
        # a capsule made while masking was off is masked once masking is on
        await req(client, "ctx/refreshCapsules", {"paths": ["app/settings.py"]})
        client.set_configuration({"maskSecrets": True}, section="ctx")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        for _ in range(100):  # the server pulls the settings, then rebuilds the index
            plan, text = await prompt_of(client, HEAVY)
            if "[secret masked" in text:
                break
            await asyncio.sleep(0.1)
        assert leaks(text) == []
        capsule = next(i for i in plan.included if i.kind == "capsule")
        assert "masked" in capsule.detail
    finally:
        await client.shutdown_session()
