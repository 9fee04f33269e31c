"""Where the assistant ``ctx-lsp wrap`` runs would have sent its requests: the user's own provider,
read from the user's environment and the assistant's own settings (never the workspace's files),
so that the gateway forwards there instead of to the public API; the run's upstreams (a flag's,
else the user's, else the configuration's) and a connect to each before the assistant starts.

Read, per assistant:

- Claude Code: ``ANTHROPIC_BASE_URL``.
- Codex: the model provider it would use — ``--oss`` / ``--local-provider``, ``-c model_provider=…``,
  else ``model_provider`` of the ``--profile`` (``[profiles.NAME]``, ``$CODEX_HOME/NAME.config.toml``)
  or of ``$CODEX_HOME/config.toml`` (``~/.codex/config.toml``) — and that provider's ``base_url``
  (``-c model_providers.X.base_url=…``, else ``[model_providers.X]``); the built-in ``openai``
  provider's is ``OPENAI_BASE_URL``, ``ollama``'s ``CODEX_OSS_BASE_URL`` (or
  ``localhost:$CODEX_OSS_PORT``), ``lmstudio``'s ``localhost:1234``.
- aider: ``--openai-api-base URL`` in its arguments (then replaced by the gateway's),
  ``AIDER_OPENAI_API_BASE``, ``OPENAI_API_BASE``, ``OPENAI_BASE_URL``; ``ANTHROPIC_API_BASE``,
  ``ANTHROPIC_BASE_URL``.
- ``--`` COMMAND: ``OPENAI_BASE_URL``, ``OPENAI_API_BASE``; ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import socket
import threading
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ctx_lsp.engine import Engine, UserError
from ctx_lsp.gateway.options import GatewayOptions, is_loopback, resolve

Face = Literal["openai", "anthropic"]
FACES: tuple[Face, Face] = ("openai", "anthropic")
FLAGS: dict[Face, str] = {"openai": "--openai-upstream", "anthropic": "--anthropic-upstream"}
# the face each assistant calls; aider and a script may call either
MAIN_FACE: dict[str, Face | None] = {"claude": "anthropic", "codex": "openai", "aider": "openai", "--": None}
# Codex's built-in local providers (codex-rs model-provider-info: create_oss_provider, lmstudio)
OSS_PORTS = {"ollama": 11434, "oss": 11434, "lmstudio": 1234}
CODEX_OWN_KEYS = ("base_url", "name")  # what wrap sets itself on the provider it gives Codex
FACE_NAMES: dict[Face, str] = {"openai": "OpenAI", "anthropic": "Anthropic"}
DEFAULT_SOURCE = "the default"
PROBE_SECONDS = 1.0  # a connect to the upstream, before the assistant starts


@dataclass(frozen=True, slots=True)
class Found:
    url: str
    source: str  # where it was read, for messages: "ANTHROPIC_BASE_URL", "~/.codex/config.toml …"


@dataclass(slots=True)
class UserProvider:
    """The upstreams the user's own settings name, the assistant's arguments without the ones
    that named them, and (Codex) the provider table to give it pointing at the gateway."""

    openai: Found | None = None
    anthropic: Found | None = None
    args: list[str] = field(default_factory=list)
    codex_provider: dict[str, Any] = field(default_factory=dict)  # the user's provider's settings
    unknown: str | None = None  # a Codex provider whose base URL wrap cannot read

    def get(self, face: Face) -> Found | None:
        return self.openai if face == "openai" else self.anthropic


def _env(env: Mapping[str, str], *names: str) -> Found | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return Found(value, name)
    return None


def user_provider(
    assistant: str, args: list[str], env: Mapping[str, str], ours: Callable[[str], bool] = lambda _: False
) -> UserProvider:
    """What ``assistant`` run with ``args`` in ``env`` would use. ``ours``: a URL that is the
    gateway's own (a shell that exported ``wrap --print-env``): not an upstream, ignored."""
    found = UserProvider(args=list(args))
    if assistant == "claude":
        found.anthropic = _env(env, "ANTHROPIC_BASE_URL")
    elif assistant == "codex":
        found.openai, found.args, found.codex_provider, found.unknown = _codex(args, env)
    elif assistant == "aider":
        found.openai, found.args = _take_option(args, "--openai-api-base")
        found.openai = found.openai or _env(env, "AIDER_OPENAI_API_BASE", "OPENAI_API_BASE", "OPENAI_BASE_URL")
        found.anthropic = _env(env, "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL")
    elif assistant == "--":
        found.openai = _env(env, "OPENAI_BASE_URL", "OPENAI_API_BASE")
        found.anthropic = _env(env, "ANTHROPIC_BASE_URL")
    if found.openai is not None and ours(found.openai.url):
        found.openai = None
    if found.anthropic is not None and ours(found.anthropic.url):
        found.anthropic = None
    return found


