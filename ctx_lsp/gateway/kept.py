"""What the gateway remembers between requests, bounded in entries, bytes and age.

Assistants resend the whole conversation with every request, so the gateway keeps what it read
of each message before: by a digest of its bytes (``Kept``), and, per conversation, the latest
request's items themselves, to compare the next one's with in place (``Resent``: hashing every
message of a 3 MB history again cost more than the rest of reading it). The least recently used
go first, once there are too many, they weigh too much, or they were not used for ``max_age``
seconds: a long session with large images plateaus."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def digest(data: bytes | memoryview) -> bytes:
    """A key for ``data``: 32 bytes however large it is (SHA-256: no collision a client could make)."""
    return hashlib.sha256(data).digest()


class Kept(Generic[V]):
    def __init__(
        self, entries: int, max_bytes: int, max_age: float, weight: Callable[[V], int], clock=time.monotonic
    ) -> None:
        self.entries, self.max_bytes, self.max_age = entries, max_bytes, max_age
        self._weight = weight
        self._clock = clock
        self._items: OrderedDict[bytes, tuple[V, int, float]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list[V]:
        return [value for value, _, _ in self._items.values()]

    def get(self, key: bytes) -> V | None:
        found = self._items.get(key)
        if found is None:
            return None
        value, size, _ = found
        self._items[key] = (value, size, self._clock())
        self._items.move_to_end(key)
        return value

    def put(self, key: bytes, value: V) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        size = self._weight(value) + len(key)
        now = self._clock()
        self._items[key] = (value, size, now)
        self.bytes += size
        items, oldest = self._items, now - self.max_age
        while items and (
            len(items) > self.entries or self.bytes > self.max_bytes or next(iter(items.values()))[2] < oldest
        ):
            _, (_, gone, _) = items.popitem(last=False)
            self.bytes -= gone


def trim(kept: dict[str, V], entries: int, max_bytes: int, weight: Callable[[V], int]) -> None:
    """Drop the oldest of ``kept`` (insertion order) until at most ``entries`` weigh at most
    ``max_bytes`` together; the newest stays whatever it weighs (it is in use)."""
    total = sum(weight(v) for v in kept.values())
    while len(kept) > 1 and (len(kept) > entries or total > max_bytes):
        total -= weight(kept.pop(next(iter(kept))))


RESENT_CONVERSATIONS = 64
RESENT_BYTES = 64 * 1024 * 1024
RESENT_AGE = 3600.0
# conversations kept per first item: an assistant's sub-agents, or two sessions of it in one
# folder, open with the same system prompt or instructions and differ only further on
RESENT_PER_START = 8

Previous = tuple[list[Any], list[V]]  # a request's items, and what was made of each


class Resent(Generic[V]):
    """Per conversation, the latest request's items and what was made of each. A request that
    resends them (and appends) gets theirs back, each compared in place with the item at its
    place before; from the first that differs (an edit, a rewind), each is made again.
    Conversations are found by a digest of their first item; of those that share it (up to
    RESENT_PER_START), the one the request repeats furthest is its own."""

    def __init__(
        self, entries: int = RESENT_CONVERSATIONS, max_bytes: int = RESENT_BYTES, max_age: float = RESENT_AGE
    ) -> None:
        self._kept: Kept[list[Previous[V]]] = Kept(entries, max_bytes, max_age, _requests_weight)

    def __len__(self) -> int:
        return sum(len(v) for v in self._kept.values())  # conversations kept

    def made(self, items: list[Any], make: Callable[[int, Any], V]) -> list[V]:
        """``make(n, item)`` of each of ``items`` (raw JSON values), or what it made of the same
        bytes at the same place in the conversation's previous request."""
        if not items:
            return []
        first = digest(memoryview(items[0]))
        kept = self._kept.get(first) or []
        best, shared = None, 0
        for k, (before, _) in enumerate(kept):
            n = _repeated(items, before)
            if n > shared:
                best, shared = k, n
        out: list[V] = kept[best][1][:shared] if best is not None else []
        out += [make(n, items[n]) for n in range(shared, len(items))]
        # a request that repeats most of one goes on from it, in its place (Claude Code moves its
        # cache marker off the last message every turn: a request never repeats all of the one
        # before); one that parts from it early (another agent with the same opening, a rewind far
        # back) is kept beside it
        goes_on = best is not None and 2 * shared >= len(kept[best][0])
        others = [p for k, p in enumerate(kept) if not (goes_on and k == best)]
        self._kept.put(first, [(items, out), *others[: RESENT_PER_START - 1]])
        return out


def _repeated(items: list[Any], before: list[Any]) -> int:
    """How many of ``items`` repeat ``before``'s, from the first on."""
    n = 0
    for a, b in zip(items, before, strict=False):
        if a != b:
            break
        n += 1
    return n


def _requests_weight(kept: list[Previous[Any]]) -> int:
    # an item, and what was made of it: about as much again (its text decoded, its canonical bytes)
    return sum(2 * len(item) + 64 for items, _ in kept for item in items)
