"""Which folder of the workspace a Go import path names, read from its ``go.mod`` files.

A ``go.mod`` at or above a folder of Go files declares the module path that folder's import paths
start with (``module example.com/app``: ``example.com/app/internal/store`` is ``internal/store``
under the ``go.mod``'s folder). An import path under none of the workspace's modules is a
dependency's, even when a folder of the workspace ends the same way (``github.com/pkg/errors`` is
not the workspace's ``pkg/errors``) — unless a module vendors it (``vendor/github.com/pkg/errors``).
A workspace without a ``go.mod`` (sources laid out by import path, a copy of some packages) is
left to the import path's trailing folders (``go.package_match``). Read once, on first use, inside
the workspace only; a ``go.mod`` that cannot be read counts as absent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from ctx_lsp.workspace.languages.go import package_match, package_name

_MAX_GO_MOD_BYTES = 1024 * 1024
_MODULE = re.compile(r'^\s*module\s+"?([^\s"]+)"?', re.M)


class GoModules:
    """The workspace's Go modules: ``folders`` gives the folders (root-relative) of its Go files,
    where ``go.mod`` files are looked for, at or above each."""

    def __init__(self, root: str | None, folders: Callable[[], Iterable[str]]) -> None:
        self.root = root
        self._folders = folders
        self._modules: list[tuple[str, str]] | None = None  # (module path, its folder), longest path first
        self._go_folders: set[str] = set()

    def known(self) -> bool:
        """Whether the workspace declares any module (else import paths are matched by their ends)."""
        return bool(self._read())

    def modules(self) -> list[tuple[str, str]]:
        """``(module path, its folder)`` of each ``go.mod``, longest path first."""
        return list(self._read())

    def folder(self, import_path: str) -> str | None:
        """The workspace folder ``import_path`` names ("" for a module's root folder at the
        workspace's root), or None: a dependency's package, not the workspace's."""
        modules = self._read()
        for module, where in modules:
            if import_path == module or import_path.startswith(module + "/"):
                return _join(where, import_path[len(module) + 1 :])
        for _, where in modules:  # a module's vendored copy of a dependency
            vendored = _join(where, "vendor", import_path)
            if vendored in self._go_folders:
                return vendored
        return None

    def _read(self) -> list[tuple[str, str]]:
        if self._modules is None:
            self._go_folders = set(self._folders())
            found: dict[str, str] = {}  # folder → module path
            seen: set[str] = set()
            for folder in self._go_folders:
                here = folder
                while here not in seen:
                    seen.add(here)
                    module = _module_of(self.root, here) if self.root is not None else None
                    if module is not None:
                        found[here] = module
                    if not here:
                        break
                    here = here.rpartition("/")[0]
            self._modules = sorted(((m, f) for f, m in found.items()), key=lambda mf: (-len(mf[0]), mf))
        return self._modules


Candidates = list[tuple[str, str]]  # (qualname, path) of definitions of one name


def of_go_package(modules: GoModules | None, import_path: str, short: str, candidates: Candidates) -> Candidates:
    """Of Go definitions called ``short``, the package-level ones of the package ``import_path``
    names: by the workspace's ``go.mod`` files when it has any, else by the folders its path ends
    with (``go.package_match``: the most trailing parts in common)."""
    if modules is not None and modules.known():
        folder = modules.folder(import_path)
        if folder is None:  # a dependency's package
            return []
        out = []
        for q, p in candidates:
            package = q[: -len(short) - 1]
            at_root = not folder and "." not in package  # a root package goes by its name
            if p.rpartition("/")[0] == folder and (package == folder or at_root):
                out.append((q, p))
        return out
    # a package whose folder does not end as the path does (nor is named so) shares nothing with
    # it: turned away before it is scored (``New`` has hundreds of candidates in a large tree)
    ends = (import_path.rpartition("/")[2], package_name(import_path))
    scored = [
        (package_match(import_path, owner), q, p)
        for q, p in candidates
        if (owner := q.rpartition(".")[0]).rpartition("/")[2] in ends
    ]
    best = max((s for s, _, _ in scored), default=0)
    return [(q, p) for s, q, p in scored if s == best] if best > 0 else []


def workspace_modules(root: str, paths: Iterable[str]) -> dict[str, str]:
    """The workspace's own Go modules: module path → folder (root-relative), from the ``go.mod``
    at or above the folders of those ``paths`` that are Go files."""
    folders = go_folders(paths)
    return {module: where for module, where in sorted(GoModules(root, lambda: folders).modules())}


def go_folders(paths: Iterable[str]) -> set[str]:
    """The folders of those ``paths`` that are Go files."""
    return {p.rpartition("/")[0] for p in paths if p.endswith(".go")}


def _module_of(root: str, folder: str) -> str | None:
    """The module path the ``go.mod`` in ``folder`` declares, if it has a readable one."""
    path = os.path.join(root, folder, "go.mod")
    try:
        if not os.path.isfile(path):  # most folders have none: one stat, not a walk of the path
            return None
        real, top = os.path.realpath(path), os.path.realpath(root)
        if os.path.commonpath([real, top]) != top or os.path.getsize(real) > _MAX_GO_MOD_BYTES:
            return None  # a link out of the workspace, or not a go.mod a person wrote
        with open(real, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    m = _MODULE.search(text)
    return m.group(1) if m else None


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)
