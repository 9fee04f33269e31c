"""Reflection: what the model and the user actually used changes what is kept next time.

Pure, deterministic functions (the store persists their results):

- activation scores per item (a symbol's qualified name), updated each turn from named signals
  — included in the last plan, named by the model (its text or tool arguments), named by the
  user — and decaying with turns;
- promotion of often-used cards to leased pins, renewal of leases that keep being used;
- suggestions from the model's ``ctx-suggest`` blocks (never pins by themselves);
- query clusters ("tasks"): cosine similarity over sparse term vectors.

Every number has a name here, and every decision carries its reason.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

import msgspec

from ctx_lsp.workspace.languages import SOURCE_SUFFIXES

DECAY = 0.7  # per turn: an item nobody touches fades to a fifth in ~5 turns
W_INCLUDED = 0.5  # it was in the last plan (a weak signal: we put it there)
W_MODEL = 1.0  # the model named it in its reply or tool arguments (it used it)
W_USER = 1.5  # the user named it (the strongest intent signal)
PROMOTE_AT = 2.5  # activation at which a retrieved card becomes a leased pin...
PROMOTE_MIN_MODEL_MENTIONS = 2  # ...if the model named it in at least this many turns
LEASE_TURNS = 4  # a promoted lease lasts this many turns; each turn of use renews it
ACTIVATION_FLOOR = 0.05  # below this an activation is forgotten
RETRIEVAL_WEIGHT = 0.5  # retrieval score × (1 + weight × activation)
CLUSTER_SIMILARITY = 0.2  # a query joins the current cluster at this cosine or more
TASK_SWITCH_DECAY = 0.25  # moving to another task fades what the last one used (it may come back)

# names as any language spells them: ``a.b.c``, ``krate::Type::method``
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
_SOURCE_EXT = "|".join(sorted((e[1:] for e in SOURCE_SUFFIXES), key=len, reverse=True)).replace("+", "\\+")
_PATH = re.compile(rf"(?:[\w.-]+/)+[\w.-]+\.(?:{_SOURCE_EXT})\b|\b[\w-]+\.(?:{_SOURCE_EXT})\b")
_SUGGEST = re.compile(r"```ctx-suggest[^\n]*\n(.*?)```", re.S)
_TERM = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "we",
        "can",
        "should",
        "would",
        "could",
        "please",
        "now",
        "then",
        "there",
        "their",
        "them",
        "was",
        "were",
        "will",
    ]
)


class Activation(msgspec.Struct, kw_only=True):
    """One item's activation and how it got there (shown in the plan item's detail)."""

    score: float = 0.0
    included: int = 0  # turns in which it was in the plan
    model: int = 0  # turns in which the model named it
    user: int = 0  # turns in which the user named it
    last_turn: int = 0

    def detail(self) -> str:
        return f"activation {self.score:.2f} (in plan {self.included}×, model named {self.model}×, user {self.user}×)"


def decay(scores: dict[str, Activation], turns: int = 1) -> dict[str, Activation]:
    out = {}
    for key, a in scores.items():
        score = a.score * DECAY**turns
        if score >= ACTIVATION_FLOOR:
            out[key] = msgspec.structs.replace(a, score=round(score, 6))
    return out


def update(
    scores: dict[str, Activation],
    turn: int,
    included: Iterable[str],
    model_named: Iterable[str],
    user_named: Iterable[str],
) -> dict[str, Activation]:
    """One turn: decay everything, then add the turn's signals (each counts once per item)."""
    out = decay(scores)
    inc, mod, usr = set(included), set(model_named), set(user_named)
    for key in sorted(inc | mod | usr):
        a = out.get(key) or Activation()
        out[key] = Activation(
            score=round(a.score + W_INCLUDED * (key in inc) + W_MODEL * (key in mod) + W_USER * (key in usr), 6),
            included=a.included + (key in inc),
            model=a.model + (key in mod),
            user=a.user + (key in usr),
            last_turn=turn,
        )
    return out


