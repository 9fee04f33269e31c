"""Content-derived ids: an item's id changes exactly when what it shows changes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any


def content_id(*parts: str) -> str:
    """16 hex digits of SHA-256 over the parts (separated, so ("ab", "c") ≠ ("a", "bc"))."""
    return content_digest(parts).hexdigest()[:16]


def content_digest(parts: Iterable[str], after: Any = None) -> Any:
    """``content_id``'s running SHA-256 over ``parts``, going on from a copy of ``after`` (a digest
    this made): the id of a long list whose head is shared is paid for once."""
    h = hashlib.sha256() if after is None else after.copy()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h


def short_hash(text: str) -> str:
    """12 hex digits: enough to tell versions of one symbol's text apart inside an id."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
