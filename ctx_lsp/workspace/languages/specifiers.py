"""What a TypeScript or JavaScript import of a bare specifier names inside the workspace.

``import { Effect } from "effect"`` in a monorepo, or in the package itself, is the workspace's
own code, not a dependency's; so is ``import { Button } from "@/components/Button"``. Two
things decide it, read the way Node and ``tsc`` read them (best effort, never a network or a
``node_modules``):

- **the workspace's own packages**: a ``package.json`` at or above an indexed folder names a
  package; its ``exports`` (subpath patterns included), ``source``, ``types``, ``module`` and
  ``main`` say which file a specifier is. They name built files (``./dist/esm/Effect.js``): the
  source beside them is tried (``src/Effect``), then the usual layouts (``src/<sub>``,
  ``<sub>``, each as a folder's ``index`` too).
- **``tsconfig.json`` / ``jsconfig.json``** nearest the importing file: ``compilerOptions.paths``
  (``"@/*": ["./src/*"]``, the longest matching pattern first) and ``baseUrl``, through
  ``extends`` chains of relative files.

``ImportMap.modules`` gives the candidate modules (root-relative paths without extension, as
``modules.module_for`` names them), best first; ``graph.Resolver`` takes the first one the
workspace has. A manifest or config that cannot be read counts as absent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_MAX_CONFIG_BYTES = 1024 * 1024
_MAX_EXTENDS = 4  # ``extends`` hops followed (cycles, deep chains)
# Where packages put what they build, and the format folders inside (``dist/esm/x.js``): the
# source is looked for in SOURCE_DIRS instead.
_BUILD_DIRS = frozenset({"dist", "distribution", "build", "lib", "out", "esm", "cjs", "es", "umd"})
_FORMAT_DIRS = frozenset({"esm", "esm5", "es2015", "cjs", "mjs", "dts", "types", "typings", "node", "browser"})
_SOURCE_DIRS = ("src", "source")
_EXTENSION = re.compile(r"(\.d)?\.(m|c)?(j|t)sx?$")
_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")


@dataclass(frozen=True, slots=True)
class _Package:
    folder: str  # relative to the root ("" at the root)
    exports: dict[str, list[str]]  # "." / "./sub" / "./x/*" → its targets, in the order written
    entries: list[str]  # source, types, module, main: what "." is without ``exports``


@dataclass(frozen=True, slots=True)
class _Aliases:
    base: str | None  # baseUrl, relative to the root; None when the config sets none
    paths: list[tuple[str, list[str]]]  # (pattern, targets relative to the root), longest prefix first


_UNREAD = _Aliases(None, [])  # a folder's config not looked for yet (None: looked for, none)


class ImportMap:
    """The workspace's packages and path aliases, read once on first use: ``folders`` gives the
    folders (root-relative) that hold the workspace's scripts, where packages and configs are
    looked for, at or above each."""

    def __init__(self, root: str, folders: Callable[[], Iterable[str]]) -> None:
        self.root = root
        self._folders = folders
        self._packages: dict[str, _Package] | None = None
        self._aliases: dict[str, _Aliases | None] = {}  # folder → the aliases of its nearest config

    def modules(self, spec: str, folder: str) -> list[str]:
        """Candidate modules for ``spec`` imported from a file in ``folder``, best first."""
        if spec.startswith(".") or spec.startswith("/") or ":" in spec:
            return []
        out: list[str] = []
        aliases = self._aliases.get(folder, _UNREAD)
        if aliases is _UNREAD:
            aliases = self._aliases[folder] = _nearest_aliases(self.root, folder)
        if aliases is not None:
            out += _aliased(spec, aliases)
        if self._packages is None:
            self._packages = _packages(self.root, self._folders())
        name, sub = _split(spec)
        package = self._packages.get(name)
        if package is not None:
            out += _in_package(package, sub)
        return list(dict.fromkeys(out))


def workspace_packages(root: str, paths: Iterable[str]) -> dict[str, str]:
    """The workspace's own JavaScript and TypeScript packages: name → folder (root-relative),
    from the ``package.json`` at or above the folders of those ``paths`` that are scripts."""
    return {name: p.folder for name, p in sorted(_packages(root, script_folders(paths)).items())}


def script_folders(paths: Iterable[str]) -> set[str]:
    """The folders of those ``paths`` that are TypeScript or JavaScript files."""
    return {p.rpartition("/")[0] for p in paths if p.endswith(SCRIPT_SUFFIXES)}


def _split(spec: str) -> tuple[str, str]:
    """``@scope/pkg/a/b`` → (``@scope/pkg``, ``a/b``); ``pkg/a`` → (``pkg``, ``a``)."""
    parts = spec.split("/")
    n = 2 if spec.startswith("@") else 1
    return "/".join(parts[:n]), "/".join(parts[n:])


def _join(*parts: str) -> str:
    """Root-relative, normalised (``a/./b/../c`` → ``a/c``); "" for the root; None-safe."""
    out: list[str] = []
    for piece in "/".join(p for p in parts if p).split("/"):
        if piece == "..":
            if out:
                out.pop()
        elif piece not in (".", ""):
            out.append(piece)
    return "/".join(out)


def _module(path: str) -> str:
    return _EXTENSION.sub("", path)


def _with_index(modules: Iterable[str]) -> list[str]:
    out: list[str] = []
    for m in modules:
        out += [m, f"{m}/index"] if m else ["index"]
    return out


# -- packages ------------------------------------------------------------------------------------


def _packages(root: str, folders: Iterable[str]) -> dict[str, _Package]:
    seen: set[str] = set()
    found: dict[str, _Package] = {}
    for folder in folders:
        parts = folder.split("/") if folder else []
        for n in range(len(parts), -1, -1):
            here = "/".join(parts[:n])
            if here in seen:
                break  # its ancestors were looked at with it
            seen.add(here)
            package = _read_package(root, here)
            if package is not None:
                name, value = package
                # the shallowest wins: a nested fixture's copy of a name is not the package
                if name not in found or len(here) < len(found[name].folder):
                    found[name] = value
    return found


def _read_package(root: str, here: str) -> tuple[str, _Package] | None:
    data = _load(os.path.join(root, here, "package.json"), jsonc=False)
    name = data.get("name") if data else None
    if not isinstance(name, str) or not name:
        return None
    exports: dict[str, list[str]] = {}
    raw = data.get("exports")
    if isinstance(raw, dict) and raw and all(isinstance(k, str) and k.startswith(".") for k in raw):
        for key, value in raw.items():
            exports[key] = _strings(value)
    elif raw is not None:  # a string, an array or conditions alone: what "." is
        exports["."] = _strings(raw)
    entries = [v for k in ("source", "types", "typings", "module", "main") if isinstance(v := data.get(k), str)]
    return name, _Package(here, exports, entries)


def _strings(value: object) -> list[str]:
    """The paths in an ``exports`` value (conditions and fallbacks, in the order written)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []  # null: the subpath is closed


