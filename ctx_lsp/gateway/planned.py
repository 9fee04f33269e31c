"""A request as the gateway sends it upstream, and what the editor is shown of it. Apart from
the gateway's HTTP side (``proxy``), so a language server that runs no gateway never loads
aiohttp (10 MB of a server's resident memory on sympy)."""

from __future__ import annotations

from dataclasses import dataclass

from ctx_lsp.gateway.apis import Parsed
from ctx_lsp.sessions.exchanges import ExchangePlan


@dataclass(slots=True)
class Sent:
    """The last body a conversation sent upstream, as sent: the editor's preview reads it."""

    api: str
    model: str
    body: bytes
    plan_id: str | None
    time: float


@dataclass(slots=True)
class Planned:
    """A request as it goes upstream, with what is needed to read its reply back."""

    body: bytes
    api: str = ""
    client_body: bytes = b""  # the request as the client sent it
    parsed: Parsed | None = None
    session: str | None = None
    plan: ExchangePlan | None = None
    strip_usage: bool = False  # we asked for a usage chunk the client did not: it is not relayed
    note: str | None = None  # why the client's body went as it was
    sent: float | None = None  # when it went upstream (epoch seconds): the provider's cache is read then
