"""Code already in the conversation: a file the user added to the chat (aider's file listings), a
read tool's result (Claude Code's ``Read``, numbered lines), a shell command that printed a file
(``cat``, ``sed -n``, ``nl``), code the model wrote out. A retrieved symbol whose lines are all
there already would only repeat them: retrieval leaves it out (reason ``in_conversation``).

The test is by content, whichever assistant put it there and however it names the file: the
symbol's own code lines (its header and blank or very short lines aside) are looked up among
the conversation's lines, each stripped of indentation and of a line-number prefix. An older
copy of a file that has changed since does not match, and the new code is offered as usual.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ctx_lsp.core.items import SYMBOL_BODY, Item, Message

MIN_LINE_CHARS = 6  # shorter lines (``}``, ``else:``, ``pass``) are everywhere: they prove nothing
MIN_LINES = 2  # a symbol is found in the conversation by at least this many of its lines
# … all but this share of them, and at least one (a card's docstring is its first paragraph
# joined into one line; a line may have been edited since)
MISSING_SHARE = 0.1
# "12\t", "   12→", "12: " and "12 | " ahead of a line: read tools, ``cat -n``, ``nl``, ``grep -n``
LINE_NUMBER = re.compile(r"^\s*\d+(?:\t|→|: |:\t| \| )")

Lines = frozenset[str]


def present_lines(messages: Iterable[Message]) -> Lines:
    """The conversation's lines that could be code, as ``in_conversation`` compares them."""
    found: set[str] = set()
    for m in messages:
        if m.role == "system" or not m.content:
            continue
        for line in m.content.splitlines():
            bare = line.strip()
            if len(bare) >= MIN_LINE_CHARS:
                found.add(bare)
                if bare[0].isdigit():  # maybe numbered: the line without its number too
                    found.add(LINE_NUMBER.sub("", bare, count=1).strip())
    return frozenset(found)


def code_lines(item: Item) -> list[str]:
    """An item's code lines as compared: its header (the line naming its path) and short lines left out."""
    lines = item.text.splitlines()
    if lines and item.path and item.path in lines[0]:
        lines = lines[1:]
    return [s for s in (line.strip() for line in lines) if len(s) >= MIN_LINE_CHARS]


def in_conversation(item: Item, present: Lines) -> bool:
    """Whether ``item``'s code is in the conversation already (``present_lines``)."""
    if not present or not item.path:
        return False
    lines = code_lines(item)
    if len(lines) < MIN_LINES:
        return False
    found = sum(1 for line in lines if line in present)
    return found >= MIN_LINES and len(lines) - found <= max(1, int(MISSING_SHARE * len(lines)))


def present_ids(candidates: Sequence[Item], present: Lines) -> tuple[str, ...]:
    """The ids of the candidates whose code is in the conversation already, in order: found
    there (``in_conversation``), or inside a symbol whose whole code is (a method of a class
    read whole, the card of a function read whole)."""
    if not present:
        return ()
    found = [c for c in candidates if in_conversation(c, present)]
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in found:
        if c.kind == SYMBOL_BODY and c.path and c.range is not None:
            spans.setdefault(c.path, []).append((c.range.start.line, c.range.end.line))
    ids = {c.id for c in found}
    ids.update(
        c.id
        for c in candidates
        if c.path in spans
        and c.range is not None
        and any(a <= c.range.start.line and c.range.end.line <= b for a, b in spans[c.path])
    )
    return tuple(dict.fromkeys(c.id for c in candidates if c.id in ids))
