"""``ctx-lsp wrap ASSISTANT [ARGS…]``: run an assistant through the gateway of the current
workspace — started on a free loopback port, or joined when one already serves it — with
exactly the settings it needs for that run, and nothing changed in its configuration files.

Fail open: when the gateway cannot start, the assistant runs straight to its provider, with a
warning. Arguments, standard streams, the terminal and the exit status are the assistant's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ctx_lsp.cli_stats import gateway_totals
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.savings import Totals
from ctx_lsp.core.verdict import context_clause
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.gateway.options import GatewayOptions, resolve
from ctx_lsp.gateway.status import Status
from ctx_lsp.gateway.thread import GatewayThread

EXIT_NOT_INSTALLED = 2
INSTALL = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "aider": "python -m pip install aider-install && aider-install",
}
CODEX_PROVIDER = "ctx_lsp"


@dataclass(slots=True)
class Launch:
    """How to start an assistant through the gateway at ``url``."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        lines = [f"export {k}={v}" for k, v in self.env.items()]
        return "\n".join([*lines, " ".join(_quote(a) for a in self.argv)])


READ_ONLY_TOOLS = ("expand", "get_symbol", "search_code", "references", "list_pins", "show_budget", "list_capsules")


def mcp_config(root: Path, directory: Path) -> Path:
    """Claude Code's files for this run only: ``--mcp-config`` registering ``ctx-lsp mcp``, and
    ``--settings`` with our status line. Returns the directory."""
    server = {"command": sys.executable, "args": ["-m", "ctx_lsp", "mcp", str(root)]}
    (directory / "ctx-lsp-mcp.json").write_text(json.dumps({"mcpServers": {"ctx": server}}))
    command = f"{shlex.quote(sys.executable)} -m ctx_lsp statusline --workspace {shlex.quote(str(root))}"
    (directory / "ctx-lsp-settings.json").write_text(
        json.dumps({"statusLine": {"type": "command", "command": command}})
    )
    return directory


