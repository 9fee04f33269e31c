"""The workspace walker: which files are indexed, which are skipped, and why."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ctx_lsp.workspace.files import (
    BINARY,
    IGNORED,
    MAX_FILE_BYTES,
    NOT_PYTHON,
    NOT_REGULAR,
    NOT_UTF8,
    OUTSIDE_ROOT,
    TOO_LARGE,
    PathRefused,
    Skipped,
    WalkEntry,
    WorkspaceWalker,
    classify_content,
    iter_python_files,
    read_bounded,
    read_workspace_file,
    read_workspace_text,
    workspace_rel,
)


def write(root: Path, rel: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def rels(root: Path, **kwargs: object) -> list[str]:
    return [e.rel for e in WorkspaceWalker(root, **kwargs).walk()]  # type: ignore[arg-type]


def test_finds_python_files_sorted_with_stat(tmp_path: Path) -> None:
    write(tmp_path, "b.py")
    write(tmp_path, "a/z.py", "def f():\n    pass\n")
    write(tmp_path, "a/b/c.py")
    write(tmp_path, "README.md", "# not python")
    write(tmp_path, "a/data.pyc", b"\x00\x01")
    entries = WorkspaceWalker(tmp_path).walk()
    assert [e.rel for e in entries] == ["a/b/c.py", "a/z.py", "b.py"]
    z = entries[1]
    assert isinstance(z, WalkEntry)
    assert z.path == tmp_path / "a" / "z.py"
    assert z.size == len("def f():\n    pass\n")
    assert z.mtime_ns == (tmp_path / "a" / "z.py").stat().st_mtime_ns
    assert [e.rel for e in iter_python_files(tmp_path)] == [e.rel for e in entries]


def test_skips_tool_and_vcs_directories(tmp_path: Path) -> None:
    write(tmp_path, "keep.py")
    for d in (
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
        "build",
        "dist",
        "mypkg.egg-info",
        "sub/node_modules/deep",
        "sub/__pycache__",
    ):
        write(tmp_path, f"{d}/x.py")
    assert rels(tmp_path) == ["keep.py"]


def test_build_and_dist_packages_are_source_not_output(tmp_path: Path) -> None:
    # pip has operations/build/__init__.py; pypa/build has src/build/: real packages.
    write(tmp_path, "pkg/operations/build/__init__.py")
    write(tmp_path, "pkg/operations/build/wheel.py")
    write(tmp_path, "build/lib/pkg/mod.py")  # setuptools output
    assert rels(tmp_path) == ["pkg/operations/build/__init__.py", "pkg/operations/build/wheel.py"]


def test_skips_virtualenvs_by_marker_or_layout(tmp_path: Path) -> None:
    write(tmp_path, "app.py")
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr/bin\n")  # any name, marked by pyvenv.cfg
    write(tmp_path, "myenv/lib/python3.11/site.py")
    write(tmp_path, "tools/venv-copy/pyvenv.cfg", "")
    write(tmp_path, "tools/venv-copy/helper.py")
    write(tmp_path, ".venv/bin/python", "")  # no pyvenv.cfg, but a venv layout
    write(tmp_path, ".venv/lib/mod.py")
    write(tmp_path, "env/Scripts/activate.py")  # a Windows venv
    write(tmp_path, "conda/conda-meta/history", "")
    write(tmp_path, "conda/lib/thing.py")
    # A package that happens to be called ``env`` is source.
    write(tmp_path, "config/env/__init__.py")
    write(tmp_path, "config/env/loader.py")
    assert rels(tmp_path) == ["app.py", "config/env/__init__.py", "config/env/loader.py"]


def test_root_and_nested_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "# generated code\ngenerated/\n*_pb2.py\n!keep_pb2.py\n/top_only.py\n")
    write(tmp_path, "generated/a.py")
    write(tmp_path, "api/user_pb2.py")
    write(tmp_path, "api/keep_pb2.py")
    write(tmp_path, "top_only.py")
    write(tmp_path, "sub/top_only.py")  # anchored pattern: only the root one is ignored
    write(tmp_path, "pkg/.gitignore", "local_settings.py\n!generated/\n")
    write(tmp_path, "pkg/local_settings.py")
    write(tmp_path, "other/local_settings.py")  # the nested rule does not reach here
    write(tmp_path, "pkg/deep/local_settings.py")  # but applies below its folder
    write(tmp_path, "pkg/generated/kept.py")  # the nested negation wins over the root rule
    write(tmp_path, "pkg/mod.py")
    assert rels(tmp_path) == [
        "api/keep_pb2.py",
        "other/local_settings.py",
        "pkg/generated/kept.py",
        "pkg/mod.py",
        "sub/top_only.py",
    ]
    # Turned off, everything non-pruned shows up.
    assert "generated/a.py" in rels(tmp_path, use_gitignore=False)


def test_git_info_exclude(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "scratch.py\n")
    write(tmp_path, "scratch.py")
    write(tmp_path, "real.py")
    assert rels(tmp_path) == ["real.py"]


def test_content_checks(tmp_path: Path) -> None:
    write(tmp_path, "ok.py", "x = 'é'\n")
    write(tmp_path, "empty.py", "")
    write(tmp_path, "blob.py", b"\x7fELF\x00\x00\x01binary")
    write(tmp_path, "latin.py", b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n")  # declared: fine
    write(tmp_path, "bad.py", b"name = '\xe9t\xe9'\n")  # undeclared latin-1
    big = write(tmp_path, "huge.py", b"")
    with big.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    walker = WorkspaceWalker(tmp_path)
    assert [e.rel for e in walker.walk()] == ["empty.py", "latin.py", "ok.py"]
    assert walker.skipped == [
        Skipped("bad.py", NOT_UTF8),
        Skipped("blob.py", BINARY),
        Skipped("huge.py", TOO_LARGE),
    ]
    # Without content checks only the (stat-based) size limit applies.
    fast = WorkspaceWalker(tmp_path, check_content=False)
    assert [e.rel for e in fast.walk()] == ["bad.py", "blob.py", "empty.py", "latin.py", "ok.py"]
    assert fast.skipped == [Skipped("huge.py", TOO_LARGE)]


def test_exactly_max_size_is_allowed(tmp_path: Path) -> None:
    path = write(tmp_path, "edge.py", b"")
    with path.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES)  # NUL bytes, so only check the size rule
    walker = WorkspaceWalker(tmp_path, check_content=False)
    assert [e.rel for e in walker.walk()] == ["edge.py"]


def test_classify_content() -> None:
    assert classify_content(b"print('hi')\n") is None
    assert classify_content(b"") is None
    assert classify_content(b"\xef\xbb\xbfx = 1\n") is None  # BOM
    assert classify_content(b"a = 1\x00") == BINARY
    assert classify_content(b"x" * 9000 + b"\x00") is None  # NUL beyond the sniffed head
    assert classify_content(b"s = '\xff'\n") == NOT_UTF8
    assert classify_content(b"# coding: cp1252\ns = '\x93quoted\x94'\n") is None


def test_workspace_text_is_decoded_as_the_index_decodes_it(tmp_path: Path) -> None:
    """What the server reads again for a position (a lens, a pin at the cursor) has the lines
    and columns the index saw: a UTF-16 Java file, a Latin-1 C file, a Python file's cookie."""
    (tmp_path / "A.java").write_bytes("class A {\n  int größe() { return 1; }\n}\n".encode("utf-16"))
    (tmp_path / "a.c").write_bytes(b"/* \xe9t\xe9 */\nint f(void) { return 0; }\n")
    (tmp_path / "a.py").write_bytes(b"# coding: cp1252\ns = '\x93q\x94'\n")
    assert read_workspace_text(tmp_path, "A.java").splitlines()[1] == "  int größe() { return 1; }"
    assert read_workspace_text(tmp_path, "a.c").startswith("/* été */\n")
    assert read_workspace_text(tmp_path, "a.py").endswith("s = '\u201cq\u201d'\n")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_loop_terminates_without_duplicates(tmp_path: Path) -> None:
    write(tmp_path, "pkg/mod.py")
    os.symlink("..", tmp_path / "pkg" / "parent")  # pkg/parent -> root: a loop
    os.symlink(".", tmp_path / "pkg" / "self")  # pkg/self -> pkg
    os.symlink("pkg", tmp_path / "alias")  # a second name for pkg
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    os.symlink("../b", tmp_path / "a" / "to_b")  # a/to_b -> b, b/to_a -> a
    os.symlink("../a", tmp_path / "b" / "to_a")
    write(tmp_path, "b/inside_b.py")
    # In a thread with a deadline: a walker that loops must fail this test, not hang the suite.
    result: list[list[str]] = []
    worker = threading.Thread(target=lambda: result.append(rels(tmp_path)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the walk did not terminate"
    assert result == [["b/inside_b.py", "pkg/mod.py"]]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_inside_and_outside_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "elsewhere"
    write(outside, "secret.py")
    write(outside, "lib/ext.py")
    write(root, "main.py")
    write(root, "vendor_src/real.py")
    write(root, ".venv/pyvenv.cfg", "")
    write(root, ".venv/lib/site.py")
    os.symlink(outside / "secret.py", root / "linked_secret.py")  # file outside: skipped
    os.symlink(outside / "lib", root / "extlib")  # dir outside: skipped
    os.symlink(root / "main.py", root / "main_alias.py")  # file inside: kept
    os.symlink(root / ".venv" / "lib", root / "venvlib")  # into a pruned folder: not followed
    write(root, "tools/anyname/pyvenv.cfg", "")
    write(root, "tools/anyname/lib/site2.py")
    os.symlink(root / "tools" / "anyname" / "lib", root / "envlib")  # into a venv by marker
    (root / "nested").mkdir()
    os.symlink(root / "vendor_src", root / "nested" / "vendor")  # already walked: no duplicate
    walker = WorkspaceWalker(root)
    assert [e.rel for e in walker.walk()] == ["main.py", "main_alias.py", "vendor_src/real.py"]
    assert Skipped("extlib", OUTSIDE_ROOT) in walker.skipped
    assert Skipped("linked_secret.py", OUTSIDE_ROOT) in walker.skipped


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_dir_to_unvisited_part_is_followed(tmp_path: Path) -> None:
    # The target lives in the root, but under an ignored path: the link is the only way in.
    write(tmp_path, ".gitignore", "real_pkg/\n")
    write(tmp_path, "real_pkg/mod.py")
    os.symlink(tmp_path / "real_pkg", tmp_path / "pkg")
    assert rels(tmp_path) == ["pkg/mod.py"]


def test_broken_symlink_is_unreadable_not_fatal(tmp_path: Path) -> None:
    write(tmp_path, "ok.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    walker = WorkspaceWalker(tmp_path)
    assert [e.rel for e in walker.walk()] == ["ok.py"]
    assert [s.rel for s in walker.skipped] == ["dangling.py"]


def test_walk_is_repeatable(tmp_path: Path) -> None:
    for i in range(30):
        write(tmp_path, f"p{i % 3}/m{i}.py")
    walker = WorkspaceWalker(tmp_path)
    first = walker.walk()
    assert walker.walk() == first
    assert [e.rel for e in first] == sorted(e.rel for e in first)


# ---- one check for every path: workspace_rel, read_workspace_file, excluded ----------------


def test_workspace_rel_refuses_everything_outside_alike(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "pkg/a.py")
    write(tmp_path, "outside/secret.py")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "pkg" / "link.py").symlink_to(root / "pkg" / "a.py")
    assert workspace_rel(root, "pkg/a.py") == "pkg/a.py"
    assert workspace_rel(root, root / "pkg" / "a.py") == "pkg/a.py"
    assert workspace_rel(root, "pkg/../pkg/new.py") == "pkg/new.py"  # not there yet: still a workspace path
    assert workspace_rel(root, "pkg/link.py") == "pkg/a.py"
    refused = []
    for path in ("/etc/passwd", "/etc/no-such-file", "../outside/secret.py", "out/secret.py", "out/none.py", "."):
        with pytest.raises(PathRefused) as info:
            workspace_rel(root, path)
        assert info.value.reason == OUTSIDE_ROOT
        refused.append(str(info.value).replace(path, "P"))
    assert len(set(refused)) == 1  # the message never says whether the outside file exists


def test_read_bounded_refuses_devices_fifos_and_large_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    for path, reason in (("/dev/zero", NOT_REGULAR), (fifo, NOT_REGULAR)):
        with pytest.raises(PathRefused) as info:
            read_bounded(path, 1024)  # returns at once: a FIFO is opened non-blocking
        assert info.value.reason == reason
    big = write(tmp_path, "big.py", "x" * 2048)
    with pytest.raises(PathRefused) as info:
        read_bounded(big, 1024)
    assert info.value.reason == TOO_LARGE
    assert read_bounded(big, 4096) == b"x" * 2048


def test_read_workspace_file_does_not_follow_links_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    write(tmp_path, "key.txt", "PRIVATE")
    (root / "AGENTS.md").symlink_to(tmp_path / "key.txt")
    (root / "CLAUDE.md").symlink_to("/dev/zero")
    with pytest.raises(PathRefused):
        read_workspace_file(root, "AGENTS.md")
    with pytest.raises(PathRefused):
        read_workspace_file(root, "CLAUDE.md")
    with pytest.raises(OSError):
        read_workspace_file(root, "missing.md")


def test_excluded_applies_the_walks_rules_to_one_file(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "secret.py\nprivate/\n")
    write(tmp_path, "sub/.gitignore", "local_*.py\n!local_keep.py\n")
    for rel in ("a.py", "secret.py", "private/k.py", "sub/local_x.py", "sub/local_keep.py", ".venv/bin/x.py"):
        write(tmp_path, rel)
    write(tmp_path, ".venv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "node_modules/m.py")
    walked = set(rels(tmp_path))
    walker = WorkspaceWalker(tmp_path)
    for rel in ("a.py", "secret.py", "private/k.py", "sub/local_x.py", "sub/local_keep.py", ".venv/bin/x.py"):
        assert (walker.excluded(rel) is None) == (rel in walked), rel
    assert walker.excluded("secret.py") == IGNORED
    assert walker.excluded("node_modules/m.py") == IGNORED
    assert walker.excluded("notes.md") == NOT_PYTHON
    assert walker.excluded("../x.py") == OUTSIDE_ROOT
    assert walker.excluded("unsaved_new.py") is None  # a buffer not yet on disk is indexed
