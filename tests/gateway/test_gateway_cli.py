"""`ctx-lsp gateway` as a user runs it: a process that says where it listens, serves, logs one line
per request without the key, refuses a taken port or a non-loopback address without a token, and
stops on SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest

from ctx_lsp.gateway.options import address_of, parse_listen, url_of
from tests.gateway.fake_upstream import FakeUpstream
from tests.gateway.harness import KEY
from tests.workspaces import copy_sample


def _gateway(ws: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ctx_lsp", "gateway", str(ws), *args],
        stderr=subprocess.PIPE,
        text=True,
    )


def _url(proc: subprocess.Popen) -> str:
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            return found.group(1)
    raise AssertionError(f"no listening line; exit {proc.wait()}")


def test_the_gateway_command_serves_logs_and_stops(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    with FakeUpstream() as up:
        proc = _gateway(ws, "--listen", "127.0.0.1:0", "--openai-upstream", up.openai_url, "--json-log")
        try:
            url = _url(proc)
            client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
            reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == up.default.content
            with urllib.request.urlopen(url + "/ctx/status", timeout=10) as r:
                status = json.load(r)
            assert status["counts"]["planned"] == 1 and status["last"]["planId"].startswith("plan-")
            replay = subprocess.run(
                [sys.executable, "-m", "ctx_lsp", "replay", status["last"]["planId"], "--workspace", str(ws)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert replay.returncode == 0, replay.stdout + replay.stderr  # a gateway plan replays identical
            port = int(url.rsplit(":", 1)[1])
            taken = _gateway(ws, "--listen", f"127.0.0.1:{port}")
            _, err = taken.communicate(timeout=60)
            assert taken.returncode == 2 and "cannot listen" in err
        finally:
            proc.send_signal(signal.SIGTERM)
            _, log = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert '"planId":"plan-' in log and KEY not in log
        stats = subprocess.run(
            [sys.executable, "-m", "ctx_lsp", "stats", str(ws), "--json"], capture_output=True, text=True, timeout=60
        )
        total = json.loads(stats.stdout)["total"]
        assert total["requests"] == 1 and total["input_tokens"] > 0
        assert total["cost"] > 0 and total["direct_cost"] > 0  # gpt-4o has prices: money, cache-weighted
        table = subprocess.run([sys.executable, "-m", "ctx_lsp", "stats", str(ws)], capture_output=True, text=True)
        assert "total" in table.stdout and "ratio" in table.stdout
        line = subprocess.run(
            [sys.executable, "-m", "ctx_lsp", "statusline", "--workspace", str(ws)],
            input='{"session_id": "not-this-one"}',
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert line.returncode == 0 and line.stdout.startswith("ctx ") and "cache warm" in line.stdout, line.stdout


def test_a_public_address_needs_a_token(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "gateway", str(ws), "--listen", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "X-Ctx-Token" in done.stderr and "Traceback" not in done.stderr


def test_listen_addresses_bracket_ipv6() -> None:
    assert address_of("::1", 8788) == "[::1]:8788" and url_of("::1", 8788) == "http://[::1]:8788"
    assert address_of("127.0.0.1", 8788) == "127.0.0.1:8788"
    assert parse_listen("[::1]:8788") == ("::1", 8788)


def test_a_taken_ipv6_port_is_named_as_a_client_writes_it(tmp_path: Path) -> None:
    """``cannot listen on [::1]:PORT``, not ``::1:PORT`` (which reads as another address)."""
    try:
        taken = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        taken.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with taken:
        taken.listen()
        port = taken.getsockname()[1]
        proc = _gateway(copy_sample(tmp_path / "ws"), "--listen", f"[::1]:{port}")
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert f"cannot listen on [::1]:{port}:" in err, err
