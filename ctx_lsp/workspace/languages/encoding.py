"""How the bytes of a tree-sitter language's file become text (Python has its own rules, PEP 263:
``parse.decode_source``).

UTF-8 first, always. Where that language's compilers take other encodings too, so do we: a
UTF-16 file with its byte order mark (MSVC, javac and tsc read them), and an 8-bit legacy file —
a C header with a Latin-1 "é" in a comment — as Windows-1252 (Latin-1 where 1252 leaves a byte
undefined). Rust and Go sources are UTF-8 by their specifications; a file that is not would not
compile, and is skipped as ``not_utf8``.
"""

from __future__ import annotations

# Languages whose toolchains accept source in other encodings than UTF-8.
OTHER_ENCODINGS = frozenset({"c", "cpp", "java", "javascript", "typescript", "tsx"})
# An 8-bit text has a few non-ASCII bytes (accents in comments and strings); past this share the
# bytes are data, not a legacy encoding's text.
MAX_HIGH_SHARE = 0.3
_ASCII = bytes(range(128))
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def utf16_marked(lang: str | None, data: bytes) -> bool:
    """Whether ``data`` starts with a UTF-16 byte order mark in a language that reads UTF-16 (its
    NUL bytes are then text, not a sign of a binary file)."""
    return lang in OTHER_ENCODINGS and data.startswith(_UTF16_BOMS)


def decode_code(lang: str | None, data: bytes) -> tuple[str, str] | None:
    """``(text, encoding)`` of a source file's bytes, or None when they are not text in any
    encoding ``lang`` allows."""
    if data.startswith(_UTF8_BOM):
        data = data[3:]
    elif utf16_marked(lang, data):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if lang not in OTHER_ENCODINGS or b"\x00" in data:
        return None
    if len(data.translate(None, _ASCII)) > MAX_HIGH_SHARE * len(data):
        return None
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:  # 0x81, 0x8d, 0x8f, 0x90, 0x9d: undefined in 1252
        return data.decode("latin-1"), "latin-1"
