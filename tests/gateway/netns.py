"""Run a command offline: in a fresh network namespace whose only interface is loopback.

Everything of one run starts inside the same namespace, so it can reach 127.0.0.1 and nothing
else (there is no route: any other address fails at once with ENETUNREACH):

    fake upstream (python -m tests.gateway.fake_upstream, port 18080)
        ← [optional] gateway (python -m ctx_lsp gateway …, port 18081)
            ← the command (an AI assistant)

The namespace is new each run, so the ports are fixed and the URLs known before the run
(:func:`target_urls`). The namespace also has its own PID namespace (every process of the run
dies with it) and mount namespace (so /etc/resolv.conf can point at a local DNS sink that logs
which host names the command tried to reach, and answers NXDOMAIN).

Outside, :func:`run_offline` writes a spec, runs ``python -m tests.gateway.netns SPEC`` inside
the namespace and reads back a :class:`RunResult`. Inside, :func:`_inner` starts the fake
upstream and waits for its ``listening`` line, starts the gateway (if asked) and waits for
``listening`` on its stderr, runs the command with a timeout, stops them and writes the result.
As root it uses ``unshare`` directly; as any other user it maps itself to root in a new user
namespace first (``unshare -r``), which needs no privilege where the kernel allows user
namespaces; :func:`netns_unavailable` says why not when it does not.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_PORT = 18080
GATEWAY_PORT = 18081
LOOPBACK = "127.0.0.1"

# Not root: a user namespace first (-r), in which the same namespaces need no privilege.
_UNSHARE = [
    "unshare",
    *(["-r"] if os.geteuid() != 0 else []),
    "--net",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
]
_LO_UP = 'ip link set lo up && exec "$@"'


# --- the namespace -------------------------------------------------------------------------------


def netns_argv(argv: list[str]) -> list[str]:
    """``argv`` wrapped to run in a fresh network (and PID, mount) namespace with only lo up."""
    return [*_UNSHARE, "sh", "-c", _LO_UP, "sh", *argv]


def netns_unavailable() -> str | None:
    """None if :func:`netns_argv` works here; otherwise the reason it does not."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    try:
        p = subprocess.run(netns_argv(["true"]), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare failed: {e}"
    if p.returncode != 0:
        return f"unshare {' '.join(_UNSHARE[1:])} failed (are user namespaces allowed?): {p.stderr.strip()}"
    return None


def run_in_netns(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` of ``argv`` inside a fresh loopback-only namespace (text mode, output captured)."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(netns_argv(argv), **kwargs)


# --- a run ---------------------------------------------------------------------------------------


@dataclass
class Urls:
    """Where the command must send its requests (the gateway's, when there is one)."""

    openai: str  # http://127.0.0.1:PORT/v1
    anthropic: str  # http://127.0.0.1:PORT (clients add /v1)


def target_urls(gateway: bool = False) -> Urls:
    port = GATEWAY_PORT if gateway else UPSTREAM_PORT
    return Urls(openai=f"http://{LOOPBACK}:{port}/v1", anthropic=f"http://{LOOPBACK}:{port}")


@dataclass
class RunResult:
    rc: int | None  # None: timed out (killed)
    stdout: str
    stderr: str
    seconds: float  # the command's wall time, not counting the upstream's or gateway's start
    requests: list[dict[str, Any]]  # what the fake upstream received (the --record rows)
    dns: list[str] = field(default_factory=list)  # host names the run looked up (all answered NXDOMAIN)
    connects: list[str] = field(default_factory=list)  # non-loopback connect()/sendto() attempts (trace_connects)
    gateway_log: str = ""
    upstream_log: str = ""
    error: str = ""  # why the run could not happen (e.g. the gateway never said "listening")
    out_dir: str = ""

    @property
    def timed_out(self) -> bool:
        return self.rc is None and not self.error

    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]

    def summary(self) -> str:
        """For assertion messages."""
        return (
            f"rc={self.rc} seconds={self.seconds:.1f} error={self.error!r}\nrequests={self.paths()}\n"
            f"dns={self.dns}\nconnects={self.connects}\n--- stdout\n{self.stdout[-3000:]}\n"
            f"--- stderr\n{self.stderr[-3000:]}\n--- gateway\n{self.gateway_log[-2000:]}\n"
            f"--- upstream\n{self.upstream_log[-2000:]}"
        )


def run_offline(
    command: list[str],
    out_dir: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    reply: str | None = None,
    queue: list[dict[str, Any]] | None = None,
    gateway: bool = False,
    gateway_workspace: Path | None = None,
    gateway_args: list[str] | None = None,
    gateway_env: dict[str, str] | None = None,
    gateway_program: list[str] | None = None,
    dns_log: bool = True,
    trace_connects: bool = False,
    python: str = sys.executable,
) -> RunResult:
    """Run ``command`` in a fresh loopback-only namespace next to a fake upstream (and a gateway).

    ``env`` is the command's whole environment (nothing is inherited); ``cwd`` its directory.
    ``reply`` / ``queue``: the fake upstream's default text and scripted replies (dicts for
    :meth:`tests.gateway.fake_upstream.Reply.from_dict`).
    ``gateway``: start ``ctx-lsp gateway WORKSPACE --listen 127.0.0.1:18081 --openai-upstream
    http://127.0.0.1:18080/v1 --anthropic-upstream http://127.0.0.1:18080 *gateway_args`` between
    them and wait for "listening" on its stderr (``gateway_program`` replaces
    ``python -m ctx_lsp gateway``); point the command at ``target_urls(gateway=True)``.
    ``dns_log``: log the host names looked up. ``trace_connects``: run the command under strace
    and report every connect()/sendto() to a non-loopback address.
    Logs, the spec and the result stay in ``out_dir``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "command": command,
        "env": env if env is not None else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        "cwd": str(cwd or out_dir),
        "timeout": timeout,
        "reply": reply,
        "queue": queue,
        "gateway": gateway,
        "gateway_workspace": str(gateway_workspace or cwd or out_dir),
        "gateway_args": gateway_args or [],
        "gateway_env": gateway_env,
        "gateway_program": gateway_program or [python, "-m", "ctx_lsp", "gateway"],
        "dns_log": dns_log,
        "trace_connects": trace_connects and shutil.which("strace") is not None,
        "out_dir": str(out_dir),
        "python": python,
        "user": [os.geteuid(), os.getegid()] if os.geteuid() != 0 else None,
    }
    spec_file = out_dir / "spec.json"
    spec_file.write_text(json.dumps(spec, indent=2))
    result_file = out_dir / "result.json"
    result_file.unlink(missing_ok=True)
    env_inner = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        p = run_in_netns(
            [python, "-m", "tests.gateway.netns", str(spec_file)], cwd=ROOT, env=env_inner, timeout=timeout + 60
        )
        outer = f"orchestrator rc={p.returncode}: {p.stderr[-2000:]}"
    except subprocess.TimeoutExpired:
        outer = "orchestrator timed out"
    if not result_file.exists():
        return RunResult(None, "", "", 0.0, [], error=outer, out_dir=str(out_dir))
    data = json.loads(result_file.read_text())
    return RunResult(**data)


# --- inside the namespace ------------------------------------------------------------------------


def _wait_for_line(path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> str | None:
    """The first line of ``path`` containing ``needle``, while ``proc`` lives; None on exit or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text(errors="replace").splitlines():
                if needle in line:
                    return line
        if proc.poll() is not None:
            return None
        time.sleep(0.02)
    return None


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _dns_question(packet: bytes) -> tuple[str, int, int]:
    """A DNS query's first question: (name, qtype, where the question ends)."""
    labels, i = [], 12
    while i < len(packet) and packet[i]:
        n = packet[i]
        labels.append(packet[i + 1 : i + 1 + n].decode("ascii", errors="replace"))
        i += n + 1
    end = i + 5  # the root label, qtype, qclass
    return ".".join(labels), int.from_bytes(packet[i + 1 : i + 3], "big"), end


def _dns_sink(names: list[str], ready: threading.Event) -> None:
    """A DNS server on 127.0.0.1:53 (UDP) inside the namespace: logs each name, answers NXDOMAIN."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((LOOPBACK, 53))
    ready.set()
    while True:
        packet, addr = sock.recvfrom(4096)
        if len(packet) < 17:
            continue
        name, qtype, end = _dns_question(packet)
        names.append(f"{name} {_QTYPES.get(qtype, qtype)}")
        # the id, flags QR|RD|RA|NXDOMAIN, one question and no other records, then the question
        sock.sendto(packet[:2] + b"\x81\x83\x00\x01" + b"\0" * 6 + packet[12:end], addr)


def _local_resolver(out_dir: Path, names: list[str]) -> None:
    """Point this mount namespace's /etc/resolv.conf at the DNS sink."""
    conf = out_dir / "resolv.conf"
    conf.write_text(f"nameserver {LOOPBACK}\noptions attempts:1 timeout:1\n")
    target = Path("/etc/resolv.conf").resolve()
    subprocess.run(["mount", "--bind", str(conf), str(target)], check=True)
    ready = threading.Event()
    threading.Thread(target=_dns_sink, args=(names, ready), daemon=True).start()
    ready.wait(5)


_QTYPES = {1: "A", 28: "AAAA", 65: "HTTPS"}
_INET = re.compile(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "([^"]+)"')
_RESULT = re.compile(r"\)\s+=\s+(-?\d+)(?:\s+(\w+))?")


def parse_strace(text: str) -> list[str]:
    """Non-loopback connect()/sendto() attempts in strace output: ``"ADDR:PORT -> ERRNO"``."""
    seen: list[str] = []
    for line in text.splitlines():
        m = _INET.search(line) or _INET6.search(line)
        if not m:
            continue
        port, addr = m.groups()
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(addr).is_loopback:
                continue
        r = _RESULT.search(line)
        outcome = (r.group(2) or r.group(1)) if r else "?"
        call = line.split("(", 1)[0].split()[-1]
        seen.append(f"{call} {addr}:{port} -> {outcome}")
    return seen


def _inner(spec_file: Path) -> int:
    spec = json.loads(spec_file.read_text())
    out = Path(spec["out_dir"])
    py = spec["python"]
    result: dict[str, Any] = {
        "rc": None,
        "stdout": "",
        "stderr": "",
        "seconds": 0.0,
        "requests": [],
        "out_dir": str(out),
    }
    names: list[str] = []
    if spec["dns_log"]:
        try:
            _local_resolver(out, names)
        except (OSError, subprocess.CalledProcessError) as e:
            names.append(f"(no DNS log: {e})")
    upstream = gateway = None
    record = out / "upstream.jsonl"
    record.unlink(missing_ok=True)
    up_log, gw_log = out / "upstream.log", out / "gateway.log"
    base_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        up_cmd = [py, "-m", "tests.gateway.fake_upstream", "--port", str(UPSTREAM_PORT), "--record", str(record)]
        if spec["reply"] is not None:
            up_cmd += ["--reply", spec["reply"]]
        if spec["queue"]:
            up_cmd += ["--queue", json.dumps(spec["queue"])]
        with up_log.open("wb") as f:
            upstream = subprocess.Popen(
                up_cmd, cwd=ROOT, env=base_env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
            )
        if _wait_for_line(up_log, "listening", upstream, 20) is None:
            result["error"] = "the fake upstream did not start"
            return 0
        if spec["gateway"]:
            up = f"http://{LOOPBACK}:{UPSTREAM_PORT}"
            gw_cmd = [
                *spec["gateway_program"],
                spec["gateway_workspace"],
                "--listen",
                f"{LOOPBACK}:{GATEWAY_PORT}",
                "--openai-upstream",
                f"{up}/v1",
                "--anthropic-upstream",
                up,
                *spec["gateway_args"],
            ]
            gw_env = {**base_env, **(spec["gateway_env"] or {})}
            with gw_log.open("wb") as f:
                gateway = subprocess.Popen(
                    gw_cmd, cwd=ROOT, env=gw_env, stdout=subprocess.DEVNULL, stderr=f, start_new_session=True
                )
            if _wait_for_line(gw_log, "listening", gateway, 60) is None:
                result["error"] = f"the gateway did not say 'listening' (rc={gateway.poll()})"
                return 0
        command = list(spec["command"])
        strace_out = out / "strace.txt"
        if spec["trace_connects"]:
            trace = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-e", "signal=none"]
            command = [*trace, "-o", str(strace_out), *command]
        if spec["user"]:  # not root: the command runs as its user again (Claude Code quits as a mapped root)
            uid, gid = spec["user"]
            command = ["unshare", f"--map-user={uid}", f"--map-group={gid}", *command]
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=spec["cwd"],
            env=spec["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=spec["timeout"])
            result["rc"] = proc.returncode
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        result["seconds"] = time.monotonic() - start
        result["stdout"] = stdout.decode(errors="replace")
        result["stderr"] = stderr.decode(errors="replace")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the command left running
        if spec["trace_connects"] and strace_out.exists():
            result["connects"] = parse_strace(strace_out.read_text(errors="replace"))
    finally:
        _stop(gateway)
        _stop(upstream)
        if record.exists():
            result["requests"] = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
        result["dns"] = names
        result["upstream_log"] = up_log.read_text(errors="replace") if up_log.exists() else ""
        result["gateway_log"] = gw_log.read_text(errors="replace") if gw_log.exists() else ""
        (out / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(_inner(Path(sys.argv[1])))
