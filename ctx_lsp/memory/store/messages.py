"""A stored message as the store reads it back: with its text (``StoredMessage``) or without it
(``MessageMeta``, what planning reads for every message of a path). Kept apart from
``conversation`` (which writes and reads them) so that ``paths`` can name them without an
import circle."""

from __future__ import annotations

import msgspec

from ctx_lsp.core.items import Message, ToolCall


class MessageRow(msgspec.Struct, kw_only=True, rename="camel"):
    """What every read of a stored message has, its text aside."""

    id: str
    parent: str | None
    role: str
    tool_calls: list[dict[str, str]] | None
    tool_call_id: str | None
    name: str | None
    turn: int
    archived_by: int | None  # the compaction that archived it
    seq: int
    bytes: int | None = None  # UTF-8 size of the whole content; None until counted (stores of earlier versions)


class StoredMessage(MessageRow, kw_only=True):
    content: str  # whole, or (``turn_messages``) a large text's head with a line saying so

    def to_message(self) -> Message:
        return _message(self, self.content)


class MessageMeta(MessageRow, kw_only=True):
    """A stored message without its text: what planning reads for every message of a path."""

    tokens: int | None  # raw token count of the content in ``tokens_encoding``
    tokens_encoding: str | None  # BOUND_ENCODING: ``tokens`` is the UTF-8 size, an upper bound

    def to_message(self, content: str = "") -> Message:
        return _message(self, content)


def meta_of(m: StoredMessage, count: tuple[int | None, str | None]) -> MessageMeta:
    """What ``path_meta`` reads back for a message just appended."""
    return MessageMeta(
        id=m.id,
        parent=m.parent,
        role=m.role,
        tool_calls=m.tool_calls,
        tool_call_id=m.tool_call_id,
        name=m.name,
        turn=m.turn,
        archived_by=m.archived_by,
        seq=m.seq,
        bytes=m.bytes,
        tokens=count[0],
        tokens_encoding=count[1],
    )


def _message(m: MessageRow, content: str) -> Message:
    return Message(
        id=m.id,
        role=m.role,  # type: ignore[arg-type]
        content=content,
        tool_calls=tuple(ToolCall(**c) for c in m.tool_calls or []),
        tool_call_id=m.tool_call_id,
        name=m.name,
    )
