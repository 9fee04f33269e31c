"""jedi at the cursor: the definition a name refers to, through imports and (where jedi can
infer the type) attributes — ``obj.method`` → ``pkg.mod.Class.method``.

On demand only, for one position at a time (pinning, focus): jedi is 12–100x slower than the
``ast`` index and can recurse without end on real code (docs/architecture.md), so every call runs
under a time limit on its own thread, with a ``RecursionError`` guard, and never at start-up or
on the plan path. Calls are serialised (jedi's caches are not thread-safe); a call that times
out keeps its thread until jedi returns, and later calls wait for it within their own limit.
"""

from __future__ import annotations

import atexit
import logging
import pickle
import shutil
import tempfile
import threading
from pathlib import Path

from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.parse import module_name_for

log = logging.getLogger(__name__)
_own_cache: str | None = None  # parso's disk cache of this process alone, once it needed one

DEFAULT_TIMEOUT_S = 1.0
_JEDI_LOCK = threading.Lock()  # one jedi run at a time
_PROJECTS: dict[str, object] = {}
_PREFERRED = ("function", "class")


def utf16_to_codepoint(line_text: str, character: int) -> int:
    """An LSP column (UTF-16 code units) as a column in code points (what jedi counts)."""
    units = 0
    for i, ch in enumerate(line_text):
        if units >= character:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def _project(root: Path):
    import jedi

    key = str(root)
    project = _PROJECTS.get(key)
    if project is None:
        project = _PROJECTS[key] = jedi.Project(path=root)
    return project


def _qualname(root: Path, name) -> str | None:
    """The workspace qualname of a jedi Name (its module named the way the index names it),
    or jedi's full name for a definition outside the workspace."""
    full = name.full_name
    if not full:
        return None
    path = name.module_path
    if path is not None:
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            return full
        module = module_name_for(rel)
        jedi_module = name.module_name or ""
        if full == jedi_module:
            return module
        if jedi_module and full.startswith(jedi_module + "."):
            return module + full[len(jedi_module) :]
    return full


def _own_parse_cache() -> None:
    """parso keeps parsed modules on disk, shared by every process, each file written in place:
    one was read half written by another process (a second server, a test worker) or cut short
    by one killed while writing. From now on this process keeps its own."""
    import jedi

    global _own_cache
    if _own_cache is not None and jedi.settings.cache_directory == _own_cache:
        return
    _own_cache = tempfile.mkdtemp(prefix="ctx-lsp-parso-")
    atexit.register(shutil.rmtree, _own_cache, True)
    log.info("parso's shared cache held a module it could not read; this process keeps its own in %s", _own_cache)
    jedi.settings.cache_directory = _own_cache


def _goto(root: Path, rel: str, text: str, line: int, column: int) -> str | None:
    import jedi

    script = jedi.Script(code=text, path=root / rel, project=_project(root))
    names = script.goto(line + 1, column, follow_imports=True)
    if not names or all(n.type not in (*_PREFERRED, "module") for n in names):
        names = script.infer(line + 1, column) or names
    if not names:
        log.debug("jedi found no definition at %s:%d:%d", rel, line + 1, column + 1)
        return None
    names = sorted(names, key=lambda n: (n.type not in _PREFERRED, n.type != "module"))
    for name in names:
        qualname = _qualname(root, name)
        if qualname:
            return qualname
    return None


def resolve_at(
    root: Path,
    rel: str,
    text: str | None,
    line: int,
    character: int,
    timeout_s: float | None = None,
    *,
    utf16: bool = True,
) -> str | None:
    """The qualified name of the definition the name at (``line``, ``character``) refers to,
    or None (nothing there, nothing inferable, an error inside jedi, or over ``timeout_s``).

    ``line`` is 0-based; ``character`` is an LSP column, UTF-16 code units unless ``utf16``
    is False. ``text`` is the buffer (None: read ``rel`` from disk).
    """
    root = Path(root).resolve()
    if text is None:
        try:
            text = read_workspace_text(root, rel)
        except (OSError, PathRefused):
            return None
    lines = text.splitlines()
    if line < 0 or line >= len(lines):
        return None
    column = utf16_to_codepoint(lines[line], character) if utf16 else min(character, len(lines[line]))

    result: list[str | None] = [None]
    done = threading.Event()

    def run() -> None:
        try:
            try:
                result[0] = _goto(root, rel, text, line, column)
            except (EOFError, pickle.UnpicklingError):  # a module in parso's shared cache it cannot read
                _own_parse_cache()
                result[0] = _goto(root, rel, text, line, column)
        except RecursionError:
            log.info("jedi recursed too deep resolving %s:%d:%d", rel, line + 1, column + 1)
        except Exception as err:  # jedi on half-typed code: no answer, not a crash
            log.info("jedi could not resolve %s:%d:%d: %s: %s", rel, line + 1, column + 1, type(err).__name__, err)
        finally:
            done.set()

    def guarded() -> None:
        with _JEDI_LOCK:
            if not cancelled.is_set():
                run()
            else:
                done.set()

    cancelled = threading.Event()
    thread = threading.Thread(target=guarded, name="ctx-jedi", daemon=True)
    thread.start()
    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    if not done.wait(timeout_s):
        cancelled.set()  # if it has not started yet, it never will
        log.info("jedi took over %.1f s resolving %s:%d:%d; gave up", timeout_s, rel, line + 1, column + 1)
        return None
    return result[0]


def is_attribute(root: Path, rel: str, text: str | None, line: int, character: int) -> bool:
    """Whether the name at (``line``, ``character``) is an attribute (``obj.name``): a name
    lookup alone cannot tell whose ``name`` it is."""
    if text is None:
        try:
            text = read_workspace_text(Path(root), rel)
        except (OSError, PathRefused):
            return False
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return False
    row = lines[line]
    start = min(max(character, 0), len(row))
    while start > 0 and (row[start - 1].isalnum() or row[start - 1] == "_"):
        start -= 1
    return row[:start].rstrip().endswith(".")
