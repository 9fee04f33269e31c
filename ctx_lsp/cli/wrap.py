"""``ctx-lsp wrap ASSISTANT [ARGS…]``: run an assistant through the gateway of the current
workspace — started on a free loopback port, or joined when one already serves it — with
exactly the settings it needs for that run, and nothing changed in its configuration files.

The gateway forwards where the assistant would have sent its requests (the user's own provider:
``ctx_lsp.cli.wrap_upstream``) unless ``--openai-upstream`` / ``--anthropic-upstream`` say otherwise.

Fail open: when the gateway cannot start, the assistant runs straight to its provider, with a
warning; an upstream that cannot be reached is said in one line, and the assistant runs anyway.
Arguments, standard streams, the terminal and the exit status are the assistant's.
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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctx_lsp.cli.stats import gateway_totals
from ctx_lsp.cli.wrap_upstream import (
    DEFAULT_SOURCE,
    FACE_NAMES,
    FLAGS,
    Probes,
    probed_faces,
    same_address,
    toml_inline,
    unreachable_line,
    upstream_options,
    user_provider,
)
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.savings import Totals
from ctx_lsp.core.verdict import context_clause
from ctx_lsp.engine import Engine, UserError
from ctx_lsp.gateway.options import DEFAULT_LISTEN, GatewayOptions, address_of, is_loopback, parse_listen, resolve
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


def codex_mcp(root: Path) -> list[str]:
    """Codex's ``-c`` overrides registering ``ctx-lsp mcp`` for the run: only the read-only tools
    (their annotations let ``codex exec`` call them without asking), and ``required`` so that Codex
    waits for them before its first request (the tool list, first in the provider's cache order,
    then stays the same all session)."""
    server = "mcp_servers.ctx"
    return [
        f"{server}.command={toml_inline(sys.executable)}",
        f"{server}.args={toml_inline(['-m', 'ctx_lsp', 'mcp', str(root)])}",
        f"{server}.enabled_tools={toml_inline(list(READ_ONLY_TOOLS))}",
        f"{server}.required=true",
    ]


def launch(
    assistant: str,
    args: list[str],
    url: str,
    mcp: Path | None = None,
    *,
    root: Path | None = None,
    codex: Mapping[str, Any] | None = None,
) -> Launch:
    """The command line and environment that point ``assistant`` at the gateway (``--``: any
    program on the openai / anthropic SDKs). Claude Code also gets the workspace's MCP server
    (``mcp``), so the model can expand a shortened output or read a symbol: its read-only tools
    are allowed unless the user gives ``--allowedTools`` themselves; Codex gets it with ``root``.
    ``codex``: the settings of the user's Codex provider (key variable, headers, query) that the
    provider wrap gives it keeps."""
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
        settings = dict(codex) if codex is not None else {"env_key": "OPENAI_API_KEY", "wire_api": "responses"}
        overrides = [
            f'model_provider="{CODEX_PROVIDER}"',
            f'{provider}.name="ctx_lsp gateway"',
            f"{provider}.base_url={toml_inline(openai_base)}",
            *(f"{provider}.{key}={toml_inline(value)}" for key, value in settings.items()),
            *(codex_mcp(root) if root is not None else []),
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


# Where `make assistants` installs them: this checkout's .tools/, or $CTX_LSP_TOOLS (its TOOLS=)
TOOLS = Path(__file__).resolve().parents[2] / ".tools"  # ctx_lsp/cli/wrap.py → the checkout


def find_program(program: str) -> str | None:
    """``program`` on PATH, else where `make assistants` installed it."""
    found = shutil.which(program)
    if found is not None or os.sep in program:
        return found
    tools = Path(os.environ.get("CTX_LSP_TOOLS") or TOOLS)
    bins = (tools / "node" / "node_modules" / ".bin" / program, tools / "aider" / "bin" / program)
    return next((str(b) for b in bins if os.access(b, os.X_OK)), None)


def direct(assistant: str, args: list[str]) -> list[str]:
    """The assistant's own command line, unchanged (when the gateway cannot start)."""
    return list(args) if assistant == "--" else [assistant, *args]


def _quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_./=:@" for c in arg) else "'" + arg.replace("'", "'\\''") + "'"


