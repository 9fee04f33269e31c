"""The reference graph: which definition's text names which other definition.

Built at index time from what ``parse`` records per file (name chains resolved through the
module's own names and imports, e.g. ``z.f`` after ``from x import y as z`` → ``x.y.f``).
Here those file-local targets are resolved against the whole workspace (re-exports through a
package's ``__init__``, attributes of a definition), and a PageRank over the def→ref graph
gives every symbol a precomputed centrality, so a request never runs a graph algorithm over
the whole workspace (Aider's repo map does, on every request).

Pure functions over plain data; the index feeds them rows and stores what they return.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

from ctx_lsp.workspace.languages import FAMILY, language_of
from ctx_lsp.workspace.languages.gomod import GoModules, of_go_package
from ctx_lsp.workspace.languages.specifiers import ImportMap

DAMPING = 0.85
MAX_ITERATIONS = 50
# L1 change of the rank vector that counts as converged: ranks are used as percentiles, and at
# 1e-5 the order of all but near-ties is settled (sympy: ~25 iterations cold, a few warm).
TOLERANCE = 1e-5
MAX_FOLLOW = 5  # re-export hops followed before giving up (cycles, deep chains)


class Resolver:
    """Resolves a file-local target (``pkg.mod.name.attr``) to the qualname of an indexed,
    non-module symbol, or None.

    Order: the target itself; else the longest prefix that is a module, then that module's
    imports (re-exports: ``pkg.Name`` where ``pkg/__init__.py`` does ``from .mod import Name``)
    and ``*`` imports; else the longest prefix that is a definition (``mod.Class.attr`` →
    ``mod.Class``: a class attribute or an attribute of a function is a reference to it).

    A reference by name (``family|folder|name``, from a language tree-sitter parses: see
    ``languages.treesitter.by_name_target``) is resolved by ``by_name``: the definitions of that
    name in the same language family; of several, the one in the folder nearest the file that
    uses it; a tie is left unresolved (best effort: no edge beats a wrong one).
    """

    def __init__(
        self,
        kinds: Mapping[str, str],
        module_paths: Mapping[str, str],
        imports: Mapping[str, Mapping[str, str]],
        stars: Mapping[str, list[str]] | None = None,
        by_name: Mapping[str, list[tuple[str, str]]] | None = None,
        specifiers: ImportMap | None = None,
        go_modules: GoModules | None = None,
    ) -> None:
        self.kinds = kinds  # qualname → kind, every indexed symbol
        self.module_paths = module_paths  # module qualname → path
        self.imports = imports  # path → {local name: target}
        self.stars = stars or {}  # path → targets of its ``from x import *``
        self.by_name = by_name or {}  # short name → (qualname, path) of each non-module symbol
        self.specifiers = specifiers  # what a TS/JS bare specifier names in the workspace
        self.go_modules = go_modules  # which folder a Go import path names
        self._memo: dict[str, str | None] = {}
        # (short name, language family) → the folders and (qualname, depth) of each symbol of that
        # name, sorted by folder, worked out once: a common name (``new``) is looked up from many
        self._candidates: dict[tuple[str, str], tuple[list[str], list[tuple[str, int]]]] = {}

    def resolve(self, target: str) -> str | None:
        memo = self._memo
        if target in memo:
            return memo[target]
        found = self._resolve(target, 0)
        memo[target] = found
        return found

    def _resolve(self, target: str, depth: int) -> str | None:
        if "|" in target:
            return self._by_name(target)
        kind = self.kinds.get(target)
        if kind is not None:
            return None if kind == "module" else target
        if depth >= MAX_FOLLOW:
            return None
        if target.startswith("src.") and depth == 0:  # code importing its src/ layout as ``src.pkg``
            found = self._resolve(target[4:], depth + 1)
            if found is not None:
                return found
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            path = self.module_paths.get(module)
            if path is None:
                continue
            head = parts[cut]
            tail = ".".join(parts[cut + 1 :])
            via = self.imports.get(path, {}).get(head)
            if via is not None and via != target:
                found = self._resolve(f"{via}.{tail}" if tail else via, depth + 1)
                if found is not None:
                    return found
            for star in self.stars.get(path, ()):
                found = self._resolve(f"{star}.{head}" + (f".{tail}" if tail else ""), depth + 1)
                if found is not None:
                    return found
            # An attribute of a definition in this module: the longest prefix that is one.
            for end in range(len(parts) - 1, cut, -1):
                prefix = ".".join(parts[:end])
                kind = self.kinds.get(prefix)
                if kind is not None and kind != "module":
                    return prefix
            return None
        return None  # not in the workspace (stdlib, third party)

    def _by_name(self, target: str) -> str | None:
        family, folder, name = target.split("|", 2)
        name, _, via = name.partition("|")
        if via:  # the definition the file's imports name, when the workspace has it
            found = self._resolve(via, 0)
            if found is None:
                found = self._imported_module(via, folder)
            if found is not None:
                return self._module_member(found, name) or found
        here = folder.split("/") if folder else []
        keys, entries = self._named(name, family)
        # the candidates nearest ``here``: those under the deepest of its folders that has any (a
        # candidate under ``here[:k]`` and not under ``here[:k + 1]`` shares exactly k parts with
        # it); in the same folder scores 2k, below it 2k - 1, and anything sharing fewer scores
        # less. Their folders are sorted: the ones under a folder are one range (bisect).
        for k in range(len(here), -1, -1):
            prefix = "".join(f"{part}/" for part in here[:k])
            lo = bisect.bisect_left(keys, prefix)
            hi = bisect.bisect_left(keys, prefix[:-1] + "0") if prefix else len(keys)  # "0" sorts right after "/"
            if lo < hi:
                break
        else:
            return None
        found: dict[str, int] = {}  # qualname → its best score
        for qualname, depth in entries[lo:hi]:
            found[qualname] = max(found.get(qualname, -1), 2 * k - (depth > k))
        best = max(found.values())
        nearest = [q for q, score in found.items() if score == best]
        return nearest[0] if len(nearest) == 1 else None

    def _module_member(self, found: str, name: str) -> str | None:
        """``DefinePlugin.toPropertyKey()`` where the import's definition (the class) has no such
        member but its module defines one (a function assigned to the class after it, as
        webpack's are): that definition, not the class it is reached through."""
        short = name.rpartition(".")[2]
        if found.rpartition(".")[2] == short:
            return None  # the named definition itself
        module = found
        while "." in module:
            module = module.rpartition(".")[0]
            if self.module_paths.get(module) is not None:
                kind = self.kinds.get(f"{module}.{short}")
                return f"{module}.{short}" if kind is not None and kind != "module" else None
        return None

    def _imported_module(self, via: str, folder: str) -> str | None:
        """``module.rest`` where the module is not one as written: ``from './lib'`` is a folder's
        index file; ``from 'effect/Effect'`` or ``from '@/lib/fmt'`` is one of the workspace's own
        packages or path aliases (``specifiers``)."""
        module, dot, rest = via.partition(".")
        if not dot:
            return None
        if self.module_paths.get(f"{module}/index") is not None:
            return self._resolve(f"{module}/index.{rest}", 0)
        if self.specifiers is None:
            return None
        for candidate in self.specifiers.modules(module, folder):
            if self.module_paths.get(candidate) is not None:
                return self._resolve(f"{candidate}.{rest}", 0)  # the first the workspace has decides
        return None

    def _named(self, name: str, family: str) -> tuple[list[str], list[tuple[str, int]]]:
        """The definitions called ``name`` in ``family``, by folder (``a/b/``), sorted: worked out
        once per name, then bisected (``new`` and ``fmt`` name thousands in a Rust tree, and a
        scan of them all per use took 0.9 s of its graph update)."""
        found = self._candidates.get((name, family))
        if found is None:
            # ``Store::new``, ``Jsoup.parse``, ``store.Open`` (a name called through its type or
            # package): only the ``new`` of a ``Store``, the ``Open`` of package ``store`` (a plain
            # name holds neither separator)
            sep = "::" if "::" in name else "."
            owner, _, short = name.rpartition(sep)
            # a file's own (``FILE:NAME``: C's ``static`` functions) is never another file's by name
            candidates = [
                (q, p)
                for q, p in self.by_name.get(short, ())
                if FAMILY.get(language_of(p) or "") == family and not q.startswith(f"{p}:")
            ]
            if owner and family == "go":  # the owner is an import path: its package's folder
                of_owner = of_go_package(self.go_modules, owner, short, candidates)
            else:
                of_owner = [(q, p) for q, p in candidates if not owner or q == name or q.endswith(sep + name)]
            if not of_owner and family in OWNER_OPTIONAL:
                of_owner = candidates
            rows = sorted(
                ("".join(f"{part}/" for part in path.split("/")[:-1]), path.count("/"), qualname)
                for qualname, path in of_owner
            )
            found = self._candidates[(name, family)] = ([r[0] for r in rows], [(r[2], r[1]) for r in rows])
        return found


# Families whose receivers may be values named like classes (a JavaScript ``const Config = {…}``,
# a global ``Buffer``): a name found under no class of that name is resolved by its bare name.
OWNER_OPTIONAL = frozenset({"js"})


def pagerank(
    n: int,
    edges: Iterable[tuple[int, int, float]],
    *,
    start: list[float] | None = None,
    damping: float = DAMPING,
    max_iterations: int = MAX_ITERATIONS,
    tolerance: float = TOLERANCE,
) -> tuple[list[float], int]:
    """PageRank over ``n`` nodes and weighted edges ``(src, dst, weight)``, by power iteration.

    Returns the ranks (summing to 1) and the number of iterations run. ``start`` (e.g. the
    previous ranks, after a small change) makes it converge in a few iterations. Rank of
    nodes without out-edges is spread evenly, as is the teleport share.

    With numpy (0.08 s for sympy's 148k edges, where a Python loop took 0.9 s on every graph
    update), yet the ranks of a plain loop to the last bit: each node's shares are added in
    the loop's order (sources as they first come, each one's edges as they came: ``add.at``
    adds in array order) and sums are sequential (``cumsum``, not numpy's pairwise ``sum``).
    Percentiles group exactly equal ranks, so bits matter.
    """
    import numpy as np  # here: one-shot commands that never rank do not pay for the import

    if n == 0:
        return [], 0
    kept = [(s, d, w) for s, d, w in edges if s != d and w > 0]
    src = np.fromiter((e[0] for e in kept), np.int64, len(kept))
    dst = np.fromiter((e[1] for e in kept), np.int64, len(kept))
    weight = np.fromiter((e[2] for e in kept), np.float64, len(kept))
    first = np.full(n, len(kept), np.int64)  # each source's first edge
    np.minimum.at(first, src, np.arange(len(kept)))
    order = np.argsort(first[src], kind="stable")
    src, dst, weight = src[order], dst[order], weight[order]
    total = np.zeros(n)
    np.add.at(total, src, weight)
    share = weight / total[src]
    has_out = np.zeros(n, bool)
    has_out[src] = True
    dangling = np.flatnonzero(~has_out)
    if start is not None and len(start) == n and sum(start) > 0:
        begun = sum(start)
        rank = np.array([r / begun for r in start])
    else:
        rank = np.full(n, 1.0 / n)
    base = (1.0 - damping) / n
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 - reported to the caller
        lost = np.cumsum(rank[dangling])[-1] if len(dangling) else 0
        new = np.full(n, base + damping * lost / n)
        np.add.at(new, dst, (damping * rank[src]) * share)
        delta = np.cumsum(np.abs(new - rank))[-1]
        rank = new
        if delta < tolerance:
            break
    return rank.tolist(), iterations


def percentiles(ranks: Mapping[str, float]) -> dict[str, float]:
    """Each key's place in the ranking as a fraction in (0, 1]: 1.0 is the most central. Ties
    share the lowest place of their group, so the crowd of least-referenced definitions sits
    near 0 (a prior must not lift them above definitions outside the graph)."""
    ordered = sorted(ranks.items(), key=lambda kv: (kv[1], kv[0]))
    n = len(ordered)
    out: dict[str, float] = {}
    i = 0
    while i < n:
        j = i
        while j + 1 < n and ordered[j + 1][1] == ordered[i][1]:
            j += 1
        pct = (i + 1) / n
        for k in range(i, j + 1):
            out[ordered[k][0]] = pct
        i = j + 1
    return out


def edge_weight(count: int) -> float:
    """A definition naming another five times is a stronger tie than once, not five times one."""
    return math.sqrt(count)