def launch(assistant: str, args: list[str], url: str, mcp: Path | None = None) -> Launch:
    """The command line and environment that point ``assistant`` at the gateway (``--``: any
    program on the openai / anthropic SDKs). Claude Code also gets the workspace's MCP server
    (``mcp``), so the model can expand a shortened output or read a symbol: its read-only tools
    are allowed unless the user gives ``--allowedTools`` themselves."""
    openai_base = url + "/v1"
    if assistant == "claude":
        extra: list[str] = []
        env = {"ANTHROPIC_BASE_URL": url}
        if mcp is not None:
            extra = ["--mcp-config", str(mcp / "ctx-lsp-mcp.json")]
            if not any(a.startswith("--settings") for a in args):
                extra += ["--settings", str(mcp / "ctx-lsp-settings.json")]
            if not any(a.startswith(("--allowedTools", "--allowed-tools")) for a in args):
                extra += ["--allowedTools", ",".join(f"mcp__ctx__{t}" for t in READ_ONLY_TOOLS)]
            env["MCP_CONNECTION_NONBLOCKING"] = "false"  # -p must wait for the server's tools
        return Launch(["claude", *extra, *args], env)
    if assistant == "codex":
        provider = f"model_providers.{CODEX_PROVIDER}"
        overrides = [
            f'model_provider="{CODEX_PROVIDER}"',
            f'{provider}.name="ctx_lsp gateway"',
            f'{provider}.base_url="{openai_base}"',
            f'{provider}.env_key="OPENAI_API_KEY"',
            f'{provider}.wire_api="responses"',
        ]
        return Launch(["codex", *(x for o in overrides for x in ("-c", o)), *args])
    if assistant == "aider":
        return Launch(
            ["aider", "--openai-api-base", openai_base, *args],
            {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_BASE": url},
        )
    if assistant == "--":
        if not args:
            raise UserError("wrap --: give the command to run, e.g. ctx-lsp wrap -- python my_agent.py")
        env = {"OPENAI_BASE_URL": openai_base, "OPENAI_API_BASE": openai_base, "ANTHROPIC_BASE_URL": url}
        return Launch(list(args), env)
    raise UserError(f"wrap: unknown assistant {assistant!r}: use claude, codex, aider, or -- COMMAND")


def direct(assistant: str, args: list[str]) -> list[str]:
    """The assistant's own command line, unchanged (when the gateway cannot start)."""
    return list(args) if assistant == "--" else [assistant, *args]


def _quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_./=:@" for c in arg) else "'" + arg.replace("'", "'\\''") + "'"


def joinable(options: GatewayOptions, root: Path) -> str | None:
    """The URL of a gateway already serving this workspace at the configured address (the
    editor's), or None."""
    try:
        with urllib.request.urlopen(options.url + "/ctx/status", timeout=1) as r:
            status = json.load(r)
    except (OSError, ValueError):
        return None
    return options.url if status.get("workspace") == str(root.resolve()) else None


def _warn_direct(program: str, err: BaseException) -> None:
    print(f"ctx-lsp: the gateway did not start ({err}); running {program} straight to its provider", file=sys.stderr)


def summary(status: Status, cost: Totals | None = None) -> str:
    """One line at exit: requests, input the client sent vs what was forwarded, cache share, and
    (``cost``: what was recorded for this run) the input cost through ctx_lsp vs sent direct, and
    what context was added — or, when none was, why (as the engine decided for those requests)."""
    c = status.counts
    sent, forwarded = c["client_tokens"], c["forwarded_tokens"]
    line = f"ctx-lsp: {c['requests']} requests through the gateway"
    if forwarded:
        line += f" · input {format_tokens(sent)} sent by the assistant → {format_tokens(forwarded)} forwarded"
    if c["input_tokens"]:
        line += f" · provider cache {round(100 * c['cached_tokens'] / c['input_tokens'])}%"
    if cost is not None and cost.cost is not None and cost.direct_cost:
        line += f" · cost ${cost.cost:,.4f} through ctx_lsp vs ${cost.direct_cost:,.4f} direct ({cost.ratio:.2f}×)"
    if cost is not None and cost.requests:
        line += f" · {context_clause(cost)}"
    if c["fail_open"]:
        line += f" · {c['fail_open']} forwarded unchanged (see the log)"
    return line


def _cost(root: Path, since: float) -> Totals | None:
    try:
        return gateway_totals(root, since=since)[1]
    except Exception as err:  # the summary is a courtesy: never the assistant's exit status
        print(f"ctx-lsp: what this run cost could not be read: {err}", file=sys.stderr)
        return None


def run(assistant: str, args: list[str], workspace: Path, print_env: bool, listen: str | None) -> int:
    launch(assistant, args, "")  # an unknown assistant is a user error before anything starts
    engine = Engine(workspace)
    options = resolve(engine.config.gateway, listen=listen or "127.0.0.1:0", workspace=engine.file_config.gateway)
    if print_env:
        configured = resolve(engine.config.gateway)
        print(launch(assistant, args, configured.url).describe())
        return 0
    program = direct(assistant, args)[0] if (assistant != "--" or args) else launch(assistant, args, "").argv[0]
    if shutil.which(program) is None:
        how = INSTALL.get(assistant, "")
        print(f"ctx-lsp: {program} is not installed{f': {how}' if how else ''}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    joined = joinable(resolve(engine.config.gateway), engine.root) if engine.config.gateway.listen else None
    gateway = None
    url = joined
    if url is None:
        gateway = GatewayThread(engine.root, options, engine)
        try:
            url = gateway.start()
        except OSError as err:
            if listen:  # the port asked for is taken: say so, do not guess another
                print(f"ctx-lsp: cannot listen on {listen}: {err.strerror or err}", file=sys.stderr)
                return EXIT_NOT_INSTALLED
            _warn_direct(program, err)
        except Exception as err:
            _warn_direct(program, err)
    scratch = Path(tempfile.mkdtemp(prefix="ctx-lsp-wrap-"))
    mcp = mcp_config(engine.root, scratch) if assistant == "claude" else None
    how = launch(assistant, args, url, mcp) if url else Launch(direct(assistant, args))
    env = {**os.environ, **how.env}
    try:
        proc = subprocess.Popen(how.argv, env=env)
    except OSError as err:
        print(f"ctx-lsp: cannot run {how.argv[0]}: {err}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    started = time.time()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the assistant's to handle
    try:
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        if gateway is not None:
            gateway.stop()  # its last records are written
            if gateway.status is not None:
                print(summary(gateway.status, _cost(engine.root, started)), file=sys.stderr)
        shutil.rmtree(scratch, ignore_errors=True)
    return code if code >= 0 else 128 - code
