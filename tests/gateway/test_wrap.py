"""`ctx-lsp wrap` with the real assistants, offline in a loopback-only network namespace: the
assistant runs through a gateway started for the run, which forwards to the user's own provider
(its base URL in the environment or the assistant's settings: the fake upstream), the upstream
sees the rewritten requests, the assistant's output and exit status are its own, and one summary
line follows. An upstream that cannot be reached is said at once."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest

from ctx_lsp.cli.wrap import launch, summary
from ctx_lsp.cli.wrap_upstream import probe, probed_faces, unreachable_line, upstream_options, user_provider
from ctx_lsp.config import GatewayConfig
from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.gateway.options import resolve
from ctx_lsp.gateway.thread import GatewayThread
from tests.gateway import assistants
from tests.gateway.netns import netns_unavailable, run_offline, target_urls
from tests.workspaces import copy_sample

slow = pytest.mark.slow
VENV_BIN = Path(sys.executable).parent
UPSTREAM = target_urls(False)  # the fake upstream inside the namespace
DEAD = "http://127.0.0.1:18099"  # nothing listens there in the namespace


@pytest.fixture
def netns() -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)


def _workspace(tmp_path: Path) -> Path:
    """No upstream in the workspace: the gateway forwards where the assistant's own settings point
    (assistants.py: ANTHROPIC_BASE_URL, OPENAI_API_BASE, Codex's provider — the fake upstream)."""
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text('[gateway]\ncontext_cost = "always"\n')  # the tests look for the context sent
    return ws


@slow
@pytest.mark.parametrize("name", assistants.NAMES)
def test_wrap_runs_the_assistant_through_the_gateway(netns: None, name: str, tmp_path: Path) -> None:
    if not assistants.installed(name):
        pytest.skip(f"{name} is not installed (make assistants)")
    ws = _workspace(tmp_path)
    reply = f"WRAPPED-{name.upper()}: hello."
    inv = assistants.invocation(name, ws, "Say hello. Do not edit any file.", UPSTREAM, tmp_path / "home")
    env = {**inv.env, "PATH": f"{VENV_BIN}:{inv.env['PATH']}", "OPENAI_API_KEY": assistants.API_KEY}
    command = ["ctx-lsp", "wrap", name, *inv.argv[1:]]
    r = run_offline(command, tmp_path / "run", env=env, cwd=ws, timeout=180, reply=reply)
    assert r.rc == 0, r.summary()
    assert reply in r.stdout, r.summary()
    (body,) = [req["body"] for req in r.requests if req["path"].split("?")[0] == assistants.ROUTES[name]]
    assert STABLE_HEADER in body and CONTEXT_HEADER in body, r.summary()
    assert "requests through the gateway" in r.stderr, r.summary()
    assert "cannot be reached" not in r.stderr, r.summary()
    assert r.dns == [], r.summary()  # nothing went to a public provider: not even its name was looked up


@slow
def test_wrap_passes_the_exit_status_and_the_environment(netns: None, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    script = (
        "import os, sys; from openai import OpenAI; "
        "c = OpenAI(max_retries=0); "
        "ask = [{'role': 'user', 'content': 'How is stock reserved?'}]; "
        "r = c.chat.completions.create(model='gpt-4o', messages=ask); "
        "print(r.choices[0].message.content, os.environ['ANTHROPIC_BASE_URL']); sys.exit(5)"
    )
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": "sk-wrap",
        "OPENAI_BASE_URL": UPSTREAM.openai,
    }
    r = run_offline(
        ["ctx-lsp", "wrap", "--", sys.executable, "-c", script], tmp_path / "run", env=env, cwd=ws, reply="via wrap"
    )
    assert r.rc == 5, r.summary()
    assert "via wrap http://127.0.0.1:" in r.stdout
    assert "1 requests through the gateway" in r.stderr and "forwarded" in r.stderr, r.summary()
    # gpt-4o has list prices: what this run's input cost, through ctx_lsp and sent direct
    assert re.search(r"cost \$[\d.]+ through ctx_lsp vs \$[\d.]+ direct \([\d.]+×\)", r.stderr), r.summary()
    assert json.loads(r.requests[-1]["body"])["messages"][0]["content"].startswith(STABLE_HEADER)


def test_wrap_says_what_is_missing(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "wrap", "--workspace", str(ws), "claude", "-p", "hi"],
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent", "HOME": str(tmp_path), "CTX_LSP_TOOLS": str(tmp_path / "no-tools")},
        timeout=60,
    )
    assert done.returncode == 2 and "claude is not installed: npm install -g @anthropic-ai/claude-code" in done.stderr
    printed = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "wrap", "--workspace", str(ws), "--print-env", "claude"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert printed.returncode == 0 and "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787" in printed.stdout


