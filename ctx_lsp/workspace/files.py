"""Find the workspace's source files (of every language ``languages`` reads): fast,
deterministic, and respectful of what a developer has excluded (VCS and tool folders,
virtualenvs, build output, ``.gitignore``).

One ``os.scandir`` per directory, directories pruned before descending, one ``stat`` per
source file. Content checks (binary, encoding) read the file, so the indexer turns them off
and checks the bytes it reads anyway (:func:`is_binary`; its parse decodes them).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from ctx_lsp.errors import Invalid
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES, language_of
from ctx_lsp.workspace.languages.encoding import decode_code, utf16_marked
from ctx_lsp.workspace.parse import decode_source

MAX_FILE_BYTES = 5 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192

SKIP_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".ctx",
        "site-packages",
        ".eggs",
        ".direnv",
        # other languages' tool folders and caches
        ".cargo",
        ".gradle",
        ".idea",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".turbo",
        ".parcel-cache",
        ".yarn",
        "bower_components",
    }
)
# Build output, unless the folder is itself a Python package (pip has ``operations/build/``,
# pypa/build has ``src/build/``: source, not output).
_OUTPUT_NAMES = frozenset({"build", "dist"})
_VENV_NAMES = frozenset({"venv", ".venv", "env", ".env"})
# Markers found in a directory's own listing that make it an environment, not source.
_ENV_MARKERS = ("pyvenv.cfg", "conda-meta")

# Reasons a file is left out (``Skipped.reason``).
TOO_LARGE = "too_large"
BINARY = "binary"
NOT_UTF8 = "not_utf8"
UNREADABLE = "unreadable"
OUTSIDE_ROOT = "outside_root"  # a symlink whose target is outside the workspace
IGNORED = "ignored"  # excluded by .gitignore, a tool folder, a virtualenv or build output
NOT_PYTHON = "not_source"  # no language we read (``languages.language_of``)
NOT_REGULAR = "not_regular"  # a device, FIFO or socket

MAX_SMALL_FILE_BYTES = 1024 * 1024  # settings, .gitignore, agent instructions: text a person wrote


class PathRefused(Invalid, ValueError):
    """A path that names nothing ctx_lsp may read: outside the workspace (after symlinks), not
    a regular file, or too large. The message never depends on what lies outside the root."""

    def __init__(self, shown: str, reason: str, detail: str) -> None:
        super().__init__(f"{shown}: {detail}")
        self.reason = reason


def workspace_rel(root: Path, path: str | os.PathLike[str]) -> str:
    """The workspace-relative POSIX path of ``path`` (absolute, or relative to ``root``).

    Every path a client or a file names goes through here before it is read: one that leaves
    the root — by ``..`` or through a symlink — is refused with the same message whether or
    not it exists, so a request cannot probe the rest of the disk.
    """
    root_real = os.path.realpath(root)
    raw = os.fspath(path)
    if "\x00" in raw:
        raise PathRefused(repr(raw), OUTSIDE_ROOT, "not a path")
    full = raw if os.path.isabs(raw) else os.path.join(root_real, raw)
    real = os.path.realpath(full)
    if real == root_real or not _is_inside(real, root_real):
        raise PathRefused(raw, OUTSIDE_ROOT, f"not a file in the workspace {root}")
    return Path(os.path.relpath(real, root_real)).as_posix()


def read_bounded(
    path: str | os.PathLike[str], max_bytes: int, shown: str | None = None, *, follow: bool = True
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``. Devices and FIFOs are refused
    without blocking (``/dev/zero`` never ends, a FIFO never answers); a file that grows past
    the cap while read is refused too. Raises PathRefused or OSError."""
    shown = shown or os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(shown, NOT_REGULAR, "not a regular file")
        if st.st_size > max_bytes:
            raise PathRefused(shown, TOO_LARGE, f"larger than {max_bytes:,} bytes ({st.st_size:,})")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise PathRefused(shown, TOO_LARGE, f"larger than {max_bytes:,} bytes")
    return data


def read_workspace_file(root: Path, path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Read a file of the workspace: inside the root after symlinks, regular, size-capped."""
    rel = workspace_rel(root, path)
    real = os.path.join(os.path.realpath(root), rel)
    try:  # the checked path has no links left: one swapped in since is refused (O_NOFOLLOW)
        return read_bounded(real, max_bytes, rel, follow=False)
    except OSError as err:
        raise OSError(err.errno, f"cannot read {rel}: {err.strerror}") from None


def read_workspace_text(root: Path, path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> str:
    """A workspace file's text, decoded as the index decodes it (a C file in Latin-1, a Java file
    in UTF-16: lines and columns agree with its symbols); else UTF-8 with replacement characters."""
    data = read_workspace_file(root, path, max_bytes)
    lang = language_of(os.fspath(path))
    if lang == "python":
        return decode_source(data)[0]
    decoded = decode_code(lang, data) if lang is not None else None
    return decoded[0] if decoded is not None else data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """A Python file to index. ``rel`` is workspace-relative POSIX."""

    path: Path
    rel: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file (or an unreadable directory) left out, and why."""

    rel: str
    reason: str


