"""Content-derived ids: an item's id changes exactly when what it shows changes."""

from __future__ import annotations

import hashlib


def content_id(*parts: str) -> str:
    """16 hex digits of SHA-256 over the parts (separated, so ("ab", "c") ≠ ("a", "bc"))."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def short_hash(text: str) -> str:
    """12 hex digits: enough to tell versions of one symbol's text apart inside an id."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
