"""JSON bodies edited without re-serialising what is not edited.

A provider request is decoded one level at a time into ``msgspec.Raw`` values: the bytes of each
value exactly as the client sent them. An edit replaces some values and re-joins the rest as they
were, so unknown fields and block types, thinking blocks with their signatures, images and
documents go through byte for byte.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctx_lsp.core import media

Raw = msgspec.Raw
_object = msgspec.json.Decoder(dict[str, Raw])
_array = msgspec.json.Decoder(list[Raw])
_encode = msgspec.json.encode


class BodyError(ValueError):
    """A body that is not the JSON its API expects: answered with a 400 in the API's shape."""


NOT_UTF8 = "the body is not valid UTF-8"
TOO_DEEP = "JSON nested too deep"  # msgspec's limit is ~1,000 levels; no API request comes near it


def obj(raw: bytes | Raw) -> dict[str, Raw]:
    try:
        return _object.decode(raw)
    except msgspec.DecodeError as err:
        raise BodyError(f"expected a JSON object: {err}") from None
    except RecursionError:
        raise BodyError(TOO_DEEP) from None
    except UnicodeDecodeError:  # msgspec checks strings only when it decodes them
        raise BodyError(NOT_UTF8) from None


def arr(raw: bytes | Raw) -> list[Raw]:
    try:
        return _array.decode(raw)
    except msgspec.DecodeError as err:
        raise BodyError(f"expected a JSON array: {err}") from None
    except RecursionError:
        raise BodyError(TOO_DEEP) from None
    except UnicodeDecodeError:  # msgspec checks strings only when it decodes them
        raise BodyError(NOT_UTF8) from None


def value(raw: Raw | None, default: Any = None) -> Any:
    """A (small) raw value decoded to Python."""
    if raw is None:
        return default
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise BodyError(str(err)) from None
    except RecursionError:
        raise BodyError(TOO_DEEP) from None
    except UnicodeDecodeError:  # msgspec checks strings only when it decodes them
        raise BodyError(NOT_UTF8) from None


def utf8(raw: Raw) -> str:
    """A raw value's JSON text as it was sent (e.g. tool definitions, counted as they are)."""
    try:
        return bytes(raw).decode()
    except UnicodeDecodeError:
        raise BodyError(NOT_UTF8) from None


def is_string(raw: Raw | None) -> bool:
    return raw is not None and memoryview(raw)[:1].tobytes() == b'"'


def is_array(raw: Raw | None) -> bool:
    return raw is not None and memoryview(raw)[:1].tobytes() == b"["


def raw(v: Any) -> Raw:
    """A new value, encoded."""
    return Raw(_encode(v))


def join_object(fields: dict[str, Raw]) -> Raw:
    parts = [_encode(k) + b":" + bytes(v) for k, v in fields.items()]
    return Raw(b"{" + b",".join(parts) + b"}")


def join_array(values: list[Raw]) -> Raw:
    return Raw(b"[" + b",".join(bytes(v) for v in values) + b"]")


def text_of(raw: Raw | None) -> str:
    """The text of a content value: a string, or the ``text`` of its blocks / parts."""
    v = value(raw)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "\n".join(part_text(p) for p in v if part_text(p))
    return ""


def part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):
        return part["text"]
    kind = part.get("type")
    if kind in ("image", "image_url", "input_image"):
        return "[image]"
    if kind in ("document", "file", "input_file"):
        return "[document]"
    return ""


def media_tokens(content: Any, provider: str) -> int:
    """The images and documents in a content value (blocks, parts, tool results' own content),
    counted as ``provider`` counts them (``core.media``): our estimator sees only their text."""
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("image", "image_url", "input_image"):
            total += media.image_tokens(provider, _image_size(part), _detail(part))
        elif kind in ("document", "file", "input_file"):
            total += media.DOCUMENT_TOKENS
        else:  # a tool result's, a function output's own blocks
            total += media_tokens(part.get("content"), provider) + media_tokens(part.get("output"), provider)
    return total


def _image_size(part: dict[str, Any]) -> tuple[int, int] | None:
    source = part.get("source")
    url = part.get("image_url")
    if isinstance(source, dict) and isinstance(source.get("data"), str):
        data = source["data"]
    elif isinstance(url, dict) and isinstance(url.get("url"), str):
        data = url["url"]
    elif isinstance(url, str):
        data = url
    else:
        return None
    return media.base64_size(data) if data.startswith("data:") or isinstance(source, dict) else None


def _detail(part: dict[str, Any]) -> str:
    url = part.get("image_url")
    detail = url.get("detail") if isinstance(url, dict) else part.get("detail")
    return detail if isinstance(detail, str) else "auto"


def memoryview_head(raw: Raw) -> bytes:
    """The first byte of a raw value: which JSON type it is."""
    return memoryview(raw)[:1].tobytes()
