"""Images and documents counted the providers' way.

Our estimator counts text; a screenshot in a request is text to it (``[image]``, two tokens),
while the provider counts it at up to ~1,600. Without this a request with images looks like an
estimator that under-counts ~100x, and calibration learns that. The sizes come from the image's
own header (PNG, GIF, JPEG, WebP, read from the first bytes of its base64); an image whose size
cannot be read (a URL, another format) is counted at a fixed estimate.

- Anthropic: ``width * height / 750`` tokens, after the image is scaled to fit 1,568 px on its
  long side and 1.15 megapixels — at most ~1,600 tokens an image.
- OpenAI: 85 base + 170 per 512-px tile, after fitting 2,048 px and then 768 px on the short side
  (``detail: "low"``: 85 only).
- Documents (PDF): a fixed estimate per document.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
ANTHROPIC_PIXELS_PER_TOKEN = 750
OPENAI_BASE, OPENAI_TILE = 85, 170
UNKNOWN_IMAGE_TOKENS = 1_600  # an image whose size we cannot read: the largest Anthropic counts
DOCUMENT_TOKENS = 3_000  # a document (PDF): a few pages of text and their page images
HEADER_CHARS = 64 * 1024  # base64 read for the header (a JPEG's size may follow its EXIF block)


def anthropic_image_tokens(width: int, height: int) -> int:
    if width <= 0 or height <= 0:
        return UNKNOWN_IMAGE_TOKENS
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    return max(1, math.ceil(width * scale * height * scale / ANTHROPIC_PIXELS_PER_TOKEN))


def openai_image_tokens(width: int, height: int, detail: str = "auto") -> int:
    if detail == "low":
        return OPENAI_BASE
    if width <= 0 or height <= 0:
        return UNKNOWN_IMAGE_TOKENS
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return OPENAI_BASE + OPENAI_TILE * math.ceil(w / 512) * math.ceil(h / 512)


def image_tokens(provider: str, size: tuple[int, int] | None, detail: str = "auto") -> int:
    """One image as ``provider`` ("anthropic" or "openai") counts it; None: size unknown."""
    if provider == "openai":
        if size:
            return openai_image_tokens(*size, detail)
        return OPENAI_BASE if detail == "low" else UNKNOWN_IMAGE_TOKENS
    return anthropic_image_tokens(*size) if size else UNKNOWN_IMAGE_TOKENS


def base64_size(data: str) -> tuple[int, int] | None:
    """The (width, height) of the image whose base64 ``data`` is (a ``data:`` URL too), or None."""
    if data.startswith("data:"):
        data = data.partition(",")[2]
    head = data[:HEADER_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        return image_size(base64.b64decode(head, validate=False))
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, JPEG or WebP header; None for anything else."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg(data)
    except struct.error:  # a header cut short
        return None
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if kind == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None
