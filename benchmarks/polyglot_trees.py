"""Real source trees per language for the speed benchmarks, from the package registries.

    .venv/bin/python benchmarks/polyglot_trees.py                 # every tree
    .venv/bin/python benchmarks/polyglot_trees.py rust go         # some of them
    .venv/bin/python benchmarks/polyglot_trees.py --list          # what each tree is made of

Each tree is built once under ``benchmarks/.data/`` (or ``$CTX_BENCH_DATA``) and reused: a
second run only prints where the trees are. Beside each tree ``NAME.json`` records its files,
lines, bytes, files per extension, and the packages (name and version) it was made from, so a
table quoting a benchmark on it can cite them. A tree holds the source files only (symlinks
followed, so the copy has none) and an npm package's ``package.json`` (what an import of the
package by its name reaches), laid out as in the package.

| tree         | language(s)    | from                                                                   |
| ------------ | -------------- | ---------------------------------------------------------------------- |
| sympy        | Python         | PyPI ``sympy`` wheel (the reference: Python's per-line rate)           |
| rust-tokio   | Rust           | Debian ``librust-tokio-dev`` and the ``librust-*`` crates it depends on |
| go-tree      | Go             | Debian ``golang-github-prometheus-client-golang-dev`` and its          |
|              |                | ``golang-*`` dependencies, less aws-sdk-go (see ``GO_EXCLUDE``)         |
| ts-tree      | TypeScript/TSX | npm packages that ship their ``.ts``/``.tsx`` sources (no ``.d.ts``)    |
| js-tree      | JavaScript     | npm ``webpack`` and ``eslint`` (hand-written CommonJS/ESM sources)      |
| java-tree    | Java           | Debian ``openjdk-17-source``: ``java.base/java/**`` of its ``src.zip``  |
| c-tree       | C (+ headers)  | Debian ``openvswitch-source``: the ``.c``/``.h`` of its tarball        |
| cpp-tree     | C++            | Debian ``juce-modules-source-data``: the JUCE modules                  |

Debian's crates and Go modules are installed with ``apt-get install`` (root; the files land
under ``/usr/share/cargo/registry`` and ``/usr/share/gocode/src``); single source packages are
fetched with ``apt-get download`` and unpacked here, without installing what they depend on (a
JDK for the JDK's sources). npm packages are fetched with ``npm pack`` (no install scripts run)
at the pinned versions below. When a client fails, the tree is reported as missing with the
client's message, and the other trees go on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(os.environ.get("CTX_BENCH_DATA") or Path(__file__).resolve().parent / ".data")
RECIPE_VERSION = 1  # bump when every recipe changes (a tree's own: Tree.recipe): the trees are rebuilt

RUST_ROOT_PACKAGE = "librust-tokio-dev"
GO_ROOT_PACKAGE = "golang-github-prometheus-client-golang-dev"
# aws-sdk-go comes in through prometheus-common (sigv4): 2,527 files and 4.6 M lines of generated
# service APIs (230 MB with it, 61 MB without), which would turn the Go tree into one vendor SDK.
GO_EXCLUDE = frozenset({"golang-github-aws-aws-sdk-go-dev"})
# Pinned so that a rebuilt tree is the same tree (versions current when this was written).
TS_PACKAGES = (
    "effect@4.1.0",
    "rxjs@7.8.2",
    "zod@4.6.7",
    "@effect/platform@0.97.2",
    "@tanstack/react-query@5.108.4",
    "@tanstack/react-router@1.170.46",
)
NPM_MANIFEST = "package/package.json"
JS_PACKAGES = ("webpack@5.113.0", "eslint@10.15.0")
SYMPY = "sympy==1.14.0"
JAVA_PACKAGE = "openjdk-17-source"
JAVA_PREFIX = "java.base/java/"  # java.lang, java.util (+ concurrent), java.io, java.nio, java.net, …
C_PACKAGE = "openvswitch-source"
CPP_PACKAGE = "juce-modules-source-data"

TS_SUFFIXES = (".ts", ".tsx", ".mts", ".cts")
DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts")
JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs")
C_SUFFIXES = (".c", ".h")
CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".c")


class Unavailable(RuntimeError):
    """A package client said no (or is missing): this tree cannot be built here."""


@dataclass
class Tree:
    name: str
    language: str
    build: Callable[[Path, Path], list[dict[str, str]]]  # (tree dir, downloads dir) → packages
    note: str = ""
    packages: list[dict[str, str]] = field(default_factory=list)
    recipe: int = 0  # bumped when this tree's recipe changes (added to RECIPE_VERSION)


# -- package clients ---------------------------------------------------------------------------


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise Unavailable(f"{cmd[0]} is not installed") from err
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"`{' '.join(cmd)}` failed ({done.returncode}): {' / '.join(tail)}")
    return done.stdout


def _apt_lists_ready() -> None:
    """``apt-get update`` once when the machine has no package lists yet (a new machine)."""
    lists = Path("/var/lib/apt/lists")
    if not any(lists.glob("*_Packages*")):
        _run(["apt-get", "update"])


def _dpkg_installed() -> dict[str, tuple[str, str, str]]:
    """Installed packages: name → (version, Depends, Provides)."""
    out = _run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\t${Depends}\t${Provides}\n"])
    pkgs = {}
    for line in out.splitlines():
        name, version, status, depends, provides = [*line.split("\t"), "", "", ""][:5]
        if status.startswith("ii"):
            pkgs[name.split(":")[0]] = (version, depends, provides)
    return pkgs


def _names(field_text: str) -> Iterator[list[str]]:
    """Each dependency of a Depends/Provides field as its list of alternatives (names only)."""
    for dep in filter(None, (d.strip() for d in field_text.split(","))):
        yield [alt.strip().split(" ")[0].split(":")[0] for alt in dep.split("|")]


def _closure(root: str, prefix: str, exclude: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The installed packages named ``prefix*`` that ``root`` depends on, directly or not
    (virtual packages resolved through the installed packages' Provides), root included:
    sorted (name, version)."""
    installed = _dpkg_installed()
    provider: dict[str, str] = {}
    for name, (_, _, provides) in installed.items():
        provider.setdefault(name, name)
        for virtual, *_ in _names(provides):
            provider.setdefault(virtual, name)
    seen, todo = {root}, [root]
    while todo:
        name = todo.pop()
        for alternatives in _names(installed[name][1]):
            real = next((provider[a] for a in alternatives if a in provider), None)
            if real and real.startswith(prefix) and real not in seen and real not in exclude:
                seen.add(real)
                todo.append(real)
    return sorted((n, installed[n][0]) for n in seen)