def _take_option(args: list[str], name: str) -> tuple[Found | None, list[str]]:
    """The value of ``name VALUE`` / ``name=VALUE`` in ``args`` (the last one), and the args without it."""
    value: Found | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == name and i + 1 < len(args):
            value, i = Found(args[i + 1], name), i + 2
            continue
        if arg.startswith(name + "="):
            value = Found(arg.split("=", 1)[1], name)
        else:
            rest.append(arg)
        i += 1
    return value, rest


# --- Codex -----------------------------------------------------------------------------------


def _toml_value(text: str) -> Any:
    """A ``-c key=value`` value as Codex reads it: TOML, else the raw string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}  # Codex itself says what is wrong with its file


def _codex_home(env: Mapping[str, str]) -> Path:
    home = env.get("CODEX_HOME")
    return Path(home) if home else Path(env.get("HOME") or Path.home()) / ".codex"


def _set(table: dict[str, Any], dotted: str, value: Any) -> None:
    keys = [k.strip().strip('"') for k in dotted.split(".")]
    for key in keys[:-1]:
        inner = table.get(key)
        table = table.setdefault(key, {}) if isinstance(inner, dict) or inner is None else {}
    table[keys[-1]] = value


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _chooses_provider(key: str) -> bool:
    return key == "model_provider" or (key.startswith("model_providers.") and key.endswith(".base_url"))


def _codex(args: list[str], env: Mapping[str, str]) -> tuple[Found | None, list[str], dict[str, Any], str | None]:
    """The base URL of the model provider Codex would use; the args without the options that
    chose it (wrap gives Codex a provider of its own); that provider's other settings (its key's
    variable, headers, query parameters) for wrap's; and the provider's name when its URL is
    not one wrap can read."""
    overrides: dict[str, Any] = {}
    rest: list[str] = []
    profile = local = None
    oss = False
    i = 0
    while i < len(args):
        arg, nxt = args[i], args[i + 1] if i + 1 < len(args) else None
        pair: str | None = None
        if arg in ("-c", "--config") and nxt is not None:
            pair, taken = nxt, [arg, nxt]
        elif arg.startswith("--config="):
            pair, taken = arg.split("=", 1)[1], [arg]
        elif arg.startswith("-c") and not arg.startswith("--") and "=" in arg:
            pair, taken = arg[2:], [arg]
        if pair is not None:
            i += len(taken)
            key, _, value = (s.strip() for s in pair.partition("="))
            if value:
                _set(overrides, key, _toml_value(value))
            if not _chooses_provider(key):
                rest += taken
            continue
        if arg in ("-p", "--profile") and nxt is not None:
            profile = nxt
        elif arg.startswith("--profile="):
            profile = arg.split("=", 1)[1]
        elif arg == "--oss":
            oss, i = True, i + 1
            continue
        elif arg in ("--local-provider",) and nxt is not None:
            local, i = nxt, i + 2
            continue
        elif arg.startswith("--local-provider="):
            local, i = arg.split("=", 1)[1], i + 1
            continue
        rest.append(arg)
        i += 1
    home = _codex_home(env)
    config = _read_toml(home / "config.toml")
    where = f"{'$CODEX_HOME' if env.get('CODEX_HOME') else '~/.codex'}/config.toml"
    profile = profile or overrides.get("profile") or config.get("profile")
    if isinstance(profile, str) and profile:
        layer = config.get("profiles", {}).get(profile) if isinstance(config.get("profiles"), dict) else None
        config = _merge(config, layer if isinstance(layer, dict) else {})
        config = _merge(config, _read_toml(home / f"{profile}.config.toml"))
    merged = _merge(config, overrides)
    provider = (local or merged.get("oss_provider") or "ollama") if oss else (merged.get("model_provider") or "openai")
    providers = merged.get("model_providers")
    table = providers.get(provider) if isinstance(providers, dict) else None
    table = table if isinstance(table, dict) else {}
    url = table.get("base_url")
    if isinstance(url, str) and url:
        given = overrides.get("model_providers", {}).get(provider, {})
        chosen = "-c" if isinstance(given, dict) and "base_url" in given else where
        settings = {k: v for k, v in table.items() if k not in CODEX_OWN_KEYS}
        return Found(url, f"{chosen} model_providers.{provider}.base_url"), rest, settings, None
    if provider == "openai":
        return _env(env, "OPENAI_BASE_URL"), rest, {"env_key": "OPENAI_API_KEY", "wire_api": "responses"}, None
    if provider in OSS_PORTS:  # a local server: no key
        port = env.get("CODEX_OSS_PORT", "").strip()
        default = f"http://localhost:{port if port.isdigit() else OSS_PORTS[provider]}/v1"
        found = _env(env, "CODEX_OSS_BASE_URL") or Found(default, f"Codex's {provider} provider")
        return found, rest, {"wire_api": "responses"}, None
    return None, rest, {"env_key": "OPENAI_API_KEY", "wire_api": "responses"}, str(provider)


def toml_inline(value: Any) -> str:
    """``value`` as a TOML inline value (for a ``-c key=value`` override)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_inline(str(k))} = {toml_inline(v)}" for k, v in value.items()) + "}"
    return toml_inline(str(value))


