"""Where the gateway listens and where it forwards: the `[gateway]` table of the workspace
configuration, with the command line's options over it."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from ctx_lsp.config import GatewayConfig
from ctx_lsp.core.items import Mode
from ctx_lsp.engine import UserError

DEFAULT_LISTEN = "127.0.0.1:8787"


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    host: str
    port: int
    openai_upstream: str  # as OPENAI_BASE_URL takes it: …/v1
    anthropic_upstream: str  # as ANTHROPIC_BASE_URL takes it: no /v1
    mode: Mode | None = None  # None: the session's, else the workspace's
    token: str | None = None
    json_log: bool = False
    # the upstreams the gateway's client calls (wrap: its assistant's), for what is said about them
    faces: tuple[str, ...] = ("openai", "anthropic")

    @property
    def url(self) -> str:
        return url_of(self.host, self.port)

    def upstream(self, face: str) -> str:
        return self.openai_upstream if face == "openai" else self.anthropic_upstream

    def upstreams(self) -> str:
        """The upstreams of :attr:`faces`, for a message: ``URL`` or ``URL or URL``."""
        return " or ".join(dict.fromkeys(self.upstream(f) for f in self.faces))


def address_of(host: str, port: int) -> str:
    """``host:port`` as a client writes it: an IPv6 address in brackets (``[::1]:8788``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def url_of(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets (``http://[::1]:8788``)."""
    return f"http://{address_of(host, port)}"


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"listen address {text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]") or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _upstream(url: str, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError(f"{what} {url!r}: expected an http:// or https:// URL")
    return url.rstrip("/")


KNOWN_HOSTS = frozenset(
    {
        "api.openai.com",
        "api.anthropic.com",
        "openrouter.ai",
        "api.together.xyz",
        "api.groq.com",
        "api.mistral.ai",
        "api.deepseek.com",
        "api.fireworks.ai",
        "generativelanguage.googleapis.com",
        "localhost",
    }
)


def _trusted(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in KNOWN_HOSTS or is_loopback(host)


def resolve(
    config: GatewayConfig,
    *,
    listen: str | None = None,
    openai_upstream: str | None = None,
    anthropic_upstream: str | None = None,
    mode: Mode | None = None,
    token: str | None = None,
    json_log: bool = False,
    workspace: GatewayConfig | None = None,
) -> GatewayOptions:
    """The options: the command line's over the configuration's. ``workspace`` is what the
    workspace's own files say: an upstream named only there (a cloned repository decides it)
    must be a known provider or this machine — the user's API keys go wherever it points."""
    host, port = parse_listen(listen or config.listen or DEFAULT_LISTEN)
    for given, configured, from_file, flag in (
        (
            openai_upstream,
            config.openai_upstream,
            workspace.openai_upstream if workspace else None,
            "--openai-upstream",
        ),
        (
            anthropic_upstream,
            config.anthropic_upstream,
            workspace.anthropic_upstream if workspace else None,
            "--anthropic-upstream",
        ),
    ):
        if given is None and from_file is not None and configured == from_file and not _trusted(configured):
            raise UserError(
                f"the workspace's configuration sends your API key to {urlsplit(configured).hostname}, which is not a "
                f"known provider: give it yourself ({flag} {configured}, or in your editor's settings) to confirm"
            )
    token = token or config.token
    if not is_loopback(host) and not token:
        raise UserError(
            f"the gateway would listen on {host}, which is not a loopback address: give a --token that "
            "clients must send as the X-Ctx-Token header (or listen on 127.0.0.1)"
        )
    return GatewayOptions(
        host=host,
        port=port,
        openai_upstream=_upstream(openai_upstream or config.openai_upstream, "the OpenAI upstream"),
        anthropic_upstream=_upstream(anthropic_upstream or config.anthropic_upstream, "the Anthropic upstream"),
        mode=mode or config.mode,
        token=token,
        json_log=json_log,
    )