def _in_package(package: _Package, sub: str) -> list[str]:
    key = f"./{sub}" if sub else "."
    targets = package.exports.get(key)
    if targets is None:
        targets = _pattern(package.exports, key)
    if targets == [] and sub:  # ``"./internal/*": null``: closed to importers
        return []
    if not sub:
        targets = [*(targets or ()), *package.entries]
    out: list[str] = []
    for target in targets or ():
        out += _sources(_module(_join(target)))
    if sub:
        out += [f"{d}/{sub}" for d in _SOURCE_DIRS] + [sub, f"lib/{sub}"]
    else:
        out += [*_SOURCE_DIRS, "", "lib"]
    return [_join(package.folder, m) for m in _with_index(dict.fromkeys(out))]


def _pattern(exports: dict[str, list[str]], key: str) -> list[str] | None:
    """``"./*": "./dist/*.js"`` for ``./Effect``: the longest matching prefix wins, as Node's."""
    best: tuple[int, list[str]] | None = None
    for pattern, targets in exports.items():
        head, star, tail = pattern.partition("*")
        fits = star and key.startswith(head) and key.endswith(tail) and len(key) >= len(head) + len(tail)
        if fits and (best is None or len(head) > best[0]):
            middle = key[len(head) : len(key) - len(tail)]
            best = (len(head), [t.replace("*", middle) for t in targets])
    return best[1] if best is not None else None