def named_in(text: str, resolve: Callable[[str], str | None], limit: int = 300) -> set[str]:
    """Qualified names of workspace symbols (or module paths) a text names: identifiers, dotted
    names and file paths, resolved through the index; short and common words are ignored."""
    found: set[str] = set()
    words = dict.fromkeys(w for w in _IDENT.findall(text) if len(w) >= 4 and w.lower() not in _STOP)
    words.update(dict.fromkeys(_PATH.findall(text)))
    for word in list(words)[:limit]:
        q = resolve(word)
        if q is not None:
            found.add(q)
    return found


def suggestions_in(text: str) -> list[str]:
    """Names listed in the model's fenced ``ctx-suggest`` blocks, one per line (``- `` bullets,
    backticks and trailing comments allowed)."""
    out: list[str] = []
    for block in _SUGGEST.findall(text):
        for line in block.splitlines():
            line = line.strip().lstrip("-*").strip().split("#", 1)[0].strip().strip("`").strip()
            if line and line not in out:
                out.append(line)
    return out


def task_switch(scores: dict[str, Activation]) -> dict[str, Activation]:
    return {
        k: msgspec.structs.replace(a, score=round(a.score * TASK_SWITCH_DECAY, 6))
        for k, a in scores.items()
        if a.score * TASK_SWITCH_DECAY >= ACTIVATION_FLOOR
    }


def promotions(
    scores: dict[str, Activation], leased: set[str], sticky: set[str], retrieved: set[str], used_now: set[str]
) -> list[tuple[str, str]]:
    """(item, reason) for retrieved cards the model is using — this turn and often enough — to
    become leased pins. The most specific symbol named wins: a module or class is not promoted
    while something inside it is named this turn (``shop.pricing`` named by its path and
    ``shop.pricing.round_price`` by name: the function is meant)."""
    out = []
    for key in sorted(scores):
        a = scores[key]
        if key in leased or key in sticky or key not in retrieved or key not in used_now:
            continue
        if any(u.startswith(key + ".") for u in used_now):
            continue
        if a.score >= PROMOTE_AT and a.model >= PROMOTE_MIN_MODEL_MENTIONS:
            out.append((key, f"promoted: {a.detail()} ≥ {PROMOTE_AT} with {a.model} model mentions"))
    return out


def terms(query: str) -> Counter[str]:
    return Counter(t for t in _TERM.findall(query.lower()) if t not in _STOP and len(t) > 1)


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    return dot / (math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values())))


class Centroid:
    """A cluster's centroid (term counts) with its squared length, kept between queries. A long
    session's centroid holds every term its queries ever used; ``cosine`` and ``add`` cost the
    query's terms only, and give what ``cosine`` and ``+`` over the whole centroid give (the
    counts are integers: their sums are exact in any order)."""

    __slots__ = ("counts", "square")

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts
        self.square = sum(v * v for v in counts.values())

    def cosine(self, q: Counter[str]) -> float:
        if not q or not self.counts:
            return 0.0
        counts = self.counts
        dot = sum(v * counts.get(k, 0) for k, v in q.items())
        return dot / (math.sqrt(sum(v * v for v in q.values())) * math.sqrt(self.square))

    def add(self, q: Counter[str]) -> None:
        """Add the query's counts in place (they are positive: nothing drops out, as with ``+``)."""
        counts = self.counts
        for k, v in q.items():
            old = counts.get(k, 0)
            counts[k] = old + v
            self.square += 2 * old * v + v * v


def join_cluster(query: str, current: tuple[str, Centroid] | None, next_id: int) -> tuple[str, Counter[str], bool]:
    """(cluster id, the query's terms, whether the cluster is new): the query joins the current
    cluster when similar enough, else starts cluster ``t{next_id}``. The caller adds the terms to
    the current centroid (``Centroid.add``) or starts the new one from them, once it keeps the
    result."""
    q = terms(query)
    if current is not None and current[1].cosine(q) >= CLUSTER_SIMILARITY:
        return current[0], q, False
    return f"t{next_id}", q, True
