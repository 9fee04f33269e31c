"""Names: what a (dotted) name refers to, through modules, imports and re-exports.

``resolve_name`` answers for a person or a tool (a name typed in a query or a pin, maybe
relative to a file); ``lookup_name`` adds what to say when it finds nothing — the symbols an
ambiguous short name could mean, or close names for an unknown one; ``sql_resolver`` gives the
reference graph's ``graph.Resolver`` the same tables through SQL lookups, so that one file's
update does not load them whole.
"""

from __future__ import annotations

import difflib
import re
import sqlite3

import msgspec

from ctx_lsp.workspace import graph
from ctx_lsp.workspace.index import lookups, search
from ctx_lsp.workspace.index.db import TEST_CASE_JSON, IndexDb, IndexedSymbol, normalise_rel, select_in
from ctx_lsp.workspace.languages import DECLARATION_MARK, kind_label, language_of, last_part
from ctx_lsp.workspace.languages.gomod import GoModules, go_folders
from ctx_lsp.workspace.languages.specifiers import ImportMap, script_folders
from ctx_lsp.workspace.languages.treesitter import by_name_target
from ctx_lsp.workspace.parse import module_name_for

# ``FILE:NAME``, gdb's way to say which of several functions of one name (a C ``static`` function,
# each program's ``main``): a path, one colon (not Rust's ``::``), then a name; or Python's
# ``module:attr`` (an entry point, ``app.main:app``)
_IN_FILE = re.compile(r"(?P<file>[^\s:]+):(?P<name>[^\s:][^\s]*)")


def resolve_name(db: IndexDb, name: str, from_rel: str | None) -> IndexedSymbol | None:
    """The symbol a (possibly dotted) name refers to (see ``WorkspaceIndex.resolve_name``)."""
    name = name.strip().strip(".").strip(":")
    if not name:
        return None
    in_file = _IN_FILE.fullmatch(name)
    if in_file is not None:
        found = _in_file(db, in_file["file"], in_file["name"])
        if found is not None or "/" in in_file["file"]:
            return found
        name = f"{in_file['file']}.{in_file['name']}"  # Python's ``module:attr`` (``app.main:app``)
    sym = lookups.get(db, name)
    if sym is not None:
        return sym
    if name.startswith(("crate::", "self::", "super::")):  # Rust, relative to the file's crate
        name = name.partition("::")[2]
    lang = language_of(from_rel) if from_rel else None
    if lang is not None and lang != "python":
        return _resolve_by_name(db, name, normalise_rel(from_rel or ""), lang)
    if from_rel:
        from_rel = normalise_rel(from_rel)
        for candidate in _candidates(db, name, from_rel):
            sym = _follow(db, candidate, 0)
            if sym is not None:
                return sym
    return _follow(db, name, 0)  # re-exports (``pkg.Name``), then a unique suffix


def _in_file(db: IndexDb, written: str, name: str) -> IndexedSymbol | None:
    """``name`` as a symbol of the file ``written`` means (``tools/server.c``, ``server.c`` when
    one file ends so): its own qualified name, else the one of that file's symbols that ends with it."""
    files = lookups.files_matching(db, written, 1)
    if len(files) != 1:
        return None
    rows = db.reader().execute(
        "SELECT qualname FROM symbols WHERE path = ? AND name = ? AND kind != 'module'", (files[0], last_part(name))
    )
    found = sorted({q for (q,) in rows if _ends_with(q, name)}, key=lambda q: (q != name, q))
    if not found or (len(found) > 1 and found[0] != name):
        return None
    return lookups.get(db, found[0], files[0])


def _resolve_by_name(db: IndexDb, name: str, rel: str, lang: str) -> IndexedSymbol | None:
    """A name used in a file of a tree-sitter language: the file's own definition of that name,
    else the one the reference graph would pick (``graph.Resolver``: nearest folder), else a
    unique qualified-name suffix anywhere."""
    short = last_part(name)
    conn = db.reader()
    rows = conn.execute("SELECT qualname FROM symbols WHERE path = ? AND name = ? AND kind != 'module'", (rel, short))
    own = [q for (q,) in rows if _ends_with(q, name)]
    if len(set(own)) == 1:
        return lookups.get(db, own[0])
    if short == name:
        found = sql_resolver(conn).resolve(by_name_target(lang, rel, name))
        if found is not None:
            return lookups.get(db, found)
    return _unique_suffix(db, name)


