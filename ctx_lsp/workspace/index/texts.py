"""How a symbol's big texts are stored: its card, docstring and body, compressed together.

Why together: a card is its symbol's first lines and the docstring is written in the body, so
in one deflate stream the card and the docstring cost almost nothing on top of the body (on
sympy, card + docstring + body of the symbols above the threshold: 31 MB raw, 9 MB packed).
Why only big ones: deflate gains little on a few hundred characters, and every read of a packed
row pays the inflate (≈3 µs per KB): a plan reads a few hundred rows, most of them small.
Why level 1: it packs within 5% of level 6 in a third of the time, and inflating costs the
same whatever the level.
"""

from __future__ import annotations

import zlib

PACK_MIN_CHARS = 1000  # card + docstring + body at least this long (characters) are packed
_LEVEL = 1


def pack(card: str, docstring: str, body: str) -> bytes | None:
    """The three texts as one compressed value, or None when they are short enough to be kept
    as they are. A docstring may hold any character (``"\\x00"`` written as an escape), so the
    parts are told apart by their lengths, written first."""
    if len(card) + len(docstring) + len(body) < PACK_MIN_CHARS:
        return None
    text = f"{len(card)} {len(docstring)}\n{card}{docstring}{body}"
    # surrogatepass: a docstring's escapes can make a lone surrogate, which UTF-8 refuses
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)


def unpack(packed: bytes) -> tuple[str, str, str]:
    """``(card, docstring, body)`` of a value made by ``pack``."""
    text = zlib.decompress(packed).decode("utf-8", "surrogatepass")
    head, _, rest = text.partition("\n")
    card_len, doc_len = map(int, head.split())
    doc_end = card_len + doc_len
    return rest[:card_len], rest[card_len:doc_end], rest[doc_end:]
