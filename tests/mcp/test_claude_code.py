"""Claude Code, offline, with `ctx-lsp mcp` registered: the (fake) model calls the server's
get_symbol tool, Claude Code runs it over MCP, and the symbol's code comes back to the model in
the next request. One run in a fresh loopback-only network namespace (tests/gateway/netns.py);
`make test` installs Claude Code first (`make assistants`) and sets CTX_ASSISTANTS=1, which turns a
missing install into a failure."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.gateway import assistants
from tests.gateway.netns import netns_unavailable, run_offline, target_urls
from tests.workspaces import copy_sample

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOOL = "mcp__ctx__get_symbol"  # Claude Code's name for the server "ctx"'s tool
REPLY = "OFFLINE-REPLY-MCP: Inventory keeps stock per SKU."


def _unavailable(reason: str) -> None:
    if os.environ.get("CTX_ASSISTANTS"):
        pytest.fail(reason)
    pytest.skip(reason)


def _mcp_config(path: Path, workspace: Path) -> Path:
    """The file `claude --mcp-config` reads: the server as a user registers it (`ctx-lsp mcp .`)."""
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "ctx_lsp", "mcp", str(workspace)],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    path.write_text(json.dumps({"mcpServers": {"ctx": server}}, indent=2))
    return path


def _tool_result(body: dict) -> str:
    """What the model got back from the tool: Claude Code (2.1) hands it the structured content
    as JSON when there is some (the text part otherwise), as a string or as text blocks."""
    (block,) = [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    content = block["content"]
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") for b in content)
    return content


def test_claude_code_calls_get_symbol_over_mcp(tmp_path: Path) -> None:
    reason = netns_unavailable()
    if reason:
        _unavailable(f"no network namespace: {reason}")
    if not assistants.installed("claude"):
        _unavailable("claude is not installed in .tools/: run `make assistants`")
    ws = copy_sample(tmp_path / "ws")
    config = _mcp_config(tmp_path / "mcp.json", ws)
    prompt = "Show me the Inventory class of this workspace."
    inv = assistants.claude(ws, prompt, target_urls(), tmp_path / "home")
    # With -p, Claude Code (2.1) connects MCP servers without waiting: its first request goes out
    # without the server's tools when the server takes longer to start than Claude Code to get
    # there (about a second, most of it importing the MCP SDK; more on a loaded machine). This
    # makes it wait, as a script that needs the tools must.
    inv.env.update(MCP_CONNECTION_NONBLOCKING="false", MCP_TIMEOUT="60000")
    argv = [*inv.argv, "--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", TOOL]
    queue = [
        {"kind": "tool_call", "tool_name": TOOL, "tool_arguments": {"name": "shop.inventory.Inventory"}},
        {"text": REPLY},
    ]
    r = run_offline(argv, tmp_path / "run", env=inv.env, cwd=ws, timeout=180, queue=queue)
    assert r.rc == 0, r.summary()
    assert REPLY in r.stdout, r.summary()
    posts = [json.loads(req["body"]) for req in r.requests if req["path"].split("?")[0] == "/v1/messages"]
    assert len(posts) == 2, r.summary()
    tools = {t["name"]: t for t in posts[0]["tools"]}
    assert TOOL in tools, sorted(tools)  # the server's tools, with their schemas, reached the model
    assert tools[TOOL]["input_schema"]["required"] == ["name"]
    assert {"mcp__ctx__search_code", "mcp__ctx__plan_context", "mcp__ctx__pin"} <= set(tools)
    result = _tool_result(posts[1])
    if result.startswith("{"):  # the structured content
        got = json.loads(result)
        assert (got["qualname"], got["path"], got["start_line"], got["end_line"]) == (
            "shop.inventory.Inventory",
            "shop/inventory.py",
            30,
            76,
        )
        code = got["code"]
    else:  # the text part
        assert "# shop/inventory.py:30-76 · class shop.inventory.Inventory" in result, result[:2000]
        code = result
    assert code.startswith("class Inventory:") or "\nclass Inventory:" in code, code[:500]
    assert "def reserve(self, sku: str, quantity: int) -> Inventory.Reservation:" in code, code[:2000]
    assert r.dns == [], r.summary()  # nothing was looked up: the run stayed on loopback
