"""Names: what a (dotted) name refers to, through modules, imports and re-exports.

``resolve_name`` answers for a person or a tool (a name typed in a query or a pin, maybe
relative to a file); ``sql_resolver`` gives the reference graph's ``graph.Resolver`` the same
tables through SQL lookups, so that one file's update does not load them whole.
"""

from __future__ import annotations

import sqlite3

from ctx_lsp.workspace import graph
from ctx_lsp.workspace.index import lookups
from ctx_lsp.workspace.index.db import IndexDb, IndexedSymbol, normalise_rel
from ctx_lsp.workspace.parse import module_name_for


def resolve_name(db: IndexDb, name: str, from_rel: str | None) -> IndexedSymbol | None:
    """The symbol a (possibly dotted) name refers to (see ``WorkspaceIndex.resolve_name``)."""
    name = name.strip().strip(".")
    if not name:
        return None
    sym = lookups.get(db, name)
    if sym is not None:
        return sym
    if from_rel:
        from_rel = normalise_rel(from_rel)
        for candidate in _candidates(db, name, from_rel):
            sym = _follow(db, candidate, 0)
            if sym is not None:
                return sym
    return _follow(db, name, 0)  # re-exports (``pkg.Name``), then a unique suffix


def imports_of(db: IndexDb, rel: str) -> list[tuple[str, str]]:
    """``(local_name, target_qualname)`` pairs of one file."""
    rows = db.reader().execute("SELECT local_name, target FROM imports WHERE path = ? ORDER BY rowid", (rel,))
    return [(r[0], r[1]) for r in rows]


def importers_of(db: IndexDb, module: str) -> list[str]:
    """Modules (qualnames, sorted) that import ``module`` or anything inside it."""
    # A range instead of LIKE 'm.%': it uses the index, and "_" in names is not a wildcard.
    # "/" is the character right after "." in ASCII, so [m. , m/) is every "m.<anything>".
    rows = db.reader().execute(
        "SELECT DISTINCT coalesce(s.qualname, i.path) FROM imports i "
        "LEFT JOIN symbols s ON s.path = i.path AND s.kind = 'module' "
        "WHERE (i.target = ? OR (i.target >= ? AND i.target < ?)) AND i.path NOT IN "
        "(SELECT path FROM symbols WHERE kind = 'module' AND qualname = ?)",
        (module, module + ".", module + "/", module),
    )
    return sorted(r[0] for r in rows)


def module_of(db: IndexDb, rel: str) -> str:
    """The module name of a file: as indexed, or as its path says."""
    row = db.reader().execute("SELECT qualname FROM symbols WHERE path = ? AND kind = 'module'", (rel,)).fetchone()
    return row[0] if row else module_name_for(rel)


def _candidates(db: IndexDb, name: str, rel: str) -> list[str]:
    """What ``name`` may mean in file ``rel``: a name of its own module, then through its
    imports, then through its star imports."""
    head, _, rest = name.partition(".")
    out = [f"{module_of(db, rel)}.{name}"]
    stars = []
    for local, target in imports_of(db, rel):
        if local == head:
            out.append(f"{target}.{rest}" if rest else target)
        elif local == "*":
            stars.append(f"{target}.{name}")
    return out + stars


def _follow(db: IndexDb, qualname: str, depth: int) -> IndexedSymbol | None:
    """``qualname`` itself, or what it names through a module's imports (re-exports)."""
    sym = lookups.get(db, qualname)
    if sym is not None or depth > 4:
        return sym
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
        path = _module_path(db.reader(), ".".join(parts[:cut]))
        if path is None:
            continue
        rest = ".".join(parts[cut:])
        for candidate in _candidates(db, rest, path)[1:]:  # [0] is qualname itself
            if candidate != qualname:
                sym = _follow(db, candidate, depth + 1)
                if sym is not None:
                    return sym
        return None
    return _unique_suffix(db, qualname)  # e.g. ``Class.method`` of a module not named


def _unique_suffix(db: IndexDb, name: str) -> IndexedSymbol | None:
    last = name.rpartition(".")[2]
    suffix = "." + name
    rows = db.reader().execute("SELECT DISTINCT qualname FROM symbols WHERE name = ?", (last,))
    found = [q for (q,) in rows if q.endswith(suffix)]
    return lookups.get(db, found[0]) if len(found) == 1 else None


def _module_path(conn: sqlite3.Connection, module: str) -> str | None:
    """The file of an indexed module."""
    row = conn.execute("SELECT path FROM symbols WHERE qualname = ? AND kind = 'module' LIMIT 1", (module,)).fetchone()
    return row[0] if row else None


def sql_resolver(conn: sqlite3.Connection) -> graph.Resolver:
    """A ``graph.Resolver`` whose mappings are answered by SQL on ``conn`` (one file's update
    needs a few lookups, not the whole tables in memory)."""
    return graph.Resolver(_KindLookup(conn), _ModuleLookup(conn), _ImportLookup(conn), _StarLookup(conn))


class _KindLookup:
    """qualname → kind (a definition's kind wins over a module of the same name)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, qualname: str, default: str | None = None) -> str | None:
        rows = self.conn.execute("SELECT kind FROM symbols WHERE qualname = ?", (qualname,)).fetchall()
        if not rows:
            return default
        kinds = {r[0] for r in rows}
        return next(iter(kinds - {"module"}), "module")


class _ModuleLookup(_KindLookup):
    """module → its file."""

    def get(self, module: str, default: str | None = None) -> str | None:
        path = _module_path(self.conn, module)
        return path if path is not None else default


class _ImportLookup(_KindLookup):
    """file → {local name: target} of its imports (star imports aside)."""

    def get(self, path: str, default=None):  # type: ignore[override]
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT local_name, target FROM imports WHERE path = ? AND local_name != '*' ORDER BY rowid", (path,)
            )
        }


class _StarLookup(_KindLookup):
    """file → the modules it star-imports."""

    def get(self, path: str, default=None):  # type: ignore[override]
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT target FROM imports WHERE path = ? AND local_name = '*' ORDER BY rowid", (path,)
            )
        ]
