"""Texts stored once by content hash in the `bodies` table.

Tool results with whole files and logs make message texts large: a text of ``BODY_MIN_BYTES``
or more is kept in `bodies` and the message row (or a plan's stored inputs) names it by hash.
A row stays small (planning reads the rows of a path, not their texts), the same text sent twice
or kept in many plans' inputs is stored once, and the first ``HEAD_CHARS`` characters of a body
can be read without the rest.

The texts of plans' retrieval candidates (symbol cards and bodies, whatever their size) are kept
the same way, in `texts` (the new texts of a plan compressed together in one of `text_packs`):
consecutive plans offer mostly the same symbols, so each text is stored once and a plan's inputs
name it (``TextKeys`` remembers which texts are stored, so a
re-plan hashes and writes nothing it already did).
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib

BODY_MIN_BYTES = 16 * 1024  # message texts at least this large live in `bodies`, once
HEAD_CHARS = 16_000  # the prefix of a body that summaries, history chunks and reflection read


def body_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def large(text: str) -> bytes | None:
    """The UTF-8 bytes of ``text`` when it is large enough for `bodies`, else None."""
    if len(text) * 4 < BODY_MIN_BYTES:  # at most 4 bytes per character: no need to encode
        return None
    data = text.encode("utf-8", "surrogatepass")
    return data if len(data) >= BODY_MIN_BYTES else None


def put_body(conn: sqlite3.Connection, text: str) -> tuple[int, str | None]:
    """(UTF-8 size, body hash): a text of ``BODY_MIN_BYTES`` or more is stored in `bodies`, once."""
    data = large(text)
    if data is None:
        return len(text.encode("utf-8", "surrogatepass")), None
    h = body_hash(data)
    if conn.execute("SELECT 1 FROM bodies WHERE hash = ?", (h,)).fetchone() is None:
        head = text[:HEAD_CHARS] if len(text) > HEAD_CHARS else None
        conn.execute("INSERT INTO bodies(hash, bytes, head, text) VALUES (?, ?, ?, ?)", (h, len(data), head, text))
    return len(data), h


def texts(conn: sqlite3.Connection, hashes: list[str]) -> dict[str, str]:
    """The whole texts of some bodies, by hash."""
    out: dict[str, str] = {}
    for i in range(0, len(hashes), 500):  # SQLite limits the parameters of one statement
        chunk = hashes[i : i + 500]
        out.update(conn.execute(f"SELECT hash, text FROM bodies WHERE hash IN ({', '.join('?' * len(chunk))})", chunk))
    return out


class TextKeys:
    """The body hash of texts seen before, and which hashes are stored: plans offer the same
    card and body texts (the same string objects, from the index's memo) plan after plan, and a
    dictionary hit on a string it holds costs no hashing of the text."""

    LIMIT = 50_000  # texts remembered; past it, the memory starts again

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        self.stored: set[str] = set()

    def key(self, text: str) -> str:
        found = self._keys.get(text)
        if found is None:
            if len(self._keys) >= self.LIMIT:
                self._keys.clear()
            found = self._keys[text] = body_hash(text.encode("utf-8", "surrogatepass"))
        return found


def put_texts(conn: sqlite3.Connection, texts: dict[str, str]) -> None:
    """Store candidate texts by their hash (``TextKeys.key``), once: those of one plan in one
    compressed pack (cards and bodies compress 2x on their own, ~4x together, and one call to
    zlib costs less than hundreds)."""
    if not texts:
        return
    data = [t.encode("utf-8", "surrogatepass") for t in texts.values()]
    pack = conn.execute("INSERT INTO text_packs(data) VALUES (?)", (zlib.compress(b"".join(data), 1),)).lastrowid
    rows, start = [], 0
    for h, d in zip(texts, data, strict=True):
        rows.append((h, pack, start, len(d)))
        start += len(d)
    conn.executemany("INSERT OR IGNORE INTO texts(hash, pack, start, size) VALUES (?, ?, ?, ?)", rows)


def candidate_texts(conn: sqlite3.Connection, hashes: list[str]) -> dict[str, str]:
    """Candidate texts by hash, from their packs."""
    where: list[tuple[str, int, int, int]] = []
    for i in range(0, len(hashes), 500):  # SQLite limits the parameters of one statement
        chunk = hashes[i : i + 500]
        where += conn.execute(
            f"SELECT hash, pack, start, size FROM texts WHERE hash IN ({', '.join('?' * len(chunk))})", chunk
        ).fetchall()
    packs: dict[int, bytes] = {}
    for pack in sorted({w[1] for w in where}):
        (data,) = conn.execute("SELECT data FROM text_packs WHERE id = ?", (pack,)).fetchone()
        packs[pack] = zlib.decompress(data)
    return {h: packs[p][start : start + size].decode("utf-8", "surrogatepass") for h, p, start, size in where}


def cut(mid: str, text: str, size: int | None) -> str:
    """A body's head, with a line saying how large the whole text is."""
    return f"{text}\n[… cut: the whole text is {size or 0:,} bytes, kept in the session as message {mid}]"


def move_large_texts(conn: sqlite3.Connection) -> None:
    """A store of an earlier version kept every text in its message row: move the large ones to
    `bodies` (once, when the column is added). Sizes and counts are filled in when first needed."""
    rows = conn.execute("SELECT seq FROM messages WHERE length(content) * 4 >= ?", (BODY_MIN_BYTES,)).fetchall()
    for (seq,) in rows:
        (text,) = conn.execute("SELECT content FROM messages WHERE seq = ?", (seq,)).fetchone()
        size, body = put_body(conn, text)
        if body is not None:
            conn.execute("UPDATE messages SET content = '', body = ?, bytes = ? WHERE seq = ?", (body, size, seq))
