"""What a file's module is called, the way that language's users name it.

- Python: the dotted import path (``parse.module_name_for``).
- Rust: ``crate::module`` with the crate's own name from the nearest ``Cargo.toml`` (``-`` read
  as ``_``, as rustc does): ``src/lib.rs`` and ``src/main.rs`` are the crate, ``src/a/mod.rs``
  and ``src/a.rs`` are ``crate::a``; ``src/bin/x.rs``, ``tests/x.rs``, ``examples/x.rs`` and
  ``benches/x.rs`` are crates of their own (``x``). Without a ``Cargo.toml``, the path.
- TypeScript and JavaScript: the path without its extension (``src/core/Ky``), what an import
  names; definitions are ``src/core/Ky.Ky.create``.
- Go, Java, C and C++: the file's path. Their definitions are named by the package the file
  declares (``cli.Command.Run``, ``org.jsoup.nodes.Element.text``) or, in C and C++, by their
  namespaces and classes alone (``ns::Parser::parse``, ``sqlite3_open``).

Returns the module's qualified name and the prefix of its top-level definitions (None: the
package the file declares, read from its tree).
"""

from __future__ import annotations

import functools
import os
import tomllib

from ctx_lsp.workspace.languages import EXTENSIONS

_CRATE_TARGET_DIRS = ("bin", "tests", "examples", "benches")
_MAX_MANIFEST_BYTES = 1024 * 1024


def module_for(lang: str, rel: str, root: str | None) -> tuple[str, str | None]:
    if lang == "rust":
        module = rust_module(rel, root)
        return module, module
    if lang in ("typescript", "tsx", "javascript"):
        module = _strip_extension(rel)
        return module, module
    if lang in ("go", "java"):
        return rel, None
    return rel, ""


def _strip_extension(rel: str) -> str:
    name = rel.rpartition("/")[2]
    dot = name.rfind(".")
    if dot > 0 and name[dot:].lower() in EXTENSIONS:
        return rel[: len(rel) - len(name) + dot]
    return rel


def rust_module(rel: str, root: str | None) -> str:
    parts = _strip_extension(rel).split("/")
    crate_dir, crate = _crate_of(root, "/".join(parts[:-1])) if root else ("", "")
    inside = parts[len(crate_dir.split("/")) if crate_dir else 0 :]
    if not crate:
        crate = os.path.basename(os.path.abspath(os.path.join(root or ".", crate_dir))) if root else ""
        crate = crate.replace("-", "_") or "crate"
    if inside and inside[0] in _CRATE_TARGET_DIRS[1:]:  # tests/x.rs, examples/x.rs: crates of their own
        inside = inside[1:]
        crate, inside = (inside[0], inside[1:]) if inside else (crate, inside)
    elif inside[:2] == ["src", "bin"] and len(inside) > 2:
        crate, inside = inside[2], inside[3:]
    elif inside and inside[0] == "src":
        inside = inside[1:]
        if inside in (["lib"], ["main"]):
            inside = []
    if inside and inside[-1] == "mod":
        inside = inside[:-1]
    return "::".join([crate.replace("-", "_"), *(p.replace("-", "_") for p in inside)])


@functools.lru_cache(maxsize=4096)
def _crate_of(root: str, dir_rel: str) -> tuple[str, str]:
    """(the crate's folder, relative; its name) of the nearest ``Cargo.toml`` with a package at
    or above ``dir_rel``, inside ``root``; ("", "") if none."""
    parts = dir_rel.split("/") if dir_rel else []
    for n in range(len(parts), -1, -1):
        here = "/".join(parts[:n])
        name = _package_name(os.path.join(root, here, "Cargo.toml"))
        if name:
            return here, name
    return "", ""


def _package_name(manifest: str) -> str:
    try:
        if not os.path.isfile(manifest) or os.path.getsize(manifest) > _MAX_MANIFEST_BYTES:
            return ""
        with open(manifest, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ""
    lib = data.get("lib")
    package = data.get("package")
    for table in (lib, package):
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            return table["name"].replace("-", "_")
    return ""