def _apt_install(package: str) -> None:
    if package in _dpkg_installed():
        return
    _apt_lists_ready()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", package],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
    except FileNotFoundError as err:
        raise Unavailable("apt-get is not installed") from err
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"apt-get install {package} failed: {' / '.join(tail)}")


def _apt_download(package: str, downloads: Path) -> tuple[Path, str]:
    """The package's .deb (fetched once into ``downloads``) and its version."""
    downloads.mkdir(parents=True, exist_ok=True)
    found = sorted(downloads.glob(f"{package}_*.deb"))
    if not found:
        _apt_lists_ready()
        os.chmod(downloads, 0o777)  # apt fetches as its own user where it can
        _run(["apt-get", "download", package], cwd=downloads)
        found = sorted(downloads.glob(f"{package}_*.deb"))
        if not found:
            raise Unavailable(f"apt-get download {package} left no .deb")
    deb = found[-1]
    version = _run(["dpkg-deb", "-f", str(deb), "Version"]).strip()
    return deb, version


def _deb_extract(deb: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    _run(["dpkg-deb", "-x", str(deb), str(into)])
    return into


def _npm_pack(spec: str, downloads: Path) -> tuple[Path, str, str]:
    """The package's tarball (fetched once), its name and version."""
    downloads.mkdir(parents=True, exist_ok=True)
    out = json.loads(_run(["npm", "pack", spec, "--json", "--pack-destination", str(downloads)], cwd=downloads))
    info = out[0]
    return downloads / info["filename"], info["name"], info["version"]


# -- copying -----------------------------------------------------------------------------------


def _copy_file(src: Path, dest: Path) -> None:
    """A regular-file copy (a symlink's target is copied as a file, so the tree has none)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest, follow_symlinks=True)


def _copy_listed(paths: Iterable[str], base: str, suffixes: tuple[str, ...], tree: Path) -> int:
    n = 0
    for path in paths:
        if path.startswith(base) and path.endswith(suffixes) and os.path.isfile(path):
            _copy_file(Path(path), tree / os.path.relpath(path, base))
            n += 1
    return n


def _dpkg_files(package: str) -> list[str]:
    return _run(["dpkg", "-L", package]).splitlines()


def _wanted_ts(name: str) -> bool:
    return name.endswith(TS_SUFFIXES) and not name.endswith(DECLARATION_SUFFIXES)


def _wanted_js(name: str) -> bool:
    base = name.rpartition("/")[2]
    return name.endswith(JS_SUFFIXES) and ".min." not in base and ".bundle." not in base


def _extract_tar(data: tarfile.TarFile, wanted: Callable[[str], bool], tree: Path, strip: int, prefix: str = "") -> int:
    n = 0
    for member in data:
        parts = member.name.split("/")[strip:]
        if not member.isfile() or not parts or "node_modules" in parts or not wanted(member.name):
            continue
        dest = tree / prefix / "/".join(parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = data.extractfile(member)
        assert source is not None
        dest.write_bytes(source.read())
        n += 1
    return n


# -- recipes -----------------------------------------------------------------------------------


def build_sympy(tree: Path, downloads: Path) -> list[dict[str, str]]:
    downloads.mkdir(parents=True, exist_ok=True)
    name, version = SYMPY.split("==")
    wheels = sorted(downloads.glob(f"{name}-{version}-*.whl"))
    if not wheels:
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                str(downloads),
                SYMPY,
            ]
        )
        wheels = sorted(downloads.glob(f"{name}-{version}-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as wheel:
        for entry in wheel.namelist():
            if entry.startswith("sympy/") and entry.endswith(".py"):
                dest = tree / entry
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(wheel.read(entry))
    return [{"registry": "pypi", "name": name, "version": version}]


def _debian_closure_tree(
    root: str, prefix: str, base: str, suffixes: tuple[str, ...], tree: Path, exclude: frozenset[str] = frozenset()
) -> list[dict[str, str]]:
    _apt_install(root)
    packages = []
    for name, version in _closure(root, prefix, exclude):
        files = _copy_listed(_dpkg_files(name), base, suffixes, tree)
        packages.append({"registry": "debian", "name": name, "version": version, "files": str(files)})
    return packages


def build_rust(tree: Path, downloads: Path) -> list[dict[str, str]]:
    return _debian_closure_tree(RUST_ROOT_PACKAGE, "librust-", "/usr/share/cargo/registry/", (".rs",), tree)


def build_go(tree: Path, downloads: Path) -> list[dict[str, str]]:
    return _debian_closure_tree(GO_ROOT_PACKAGE, "golang-", "/usr/share/gocode/src/", (".go",), tree, GO_EXCLUDE)


def _npm_tree(specs: Iterable[str], wanted: Callable[[str], bool], tree: Path, downloads: Path) -> list[dict[str, str]]:
    packages = []
    for spec in specs:
        tarball, name, version = _npm_pack(spec, downloads)
        with tarfile.open(tarball) as data:  # with its manifest: imports of it by name resolve to it
            files = _extract_tar(data, lambda n: wanted(n) or n == NPM_MANIFEST, tree, 1, name.replace("/", "+"))
        packages.append({"registry": "npm", "name": name, "version": version, "files": str(files)})
    return packages


def build_ts(tree: Path, downloads: Path) -> list[dict[str, str]]:
    return _npm_tree(TS_PACKAGES, _wanted_ts, tree, downloads)


def build_js(tree: Path, downloads: Path) -> list[dict[str, str]]:
    return _npm_tree(JS_PACKAGES, _wanted_js, tree, downloads)


def build_java(tree: Path, downloads: Path) -> list[dict[str, str]]:
    deb, version = _apt_download(JAVA_PACKAGE, downloads)
    with tempfile.TemporaryDirectory(dir=downloads) as tmp:
        unpacked = _deb_extract(deb, Path(tmp))
        src_zip = next(unpacked.glob("usr/lib/jvm/*/lib/src.zip"), None)
        if src_zip is None:
            raise Unavailable(f"{deb.name} has no lib/src.zip")
        n = 0
        with zipfile.ZipFile(src_zip) as archive:
            for entry in archive.namelist():
                if entry.startswith(JAVA_PREFIX) and entry.endswith(".java"):
                    dest = tree / entry
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(archive.read(entry))
                    n += 1
    return [{"registry": "debian", "name": JAVA_PACKAGE, "version": version, "files": str(n), "subset": JAVA_PREFIX}]


def build_c(tree: Path, downloads: Path) -> list[dict[str, str]]:
    deb, version = _apt_download(C_PACKAGE, downloads)
    with tempfile.TemporaryDirectory(dir=downloads) as tmp:
        unpacked = _deb_extract(deb, Path(tmp))
        tarballs = sorted(unpacked.glob("usr/src/**/*.tar.*"))
        if not tarballs:
            raise Unavailable(f"{deb.name} has no source tarball under /usr/src")
        with tarfile.open(tarballs[0]) as data:
            n = _extract_tar(data, lambda name: name.endswith(C_SUFFIXES), tree, strip=1)
    return [{"registry": "debian", "name": C_PACKAGE, "version": version, "files": str(n)}]


def build_cpp(tree: Path, downloads: Path) -> list[dict[str, str]]:
    deb, version = _apt_download(CPP_PACKAGE, downloads)
    with tempfile.TemporaryDirectory(dir=downloads) as tmp:
        unpacked = _deb_extract(deb, Path(tmp))
        base = unpacked / "usr/share/juce/modules"
        if not base.is_dir():
            raise Unavailable(f"{deb.name} has no usr/share/juce/modules")
        listed = (str(p) for p in sorted(base.rglob("*")))
        n = _copy_listed(listed, str(base) + "/", CPP_SUFFIXES, tree)
    return [{"registry": "debian", "name": CPP_PACKAGE, "version": version, "files": str(n)}]


TREES = {
    "sympy": Tree("sympy", "python", build_sympy, "the reference for Python's per-line rate"),
    "rust": Tree("rust-tokio", "rust", build_rust, f"{RUST_ROOT_PACKAGE} and its librust-* dependencies"),
    "go": Tree(
        "go-tree",
        "go",
        build_go,
        f"{GO_ROOT_PACKAGE} and its golang-* dependencies, less {', '.join(sorted(GO_EXCLUDE))}",
    ),
    "ts": Tree(
        "ts-tree",
        "typescript",
        build_ts,
        ".ts/.tsx sources (no .d.ts) and package.json of " + ", ".join(TS_PACKAGES),
        recipe=1,
    ),
    "js": Tree(
        "js-tree",
        "javascript",
        build_js,
        ".js sources (no .min.js) and package.json of " + ", ".join(JS_PACKAGES),
        recipe=1,
    ),
    "java": Tree("java-tree", "java", build_java, f"{JAVA_PREFIX}**.java of {JAVA_PACKAGE}'s src.zip"),
    "c": Tree("c-tree", "c", build_c, f".c/.h of {C_PACKAGE}'s tarball"),
    "cpp": Tree("cpp-tree", "cpp", build_cpp, f"C++ sources and headers of {CPP_PACKAGE} (JUCE modules)"),
}


# -- counting ----------------------------------------------------------------------------------


def measure(tree: Path) -> dict[str, object]:
    """Files, lines (newlines), bytes and files per extension of every file under ``tree``."""
    files = lines = size = 0
    by_ext: Counter[str] = Counter()
    for dirpath, _, names in os.walk(tree):
        for name in names:
            data = Path(dirpath, name).read_bytes()
            files += 1
            lines += data.count(b"\n")
            size += len(data)
            by_ext[os.path.splitext(name)[1] or name] += 1
    return {"files": files, "lines": lines, "bytes": size, "by_extension": dict(by_ext.most_common())}


def ensure(key: str, data: Path = DATA) -> tuple[Path, dict]:
    """The tree ``key`` (built when missing or made by an older recipe) and its record."""
    spec = TREES[key]
    tree = data / spec.name
    record_path = data / f"{spec.name}.json"
    if tree.is_dir() and record_path.exists():
        record = json.loads(record_path.read_text())
        if record.get("recipe") == RECIPE_VERSION + spec.recipe:
            return tree, record
    partial = data / f"{spec.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        packages = spec.build(partial, data / "downloads")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if not any(partial.iterdir()):
        shutil.rmtree(partial, ignore_errors=True)
        raise Unavailable(f"{spec.name}: the packages held no source files")
    shutil.rmtree(tree, ignore_errors=True)
    partial.rename(tree)
    recipe = RECIPE_VERSION + spec.recipe
    record: dict = {"tree": spec.name, "language": spec.language, "recipe": recipe, "what": spec.note}
    record.update(measure(tree))
    record["packages"] = packages
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return tree, record


def describe(tree: Path, record: dict) -> str:
    packages = record["packages"]
    shown = ", ".join(f"{p['name']} {p['version']}" for p in packages[:4])
    more = f" and {len(packages) - 4} more" if len(packages) > 4 else ""
    return (
        f"{record['language']}: {tree} ({record['files']:,} files, {record['lines']:,} lines, "
        f"{record['bytes'] / 1e6:.1f} MB; {shown}{more})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="*", help=f"which trees: {', '.join(TREES)} (default: all)", metavar="TREE")
    parser.add_argument("--list", action="store_true", help="say what each tree is made of, fetch nothing")
    parser.add_argument("--data", type=Path, default=DATA, help=f"where the trees go (default {DATA})")
    args = parser.parse_args(argv)
    keys = args.trees or list(TREES)
    unknown = [k for k in keys if k not in TREES]
    if unknown:
        parser.error(f"unknown tree {', '.join(unknown)}: choose from {', '.join(TREES)}")
    if args.list:
        for key in keys:
            spec = TREES[key]
            print(f"{key}: {args.data / spec.name} — {spec.note}")
        return 0
    args.data.mkdir(parents=True, exist_ok=True)
    missing = 0
    for key in keys:
        try:
            tree, record = ensure(key, args.data)
        except Unavailable as err:
            missing += 1
            print(f"{TREES[key].language}: not built — {err}", file=sys.stderr)
            continue
        print(describe(tree, record), flush=True)
    return 1 if missing == len(keys) else 0


if __name__ == "__main__":
    raise SystemExit(main())
