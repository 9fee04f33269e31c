"""Configuration: ctx.toml, initializationOptions and workspace/configuration; invalid values are
named in window/showMessage and the server keeps serving with their defaults."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.lsp.conftest import server_command, start
from tests.workspaces import copy_sample


async def wait_messages(client, n: int = 1, timeout: float = 5.0) -> list[str]:
    for _ in range(int(timeout / 0.05)):
        if len(client.messages) >= n:
            break
        await asyncio.sleep(0.05)
    return [m.message for m in client.messages]


async def test_broken_config_is_named_and_defaults_are_used(tmp_path: Path):
    root = tmp_path / "ws"
    copy_sample(root)
    (root / "ctx.toml").write_text('mode = "turbo"\nsafetyBuffer = 100\ncolour = 1\n')
    client = await ClientServerConfig(server_command=server_command()).start()
    try:
        await start(client, root, session="cfg", settings={"model": "claude-sonnet-4-5", "maxCompletionTokens": -3})
        messages = await wait_messages(client, 3)
        text = "\n".join(messages)
        assert "ctx.toml: mode" in text and "colour: unknown setting" in text
        assert "initializationOptions: max_completion_tokens" in text
        plan = await client.protocol.send_request_async("ctx/planContext", {"query": "invoice total"})
        assert plan.mode == "light"  # the default, not "turbo"
        assert plan.safetyBuffer == 100  # the valid value from ctx.toml is kept
        assert plan.model == "claude-sonnet-4-5"  # from initializationOptions
    finally:
        await client.shutdown_session()


async def test_workspace_configuration_section_ctx(tmp_path: Path):
    root = tmp_path / "ws"
    copy_sample(root)
    client = await ClientServerConfig(server_command=server_command()).start()
    client.set_configuration({"mode": "off", "safetyBuffer": "lots"}, section="ctx")
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(configuration=True)),
                root_uri=root.as_uri(),
            )
        )
        messages = await wait_messages(client, 1)
        assert any("editor settings (ctx): safety_buffer" in m for m in messages)
        for _ in range(50):  # the pulled settings apply shortly after `initialized`
            plan = await client.protocol.send_request_async("ctx/planContext", {"query": "invoice total"})
            if plan.mode == "off":
                break
            await asyncio.sleep(0.1)
        assert plan.mode == "off"
        assert not [i for i in plan.included if i.section == "rag"]
    finally:
        await client.shutdown_session()


def test_an_editor_table_of_settings_is_merged_key_by_key(tmp_path: Path) -> None:
    from ctx_lsp.config import load_workspace_config, validate

    root = copy_sample(tmp_path / "ws")
    (root / "ctx.toml").write_text('[gateway]\ncontext_budget = 4321\nopenai_upstream = "http://127.0.0.1:9/v1"\n')
    config, _ = load_workspace_config(root)
    merged, messages = validate({"gateway": {"listen": "127.0.0.1:8788"}}, "initializationOptions", base=config)
    assert messages == []
    assert merged.gateway.listen == "127.0.0.1:8788"
    assert merged.gateway.context_budget == 4321 and merged.gateway.openai_upstream == "http://127.0.0.1:9/v1"


def test_each_bad_setting_is_named_and_the_good_ones_stay(tmp_path: Path) -> None:
    """Settings come in snake_case (ctx.toml) or camelCase (editors), however deep; every bad one
    is named where it is, keeps its current value, and the rest apply."""
    from ctx_lsp.config import validate

    raw = {
        "mode": "heavy",
        "safetyBuffer": -1,
        "colour": "blue",
        "shares": {"system": 0.9},
        "models": [{"name": "local-7b", "contextLength": 32_000, "maxOutput": 2_048, "inputPrice": 0.5}],
        "gateway": {"reviewTimeout": 0},
        "retrievalLimit": "300",  # a number written as text, as some editors' settings UIs send it
    }
    config, messages = validate(raw, "ctx.toml")
    assert config.mode == "heavy" and config.retrieval_limit == 300
    assert config.models[0].context_length == 32_000 and config.models[0].input_price == 0.5
    assert config.safety_buffer == 2_048 and config.shares.system == 0.15 and config.gateway.review_timeout == 120
    assert sorted(m.split(": ")[1] for m in messages) == ["colour", "gateway.review_timeout", "safety_buffer", "shares"]
    assert all(m.startswith("ctx.toml: ") and m.endswith("(using the default)") for m in messages)
    assert "section shares must add up to 1.0, got 1.75" in " ".join(messages)
    assert "colour: unknown setting" in " ".join(messages)
    _, messages = validate({"gateway": {"mode": "fast"}}, "ctx.toml")
    assert messages == [
        "ctx.toml: gateway.mode: Invalid enum value 'fast'; expected one of 'off', 'light', 'heavy' (using the default)"
    ]
