"""Search terms: what the FTS table stores for a symbol and what a query looks for.

Search text is pre-split: identifiers become their lowercase sub-words plus the joined
compound (``parseHTTPResponse`` → ``parse http response parsehttpresponse``), so a query for
either spelling, snake_case or camelCase, matches; FTS5's ``unicode61`` tokenizer then only
splits on the spaces we put there. Every term is stemmed (Snowball's English stemmer, the
successor of FTS5's ``porter``), in the index and in queries alike: "how are prices rounded"
finds ``round_price``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import lru_cache

import Stemmer

from ctx_lsp.workspace.languages import last_part
from ctx_lsp.workspace.parse import ParsedModule

_stem = Stemmer.Stemmer("english").stemWord

# The columns of ``symbols_fts``, in table order (``fts_texts`` fills them in this order).
FTS_COLUMNS = ("qualname_terms", "signature", "docstring", "identifiers", "path_terms")
# bm25 column weights, in the order of ``FTS_COLUMNS``: names matter most.
FTS_WEIGHTS = (10.0, 4.0, 2.0, 1.0, 3.0)
# A question, a commit message: its first MAX_QUERY_TERMS terms in reading order are searched.
# A long request (over LONG_REQUEST_TERMS: a bug report with a traceback, a snippet and output,
# a hundred terms and more) is not cut in reading order: its names, every one (up to
# MAX_NAME_TERMS), its first LEADING_TERMS terms (the title's and the opening's) and its
# strongest other terms by inverse frequency, MAX_QUERY_TERMS in all besides the names; its
# title's terms and names weigh double (``weighted_terms``). Measured on the three dev sets
# (benchmarks/retrieval/RESULTS.md): below 64 terms, the first 32 in reading order did best.
MAX_QUERY_TERMS = 32
LEADING_TERMS = 24
MAX_NAME_TERMS = 128
LONG_REQUEST_TERMS = 64
MAX_READ_TERMS = 1024  # distinct terms read from one request at most (8,000 characters hold ~600)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words: never worth an index entry or a query term.
_STOPWORDS = _words(
    "a an and are as at be been but by for from has have in into is it its of on or that the "
    "their then there these this those to was were will with"
)
# Words of a question about code that name nothing in it ("where is X defined?").
_QUERY_STOPWORDS = _STOPWORDS | _words(
    "where what which who whom whose why how when does do did can could should would "
    "defined define defines definition declared declare implemented implement implementation "
    "located please explain tell me my our we you i"
    # English function words (the usual stopword lists): in a request written in prose they
    # match docstrings and comments everywhere
    " about above after again against all also am any because before being below between both"
    " each few further had having he her here hers herself him himself his if itself just more"
    " most myself no nor not now off once only other ours ourselves out over own same she so"
    " some such than themselves them they through too under until up very while whom yours"
    " yourself yourselves"
)

_IDENT_RE = re.compile(r"[^\W\d]\w*")
# Sub-words of one underscore-free chunk: ``HTTPResponse2x`` → HTTP, Response2x.
_SUBWORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+|[^\W\d_]+\d*")


@lru_cache(maxsize=65536)
def _subwords(word: str) -> tuple[str, ...]:
    return tuple(m.lower() for chunk in word.split("_") if chunk for m in _SUBWORD_RE.findall(chunk))


def split_identifier(name: str) -> str:
    """Lowercase sub-words of an identifier: ``parseHTTPResponse_v2`` → ``parse http response v2``."""
    return " ".join(_subwords(name))


def _word_terms(word: str) -> str:
    """Index terms of one identifier: its stemmed sub-words (no 1-char ones, no stopwords) and,
    when it has several, the stemmed compound, so an exact-name query gets a rare, strong term."""
    subwords = _subwords(word)
    parts = [_stem_of(p) for p in subwords if len(p) > 1 and p not in _STOPWORDS]
    whole = "".join(subwords)
    if len(subwords) > 1 and len(whole) > 1:
        parts.append(_stem(whole))
    return " ".join(parts)


class _Memo(dict[str, str]):
    """``fn`` of the words met so far. Index time looks up every identifier of every symbol
    (~4M words on sympy), so ``map(memo.__getitem__, words)`` must stay in C: a known word is one
    dict lookup, where an ``lru_cache`` call costs twice that. A word's value never changes; past
    ``MAX`` words the memo starts over."""

    MAX = 131072

    def __init__(self, fn: Callable[[str], str]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, word: str) -> str:
        if len(self) >= self.MAX:
            self.clear()
        value = self[word] = self.fn(word)
        return value


_stem_of = _Memo(_stem).__getitem__  # identifiers share sub-words (``eval``, ``is``, ``expr``)
_terms_of = _Memo(_word_terms).__getitem__


def fold(term: str) -> str:
    """A term as FTS5's ``unicode61`` tokenizer (``remove_diacritics 2``) stores it: our terms
    are lower-case letters and digits already, but ``poincaré`` is ``poincare`` to it."""
    if term.isascii():
        return term
    return "".join(c for c in unicodedata.normalize("NFKD", term) if not unicodedata.combining(c)).lower()


def search_terms(text: str) -> str:
    """The space-joined terms stored in the FTS table for ``text`` (sub-words + compounds)."""
    return " ".join(map(_terms_of, _IDENT_RE.findall(text)))


def query_terms(query: str) -> list[str]:
    """Distinct (stemmed) search terms of a user query, in order; stopwords and 1-char terms
    dropped."""
    return list(query_term_words(query))


def query_term_words(query: str) -> dict[str, str]:
    """``query_terms`` → the word each stands for as the query has it (lower-cased), for
    people: ``matched`` and ``why`` say "price", not "pric". Every term of the query (up to
    MAX_READ_TERMS): ``strongest`` chooses the ones a search looks for."""
    seen: dict[str, str] = {}
    for word in _IDENT_RE.findall(query):
        subwords = _subwords(word)
        for p in subwords:
            if len(p) > 1 and p not in _QUERY_STOPWORDS:
                seen.setdefault(_stem(p), p)
        if len(subwords) > 1:  # the compound, as the index stores it
            whole = "".join(subwords)
            seen.setdefault(_stem(whole), whole)
        if len(seen) >= MAX_READ_TERMS:
            break
    return seen


def name_terms(query: str) -> set[str]:
    """The terms that stand for a whole name the query writes as code (``convert_encodings``,
    ``LintResult``, ``ilookup(``, ``pkg.mod.func``, ``fd::exec::run``, a frame's
    ``com.x.Y.z``): a long request's search keeps every one of them."""
    out = set()
    words = code_words(query)
    if "::" in query:  # Rust's and C++'s paths, a Rust backtrace's frames
        words.update(m.group(0).replace("::", ".") for m in _SCOPED_NAME.finditer(query))
    for word in words:
        for part in word.split("."):
            subwords = _subwords(part)
            if len(subwords) > 1:
                out.add(_stem("".join(subwords)))
            elif subwords and len(subwords[0]) > 1 and subwords[0] not in _QUERY_STOPWORDS:
                out.add(_stem(subwords[0]))
    return out


def strongest(words: dict[str, str], names: set[str], rows: Mapping[str, int]) -> dict[str, str]:
    """The terms of ``words`` (``query_term_words``) a search looks for: a request's first
    MAX_QUERY_TERMS; a long one's (LONG_REQUEST_TERMS) names (up to MAX_NAME_TERMS)
    and first LEADING_TERMS, then the others held by the fewest ``rows`` (the strongest by
    inverse frequency), MAX_QUERY_TERMS in all besides the names; never a term no row holds.
    In the query's order."""
    if len(words) <= LONG_REQUEST_TERMS:
        return dict(list(words.items())[:MAX_QUERY_TERMS])
    held = [t for t in words if rows.get(t, 0) > 0]
    kept = {*held[:LEADING_TERMS]}
    others = sorted((t for t in held if t not in kept and t not in names), key=rows.__getitem__)  # stable
    kept.update(others[: max(0, MAX_QUERY_TERMS - len(kept))])
    kept.update([t for t in held if t in names][:MAX_NAME_TERMS])
    return {t: words[t] for t in held if t in kept}


def title_of(query: str) -> str:
    """A request's first non-empty line: an issue's title, a commit's subject."""
    return next((line for line in query.split("\n") if line.strip()), "")


def coverage_terms(query: str) -> tuple[dict[str, str], bool]:
    """The terms whose share a hit matches scales it (``retrieval.COVERAGE_FLOOR``), and whether
    the request is long: a long request's title's (the rest is steps, output and chatter), else
    its first MAX_QUERY_TERMS."""
    every = query_term_words(query)
    if len(every) > LONG_REQUEST_TERMS:
        return query_term_words(title_of(query)), True
    return dict(list(every.items())[:MAX_QUERY_TERMS]), False


def weighted_terms(query: str, every: dict[str, str], rows: Mapping[str, int]) -> tuple[dict[str, str], list[str]]:
    """What a search for ``query`` looks for (``strongest`` of its terms, ``every``: term →
    word) and the terms as it scores them: a long request's (LONG_REQUEST_TERMS) title terms and
    names twice, so that a hundred words of steps, output and chatter do not outweigh what the
    report is about. ``rows`` (how many symbols hold each term) is read for a long request only."""
    if len(every) <= LONG_REQUEST_TERMS:
        words = strongest(every, set(), rows)
        return words, list(words)
    words = strongest(every, names := name_terms(query), rows)
    heavy = names | set(query_term_words(title_of(query)))
    return words, [*words, *(t for t in words if t in heavy)]


def fts_texts(parsed: ParsedModule) -> list[tuple[str, str, str, str, str]]:
    """The FTS columns of every symbol of a file (see ``FTS_COLUMNS``)."""
    rel = parsed.rel
    dot = rel.rfind(".")
    path_terms = search_terms((rel[:dot] if dot > rel.rfind("/") else rel).replace("/", " "))
    python = parsed.language == "python"
    prefix = parsed.module + "."
    out = []
    for s in parsed.symbols:
        # Name column: the symbol's own name plus enclosing classes (the module's parts are in
        # the path column; repeating them would make every symbol of a file match).
        if s.kind == "module":
            name_text = s.qualname.replace(".", " ") if python else s.name
        elif python:
            classes = s.parent[len(prefix) :] if s.parent.startswith(prefix) else ""
            name_text = f"{s.name} {classes.replace('.', ' ')}" if classes else s.name
        else:  # the enclosing type (Go's receiver, a Rust impl's), not the package
            name_text = s.name if s.parent == parsed.module else f"{s.name} {last_part(s.parent)}"
        out.append(
            (
                search_terms(name_text),
                search_terms(s.signature),
                search_terms(s.docstring) if s.docstring else "",
                # identifiers are already space-separated words: no regex needed
                " ".join(map(_terms_of, s.identifiers.split())),
                path_terms,
            )
        )
    return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BACKTICKED = re.compile(r"`+([A-Za-z_][A-Za-z0-9_.]*)(?:\(\))?`+")
_SCOPED_NAME = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+")
_INNER_CAPS = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")


def query_names(query: str) -> set[str]:
    """Identifiers and dotted names the query mentions, lower-cased, and the name a dotted one
    ends in when it can only be code (``_named_tail``)."""
    out = set()
    for w in _WORD.findall(query):
        if len(w) > 2:
            out.add(w.lower().strip("."))
        if tail := _named_tail(w.strip(".")):
            out.add(tail)
    return out


def _named_tail(word: str) -> str | None:
    """The name a dotted word ends in, when that name can only be code: a pasted snippet's
    ``mc.run_model_from_poa(weather)`` calls the method ``run_model_from_poa`` on a variable
    the index cannot know; ``schema.load`` is None (``load`` may be a plain word)."""
    _, dot, last = word.rpartition(".")
    return last.lower() if dot and len(last) > 2 and _spelled_as_code(last) else None


def _spelled_as_code(word: str) -> bool:
    """``snake_case`` or ``camelCase``: no English word is written so."""
    return "_" in word.strip("_") or _INNER_CAPS.search(word) is not None


def code_words(query: str) -> set[str]:
    """The query's words that can only be code, lower-cased: ``snake_case``, ``camelCase``,
    ``dotted.names``, ``code in backticks``, ``call()``. A plain word (``matches``, ``down``)
    may be a name too, but only counts as one when few symbols share it (see ``rank``)."""
    out = {w.lower() for w in _BACKTICKED.findall(query)}
    for m in _WORD.finditer(query):
        w = m.group(0).strip(".")
        called = query[m.end() : m.end() + 1] == "("
        if len(w) > 2 and (_spelled_as_code(w) or "." in w or called):
            out.add(w.lower())
        if tail := _named_tail(w):
            out.add(tail)
    return out
