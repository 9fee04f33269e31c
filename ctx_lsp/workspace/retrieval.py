"""Retrieval: ranked candidates for a query, as planner Items, each with the reason it was found
(docs/retrieval.md).

Scores combine BM25 over the symbol index (stemmed sub-words of names, signatures, docstrings,
identifiers, weighted by field) with named multipliers: a symbol the query names outright; the
request's exact signals (traceback frames, ``path:line``, named files, dotted names, the error's
exception and message: ``signals``); symbols in files the user has open or focused; the path's
prior (tests, vendored copies, generated code and what lies outside the project's package rank
lower unless the request is about them: ``priors``); graph relevance personalised for the
request — definitions that the symbols the request points at, the pins, the focus and the open
files use or are used by (one hop in the reference graph, a few SQL lookups) — and a small prior
for centrality (PageRank, precomputed at index time). ``graph_fill`` offers the code around the
best candidates below everything else. Every signal and its weight is written into the item's
``why``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from ctx_lsp.core.items import Item, Mode
from ctx_lsp.core.tokens import scaled
from ctx_lsp.workspace.cards import SymbolRow, body_item, card_item, thin_card_item
from ctx_lsp.workspace.index import code_words, coverage_terms, query_names
from ctx_lsp.workspace.languages import DECLARATION_MARK, language_of
from ctx_lsp.workspace.priors import Prior, in_test_module, prior_for, request_words
from ctx_lsp.workspace.signals import Frame, Signals, foreign_path, read

EXACT_NAME_BOOST = 2.0  # the query names the symbol (or its qualified name) outright, as code
PLAIN_NAME_BOOST = 1.3  # ... with a plain word (``model``, ``sympify``): maybe a name, maybe English
COVERAGE_FLOOR = 0.5  # a hit matching a share c of the query's terms: × (FLOOR + (1 − FLOOR) × c)
OPEN_FILE_BOOST = 1.3  # the symbol lives in a file the user has open
FOCUS_FILE_BOOST = 1.6  # ... in the file the user is focused on
MODE_LIMITS = {"off": 0, "light": 200, "heavy": 400}
# Hits scoring below this fraction of the best hit share only a common word with the query:
# offering them would fill a large budget with noise.
MIN_RELATIVE_SCORE = 0.05
FLOOR_RANK = 5  # ... of the hit at this rank
# Graph relevance (see ``rank``).
GRAPH_BOOST = 0.3  # a lexical hit next to a seed: × (1 + GRAPH_BOOST × strength)
GRAPH_SHARE = 0.35  # a neighbour the query did not match: GRAPH_SHARE × strength × the seed's score
CENTRAL_WEIGHT = 0.2  # every candidate: × (1 + CENTRAL_WEIGHT × centrality percentile)
MAX_SEEDS = 12
PER_SEED = 12  # neighbours fetched per seed and direction
LEXICAL_SEEDS = 3  # the best lexical hits seed the graph too, weakly
LEXICAL_SEED_STRENGTH = 0.6
PLAIN_SEED_STRENGTH = 0.5  # a symbol named by a plain word
FILE_SEED_STRENGTH = {"focus": 0.8, "open": 0.5}
MAX_OPEN_FILE_SEEDS = 3
MAX_STRENGTH = 1.5
MIN_CENTRALITY = 0.1  # below this percentile the prior is too small to be worth a line in ``why``
EXPORT_LIST_FACTOR = 0.3  # ``__all__``: it names what a module exports, it does not explain it
SPECIFIC_DEGREE = 3.0  # neighbours with up to ~9 connections count fully (see ``_specificity``)
# Graph fill (see ``graph_fill``): code around the best candidates, scored below all of them.
FILL_SEEDS = 5
FILL_LIMIT = 60
FILL_SHARE = 0.5  # the first fill item scores this share of the last candidate, the last half that

COMMON_NAME = 3  # a plain word shared by more symbols than this is not taken as naming one
# Exact signals (``signals.read``): what the request points at. A symbol pointed at scores at
# least EXACT_BASE_SHARE of the best lexical score, times its boost, and seeds the graph.
EXACT_BASE_SHARE = 0.5
FRAME_BOOST = 3.0  # the innermost traceback frame in the project's files ...
FRAME_DECAY = 0.6  # ... and each frame further out: × (1 + (FRAME_BOOST − 1) × FRAME_DECAY^k)
MAX_FRAMES = 8  # project frames looked at, innermost first
LINE_BOOST = 3.0  # ``path.py:123``: the symbol at that line
DOTTED_BOOST = 2.5  # a dotted name (``pkg.mod.func``, ``Class.method``) that resolves to the symbol
PATH_BOOST = 1.5  # a file the request names: its symbols (and its module card)
MESSAGE_BOOST = 2.0  # a function whose code has the fixed text of the error's message
RAISES_BOOST = 1.5  # a function that raises the project's exception the error names
LITERAL_BOOST = 1.5  # a function whose code has code the request quotes (``--one-file-system``) ...
COMMON_LITERAL = 3  # ... unless the functions of more files among the hits have it


class Head(Protocol):
    """What ranking reads of a symbol (a search hit's head, or a whole ``SymbolRow``)."""

    id: int
    qualname: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    end_col: int
    parent: str
    secrets: int


class Hit(Protocol):
    symbol: Head
    score: float
    matched: str
    words: frozenset[str]


Ranked = list[tuple[Head, float, str]]  # (symbol, score, why), best first


class GraphView(Protocol):
    """What ranking needs of the index: the reference graph and, for the request's exact
    signals, paths, lines and names (``WorkspaceIndex`` provides it)."""

    def neighbours(self, seeds: Iterable[str], per_seed: int = ...) -> list[tuple[str, str, str, int]]: ...

    def file_neighbours(self, rel: str, limit: int = ...) -> list[tuple[str, str, int]]: ...

    def node_stats(self, qualnames: Iterable[str]) -> dict[str, tuple[float, int]]: ...

    def get_many(self, qualnames: Iterable[str]) -> dict[str, SymbolRow]: ...

    def symbols_by_id(self, ids: Iterable[int]) -> dict[int, SymbolRow]: ...

    def files_matching(self, written: str, limit: int = ...) -> list[str]: ...

    def module_symbol(self, rel: str) -> SymbolRow | None: ...

    def symbol_at(self, rel: str, line: int, name: str | None = ...) -> SymbolRow | None: ...

    def resolve_name(self, name: str, from_rel: str | None = ...) -> SymbolRow | None: ...

    def bound_by_package(self, module: SymbolRow) -> SymbolRow | None: ...


def _short(qualname: str) -> str:
    return ".".join(qualname.rsplit(".", 2)[-2:])


def _calls(kind_a: str, kind_b: str) -> bool:
    return kind_a in ("function", "method") and kind_b in ("function", "method")


def rank(
    hits: Iterable[Hit],
    query: str,
    *,
    open_files: Iterable[str] = (),
    focus_path: str | None = None,
    seeds: Iterable[str] = (),
    graph: GraphView | None = None,
    signals: Signals | None = None,
) -> Ranked:
    """Rescore lexical hits with the named boosts and, given the reference ``graph``, with
    graph relevance; returns (symbol, score, why), best first.

    Graph relevance is personalised per request by its seeds: the symbols the query names
    outright, ``seeds`` (pinned symbols, the symbol at the cursor), the best few lexical hits
    (weakly), and the focused and open files. Each seed's one-hop neighbours (what it uses and
    what uses it) gain strength; a neighbour that is also a lexical hit is boosted, one that
    is not joins the candidates with a share of its seed's score. Every candidate then gets a
    small prior for its precomputed centrality. Only this neighbourhood is touched: a few
    indexed lookups, no graph algorithm on the request path.

    Given the index (``graph``), the request's exact signals (``signals``, else read from
    ``query``) point at symbols: traceback frames, ``path:line``, paths, dotted names, the
    error's exception and message (see ``_exact_signals``). Last, each candidate's path prior
    (tests, vendored, generated code, outside the package) scales it, unless the request is
    about what the path holds.
    """
    hits = list(hits)
    sig = signals if signals is not None else read(query)
    text = sig.search_text
    names = _names_in(text, hits)
    words, long = coverage_terms(text)  # a long request: its title's
    terms = frozenset(words.values())  # as ``matched`` names them
    covers = "terms of the first line" if long else "terms"
    n_terms = len(terms)
    open_list = list(dict.fromkeys(open_files))
    open_set = set(open_list)
    priors: dict[str, Prior | None] = {}
    # qualname → [symbol, score, why parts]; the first hit of a qualname wins (overloads)
    entries: dict[str, list] = {}
    for hit in hits:
        sym = hit.symbol
        if sym.qualname in entries:
            continue
        score = max(hit.score, 0.0) + 1e-6
        why = [f"bm25 {hit.score:.2f} on {hit.matched}" if hit.matched else f"bm25 {hit.score:.2f}"]
        if n_terms > 1 and COVERAGE_FLOOR < 1.0:
            covered = len(terms & hit.words)
            factor = COVERAGE_FLOOR + (1 - COVERAGE_FLOOR) * min(1.0, covered / n_terms)
            if factor < 1.0:
                score *= factor
                why.append(f"matches {covered} of {n_terms} {covers} (×{factor:.2f})")
        named = names.get(sym.name.lower()) or names.get(sym.qualname.lower())
        if named is not None:
            boost = EXACT_NAME_BOOST if named == "code" else PLAIN_NAME_BOOST
            score *= boost
            why.append(f"named in the query (×{boost})")
        if focus_path is not None and sym.path == focus_path:
            score *= FOCUS_FILE_BOOST
            why.append(f"in the focused file (×{FOCUS_FILE_BOOST})")
        elif sym.path in open_set:
            score *= OPEN_FILE_BOOST
            why.append(f"in an open file (×{OPEN_FILE_BOOST})")
        if sym.name == "__all__" and sym.kind == "variable":
            score *= EXPORT_LIST_FACTOR
            why.append(f"an export list (×{EXPORT_LIST_FACTOR})")
        entries[sym.qualname] = [sym, score, why]
    explicit = dict.fromkeys(seeds, 1.0)
    named_files: set[str] = set()
    if graph is not None:
        pointed, named_files = _exact_signals(entries, sig, graph)
        for q, strength in pointed.items():
            explicit[q] = max(explicit.get(q, 0.0), strength)
    words = request_words(sig.prose) | named_files
    for entry in entries.values():
        _apply_prior(entry, priors, words)
    if graph is not None:
        known = set(entries)

        def prior_factor(sym: Head) -> float:
            found = _prior_of(sym, priors, words)
            return found.factor if found is not None else 1.0

        _graph_relevance(entries, names, explicit, focus_path, open_list, graph, prior_factor)
        for q in entries.keys() - known:  # neighbours the graph added: their own prior
            _apply_prior(entries[q], priors, words)
    ranked = [(e[0], round(e[1], 6), "; ".join(e[2])) for e in entries.values()]
    ranked.sort(key=lambda r: (-r[1], r[0].qualname, r[0].path, r[0].start_line))
    return ranked


def _exact_signals(entries: dict[str, list], sig: Signals, index: GraphView) -> tuple[dict[str, float], set[str]]:
    """Boost (or add) the symbols the request points at, in place: traceback frames (the
    innermost in the project's files weighs most; frames outside them, in site-packages,
    leave the project's call site innermost), ``path:line``, named files, dotted names, the
    error's exception class, and code with the message's text or raising that exception.
    Returns the pointed symbols with their strength as graph seeds, and the named files."""
    ref = max((e[1] for e in entries.values()), default=1.0) or 1.0
    seeds: dict[str, float] = {}
    files: set[str] = set()
    matches: dict[str, list[str]] = {}

    def rels(path: str) -> list[str]:
        if path not in matches:
            matches[path] = index.files_matching(path)
        return matches[path]

    boosts: dict[str, tuple[float, str]] = {}  # the strongest pointer at each symbol wins

    def point(sym: Head, boost: float, label: str, strength: float) -> None:
        if sym.qualname not in entries:
            entries[sym.qualname] = [sym, 0.0, []]
        if boost > boosts.get(sym.qualname, (0.0, ""))[0]:
            boosts[sym.qualname] = (boost, label)
        if strength > 0 and sym.kind != "module":
            seeds[sym.qualname] = max(seeds.get(sym.qualname, 0.0), strength)

    def frame_file(frame: Frame) -> str | None:
        """The project's file a frame is in: its path if one file matches it; a Java frame names
        only the file (``Y.java``), and its package says which folder."""
        found: list[str] = []
        if "/" not in frame.path and frame.func and language_of(frame.path) == "java":
            package = list(itertools.takewhile(lambda p: p[:1].islower(), frame.func.split(".")))
            if package:
                found = rels("/".join([*package, frame.path]))
        found = found or rels(frame.path)
        return found[0] if len(found) == 1 else None

    # frames in the toolchain's or a dependency's code (a cargo registry, node_modules, Go's
    # module cache) would match a project file of the same name (``src/lib.rs``): left out. A
    # Python frame in site-packages is kept: it is often the project itself, installed
    # (``site-packages/astroid/raw_building.py``), and a package path says which file it is.
    project = [(f, frame_file(f)) for f in sig.frames if language_of(f.path) == "python" or not foreign_path(f.path)]
    # a frame whose path names no one file may still name its function in full (``fd::exec::run``,
    # ``main.Server.Handle``): a bare name (Python's ``in run``) says too little
    project = [(f, rel) for f, rel in project if rel is not None or (f.func and ("." in f.func or "::" in f.func))]
    framed: set[str] = set()
    for k, (frame, rel) in enumerate(reversed(project[-MAX_FRAMES:])):
        if rel is not None:
            sym = index.symbol_at(rel, frame.line - 1, _short_name(frame.func))
        else:
            sym = index.resolve_name(frame.func or "")
        if sym is None or sym.kind == "module" or sym.qualname in framed:
            continue
        rel = sym.path
        framed.add(sym.qualname)
        weight = FRAME_DECAY**k
        where = "the innermost traceback frame in the project" if k == 0 else f"a traceback frame ({k} out)"
        point(sym, 1 + (FRAME_BOOST - 1) * weight, f"{where}, {rel}:{frame.line}", weight)
    for path, line in sig.locations:
        for rel in rels(path):
            files.add(rel)
            sym = index.symbol_at(rel, line - 1) if line else None
            if sym is not None and sym.kind != "module":
                point(sym, LINE_BOOST, f"at {rel}:{line}, named in the request", 1.0)
    for name in sig.dotted:
        sym = index.resolve_name(name)
        if sym is not None and sym.kind == "module":
            files.add(sym.path)
            sym = index.bound_by_package(sym)  # ``pkg.m``, rebound by ``pkg``'s ``from .m import m``
        if sym is not None:
            point(sym, DOTTED_BOOST, f"{name} named in the request", 1.0)
    raised = []
    for exc in sig.exceptions:
        sym = index.resolve_name(exc)
        if sym is not None and sym.kind == "class":
            point(sym, EXACT_NAME_BOOST, f"the error's exception {exc}", 0.5)
            raised.extend((f"raise {exc}", f"throw new {exc}", f"throw {exc}"))  # Python; JS, Java, C++
    for rel in sorted(files):
        sym = index.module_symbol(rel)
        if sym is not None:
            point(sym, PATH_BOOST, f"its file {rel} is named in the request", 0.0)
    code: dict[int, SymbolRow] = {}
    literals: tuple[str, ...] = ()
    if sig.fragments or raised or sig.literals:  # the code of every function among the hits: only for these
        code = index.symbols_by_id(e[0].id for e in entries.values() if e[0].kind in ("function", "method"))
        # quoted code that the functions of many files have (``"utf-8"``, ``None)``) points at none
        literals = tuple(
            c for c in sig.literals if len({r.path for r in code.values() if c in r.body}) <= COMMON_LITERAL
        )
    for q, entry in entries.items():
        sym = entry[0]
        if sym.path in files and sym.kind != "module":
            point(sym, PATH_BOOST, f"in {sym.path}, named in the request", 0.0)
        if sym.kind in ("function", "method") and (sig.fragments or raised or literals):
            body = code[sym.id].body if sym.id in code else ""
            fragment = next((f for f in sig.fragments if f in body), None)
            literal = next((c for c in literals if c in body), None)
            if fragment is not None:
                point(sym, MESSAGE_BOOST, f"has the error message's text {fragment[:40]!r}", 0.5)
            elif any(r in body for r in raised):
                point(sym, RAISES_BOOST, "raises the error's exception", 0.0)
            elif literal is not None:
                point(sym, LITERAL_BOOST, f"has {literal[:40]!r}, quoted in the request", 0.0)
        found = boosts.get(q)
        if found is not None:
            boost, label = found
            entry[1] = max(entry[1], ref * EXACT_BASE_SHARE) * boost
            entry[2].append(f"{label} (×{boost:.2f})")
    return seeds, files


def _short_name(func: str | None) -> str | None:
    """The last part of a frame's function as written (``Y.z``, ``fd::exec::run``), when it is a
    name (not ``<module>``, ``<anonymous>`` or a closure's ``{{closure}}``)."""
    last = re.split(r"::|\.", func)[-1] if func else ""
    return last if last.isidentifier() else None


def _prior_of(sym: Head, priors: dict[str, Prior | None], words: frozenset[str]) -> Prior | None:
    """A symbol's path prior (test, vendored, generated, outside the package), once per path."""
    path = sym.path
    if in_test_module(sym.qualname):  # a Rust ``mod tests``: test code whatever its file
        key = f"{path}::tests"
        return priors[key] if key in priors else priors.setdefault(key, prior_for(path, words, qualname=sym.qualname))
    return priors[path] if path in priors else priors.setdefault(path, prior_for(path, words))


def _apply_prior(entry: list, priors: dict[str, Prior | None], words: frozenset[str]) -> None:
    """Scale a candidate by its path's prior (test, vendored, generated, outside the package)."""
    prior = _prior_of(entry[0], priors, words)
    if prior is not None:
        entry[1] *= prior.factor
        entry[2].append(prior.why)


def _names_in(query: str, hits: list[Hit]) -> dict[str, str]:
    """The names the query names outright: ``"code"`` for its code-like words (and dotted
    names), ``"plain"`` for plain words that are the name of at most COMMON_NAME symbols among
    the hits (``sympify`` yes; ``matches``, the name of dozens of methods, no)."""
    words = query_names(query)
    code = code_words(query)
    counts: dict[str, int] = {}
    for hit in hits:
        name = hit.symbol.name.lower()
        if name in words:
            counts[name] = counts.get(name, 0) + 1
    out = {}
    for w in words:
        if w in code or "." in w:
            out[w] = "code"
        elif counts.get(w, 0) <= COMMON_NAME:
            out[w] = "plain"
    return out


def _resolved_how(path: str) -> str:
    """What a graph reason adds for code whose references were resolved by name (every language
    but Python's, which follows imports): best effort, and it says so."""
    return "" if language_of(path) in (None, "python") else ", references by name"


def _specificity(degree: int) -> float:
    """How much being next to a seed says about a neighbour: fully for a definition with a few
    connections, little for a hub everything uses (``S``, ``Basic``) — like IDF for words."""
    return min(1.0, SPECIFIC_DEGREE / math.sqrt(max(degree, 1)))


def _graph_relevance(
    entries: dict[str, list],
    names: dict[str, str],
    explicit: dict[str, float],
    focus_path: str | None,
    open_files: Sequence[str],
    graph: GraphView,
    prior_factor: Callable[[Head], float] = lambda sym: 1.0,
) -> None:
    """Add graph neighbours of the request's seeds to ``entries`` (in place), then the
    centrality prior. See ``rank``. ``entries`` hold their path's prior already; a neighbour's
    share of its seed's score is scaled by it too (``prior_factor``): a test that calls the
    function a traceback points at is still a test."""
    by_score = sorted(entries.values(), key=lambda e: (-e[1], e[0].qualname))
    ref = by_score[0][1] if by_score else 1.0  # the scale of a strong lexical score
    # seed qualname → (strength, its score, label)
    seed_info: dict[str, tuple[float, float, str]] = {}
    for q, strength in explicit.items():
        seed_info.setdefault(q, (strength, ref, "seed"))
    for e in by_score:
        sym = e[0]
        named = names.get(sym.name.lower()) or names.get(sym.qualname.lower())
        if sym.kind != "module" and named is not None:
            seed_info.setdefault(sym.qualname, (1.0 if named == "code" else PLAIN_SEED_STRENGTH, e[1], "named"))
    for e in by_score[:LEXICAL_SEEDS]:
        if e[0].kind != "module" and e[0].name != "__all__":
            seed_info.setdefault(e[0].qualname, (LEXICAL_SEED_STRENGTH, e[1], "hit"))
    seed_names = list(seed_info)[:MAX_SEEDS]
    seeds_set = set(seed_names)

    # (neighbour, strength before specificity, the seed's score, relation, the other end)
    raw: list[tuple[str, float, float, str, str]] = []
    for seed, nbr, relation, weight in graph.neighbours(seed_names, PER_SEED) if seed_names else ():
        if nbr in seeds_set and seed_info[nbr][2] != "hit":
            continue
        s0, base, _ = seed_info[seed]
        # one mention: half strength; two or more: more. The relation from the neighbour's side.
        raw.append((nbr, s0 * min(1.0, 0.5 + 0.25 * weight), base, "used by" if relation == "calls" else "uses", seed))
    files = [(focus_path, "focus")] if focus_path else []
    files += [(f, "open") for f in open_files if f != focus_path][:MAX_OPEN_FILE_SEEDS]
    for rel, role in files:
        s0 = FILE_SEED_STRENGTH[role]
        label = "the focused file" if role == "focus" else f"open file {rel}"
        for nbr, relation, weight in graph.file_neighbours(rel, PER_SEED * 2):
            raw.append((nbr, s0 * min(1.0, 0.5 + 0.25 * weight), ref, relation, label))
    if not raw and not entries:
        return
    stats = graph.node_stats({*entries, *(r[0] for r in raw), *seed_names})

    # neighbour → accumulated strength, score contribution, and the reasons
    strength: dict[str, float] = {}
    share: dict[str, float] = {}
    reasons: dict[str, list[tuple[float, str, str]]] = {}
    hub_of: dict[str, tuple[float, str]] = {}  # a neighbour → (the least factor, the hub) of its shares
    for q, s, base, relation, other in raw:
        s *= _specificity(stats.get(q, (0.0, 1))[1])
        strength[q] = min(MAX_STRENGTH, strength.get(q, 0.0) + s)
        if relation == "uses" and other in seeds_set:
            # One of the many users of a seed (every test and script that calls ``dcmread``) is
            # not where the seed's problem lies: it takes a share of the seed's score only as
            # much as the seed is specific (its boost as a lexical hit stays).
            fan = _specificity(stats.get(other, (0.0, 1))[1])
            if fan < 1.0:
                s *= fan
                hub_of[q] = min(hub_of.get(q, (1.0, "")), (fan, other))
        share[q] = share.get(q, 0.0) + s * base
        reasons.setdefault(q, []).append((s, relation, other))

    missing = [q for q in strength if q not in entries]
    fetched = graph.get_many(set(missing) | (seeds_set - set(entries))) if missing else {}
    kinds = {q: e[0].kind for q, e in entries.items()}
    kinds.update({q: sym.kind for q, sym in fetched.items()})
    for q, s in strength.items():
        best = sorted(reasons[q], key=lambda r: (-r[0], r[2]))
        sym_kind = kinds.get(q, "")
        parts = []
        for _, relation, other in best[:2]:
            verb = relation
            if other in kinds and relation in ("uses", "used by"):
                if relation == "uses" and _calls(sym_kind, kinds[other]):
                    verb = "calls"
                elif relation == "used by" and _calls(kinds[other], sym_kind):
                    verb = "called by"
            parts.append(f"{verb} {_short(other) if other in kinds else other}")
        label = ", ".join(parts) + (f" (+{len(best) - 2})" if len(best) > 2 else "")
        hub = hub_of.get(q)
        shared = f"; one of many users of {_short(hub[1])} (×{hub[0]:.2f})" if hub is not None else ""
        entry = entries.get(q)
        if entry is not None:
            if entry[0].name == "__all__":  # an export list names everything it exports
                continue
            factor = 1 + GRAPH_BOOST * s
            via_graph = GRAPH_SHARE * share[q] * prior_factor(entry[0])  # what it would score as a neighbour alone
            how = _resolved_how(entry[0].path)
            if entry[1] * factor >= via_graph:
                entry[1] *= factor
                entry[2].append(f"{label} (graph ×{factor:.2f}{how})")
            else:  # a weak lexical hit must not rank below a neighbour that matched nothing
                entry[1] = via_graph
                entry[2].append(f"{label} (graph {via_graph:.2f}, above its lexical score{how}{shared})")
        else:
            sym = fetched.get(q)
            if sym is None or sym.kind == "module" or sym.name == "__all__":
                continue
            score = GRAPH_SHARE * share[q]
            entries[q] = [sym, score, [f"{label} (graph {score:.2f}{_resolved_how(sym.path)}{shared})"]]

    for q, entry in entries.items():
        pct = stats.get(q, (0.0, 0))[0]
        if pct >= MIN_CENTRALITY:
            factor = 1 + CENTRAL_WEIGHT * pct
            entry[1] *= factor
            entry[2].append(f"central {pct:.2f} (×{factor:.2f})")


def with_activation(
    ranked: Ranked,
    activation: dict[str, tuple[float, str]],
    lookup: Callable[[str], Head | None],
    weight: float,
) -> Ranked:
    """Reflection's signal: symbols the model and the user have been using score higher
    (× (1 + weight × activation)), and active ones the query did not match come back too."""
    if not activation:
        return ranked
    out = []
    seen = set()
    for sym, score, why in ranked:
        seen.add(sym.qualname)
        act = activation.get(sym.qualname)
        if act is not None:
            score = round(score * (1 + weight * act[0]), 6)
            why = f"{why}; {act[1]} (×{1 + weight * act[0]:.2f})"
        out.append((sym, score, why))
    for qualname in sorted(activation):
        if qualname in seen:
            continue
        sym = lookup(qualname)
        if sym is not None:
            out.append((sym, round(weight * activation[qualname][0], 6), f"recently used: {activation[qualname][1]}"))
    out.sort(key=lambda r: (-r[1], r[0].qualname, r[0].path, r[0].start_line))
    return out


def graph_fill(ranked: Ranked, graph: GraphView) -> Ranked:
    """Code around the strongest candidates, for when lexical matching runs dry: the class of
    each of the FILL_SEEDS best methods, then what each of them uses and what uses it (the
    heaviest PER_SEED each way), best seed first. ``candidates`` offers them after everything
    that scored, so they take only room nothing else wants."""
    present = {r[0].qualname for r in ranked}
    top = [r for r in ranked if r[0].kind != "module" and r[0].name != "__all__"][:FILL_SEEDS]
    order: dict[str, str] = {}  # qualname → why, best seed first
    for sym, _, _ in top:
        if sym.kind == "method" and sym.parent not in present:
            order.setdefault(sym.parent, f"graph fill: the class of {_short(sym.qualname)}")
    seeds = [sym.qualname for sym, _, _ in top]
    rank_of = {q: i for i, q in enumerate(seeds)}
    near = sorted(graph.neighbours(seeds, PER_SEED), key=lambda n: (rank_of[n[0]], -n[3], n[1]))
    for seed, nbr, relation, _ in near:
        if nbr not in present:
            verb = "used by" if relation == "calls" else "uses"
            order.setdefault(nbr, f"graph fill: {verb} {_short(seed)}")
    found = graph.get_many(order)
    out = []
    for q, why in order.items():
        sym = found.get(q)
        if sym is not None and sym.kind != "module" and sym.name != "__all__":
            out.append((sym, 0.0, why))
        if len(out) >= FILL_LIMIT:
            break
    return out


def candidates(
    ranked: Ranked,
    mode: Mode,
    calibration: float,
    *,
    fill: Sequence[tuple[Head, float, str]] = (),
    load: Callable[[Iterable[int]], Mapping[int, SymbolRow]] | None = None,
    memo: dict[Any, Any] | None = None,
    code: Callable[[SymbolRow], SymbolRow | None] | None = None,
    count: Callable[[str], int] | None = None,
) -> list[Item]:
    """Every ranked symbol in its forms, its card, its body (when it has one) and, given
    ``count`` (the index's token count: a request that points at code), the card's thin form
    (``cards.thin_card_item``), at its score, then the graph ``fill`` below them all: the
    planner packs the bodies of the best hits first (within the mode's depth share), then cards
    for breadth (thin ones in a small room), and never two forms of one symbol. Heavy mode
    looks at more symbols; off offers nothing.

    Only the symbols offered are read whole: ranked heads (search hits) are read by row id with
    ``load``. ``memo`` keeps the forms of a symbol between calls, by row id (the caller
    empties it when ids may be given again), so a symbol offered again costs a copy with its new
    score and why. A declaration kept for its doc (a C++ header's) is offered as its card, with
    the body of its code elsewhere (``code``: the code a declaration stands for)."""
    limit = MODE_LIMITS[mode]
    # relative to the fifth best: one symbol the request points at must not cut off the rest
    floor = ranked[min(FLOOR_RANK, len(ranked)) - 1][1] * MIN_RELATIVE_SCORE if ranked else 0.0
    offered = []
    for row in ranked[:limit]:
        if row[1] < floor:
            break
        offered.append(row)
    forms = _forms([r[0] for r in (*offered, *fill)], load, memo, code, count)
    replace = msgspec.structs.replace
    out: list[Item] = []
    for sym, score, why in offered:
        found = forms.get(sym.id)
        if found is None:  # gone from the index since it was ranked
            continue
        shown = found[:1] if sym.kind == "module" else found  # a module is offered as its card
        out.extend(replace(form, score=score, why=why) for form in shown if form is not None)
    # below everything that scored, in their order: what is left of the room
    last = min((i.score or 0.0 for i in out), default=1.0)
    known = {i.symbol for i in out if i.symbol}
    fill = [r for r in fill if r[0].qualname not in known]
    for n, (sym, _, why) in enumerate(fill):
        score = round(last * FILL_SHARE * (1 - n / (2 * len(fill))), 6)
        found = forms.get(sym.id)
        if found is None:
            continue
        out.extend(replace(form, score=score, why=why) for form in found if form is not None)
    return calibrated(out, calibration)


def calibrated(items: Sequence[Item], calibration: float) -> list[Item]:
    """Code items made uncalibrated (``candidates`` keeps them so: a gateway's usage reports move
    the factor after every reply, and forms kept by factor were made again for each request),
    their tokens scaled by ``calibration``."""
    if calibration == 1.0:
        return list(items)
    replace = msgspec.structs.replace
    return [replace(i, tokens=scaled(i.tokens, calibration)) for i in items]


Forms = tuple["Item | None", ...]  # a symbol's card, its body when it has one, its thin card when asked for and made


def _body(row: SymbolRow, code: Callable[[SymbolRow], SymbolRow | None] | None) -> Item | None:
    """A symbol's body item: for a declaration kept for its doc, its code's, when indexed."""
    if code is not None and DECLARATION_MARK in row.decorators:
        found = code(row)
        if found is not None and found.body and found.path != row.path:
            body = body_item(found, 1.0)
            note = f"the code of the declaration at {row.path}:{row.start_line + 1}, whose doc was matched"
            return msgspec.structs.replace(body, detail=f"{body.detail}; {note}" if body.detail else note)
    return body_item(row, 1.0) if row.body else None


def _forms(
    symbols: list[Head],
    load: Callable[[Iterable[int]], Mapping[int, SymbolRow]] | None,
    memo: dict[Any, Any] | None,
    code: Callable[[SymbolRow], SymbolRow | None] | None = None,
    count: Callable[[str], int] | None = None,
) -> dict[int, Forms]:
    """Card and body of each symbol (by row id), and its thin card given ``count``, uncalibrated,
    made once per ``memo`` (a thin card under a key of its own, ``("thin", id)``: most requests
    want none, and one that does reuses the card and body made for another)."""
    memo = {} if memo is None else memo
    made: dict[int, Forms | None] = {}
    missing: list[Head] = []  # neither form made yet
    unthinned: list[Head] = []  # card and body made, the thin card not
    for sym in symbols:  # what is kept is read before anything is added (a full memo drops its oldest)
        if sym.id not in memo:
            missing.append(sym)
            continue
        made[sym.id] = pair = memo[sym.id]
        if count is not None and pair is not None:
            if ("thin", sym.id) in memo:
                made[sym.id] = (*pair, memo[("thin", sym.id)])
            else:
                unthinned.append(sym)
    if missing or unthinned:
        rows: dict[int, SymbolRow] = {s.id: s for s in (*missing, *unthinned) if hasattr(s, "body")}  # type: ignore[misc]
        heads = [s.id for s in (*missing, *unthinned) if s.id not in rows]
        if heads:
            if load is None:
                raise TypeError("candidates: search hits carry no texts; pass load= to read them")
            rows.update(load(heads))
        for sym in missing:
            row = rows.get(sym.id)
            made[sym.id] = None if row is None else (card_item(row, 1.0), _body(row, code))
            if row is None or DECLARATION_MARK not in row.decorators:
                memo[sym.id] = made[sym.id]  # a declaration's body is another row's: read again
        if count is not None:
            for sym in (*missing, *unthinned):
                row, pair = rows.get(sym.id), made[sym.id]
                if row is None or pair is None:
                    continue
                made[sym.id] = (*pair, thin := thin_card_item(row, count))
                if DECLARATION_MARK not in row.decorators:
                    memo[("thin", sym.id)] = thin
    return {i: found for i, found in made.items() if found is not None}
