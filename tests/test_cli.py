"""`ctx-lsp plan` end to end on a fixture workspace: every format, and bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

QUERY = "how is the invoice total calculated with tax?"


def ctx(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_tree_shows_meter_sections_and_reasons(ws):
    out = ctx("plan", str(ws), "--query", QUERY)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("ctx ") and " / " in first and "gpt-4o" in first and "cl100k" in first
    for section in ("system", "conversation", "rag"):
        assert f"\n{section}  " in out.stdout
    assert "calculate_invoice_total" in out.stdout
    assert "latest_user" in out.stdout and "relevant" in out.stdout
    assert re.search(r"retrieval [\d.]+ ms \(search [\d.]+ · rank [\d.]+ · items [\d.]+\)", out.stdout), out.stdout
    assert "Traceback" not in out.stderr


def test_json_plan_rag_budget_and_byte_identical_runs(ws, tmp_path):
    qfile = tmp_path / "q.txt"
    qfile.write_text(QUERY)
    args = ("plan", str(ws), "--query-file", str(qfile), "--rag-budget", "150", "--format", "json")
    first = ctx(*args)
    second = ctx(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout  # same inputs, same bytes
    plan = json.loads(first.stdout)
    rag = [i for i in plan["included"] if i["section"] == "rag"]
    assert rag, "something was retrieved"
    assert all(i["path"] and i["range"] for i in rag)
    assert sum(i["tokens"] for i in rag) <= 150
    assert plan["totals"]["tokens"] <= plan["promptBudget"]
    for key in ("id", "section", "kind", "title", "path", "range", "symbol", "tokens", "priority", "score", "reason"):
        assert key in rag[0]
    # budget exclusions are explained
    assert any(i["reason"] == "budget" for i in plan["excluded"])


def test_prompt_formats(ws):
    text = ctx("plan", str(ws), "-q", QUERY, "--format", "prompt", "--render", "text")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("### system")
    assert text.stdout.rstrip().endswith(QUERY)  # the latest user message is last
    openai = json.loads(ctx("plan", str(ws), "-q", QUERY, "--format", "prompt", "--render", "openai").stdout)
    assert openai["messages"][0]["role"] == "system"
    assert openai["messages"][-1] == {"role": "user", "content": QUERY}
    plan = json.loads(ctx("plan", str(ws), "-q", QUERY, "--format", "json").stdout)
    # the rendered prompt costs what the plan says (within one token per item separator)
    assert openai["tokens"] <= plan["totals"]["tokens"]
    assert plan["totals"]["tokens"] - openai["tokens"] <= plan["totals"]["items"] + plan["totals"]["framing"]
    anthropic = json.loads(ctx("plan", str(ws), "-q", QUERY, "--format", "prompt", "--render", "anthropic").stdout)
    assert anthropic["system"] and anthropic["messages"][-1]["role"] == "user"


def test_pins_conversation_and_system_prompt(ws, tmp_path):
    conv = tmp_path / "conv.json"
    conv.write_text(
        json.dumps(
            [
                {"role": "user", "content": "run the tests"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "pytest", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "1 failed: test_tax_rounding"},
                {"role": "assistant", "content": "The tax rounding test fails."},
            ]
        )
    )
    sysprompt = tmp_path / "system.txt"
    sysprompt.write_text("You are a careful billing expert.")
    out = ctx(
        "plan", str(ws), "-q", QUERY, "--format", "json", "--conversation", str(conv),
        "--system-prompt", str(sysprompt), "--pin", "shop.inventory.Product", "--model", "claude-sonnet-4-5",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    pinned = [i for i in plan["included"] if i["reason"] == "pinned"]
    assert [p["symbol"] for p in pinned] == ["shop.inventory.Product"]
    assert any(i["kind"] == "tool_episode" for i in plan["included"])
    assert plan["estimator"]["calibration"] >= 1.4 and plan["estimator"]["exact"] is False
    prompt = ctx(
        "plan", str(ws), "-q", QUERY, "--format", "prompt", "--render", "openai", "--conversation", str(conv),
        "--system-prompt", str(sysprompt),
    )  # fmt: skip
    messages = json.loads(prompt.stdout)["messages"]
    assert messages[0]["content"].startswith("You are a careful billing expert.")
    roles = [m["role"] for m in messages]
    assert roles.index("assistant") < roles.index("tool")  # a tool call precedes its result


def test_mode_off_retrieves_nothing(ws):
    plan = json.loads(ctx("plan", str(ws), "-q", QUERY, "--format", "json", "--mode", "off").stdout)
    assert not [i for i in plan["included"] if i["section"] == "rag"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "acme-9000"), None),  # unknown model: a note, not an error
        (("--max-completion-tokens", "0"), "must be greater than 0"),
        (("--safety-buffer", "-5"), "must be 0 or more"),
        (("--context-length", "2000", "--max-completion-tokens", "4000"), "prompt budget is"),
        (("--context-length", "80", "--max-completion-tokens", "10", "--safety-buffer", "0"), "context overflow"),
        (("--pin", "shop.nope.Missing"), "cannot pin 'shop.nope.Missing'"),
        (("--pin", "apply"), "'apply' is ambiguous: 2 symbols have that name: shop.billing.discounts"),
        (("--pin", "Inventroy"), "did you mean shop.inventory.Inventory"),
    ],
)
def test_bad_options_get_one_clear_line(ws, args, message):
    out = ctx("plan", str(ws), "-q", QUERY, *args)
    assert "Traceback" not in out.stderr
    if message is None:
        assert out.returncode == 0, out.stderr
        assert "unknown model 'acme-9000'" in out.stdout
    else:
        assert out.returncode != 0
        assert message in out.stderr
        assert len(out.stderr.strip().splitlines()) <= 2


def test_bad_files_are_skipped_or_reported(ws, tmp_path):
    (ws / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (ws / "latin.py").write_bytes("name = 'caf\xe9'\n".encode("latin-1"))
    (ws / "huge.py").write_text("x = 1\n" * 1_000_000)  # 6 MB
    out = ctx("plan", str(ws), "-q", QUERY)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[{'role': 'user'")
    out = ctx("plan", str(ws), "-q", QUERY, "--conversation", str(broken))
    assert out.returncode == 2 and "is not valid JSON" in out.stderr and "Traceback" not in out.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"role": "robot", "content": "hi"}]))
    out = ctx("plan", str(ws), "-q", QUERY, "--conversation", str(wrong))
    assert out.returncode == 2 and "message 1: 'role' must be one of" in out.stderr
    out = ctx("plan", str(tmp_path / "missing"), "-q", QUERY)
    assert out.returncode == 2 and "is not a directory" in out.stderr
    out = ctx("plan", str(ws))
    assert out.returncode == 2 and "--query" in out.stderr


def test_replay_and_report(ws):
    plan = json.loads(ctx("plan", str(ws), "-q", QUERY, "--format", "json").stdout)
    out = ctx("replay", plan["planId"], "--workspace", str(ws), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == plan  # rebuilt from the stored inputs: the same plan
    tree = ctx("replay", plan["planId"], "--workspace", str(ws))
    assert "identical: same plan id, same bytes" in tree.stdout
    missing = ctx("replay", "plan-0000", "--workspace", str(ws))
    assert missing.returncode == 2 and "no stored plan 'plan-0000'" in missing.stderr
    report = ctx("report", str(ws))
    assert report.returncode == 0, report.stderr
    assert "1 plans in 1 sessions" in report.stdout and "no usage reports yet" in report.stdout


def test_every_command_is_in_the_help_and_the_module_docstring():
    from ctx_lsp import cli

    out = ctx("--help")
    commands = ("plan", "index", "models", "report", "replay", "serve", "gateway", "mcp")
    for command in commands:
        assert command in out.stdout
        assert f"ctx-lsp {command}" in (cli.__doc__ or "")
    mcp = ctx("mcp", "--help")
    assert mcp.returncode == 0 and "--session NAME" in mcp.stdout and "claude mcp add ctx" in mcp.stdout


def test_mcp_refuses_an_empty_session_name(ws):
    out = ctx("mcp", str(ws), "--session", " ")
    assert out.returncode == 2 and out.stderr.strip() == "ctx-lsp: --session needs a name"


def test_expand_prints_a_shortened_output_or_the_lines_asked_for(ws):
    """`ctx-lsp expand`: what an agent with only a shell runs to read back what the gateway cut."""
    from ctx_lsp.engine import Engine
    from ctx_lsp.sessions import SessionEngine

    log = "\n".join(f"test_{n} PASSED" for n in range(300)) + "\nE   AssertionError: 95 != 90\n" + "tail"
    engine = SessionEngine(Engine(ws))
    engine.store.ensure_session("codex-1")
    engine.store.put_original("codex-1", "g-00c0ffee", "test_log", 2500, 200, log)
    engine.close()
    whole = ctx("expand", "g-00c0ffee", str(ws))
    assert whole.returncode == 0 and whole.stdout == log + "\n", whole.stderr
    part = ctx("expand", "g-00c0ffee", "--match", "assertionerror", "--context", "1", cwd=ws)
    assert part.returncode == 0 and part.stdout == "300-test_299 PASSED\n301:E   AssertionError: 95 != 90\n302-tail\n"
    missing = ctx("expand", "g-nope", str(ws))
    assert missing.returncode == 2 and "no shortened output with id 'g-nope'" in missing.stderr
    bad = ctx("expand", "g-00c0ffee", str(ws), "--start-line", "0")
    assert bad.returncode == 2 and "--start-line must be 1 or more" in bad.stderr


def test_index_names_the_workspaces_own_packages(tmp_path):
    """What an import by a package's name reaches, said where the index is built."""
    for rel, text in {
        "packages/core/package.json": '{"name": "@acme/core"}',
        "packages/core/src/index.ts": "export function fmt(n: number) { return `${n}` }\n",
        "apps/web/package.json": '{"name": "web"}',
        "apps/web/src/main.ts": 'import { fmt } from "@acme/core"\nexport const show = () => fmt(1)\n',
        "svc/go.mod": "module example.com/svc\n\ngo 1.22\n",  # a Go module, below the root
        "svc/store/store.go": "package store\n\nfunc Open() {}\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    out = ctx("index", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "  packages: @acme/core (packages/core), example.com/svc (svc), web (apps/web)\n" in out.stdout