def is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# --- reachability --------------------------------------------------------------------------------


def same_address(url: str, host: str, port: int) -> bool:
    """``url`` names ``host:port`` (loopback names count as one)."""
    parts = urlsplit(url)
    try:
        url_port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    url_host = parts.hostname or ""
    return url_port == port and (url_host == host or (is_loopback(url_host) and is_loopback(host)))


def probe(url: str, timeout: float = 1.0) -> str | None:
    """None when a TCP connection to ``url``'s host and port opens within ``timeout``, else why not."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except TimeoutError:
        return f"no answer in {timeout:g} s"
    except socket.gaierror as err:
        return f"the name does not resolve ({err.strerror or err})"
    except (OSError, ValueError) as err:
        return (getattr(err, "strerror", None) or str(err)).lower()


# --- the run's options -----------------------------------------------------------------------------


def upstream_options(
    engine: Engine,
    user: UserProvider,
    listen: str,
    openai_upstream: str | None = None,
    anthropic_upstream: str | None = None,
) -> tuple[GatewayOptions, dict[Face, str]]:
    """The gateway's options for the run: a flag's upstream, else the user's own provider, else
    the configuration's; and for each face, where its upstream came from (for messages)."""
    given: dict[Face, str | None] = {"openai": openai_upstream, "anthropic": anthropic_upstream}
    chosen: dict[Face, str | None] = {}
    sources: dict[Face, str] = {}
    default = type(engine.config.gateway)()
    for face in FACES:
        found = user.get(face)
        flag = given[face]
        if flag:
            chosen[face], sources[face] = flag, FLAGS[face]
        elif found is not None:
            if not is_http_url(found.url):
                raise UserError(
                    f"{found.source} {found.url!r} (your {FACE_NAMES[face]} provider): expected an http:// or "
                    f"https:// URL; or give {FLAGS[face]} URL"
                )
            chosen[face], sources[face] = found.url, found.source
        else:
            configured = getattr(engine.config.gateway, f"{face}_upstream") != getattr(default, f"{face}_upstream")
            chosen[face], sources[face] = None, "ctx.toml [gateway]" if configured else DEFAULT_SOURCE
    options = resolve(
        engine.config.gateway,
        listen=listen,
        openai_upstream=chosen["openai"],
        anthropic_upstream=chosen["anthropic"],
        workspace=engine.file_config.gateway,
    )
    return options, sources


def probed_faces(assistant: str, sources: Mapping[Face, str]) -> tuple[Face, ...]:
    """The faces whose upstream is worth a connect before the run: the one the assistant calls,
    and any whose upstream someone named (a flag, the user's settings, the configuration)."""
    main = MAIN_FACE.get(assistant)
    return tuple(f for f in FACES if f == main or sources[f] != DEFAULT_SOURCE)


class Probes:
    """Connects to the upstreams on threads of their own, while the gateway starts."""

    def __init__(self, urls: Mapping[Face, str], timeout: float = PROBE_SECONDS) -> None:
        self.results: dict[Face, str | None] = {}
        self.deadline = time.monotonic() + timeout + 0.2
        self.threads = [
            threading.Thread(target=self._one, args=(face, url, timeout), daemon=True, name="ctx-probe")
            for face, url in urls.items()
        ]
        for t in self.threads:
            t.start()

    def _one(self, face: Face, url: str, timeout: float) -> None:
        self.results[face] = probe(url, timeout)

    def failures(self) -> dict[Face, str]:
        """Why each upstream could not be reached (one not answered by the deadline is not said)."""
        for t in self.threads:
            t.join(max(0.0, self.deadline - time.monotonic()))
        return {face: why for face, why in dict(self.results).items() if why is not None}


def unreachable_line(face: Face, url: str, source: str, why: str) -> str:
    env = "OPENAI_BASE_URL" if face == "openai" else "ANTHROPIC_BASE_URL"
    return (
        f"ctx-lsp: the {FACE_NAMES[face]} upstream {url} (from {source}) cannot be reached: {why}; "
        f"its requests will fail — give another with {FLAGS[face]} URL or {env}"
    )
