"""What the request points at in a tool output: its quoted strings, paths, names (whole and in
parts), numbers and words, each with a weight — read once, then matched against lines.

A term that is on many lines of an output points at none of them ("test" in a test log), so a
term counts in one output only when it is rare there (``Request.pointing``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import msgspec

# A quoted string or a path is what the user copied from somewhere: it names one place.
QUOTED, PATH, NAME, NUMBER, PART, WORD = 5, 4, 4, 2, 1, 1
RARE_SHARE = 0.1  # a term on more than this share of the lines points nowhere
SAMPLE_LINES = 2000

_QUOTED = re.compile(r"\"([^\"\n]{3,120})\"|'([^'\n]{3,120})'|`([^`\n]{2,120})`")
_TOKEN = re.compile(r"[A-Za-z_$@][\w$@.:/\\-]*[\w$]|\d+(?:\.\d+)+|\d{2,}")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SUFFIXES = ("ing", "ed", "es", "s")

STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        """the and for with that this from what why how does did not are was were where when which who
    will would can could should fix fails fail failing failed error errors there their them then
    than have has had into out about your you our its it's all any some one two get got use used
    using make made see show tell me my mine is be been being it in on of to as at by or if so do
    an a i we us please look find check run ran running again now just still after before change
    changed changes work works working broken broke break happen happened happens know want need
    output result results line lines file files code value values test tests here only also same
    thing things way give gives given say says said other each else like new old""",
    )
)

# Words a user says for what a tool prints under another name (npm's engines for "Node.js
# versions", pip's Requires-Python, Kubernetes' restart counts and waiting reasons).
ALIASES: dict[str, tuple[str, ...]] = {
    "node": ("engines",),
    "node.js": ("engines", "node"),
    "nodejs": ("engines", "node"),
    "python": ("requires_python", "requires-python", "python_requires"),
    "restart": ("restartcount", "crashloopbackoff", "backoff"),
    "restarting": ("restartcount", "crashloopbackoff", "backoff"),
    "crash": ("crashloopbackoff", "panic", "fatal", "oomkilled"),
    "crashing": ("crashloopbackoff", "panic", "fatal", "oomkilled"),
    "memory": ("oomkilled", "memory"),
    "licence": ("license",),
    "license": ("license",),
    "deps": ("dependencies",),
    "dependency": ("dependencies",),
    "author": ("author",),
    "slow": ("timeout", "timed out", "duration", "elapsed"),
    "timeout": ("timeout", "timed out", "deadline"),
    "panic": ("panicked",),
    "defined": ("def ", "class ", "fn ", "func ", "function ", "struct ", "interface "),
}


class Term(msgspec.Struct, frozen=True):
    text: str  # lower case; matched as a substring of a lower-cased line
    weight: int


@lru_cache(maxsize=256)
def _whole(text: str) -> re.Pattern[str]:
    """A number matches only as a whole number: "500" is not in "id=r1500"."""
    return re.compile(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def read(query: str) -> tuple[Term, ...]:
    """The terms of a request, strongest weight kept when two forms give one text."""
    found: dict[str, int] = {}

    def add(text: str, weight: int) -> None:
        text = text.lower().strip(".,:;()[]{}")
        if len(text) >= 3 and text not in STOPWORDS and found.get(text, 0) < weight:
            found[text] = weight

    for m in _QUOTED.finditer(query):
        add(next(g for g in m.groups() if g), QUOTED)
    for token in _TOKEN.findall(query):
        low = token.lower().rstrip(".:")
        if token[0].isdigit():
            add(token, NUMBER)
        elif "/" in token or "\\" in token or (re.search(r"\.[a-z]{1,5}$", low) and not low.endswith(".js")):
            add(token, PATH)
            add(re.split(r"[/\\]", token)[-1], PATH)
        elif re.search(r"[_:.$]|[a-z][A-Z]|^[A-Z]{2,}$", token):
            add(token, NAME)
            dotted = [p for p in re.split(r"[.:$]+", token) if p]
            for n, part in enumerate(dotted):  # the last part is what is called: ``semver.coerce``
                whole = n == len(dotted) - 1 or "_" in part or re.search(r"[a-z][A-Z]", part)
                add(part, NAME if whole else PART)
            for part in _PARTS.findall(token):
                add(part, PART)
        elif low not in STOPWORDS:
            add(_stem(low), WORD)
        for alias in ALIASES.get(low, ()):
            add(alias, WORD)
    return tuple(Term(t, w) for t, w in sorted(found.items()))


class Request:
    """A request's terms, narrowed to those that point somewhere in one output."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.terms = read(query)

    def pointing(self, lines: list[str]) -> tuple[Term, ...]:
        if not self.terms or not lines:
            return ()
        step = max(1, len(lines) // SAMPLE_LINES)  # a sample is enough to tell a common term
        sample = [line.lower() for line in lines[::step]]
        limit = max(1, int(len(sample) * RARE_SHARE))
        return tuple(t for t in self.terms if sum(1 for line in sample if t.text in line) <= limit)


def score(line_lower: str, terms: tuple[Term, ...]) -> int:
    """The weight of the terms a (lower-cased) line holds."""
    total = 0
    for t in terms:
        if t.text in line_lower and (not t.text[:1].isdigit() or _whole(t.text).search(line_lower)):
            total += t.weight
    return total