def _ends_with(qualname: str, name: str) -> bool:
    """``qualname`` is ``name`` or ends with it after a separator, whichever the language spells
    (``Type.method`` finds ``krate::Type::method`` too, ``usage`` a C file's ``tools/a.c:usage``);
    or ``name`` is a Go name with its package's import path, which ends with the package's folder
    (``example.com/app/internal/store.Open`` finds ``internal/store.Open``)."""
    if qualname == name or qualname.endswith(("." + name, ":" + name, "/" + name)) or name.endswith("/" + qualname):
        return True
    other = name.replace("::", ".") if "::" in name else name.replace(".", "::")
    return other != name and (qualname == other or qualname.endswith(("." + other, "::" + other)))


MAX_CANDIDATES = 12  # of an ambiguous name, listed most central first
MAX_SUGGESTIONS = 5  # close names offered for an unknown one
CLOSE_NAME_CUTOFF = 0.6  # difflib's similarity ratio a suggested name must reach
DECLARATION_SUFFIXES = (".pyi", ".d.ts", ".d.mts", ".d.cts")  # files that declare what code beside them defines


class NameLookup(msgspec.Struct, frozen=True, kw_only=True):
    """What a name typed by a person or an agent refers to: its ``symbol``; else, when it is a
    short name several symbols end with, those ``candidates`` (most central first, ``more``
    not listed); else ``suggestions``: qualified names close to it."""

    name: str
    symbol: IndexedSymbol | None = None
    candidates: tuple[IndexedSymbol, ...] = ()
    more: int = 0
    suggestions: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return self.symbol is None and bool(self.candidates)

    def problem(self) -> str | None:
        """Why the name gives no symbol and what to do instead (None when it gives one)."""
        if self.symbol is not None:
            return None
        if self.candidates:
            listed = "; ".join(
                f"{s.qualname} ({kind_label(s.kind, s.signature)}, {s.path}:{s.start_line + 1})"
                for s in self.candidates
            )
            more = f"; and {self.more} more" if self.more else ""
            count = len(self.candidates) + self.more
            first = self.candidates[0]
            if all(s.qualname == first.qualname for s in self.candidates):  # one name, several files
                how = f"Name the file too, as FILE:NAME ({first.path}:{first.qualname})"
            else:
                how = "Use a qualified name"
            return f"{self.name!r} is ambiguous: {count} symbols have that name: {listed}{more}. {how}"
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else " (nor any similar name)"
        return f"no symbol {self.name!r} in the workspace index{hint}"


def lookup_name(db: IndexDb, name: str, from_rel: str | None) -> NameLookup:
    """``resolve_name``, and when it finds nothing, the candidates or suggestions (see ``NameLookup``)."""
    clean = name.strip().strip(".")
    sym = resolve_name(db, clean, from_rel) if clean else None
    if sym is not None and sym.qualname == clean:
        # one name, several files (C's ``static`` functions, each program's ``main``): the file
        # the name is used in says which, else it is for the person to say (``FILE:NAME``)
        by_file = {s.path: s for s in reversed(lookups.get_all(db, clean))}
        code = {
            p: s
            for p, s in by_file.items()
            if not p.endswith(DECLARATION_SUFFIXES) and DECLARATION_MARK not in s.decorators
        }
        by_file = code or by_file  # a ``.pyi`` stub, a ``.d.ts`` or a header declares the same names
        if len(by_file) > 1:
            here = by_file.get(normalise_rel(from_rel)) if from_rel else None
            if here is not None:
                return NameLookup(name=name, symbol=here)
            candidates = tuple(sorted(by_file.values(), key=lambda s: (s.path, s.start_line)))
            more = max(0, len(by_file) - MAX_CANDIDATES)
            return NameLookup(name=name, candidates=candidates[:MAX_CANDIDATES], more=more)
    if sym is not None:
        return NameLookup(name=name, symbol=sym)
    if not clean:
        return NameLookup(name=name)
    matches = _suffix_matches(db, clean)
    if len(matches) > 1:
        pct = lookups.centrality(db, matches)
        ordered = sorted(matches, key=lambda q: (-pct.get(q, 0.0), q))
        shown = lookups.get_many(db, ordered[:MAX_CANDIDATES])
        candidates = tuple(shown[q] for q in ordered[:MAX_CANDIDATES] if q in shown)
        return NameLookup(name=name, candidates=candidates, more=max(0, len(matches) - MAX_CANDIDATES))
    return NameLookup(name=name, suggestions=tuple(_suggestions(db, clean)))