@slow
@pytest.mark.parametrize("name", ["claude", "codex"])
def test_wrap_finds_the_assistants_make_assistants_installed(netns: None, name: str, tmp_path: Path) -> None:
    """Not on PATH: `make assistants` put them in .tools/, and wrap runs them from there."""
    if not assistants.installed(name):
        pytest.skip(f"{name} is not installed (make assistants)")
    ws = _workspace(tmp_path)
    env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    r = run_offline(["ctx-lsp", "wrap", name, "--version"], tmp_path / "run", env=env, cwd=ws, timeout=120)
    assert r.rc == 0 and re.search(r"\d+\.\d+\.\d+", r.stdout), r.summary()
    assert "not installed" not in r.stderr, r.summary()


@slow
def test_wrap_claude_shrinks_a_test_log_and_the_model_expands_it(netns: None, tmp_path: Path) -> None:
    if not assistants.installed("claude"):
        pytest.skip("claude is not installed (make assistants)")
    ws = _workspace(tmp_path)
    tests = [f"def test_ok_{n}():\n    assert {n} >= 0\n" for n in range(400)]
    tests.append(
        "def test_reserve():\n    stock = {'widget': 1}\n    assert stock['widget'] - 2 >= 0, 'oversold widget'\n"
    )
    (ws / "test_stock.py").write_text("\n".join(tests))
    command = "python -m pytest -v -p no:cacheprovider test_stock.py"
    queue = [
        {"kind": "tool_call", "tool_name": "Bash", "tool_arguments": {"command": command}},
        {"kind": "tool_call", "tool_name": "mcp__ctx__expand", "tool_arguments": {"id": "{expand_id}"}},
        {"text": "WRAPPED: the widget is oversold."},
    ]
    inv = assistants.invocation("claude", ws, "Run the tests and explain the failure.", UPSTREAM, tmp_path / "home")
    # Claude Code keeps 30,000 characters of a command's output by default; this log is longer
    env = {**inv.env, "PATH": f"{VENV_BIN}:{inv.env['PATH']}", "BASH_MAX_OUTPUT_LENGTH": "200000"}
    argv = ["ctx-lsp", "wrap", "claude", "--allowedTools", "Bash,mcp__ctx__expand", *inv.argv[1:]]
    r = run_offline(argv, tmp_path / "run", env=env, cwd=ws, timeout=240, queue=queue)
    assert r.rc == 0, r.summary()
    assert "WRAPPED: the widget is oversold." in r.stdout, r.summary()
    posts = [
        json.loads(req["body"])
        for req in r.requests
        if req["path"].startswith("/v1/messages") and req["method"] == "POST"
    ]
    posts = [p for p in posts if p.get("tools")]  # the conversation's requests (not a title or a probe)
    assert len(posts) >= 3, r.summary()

    def result_of(body: dict) -> str:
        blocks = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        content = results[-1]["content"]
        return content if isinstance(content, str) else json.dumps(content)

    shrunk = result_of(posts[1])
    assert shrunk.startswith("[ctx_lsp shortened this test log output"), shrunk[:300]
    assert "oversold widget" in shrunk and "test_reserve" in shrunk and "test_ok_200 PASSED" not in shrunk
    expanded = json.loads(result_of(posts[2]))["text"]  # Claude Code hands the model MCP's structured content
    passed = [line for line in expanded.splitlines() if " PASSED " in line]
    assert "oversold widget" in expanded and len(expanded) > len(shrunk)
    assert passed and not any(line in shrunk for line in passed[5:-5])  # the original, one call away
    assert "requests through the gateway" in r.stderr, r.summary()


# --- the user's own provider ---------------------------------------------------------------------