def _sources(built: str) -> list[str]:
    """A target and where its source would be: ``dist/esm/Effect`` → itself, ``src/Effect``,
    ``src/esm/Effect``, ``source/…``."""
    parts = built.split("/") if built else []
    out = [built]
    if parts and parts[0] in _BUILD_DIRS:
        rest = parts[1:]
        if rest and rest[0] in _FORMAT_DIRS:
            out += [_join(d, *rest[1:]) for d in _SOURCE_DIRS]
        out += [_join(d, *rest) for d in _SOURCE_DIRS]
    return out


# -- tsconfig / jsconfig paths -------------------------------------------------------------------


def _nearest_aliases(root: str, folder: str) -> _Aliases | None:
    """The path aliases of the config nearest ``folder`` (at or above it, inside the root)."""
    parts = folder.split("/") if folder else []
    for n in range(len(parts), -1, -1):
        here = "/".join(parts[:n])
        for name in ("tsconfig.json", "jsconfig.json"):
            path = os.path.join(root, here, name)
            if os.path.isfile(path):
                return _read_aliases(root, path)
    return None


def _read_aliases(root: str, path: str) -> _Aliases | None:
    base: str | None = None
    paths: dict[str, list[str]] | None = None
    paths_dir = ""
    for _ in range(_MAX_EXTENDS + 1):  # the config, then what it extends, until both are known
        here = os.path.relpath(os.path.dirname(path), root).replace(os.sep, "/")
        if here.startswith(".."):
            break  # outside the workspace: not read
        here = "" if here == "." else here
        data = _load(path, jsonc=True)
        if data is None:
            break
        options = data.get("compilerOptions")
        options = options if isinstance(options, dict) else {}
        if base is None and isinstance(options.get("baseUrl"), str):
            base = _join(here, options["baseUrl"])
        if paths is None and isinstance(options.get("paths"), dict):
            written = options["paths"].items()
            paths = {k: [t for t in v if isinstance(t, str)] for k, v in written if isinstance(v, list)}
            paths_dir = here
        parent = data.get("extends")
        if isinstance(parent, list):  # TypeScript 5: the last one wins where they disagree
            parent = next((p for p in reversed(parent) if isinstance(p, str) and p.startswith(".")), None)
        if (base is not None and paths is not None) or not isinstance(parent, str) or not parent.startswith("."):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), parent))
        if not path.endswith(".json"):
            path += ".json"
    if base is None and paths is None:
        return None
    start = base if base is not None else paths_dir  # paths are relative to baseUrl when set
    ordered = sorted((paths or {}).items(), key=lambda kv: -len(kv[0].partition("*")[0]))
    return _Aliases(base, [(k, [_join(start, t) for t in ts]) for k, ts in ordered])


def _aliased(spec: str, aliases: _Aliases) -> list[str]:
    out: list[str] = []
    for pattern, targets in aliases.paths:
        head, star, tail = pattern.partition("*")
        if star:
            if spec.startswith(head) and spec.endswith(tail) and len(spec) >= len(head) + len(tail):
                middle = spec[len(head) : len(spec) - len(tail)]
                out += [_module(t.replace("*", middle)) for t in targets]
                break
        elif spec == pattern:
            out += [_module(t) for t in targets]
            break
    if aliases.base is not None:
        out.append(_join(aliases.base, _module(spec)))
    return _with_index(out)


def _load(path: str, jsonc: bool) -> dict | None:
    """A JSON object from ``path`` (comments and trailing commas allowed when ``jsonc``, as
    tsconfig files have them), or None."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MAX_CONFIG_BYTES:
            return None
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if jsonc:
            text = _COMMENT_OR_STRING.sub(lambda m: m.group() if m.group().startswith('"') else "", text)
            text = _TRAILING_COMMA.sub(r"\1", text)
        data = json.loads(text)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