def joinable(options: GatewayOptions, root: Path, upstreams: Mapping[str, str] | None = None) -> str | None:
    """The URL of a gateway already serving this workspace at the configured address (the
    editor's), or None; None too when it forwards elsewhere than ``upstreams`` (face → URL)."""
    try:
        with urllib.request.urlopen(options.url + "/ctx/status", timeout=1) as r:
            status = json.load(r)
    except (OSError, ValueError):
        return None
    theirs = status.get("upstreams") or {}
    if any(theirs.get(face) != url for face, url in (upstreams or {}).items()):
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
    if c["upstream_unreachable"]:
        line += f" · {c['upstream_unreachable']} requests could not reach {status.options.upstreams()}"
    return line


def _cost(root: Path, since: float) -> Totals | None:
    try:
        return gateway_totals(root, since=since)[1]
    except Exception as err:  # the summary is a courtesy: never the assistant's exit status
        print(f"ctx-lsp: what this run cost could not be read: {err}", file=sys.stderr)
        return None


def run(
    assistant: str,
    args: list[str],
    workspace: Path,
    print_env: bool,
    listen: str | None,
    openai_upstream: str | None = None,
    anthropic_upstream: str | None = None,
) -> int:
    launch(assistant, args, "")  # an unknown assistant is a user error before anything starts
    if listen and not is_loopback(parse_listen(listen)[0]):
        raise UserError(f"wrap's gateway serves this machine only: --listen 127.0.0.1:PORT, not {listen}")
    engine = Engine(workspace)
    host, port = parse_listen(engine.config.gateway.listen or DEFAULT_LISTEN)
    mine = [(host, port)] + ([parse_listen(listen)] if listen else [])

    def ours(url: str) -> bool:  # the address wrap gives the assistant: never its upstream
        return any(p and same_address(url, h, p) for h, p in mine)

    user = user_provider(assistant, args, os.environ, ours)
    own, args = list(args), user.args  # the user's own for a run straight to the provider
    options, sources = upstream_options(engine, user, listen or "127.0.0.1:0", openai_upstream, anthropic_upstream)
    faces = probed_faces(assistant, sources)
    options = replace(options, faces=faces or ("openai", "anthropic"))
    if print_env:
        configured = resolve(engine.config.gateway)
        for face in faces:
            if sources[face] != DEFAULT_SOURCE:
                where = f"{FLAGS[face]} {options.upstream(face)}"
                print(f"# the gateway's {FACE_NAMES[face]} upstream ({sources[face]}): {where}")
        print(launch(assistant, args, configured.url, root=engine.root, codex=user.codex_provider).describe())
        return 0
    program = direct(assistant, own)[0] if (assistant != "--" or args) else launch(assistant, args, "").argv[0]
    found = find_program(program)
    if found is None:
        how = INSTALL.get(assistant, "")
        print(f"ctx-lsp: {program} is not installed{f': {how}' if how else ''}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    if user.unknown:
        print(
            f"ctx-lsp: Codex's provider {user.unknown!r} names no base_url wrap can read; the gateway forwards to "
            f"{options.openai_upstream}: give yours with --openai-upstream URL",
            file=sys.stderr,
        )
    probes = Probes({face: options.upstream(face) for face in faces})
    wanted = {face: options.upstream(face) for face in faces}
    joined = joinable(resolve(engine.config.gateway), engine.root, wanted) if engine.config.gateway.listen else None
    gateway = None
    url = joined
    if url is None:
        gateway = GatewayThread(engine.root, options, engine)
        try:
            url = gateway.start()
        except OSError as err:
            if listen:  # the port asked for is taken: say so, do not guess another
                where = address_of(*parse_listen(listen))
                print(f"ctx-lsp: cannot listen on {where}: {err.strerror or err}", file=sys.stderr)
                return EXIT_NOT_INSTALLED
            _warn_direct(program, err)
        except Exception as err:
            _warn_direct(program, err)
    for face, why in probes.failures().items():
        print(unreachable_line(face, options.upstream(face), sources[face], why), file=sys.stderr)
    scratch = Path(tempfile.mkdtemp(prefix="ctx-lsp-wrap-"))
    mcp = mcp_config(engine.root, scratch) if assistant == "claude" else None
    root = engine.root if assistant == "codex" else None
    how = launch(assistant, args, url, mcp, root=root, codex=user.codex_provider) if url else None
    how = how or Launch(direct(assistant, own))
    if how.argv and how.argv[0] == program:
        how.argv[0] = found
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