def _suffix_matches(db: IndexDb, name: str) -> list[str]:
    """Qualified names ending with ``.name`` (``reserve``, ``Inventory.reserve``), modules aside."""
    rows = db.reader().execute(
        "SELECT DISTINCT qualname FROM symbols WHERE name = ? AND kind != 'module'", (last_part(name),)
    )
    return sorted(q for (q,) in rows if q != name and _ends_with(q, name))


def _suggestions(db: IndexDb, name: str) -> list[str]:
    """Qualified names close to ``name``: symbols whose own name is spelt like its last part
    (case aside, typos within difflib's ratio), then what a search for its words finds."""
    last = last_part(name)
    conn = db.reader()
    by_lower: dict[str, list[str]] = {}
    for (n,) in conn.execute("SELECT DISTINCT name FROM symbols WHERE kind != 'module'"):
        by_lower.setdefault(n.lower(), []).append(n)
    close = difflib.get_close_matches(last.lower(), by_lower, n=MAX_SUGGESTIONS, cutoff=CLOSE_NAME_CUTOFF)
    rank = {n: i for i, n in enumerate(close)}
    names = [n for lower in close for n in by_lower[lower]]
    sql = "SELECT qualname, name FROM symbols WHERE name IN ({}) AND kind != 'module'"
    found = sorted(set(select_in(conn, sql, names)), key=lambda r: (rank[r[1].lower()], r[0]))
    out = list(dict.fromkeys(q for q, _ in found))
    out += [h.symbol.qualname for h in search.search(db, name, MAX_SUGGESTIONS, {"class", "function", "method"})]
    return list(dict.fromkeys(out))[:MAX_SUGGESTIONS]


def bound_by_package(db: IndexDb, module: IndexedSymbol) -> IndexedSymbol | None:
    """What Python's ``pkg.m`` is when ``pkg/__init__.py`` imports a name ``m`` (``from .m import
    m``): the import binds the package's attribute over its submodule, so ``pkg.m`` is that
    object (pvlib's ``spectrum.spectrl2`` is the function). None for a module nothing rebinds."""
    parent, _, last = module.qualname.rpartition(".")
    if not parent or language_of(module.path) != "python":
        return None
    package = lookups.get(db, parent)
    if package is None or package.kind != "module" or not package.path.endswith("__init__.py"):
        return None
    target = dict(imports_of(db, package.path)).get(last)
    if target is None or target == module.qualname:
        return None
    found = resolve_name(db, target, package.path)
    return found if found is not None and found.kind != "module" else None


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
    rows = db.reader().execute("SELECT DISTINCT qualname FROM symbols WHERE name = ?", (last_part(name),))
    found = [q for (q,) in rows if q != name and _ends_with(q, name)]
    return lookups.get(db, found[0]) if len(found) == 1 else None


def _module_path(conn: sqlite3.Connection, module: str) -> str | None:
    """The file of an indexed module."""
    row = conn.execute("SELECT path FROM symbols WHERE qualname = ? AND kind = 'module' LIMIT 1", (module,)).fetchone()
    return row[0] if row else None


def sql_resolver(conn: sqlite3.Connection, root: str | None = None) -> graph.Resolver:
    """A ``graph.Resolver`` whose mappings are answered by SQL on ``conn`` (one file's update
    needs a few lookups, not the whole tables in memory); given the workspace's ``root``, it reads
    the workspace's packages, path aliases and Go modules when an import needs them."""

    def modules() -> list[str]:
        return [r[0] for r in conn.execute("SELECT DISTINCT path FROM symbols WHERE kind = 'module'")]

    specifiers = ImportMap(root, lambda: script_folders(modules())) if root is not None else None
    go = GoModules(root, lambda: go_folders(modules())) if root is not None else None
    tables = (_KindLookup(conn), _ModuleLookup(conn), _ImportLookup(conn), _StarLookup(conn), _NameLookup(conn))
    return graph.Resolver(*tables, specifiers, go)


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


class _NameLookup(_KindLookup):
    """short name → (qualname, path) of each non-module symbol so named, test cases aside
    (nothing calls one by name: ``refgraph.update_graph`` leaves them out the same way)."""

    def get(self, name: str, default=None):  # type: ignore[override]
        sql = "SELECT qualname, path FROM symbols WHERE name = ? AND kind != 'module' AND instr(decorators, ?) = 0"
        return self.conn.execute(sql, (name, TEST_CASE_JSON)).fetchall()


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