def test_the_upstream_is_where_the_assistant_would_have_gone(tmp_path: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "http://llm.corp:8443", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    assert user_provider("claude", ["-p", "hi"], env).anthropic.url == "http://llm.corp:8443"  # type: ignore[union-attr]
    script = user_provider("--", ["python", "a.py"], {"OPENAI_API_BASE": "http://proxy/v1"})
    assert script.openai is not None and (script.openai.url, script.openai.source) == (
        "http://proxy/v1",
        "OPENAI_API_BASE",
    )
    # aider's own flag names it, and is taken out: wrap gives aider the gateway's
    aider = user_provider("aider", ["--openai-api-base", "http://vllm:8000/v1", "--model", "m"], env)
    assert aider.openai is not None and aider.openai.url == "http://vllm:8000/v1" and aider.args == ["--model", "m"]
    assert user_provider("aider", ["--openai-api-base=http://a/v1"], {}).args == []
    # the address wrap itself gives the assistant (a shell that exported --print-env) is not an upstream
    ours = user_provider("claude", [], {"ANTHROPIC_BASE_URL": "http://localhost:8787"}, lambda u: u.endswith(":8787"))
    assert ours.anthropic is None


def test_codex_s_provider_is_read_from_its_config_and_overrides(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "corp"\nprofile = "fast"\n'
        '[model_providers.corp]\nname = "Corp"\nbase_url = "https://llm.corp/v1"\nenv_key = "CORP_KEY"\n'
        'query_params = { api-version = "2025-04-01" }\n'
        '[model_providers.local]\nbase_url = "http://127.0.0.1:9000/v1"\n'
        '[profiles.fast]\nmodel = "small"\n'
    )
    env = {"CODEX_HOME": str(home), "OPENAI_BASE_URL": "http://ignored/v1"}
    corp = user_provider("codex", ["exec", "hi"], env)
    assert corp.openai is not None and corp.openai.url == "https://llm.corp/v1"
    assert "config.toml model_providers.corp.base_url" in corp.openai.source
    assert corp.codex_provider == {"env_key": "CORP_KEY", "query_params": {"api-version": "2025-04-01"}}
    # wrap's provider keeps the user's key variable and query; the user's choice of provider is taken out
    picked = user_provider("codex", ["-c", "model_provider=local", "exec", "-c", "model=x", "hi"], env)
    assert picked.openai is not None and picked.openai.url == "http://127.0.0.1:9000/v1"
    assert picked.args == ["exec", "-c", "model=x", "hi"]
    argv = launch("codex", picked.args, "http://127.0.0.1:5000", root=tmp_path, codex=corp.codex_provider).argv
    assert 'model_providers.ctx_lsp.base_url="http://127.0.0.1:5000/v1"' in argv
    assert 'model_providers.ctx_lsp.env_key="CORP_KEY"' in argv and argv[-4:] == picked.args
    given = user_provider("codex", ["--config=model_providers.corp.base_url=http://other/v1"], env)
    assert given.openai is not None and given.openai.url == "http://other/v1" and given.args == []
    # the built-in openai provider: OPENAI_BASE_URL; Ollama: its local port
    builtin = user_provider("codex", ["-c", 'model_provider="openai"'], env)
    assert builtin.openai is not None and builtin.openai.source == "OPENAI_BASE_URL"
    assert user_provider("codex", ["--oss"], env).openai.url == "http://localhost:11434/v1"  # type: ignore[union-attr]
    assert user_provider("codex", [], {"HOME": str(tmp_path / "none")}).openai is None  # nothing set: the default


def test_a_flag_wins_over_the_users_provider_which_wins_over_the_workspace(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text('[gateway]\nopenai_upstream = "http://127.0.0.1:7000/v1"\n')
    engine = Engine(ws)
    user = user_provider("--", ["x"], {"OPENAI_BASE_URL": "http://127.0.0.1:7001/v1"})
    options, sources = upstream_options(engine, user, "127.0.0.1:0")
    assert options.openai_upstream == "http://127.0.0.1:7001/v1" and sources["openai"] == "OPENAI_BASE_URL"
    options, sources = upstream_options(engine, user, "127.0.0.1:0", openai_upstream="http://127.0.0.1:7002/v1")
    assert options.openai_upstream == "http://127.0.0.1:7002/v1" and sources["openai"] == "--openai-upstream"
    options, sources = upstream_options(engine, user_provider("--", ["x"], {}), "127.0.0.1:0")
    assert options.openai_upstream == "http://127.0.0.1:7000/v1" and sources["openai"] == "ctx.toml [gateway]"
    assert options.anthropic_upstream == "https://api.anthropic.com" and sources["anthropic"] == "the default"
    assert probed_faces("--", sources) == ("openai",) and probed_faces("claude", sources) == ("openai", "anthropic")
    # a cloned repository still does not choose where the user's key goes; the user's own provider does
    (ws / "ctx.toml").write_text('[gateway]\nanthropic_upstream = "https://collect.example"\n')
    engine = Engine(ws)
    with pytest.raises(UserError, match=r"--anthropic-upstream https://collect\.example"):
        upstream_options(engine, user_provider("claude", [], {}), "127.0.0.1:0")
    mine = user_provider("claude", [], {"ANTHROPIC_BASE_URL": "https://llm.corp"})
    assert upstream_options(engine, mine, "127.0.0.1:0")[0].anthropic_upstream == "https://llm.corp"
    with pytest.raises(UserError, match=r"ANTHROPIC_BASE_URL 'corp' .*--anthropic-upstream URL"):
        upstream_options(engine, user_provider("claude", [], {"ANTHROPIC_BASE_URL": "corp"}), "127.0.0.1:0")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_upstream_that_cannot_be_reached_is_said_at_once(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    why = probe(dead)
    assert why is not None and "refused" in why and time.monotonic() - started < 1
    line = unreachable_line("anthropic", dead, "ANTHROPIC_BASE_URL", why)
    assert "\n" not in line and dead in line and "--anthropic-upstream URL or ANTHROPIC_BASE_URL" in line
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert probe(f"http://127.0.0.1:{listening.getsockname()[1]}") is None


def test_a_request_the_gateway_cannot_forward_gets_an_error_in_its_apis_shape(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    ws = copy_sample(tmp_path / "ws")
    options = resolve(GatewayConfig(), listen="127.0.0.1:0", openai_upstream=dead + "/v1", anthropic_upstream=dead)
    gateway = GatewayThread(ws, options)
    url = gateway.start()
    try:
        started = time.monotonic()
        with pytest.raises(anthropic.InternalServerError) as claude:
            anthropic.Anthropic(base_url=url, api_key="k", max_retries=2).messages.create(
                model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        assert claude.value.status_code == 502 and claude.value.body["error"]["type"] == "api_error"  # type: ignore[index]
        assert f"the upstream {dead[7:]} is unreachable" in claude.value.message
        with pytest.raises(openai.InternalServerError) as gpt:
            openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=2).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
            )
        assert gpt.value.status_code == 502 and "is unreachable" in gpt.value.message
        assert time.monotonic() - started < 5  # at once, not after a connect timeout
    finally:
        gateway.stop()
    assert gateway.status is not None
    # one request each: the SDKs do not retry what nothing listens to (x-should-retry: false)
    assert f"2 requests could not reach {dead}/v1 or {dead}" in summary(gateway.status)


def _sdk_script(face: str) -> str:
    """A script on one SDK: one request, its reply (or the error's status) printed, exit 3."""
    call = (
        "from anthropic import Anthropic; c = Anthropic(max_retries=0); "
        "r = c.messages.create(model='claude-sonnet-4-5', max_tokens=50, messages=ask); out = r.content[0].text"
        if face == "anthropic"
        else "from openai import OpenAI; c = OpenAI(max_retries=0); "
        "r = c.chat.completions.create(model='gpt-4o', messages=ask); out = r.choices[0].message.content"
    )
    return (
        "import sys\nask = [{'role': 'user', 'content': 'How is stock reserved?'}]\ntry:\n"
        f"    {call}\nexcept Exception as err:\n    out = f'ERROR {{getattr(err, \"status_code\", err)}}'\n"
        "print(out)\nsys.exit(3)\n"
    )


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    base = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    return {**base, **more}


@slow
@pytest.mark.parametrize("face", ["anthropic", "openai"])
def test_wrap_forwards_to_the_users_base_url(netns: None, face: str, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    variable = "ANTHROPIC_BASE_URL" if face == "anthropic" else "OPENAI_BASE_URL"
    env = _env(tmp_path, **{variable: getattr(UPSTREAM, face)})
    command = ["ctx-lsp", "wrap", "--", sys.executable, "-c", _sdk_script(face)]
    r = run_offline(command, tmp_path / "run", env=env, cwd=ws, reply="FROM THE USERS PROVIDER")
    assert r.rc == 3 and "FROM THE USERS PROVIDER" in r.stdout, r.summary()
    assert len(r.requests) == 1 and STABLE_HEADER in r.requests[0]["body"], r.summary()  # through the gateway
    assert "cannot be reached" not in r.stderr and r.dns == [], r.summary()


@slow
def test_wrap_upstream_flags_win_and_an_unreachable_one_is_said_in_one_line(netns: None, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    script = [sys.executable, "-c", _sdk_script("openai")]
    env = _env(tmp_path, OPENAI_BASE_URL=DEAD + "/v1")
    flagged = ["ctx-lsp", "wrap", "--openai-upstream", UPSTREAM.openai, "--", *script]
    r = run_offline(flagged, tmp_path / "flag", env=env, cwd=ws, reply="FROM THE FLAG")
    assert r.rc == 3 and "FROM THE FLAG" in r.stdout and "cannot be reached" not in r.stderr, r.summary()
    r = run_offline(["ctx-lsp", "wrap", "--", *script], tmp_path / "dead", env=env, cwd=ws, reply="never")
    assert r.rc == 3 and "ERROR 502" in r.stdout and r.requests == [], r.summary()  # the script ran, its status
    (warning,) = [line for line in r.stderr.splitlines() if "cannot be reached" in line]
    assert f"OpenAI upstream {DEAD}/v1 (from OPENAI_BASE_URL)" in warning and "--openai-upstream URL" in warning
    assert f"1 requests could not reach {DEAD}/v1" in r.stderr, r.summary()
    assert r.seconds < 30, r.summary()  # said at once: no wait on retries
