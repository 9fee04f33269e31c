"""What the request points at in a tool output: its quoted strings, paths, names (whole and in
parts), numbers and words, each with a weight — read once, then matched against lines.

A term that is on many lines of an output points at none of them ("test" in a test log), so a
term counts in one output only when it is rare there (``Request.pointing``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

import msgspec

# A quoted string or a path is what the user copied from somewhere: it names one place.
QUOTED, PATH, NAME, NUMBER, PART, WORD = 5, 4, 4, 2, 1, 1
RARE_SHARE = 0.1  # a term on more than this share of the lines points nowhere
SPECIFIC_SHARE = 3  # a number, path, quote or whole name the user gave may be on three times as many
RARE, UNCOMMON = 3, 2  # a term on at most two lines, or on at most 1% of them, weighs this many times more
MAX_NAMES = 8  # names of a request looked up in the index
PLACED = 2 * NAME  # a line pointing into a named symbol's lines
SAMPLE_LINES = 2000

_QUOTED = re.compile(r"\"([^\"\n]{3,120})\"|(?<!\w)'([^'\n]{3,120})'(?!\w)|`([^`\n]{2,120})`")
_SERIES = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\.(?:x|\*)(?!\w)")  # "8.x": every 8.* version
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
    "memory": ("oomkilled",),
    "licence": ("license",),
    "deps": ("dependencies",),
    "dependency": ("dependencies",),
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
    """A number matches only as a whole number: "500" is not in "id=r1500"; a series ("8.") only
    as the start of a version ("8.57.1", not "18.2")."""
    if text.endswith("."):
        return re.compile(rf"(?<![\w.]){re.escape(text)}(?=\d)")
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
        quoted = next(g for g in m.groups() if g)
        add(quoted, QUOTED)
        if m.group(3) and re.fullmatch(r"[\w.:$]+", quoted):  # `name`: tools quote names too (rustc, ruff, mypy)
            for mark in ("`", '"', "'"):
                found[f"{mark}{quoted.lower()}{mark}"] = QUOTED
    for m in _SERIES.finditer(query):
        found[m.group(1) + "."] = NUMBER
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


class Place(msgspec.Struct, frozen=True):
    """Where a name the request gives is defined in the workspace (the index knows): a line of
    an output that points into it (``holonomic.py:2018`` inside ``change_ics``) is about it."""

    path: str  # relative to the workspace, "/"-separated
    start: int  # first and last line, 1-based
    end: int


class Request:
    """A request's terms, narrowed to those that point somewhere in one output, and the places
    of the names it gives."""

    def __init__(self, query: str, places: tuple[Place, ...] = ()) -> None:
        self.terms = read(query)
        self.places = places

    def names(self) -> list[str]:
        """The names the request gives (``HolonomicFunction.change_ics``, ``parse_version``), for the
        index to place: whole names first, at most MAX_NAMES."""
        whole = [t.text for t in self.terms if t.weight >= NAME and re.fullmatch(r"[\w.:$]+", t.text)]
        return sorted(whole, key=lambda t: (-len(re.findall(r"[.:]+", t)), t))[:MAX_NAMES]

    def pointing(self, lines: list[str]) -> tuple[Term, ...]:
        """The terms on few lines of ``lines``, each weighed up by how rare it is there: a term
        on one or two lines points at them more than one on a hundred."""
        if not self.terms or not lines:
            return ()
        step = max(1, len(lines) // SAMPLE_LINES)  # a sample is enough to tell a common term
        sample = lines[::step]
        low = "\n".join(sample).lower()
        starts = line_starts(sample)
        limit = max(1, int(len(sample) * RARE_SHARE))
        out = []
        for t in self.terms:
            found = len(lines_holding(low, starts, t))
            specific = t.weight >= NUMBER and re.search(r"[\d_.:/\\ `'\"\-]", t.text) is not None
            if found <= (limit * SPECIFIC_SHARE if specific else limit):
                rarity = RARE if found <= 2 else UNCOMMON if found <= len(sample) // 100 else 1
                out.append(Term(t.text, t.weight * rarity))
        return tuple(out)


def line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return starts


def lines_holding(low: str, starts: list[int], term: Term) -> set[int]:
    """The numbers of the lines of ``low`` (lower-cased lines joined by newlines) that hold a
    term: one scan of the text per term, not one test per line."""
    out: set[int] = set()
    if term.text[:1].isdigit():
        for m in _whole(term.text).finditer(low):
            out.add(bisect_right(starts, m.start()) - 1)
        return out
    at = low.find(term.text)
    while at >= 0:
        n = bisect_right(starts, at) - 1
        out.add(n)
        at = low.find(term.text, starts[n + 1])  # the next line: a line counts once
    return out


def line_scores(lines: list[str], terms: tuple[Term, ...], places: tuple[Place, ...] = ()) -> list[int]:
    """``score`` of every line, found term by term over the whole text, and PLACED for a line
    that names a file and line inside one of ``places``."""
    out = [0] * len(lines)
    if not terms and not places:
        return out
    low = "\n".join(lines).lower()
    starts = line_starts(lines)
    for t in terms:
        for n in lines_holding(low, starts, t):
            out[n] += t.weight
    if places:
        for n, located in _locations(low, starts):
            if any(inside_place(p, located) for p in places):
                out[n] += PLACED
    numbers = [t for t in terms if t.text[:1].isdigit() and not t.text.endswith(".")]
    if numbers:
        for n in {bisect_right(starts, m.start()) - 1 for m in _CONSTRAINT.finditer(low)}:
            line = low[starts[n] : starts[n + 1] - 1]
            out[n] += sum(2 * t.weight for t in numbers if not _whole(t.text).search(line) and rules_out(line, t.text))
    return out


def score(line_lower: str, terms: tuple[Term, ...]) -> int:
    """The weight of the terms a (lower-cased) line holds, and of a version the request names
    that a constraint on the line rules out ("Python 3.9" against ``"requires_python": ">=3.10"``)."""
    total = 0
    constrained = "<" in line_lower or ">" in line_lower or "^" in line_lower or "~" in line_lower
    for t in terms:
        if t.text in line_lower and (not t.text[:1].isdigit() or _whole(t.text).search(line_lower)):
            total += t.weight
        elif constrained and t.text[:1].isdigit() and not t.text.endswith(".") and rules_out(line_lower, t.text):
            total += t.weight * 2
    return total


# A file and a line as tools print them: ``a/b.py:12``, ``a/b.ts(12,5)``, ``File "a/b.py", line 12``.
_LOCATION = re.compile(r'([\w@.+/\\-]*\w\.\w{1,5})(?::|\(|", line )(\d+)')


def _locations(low: str, starts: list[int]) -> list[tuple[int, tuple[str, int]]]:
    return [(bisect_right(starts, m.start()) - 1, (m.group(1), int(m.group(2)))) for m in _LOCATION.finditer(low)]


def inside_place(place: Place, located: tuple[str, int]) -> bool:
    """An output's ``path:line`` is in the place: the same file (the output's path may be
    absolute, relative to another folder, or a bare file name as in a Java frame) and a line
    within its range."""
    path, line = located
    path = path.replace("\\", "/").lstrip("./")
    own = place.path.lower()
    same = own == path or own.endswith("/" + path) or path.endswith("/" + own)
    return same and place.start <= line <= place.end


_CONSTRAINT = re.compile(r"(>=|<=|>|<|==|~=|\^|~)\s*v?(\d+(?:\.\d+)*)")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def rules_out(line: str, version: str) -> bool:
    """The line states a version range (``>=3.10``, ``^20.19.0 || >=24``, ``>=3.8,<4``) that
    ``version`` is outside of: every ``||`` alternative has a bound it breaks."""
    want = _version(version)
    alternatives = [a for a in line.split("||") if _CONSTRAINT.search(a)]
    if not alternatives or not want:
        return False
    return all(any(not _meets(want, op, _version(v)) for op, v in _CONSTRAINT.findall(a)) for a in alternatives)


def _meets(want: tuple[int, ...], op: str, bound: tuple[int, ...]) -> bool:
    n = max(len(want), len(bound))
    w, b = want + (0,) * (n - len(want)), bound + (0,) * (n - len(bound))
    if op == ">=":
        return w >= b
    if op == ">":
        return w > b
    if op == "<=":
        return w <= b
    if op == "<":
        return w < b
    if op == "==":
        return w[: len(bound)] == bound
    upper = (bound[0] + 1,) if op in ("^", "~=") or len(bound) < 2 else (bound[0], bound[1] + 1)
    return b <= w < upper + (0,) * (n - len(upper))
