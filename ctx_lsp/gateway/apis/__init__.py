"""One module per provider API the gateway speaks. Each turns a request body into ``Parsed`` (the
engine's messages for each conversation item, the client's own system prompt as text) and puts
a placement back into the body, changing only the values it must (``gateway.body``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from ctx_lsp.core.items import Message
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS
from ctx_lsp.gateway.body import Raw
from ctx_lsp.gateway.replies import Reader


@dataclass(slots=True)
class Parsed:
    fields: dict[str, Raw]  # the body's top level, each value as sent
    model: str
    stream: bool
    max_output: int | None
    system: str  # the client's system prompt, as text (counted, never changed)
    items: list[Raw]  # the conversation items, as sent
    messages: list[list[Message]]  # the engine's messages of each item (an item may have none)
    tools: str = ""  # the client's tool definitions as sent (counted, never changed)
    head: list[Raw] = field(default_factory=list)  # leading system items of ``items``' array, kept as sent
    client_session: str | None = None  # an id the client sends for its conversation
    opaque: str | None = None  # why this body is forwarded as it is (e.g. history kept by the provider)
    media_tokens: int = 0  # its images and documents as the provider counts them (``core.media``)
    cache_ttl: int = CACHE_TTL_SECONDS  # the prompt-cache lifetime its breakpoints ask for


def with_media(messages: list[Message], tokens: int) -> list[Message]:
    """An item's messages with its images and documents (``tokens``, the provider's count) on
    its last one: the plan counts them with the message, so the window check sees them."""
    if tokens <= 0 or not messages:
        return messages
    return [*messages[:-1], msgspec.structs.replace(messages[-1], media_tokens=tokens)]


# The provider's own context management, asked for in the body: Anthropic's context editing
# (``clear_tool_uses_…``) and server-side compaction (``compact_…``), OpenAI's Responses
# ``context_management`` compaction. A conversation the client asked the provider to compact is
# never compacted a second time by us: the body goes as sent. Clearing old thinking blocks only
# (Claude Code's ``clear_thinking_…``) leaves the conversation to us.
PROVIDER_COMPACTS = ("clear_tool_uses", "compact")


def provider_compaction(value: object) -> str | None:
    """Why a body goes as sent because its ``context_management`` asks the provider to compact
    or clear the conversation (None: it does not)."""
    entries = value.get("edits") if isinstance(value, dict) else value
    kinds = [str(e.get("type", "")) for e in entries or [] if isinstance(e, dict)] if isinstance(entries, list) else []
    asked = [k for k in kinds if k.startswith(PROVIDER_COMPACTS)]
    if not asked:
        return None
    asked_for = ", ".join(asked)
    return f"the client asked the provider to manage its context ({asked_for}): forwarded as sent, not compacted twice"


class Api(Protocol):
    name: str  # "anthropic", "chat", "responses"

    def parse(self, fields: dict[str, Raw]) -> Parsed: ...

    def mask(self, item: Raw, stubs: dict[int, str]) -> Raw:
        """The item with its n-th engine message's text replaced by ``stubs[n]``."""
        ...

    def prepend(self, item: Raw, text: str) -> list[Raw]:
        """The (user) item with ``text`` ahead of its own: in it, or as a message of its own."""
        ...

    def assemble(self, parsed: Parsed, items: list[Raw], stable: str) -> dict[str, Raw]:
        """The top level with ``items`` as the conversation and ``stable`` after the system prompt."""
        ...

    def error(self, status: int, message: str) -> bytes: ...

    def reader(self, stream: bool) -> Reader: ...
