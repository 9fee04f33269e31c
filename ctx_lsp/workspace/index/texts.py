"""How a symbol's big texts are stored: its card, docstring and body, compressed together.

Why together: a card is its symbol's first lines and the docstring is written in the body, so
in one deflate stream the card and the docstring cost almost nothing on top of the body (on
sympy, card + docstring + body of the symbols above the threshold: 31 MB raw, 9 MB packed).
Why only big ones: deflate gains little on a few hundred characters.
Why level 1: it packs within 5% of level 6 in a third of the time, and inflating costs the
same whatever the level.

Reading is the price: a plan reads a few hundred symbols, most of them big, ~1.4 MB of text on
sympy, and inflating that costs 3–6 ms. Unpacked texts are therefore kept in a bounded cache,
keyed by the packed bytes themselves: exact whatever row they came from (a row id can be
reused for other code after a re-index), and hashing the packed bytes costs a tenth of
inflating them. Plans in one session keep meeting the same symbols.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict

PACK_MIN_CHARS = 1000  # card + docstring + body at least this long (characters) are packed
CACHE_CHARS = 8_000_000  # unpacked text kept in memory at most (characters), least recent out first
_LEVEL = 1

Texts = tuple[str, str, str]  # (card, docstring, body)
_cache: OrderedDict[bytes, Texts] = OrderedDict()
_cached_chars = 0
_lock = threading.Lock()  # readers on several threads share the cache


def pack(card: str, docstring: str, body: str) -> bytes | None:
    """The three texts as one compressed value, or None when they are short enough to be kept
    as they are. A docstring may hold any character (``"\\x00"`` written as an escape), so the
    parts are told apart by their lengths, written first."""
    if len(card) + len(docstring) + len(body) < PACK_MIN_CHARS:
        return None
    text = f"{len(card)} {len(docstring)}\n{card}{docstring}{body}"
    # surrogatepass: whatever a str can hold comes back as it was
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)


def unpack(packed: bytes) -> Texts:
    """``(card, docstring, body)`` of a value made by ``pack`` (from the cache when it can)."""
    global _cached_chars
    with _lock:
        found = _cache.get(packed)
        if found is not None:
            _cache.move_to_end(packed)
            return found
    found = _inflate(packed)
    size = sum(map(len, found))
    with _lock:
        if packed not in _cache and size <= CACHE_CHARS:
            _cache[packed] = found
            _cached_chars += size
            while _cached_chars > CACHE_CHARS:
                _, dropped = _cache.popitem(last=False)
                _cached_chars -= sum(map(len, dropped))
    return found


def clear_cache() -> None:
    """Forget every unpacked text (tests, and a benchmark that wants the first read's cost)."""
    global _cached_chars
    with _lock:
        _cache.clear()
        _cached_chars = 0


def _inflate(packed: bytes) -> Texts:
    text = zlib.decompress(packed).decode("utf-8", "surrogatepass")
    head, _, rest = text.partition("\n")
    card_len, doc_len = map(int, head.split())
    doc_end = card_len + doc_len
    return rest[:card_len], rest[card_len:doc_end], rest[doc_end:]