def is_binary(data: bytes, rel: str = "") -> bool:
    """NUL bytes in the head of the file at ``rel``: not source, unless they are UTF-16 text in a
    language that reads it (``languages.encoding``)."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES] and not utf16_marked(language_of(rel) if rel else None, data)


def classify_content(data: bytes, rel: str = "") -> str | None:
    """Why the bytes of the file at ``rel`` must not be indexed (``"binary"``, ``"not_utf8"``),
    or None.

    ``not_utf8`` means the bytes do not decode with the file's declared encoding (Python: its
    PEP 263 cookie, UTF-8 by default), or in any encoding the file's language allows
    (``languages.encoding``).
    """
    if is_binary(data, rel):
        return BINARY
    lang = language_of(rel) if rel else None
    if lang not in (None, "python"):
        return None if decode_code(lang, data) is not None else NOT_UTF8
    _, _, ok = decode_source(data)
    return None if ok else NOT_UTF8


@dataclass(slots=True)
class _Ignore:
    """One ``.gitignore``: its directory (workspace-relative, "" for the root) and patterns."""

    base: str
    spec: pathspec.GitIgnoreSpec


@dataclass(slots=True)
class _Frame:
    path: str  # filesystem path as walked (may pass through a followed symlink)
    rel: str  # workspace-relative POSIX, "" for the root
    ignores: tuple[_Ignore, ...]
    real: str  # canonical real path of this directory (for loop / duplicate detection)


def _load_ignore(file: str, base: str) -> _Ignore | None:
    try:
        lines = read_bounded(file, MAX_SMALL_FILE_BYTES).decode("utf-8", errors="replace").splitlines()
    except (OSError, PathRefused):
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    return _Ignore(base, pathspec.GitIgnoreSpec.from_lines(lines))


def _ignored(ignores: tuple[_Ignore, ...], rel: str, is_dir: bool) -> bool:
    """Git's rule: the deepest ``.gitignore`` with a matching pattern decides (a ``!`` negation
    re-includes); within one file the last matching pattern wins (pathspec does that)."""
    for ign in reversed(ignores):
        sub = rel[len(ign.base) + 1 :] if ign.base else rel
        result = ign.spec.check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            return result.include
    return False


def _is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class WorkspaceWalker:
    """Walks a workspace for source files.

    ``walk()`` returns the files sorted by ``rel``; ``skipped`` then lists what was left out
    and why. With ``check_content`` (default) every file is read to reject binary and
    undecodable ones; the indexer passes False and checks the bytes it reads itself.
    """

    root: Path
    check_content: bool = True
    use_gitignore: bool = True
    max_file_bytes: int = MAX_FILE_BYTES
    suffixes: tuple[str, ...] = SOURCE_SUFFIXES
    skipped: list[Skipped] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    def walk(self) -> list[WalkEntry]:
        """Every source file of the workspace (``suffixes``), sorted by ``rel``; fills ``self.skipped``."""
        self.skipped = []
        root = os.path.abspath(self.root)
        root_real = os.path.realpath(root)
        entries: list[WalkEntry] = []
        ignores = self._base_ignores(root)
        # Real directories are walked first so files keep their canonical paths; directory
        # symlinks are followed afterwards, only into parts of the root not yet visited.
        visited: set[str] = set()
        links: list[_Frame] = []
        stack = [_Frame(root, "", ignores, root_real)]
        while True:
            while stack:
                frame = stack.pop()
                if frame.real in visited:
                    continue
                visited.add(frame.real)
                self._scan(frame, root_real, stack, links, entries)
            if not links:
                break
            links.sort(key=lambda f: f.rel)
            for link in links:
                target = os.path.realpath(link.path)
                if not _is_inside(target, root_real):
                    self.skipped.append(Skipped(link.rel, OUTSIDE_ROOT))
                elif target not in visited and os.path.isdir(target) and not self._pruned_target(target, root_real):
                    stack.append(_Frame(link.path, link.rel, link.ignores, target))
            links = []
        entries.sort(key=lambda e: e.rel)
        self.skipped.sort(key=lambda s: (s.rel, s.reason))
        return entries

    def excluded(self, rel: str) -> str | None:
        """Why the walk would leave ``rel`` (workspace-relative) out, or None.

        The same rules for one file as for the whole tree — outside the root after symlinks,
        not Python, a pruned folder, ``.gitignore`` — so a buffer the editor opens or a file
        the watcher reports is indexed exactly when the walk would index it: ignored means
        ignored, open or not."""
        root = os.path.abspath(self.root)
        rel = rel.replace("\\", "/").strip("/")
        if not rel or not _is_inside(os.path.realpath(os.path.join(root, rel)), os.path.realpath(root)):
            return OUTSIDE_ROOT
        if not rel.endswith(self.suffixes) or language_of(rel) is None:
            return NOT_PYTHON
        ignores = self._base_ignores(root)
        cur, cur_rel = root, ""
        for name in rel.split("/"):
            if self.use_gitignore:  # a folder's .gitignore applies to what is below it
                ign = _load_ignore(os.path.join(cur, ".gitignore"), cur_rel)
                if ign is not None:
                    ignores = (*ignores, ign)
            cur, cur_rel = os.path.join(cur, name), f"{cur_rel}/{name}" if cur_rel else name
            if cur_rel == rel:
                break
            env = any(os.path.exists(os.path.join(cur, m)) for m in _ENV_MARKERS)
            if env or self._skip_dir_name(name, cur) or (ignores and _ignored(ignores, cur_rel, True)):
                return IGNORED
        if ignores and _ignored(ignores, rel, False):
            return IGNORED
        return None

    # -- internals -----------------------------------------------------------------------

    def _base_ignores(self, root: str) -> tuple[_Ignore, ...]:
        """The repository's own exclude file (``.git/info/exclude``) applies everywhere."""
        if not self.use_gitignore:
            return ()
        info = _load_ignore(os.path.join(root, ".git", "info", "exclude"), "")
        return (info,) if info is not None else ()

    def _pruned_target(self, target: str, root_real: str) -> bool:
        """A symlink must not smuggle in a folder the walk prunes (e.g. ``lib -> .venv/lib``)."""
        rel = os.path.relpath(target, root_real)
        parts = [] if rel == "." else rel.split(os.sep)
        cur = root_real
        for part in parts:
            cur = os.path.join(cur, part)
            if self._skip_dir_name(part, cur) or any(os.path.exists(os.path.join(cur, m)) for m in _ENV_MARKERS):
                return True
        return False

    @staticmethod
    def _skip_dir_name(name: str, path: str) -> bool:
        if name in SKIP_DIR_NAMES or name.endswith(".egg-info"):
            return True
        if name in _OUTPUT_NAMES:
            return not os.path.exists(os.path.join(path, "__init__.py"))
        if name == "target":  # cargo's build output, beside its Cargo.toml or tagged as a cache
            return os.path.exists(os.path.join(path, "CACHEDIR.TAG")) or os.path.exists(
                os.path.join(os.path.dirname(path), "Cargo.toml")
            )
        if name in _VENV_NAMES:
            return (
                os.path.exists(os.path.join(path, "pyvenv.cfg"))
                or os.path.lexists(os.path.join(path, "bin", "python"))
                or os.path.isdir(os.path.join(path, "Scripts"))
            )
        return False

    def _scan(
        self,
        frame: _Frame,
        root_real: str,
        stack: list[_Frame],
        links: list[_Frame],
        entries: list[WalkEntry],
    ) -> None:
        try:
            with os.scandir(frame.path) as it:
                listing = sorted(it, key=lambda e: e.name)
        except OSError:
            if frame.rel:
                self.skipped.append(Skipped(frame.rel, UNREADABLE))
            return
        names = {e.name for e in listing}
        if frame.rel and any(marker in names for marker in _ENV_MARKERS):
            return  # a virtualenv / conda env, whatever its name
        ignores = frame.ignores
        if self.use_gitignore and ".gitignore" in names:
            ign = _load_ignore(os.path.join(frame.path, ".gitignore"), frame.rel)
            if ign is not None:
                ignores = (*ignores, ign)
        prefix = frame.rel + "/" if frame.rel else ""
        subdirs: list[_Frame] = []
        for entry in listing:
            name = entry.name
            rel = prefix + name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows symlinks
            except OSError:
                continue
            if is_dir:
                if self._skip_dir_name(name, entry.path):
                    continue
                if ignores and _ignored(ignores, rel, True):
                    continue
                child = _Frame(entry.path, rel, ignores, os.path.join(frame.real, name))
                (links if is_link else subdirs).append(child)
                continue
            if not name.endswith(self.suffixes) or language_of(name) is None:
                continue
            if ignores and _ignored(ignores, rel, False):
                continue
            self._file(entry, rel, is_link, root_real, entries)
        # Reverse so the stack pops them in name order (keeps ``skipped`` order stable too).
        stack.extend(reversed(subdirs))

    def _file(self, entry: os.DirEntry[str], rel: str, is_link: bool, root_real: str, entries: list[WalkEntry]) -> None:
        try:
            if is_link and not _is_inside(os.path.realpath(entry.path), root_real):
                self.skipped.append(Skipped(rel, OUTSIDE_ROOT))
                return
            st = entry.stat()  # follows a (checked) file symlink
        except OSError:
            self.skipped.append(Skipped(rel, UNREADABLE))
            return
        if not entry.is_file():
            return  # a FIFO or socket named *.py
        if st.st_size > self.max_file_bytes:
            self.skipped.append(Skipped(rel, TOO_LARGE))
            return
        if self.check_content:
            try:
                with open(entry.path, "rb") as fh:
                    data = fh.read()
            except OSError:
                self.skipped.append(Skipped(rel, UNREADABLE))
                return
            reason = classify_content(data, rel)
            if reason is not None:
                self.skipped.append(Skipped(rel, reason))
                return
        entries.append(WalkEntry(Path(entry.path), rel, st.st_size, st.st_mtime_ns))


def iter_python_files(root: Path) -> Iterator[WalkEntry]:
    """Yield the workspace's Python files in ``rel`` order (see :class:`WorkspaceWalker`)."""
    yield from WorkspaceWalker(root).walk()
