"""How a file becomes a syntax tree: tree-sitter's parse under a CPU-time cap, and what a
grammar cannot read, read another way — every byte and line where it was, so that the texts the
walk (``treesitter``) cuts are the file's own:

- C++ macros alone on a line (``JUCE_LEAK_DETECTOR (Widget)``, ``Q_OBJECT``) and export macros
  between ``class`` and the name (``spec.macro_lines``, ``spec.unreadable``);
- TypeScript's variance marks and generic call signatures (``spec.unreadable``);
- the items a Rust macro call wraps (``spec.item_macro_parents``).
"""

from __future__ import annotations

import bisect
import re
import sys
import time

from ctx_lsp.workspace.languages.spec import Loaded

# A file tree-sitter cannot parse in this much CPU time is skipped (never a hang). CPU time, not
# wall time: on a busy machine a large file (effect's Effect.ts, 880 kB: 1.3 s) went over 2 s of
# wall time and was indexed or not by the load of the hour.
PARSE_SECONDS = 2.0


class ParseFailed(Exception):
    """The grammar could not parse the file in time (a reason for ``ctx-lsp index`` to show)."""


def parse_with_deadline(loaded: Loaded, source: bytes, seconds: float = PARSE_SECONDS):
    """The syntax tree of ``source``; ``ParseFailed`` when it takes more than ``seconds`` of
    this thread's CPU time."""
    from tree_sitter import Parser

    parser = Parser(loaded.language)
    deadline = time.thread_time() + seconds
    size = len(source)
    view = memoryview(source)
    given: list[bytes] = []

    def read(offset: int, _point: object) -> bytes:
        if offset >= size:
            return b""
        chunk = view[offset : offset + _CHUNK].tobytes()  # a copy of its own (``_release_chunks``)
        given.append(chunk)
        return chunk

    calls = 0

    def progress(_offset: int, _has_error: bool) -> bool:
        # tree-sitter asks ~8 times a kB; this thread's CPU clock is a system call (~1 µs): read
        # every _CLOCK_EVERY-th time (~8 kB of parsing apart), 10% of a parse when read every time
        nonlocal calls
        calls += 1
        return calls % _CLOCK_EVERY == 0 and time.thread_time() > deadline  # True: stop

    try:
        tree = parser.parse(read, encoding="utf8", progress_callback=progress)
    except ValueError:  # what the binding raises when the callback stopped it
        tree = None
    finally:
        _release_chunks(given)
        view.release()
    if tree is None:
        raise ParseFailed(f"tree-sitter took more than {seconds:.0f} s of CPU time to parse it")
    return tree


_CHUNK = 65536
_CLOCK_EVERY = 64


def _release_chunks(given: list[bytes]) -> None:
    """Drop the references the binding kept to the chunks a read callback returned.

    py-tree-sitter 0.26 never releases what the read callback returns: each chunk stayed in
    memory for the life of the process (a cold index of the Rust tree kept all 26 MB of its
    sources, a server one file's text more per re-index). Each chunk here is a copy only
    ``given`` holds, so whatever its reference count says beyond that is the binding's leak,
    released here: none with a binding that releases them itself."""
    import ctypes

    decref = ctypes.pythonapi.Py_DecRef
    decref.argtypes = [ctypes.py_object]
    decref.restype = None
    for chunk in given:
        # the list's reference, the loop's and getrefcount's own argument
        for _ in range(sys.getrefcount(chunk) - 3):
            decref(chunk)


def tree_of(loaded: Loaded, source: bytes):
    """The syntax tree of a file's ``source``, read as its language's description says
    (``ParseFailed`` past the cap)."""
    tree = _parse_readable(loaded, source)
    if loaded.spec.macro_lines and tree.root_node.has_error:
        tree = _without_macro_lines(loaded, source, tree)
    if loaded.spec.item_macro_parents:
        tree = _macro_items(loaded, source, tree, time.thread_time() + PARSE_SECONDS)
    return tree


_MACRO_LINE = re.compile(rb"^[ \t]*[A-Z_][A-Z0-9_]{2,}[ \t]*(?:\([^;{}\n]*\))?[ \t\r]*$", re.M)


def _without_macro_lines(loaded: Loaded, source: bytes, tree):
    """The tree of ``source`` with its macro-call lines read as spaces, when the parse went
    wrong at one of them and reading them so gives fewer errors (a Windows return type alone on
    its line, ``NTSTATUS``, looks the same and parses worse blanked). Every byte stays where it
    was: texts are still cut from ``source``."""
    macros = [m.span() for m in _MACRO_LINE.finditer(source)]
    if not macros:
        return tree
    errors = _errors(tree)
    starts = [start for start, _ in macros]  # in file order

    def near_a_macro(at: int) -> bool:  # the last macro line starting at or before ``at``
        k = bisect.bisect_right(starts, at) - 1
        return k >= 0 and at <= macros[k][1] + _NEAR_BYTES

    if not any(near_a_macro(at) for at in errors):
        return tree  # its errors are elsewhere: another parse would not mend them
    blanked = _readable(loaded, source) or bytearray(source)  # the two mend different lines
    for start, end in macros:
        blanked[start:end] = b" " * (end - start)
    try:
        other = parse_with_deadline(loaded, bytes(blanked))
    except ParseFailed:
        return tree
    return other if len(_errors(other)) < len(errors) else tree


def _parse_readable(loaded: Loaded, source: bytes, seconds: float = PARSE_SECONDS):
    """The tree of ``source`` read with what the language's ``unreadable`` patterns find as their
    bytes, when they find any (one parse, and the error recovery of a file the grammar cannot
    read is its slowest); the tree of ``source`` as it is when that has fewer errors. Every byte
    stays where it was: texts are still cut from ``source``."""
    read = _readable(loaded, source)
    if read is None:
        return parse_with_deadline(loaded, source, seconds)
    # the two parses share the one cap (a file is never given more than ``seconds``), and a text
    # the cap stops read one way is not tried the other
    began = time.thread_time()
    tree = parse_with_deadline(loaded, bytes(read), seconds)
    if not tree.root_node.has_error:
        return tree
    try:
        plain = parse_with_deadline(loaded, source, max(0.0, seconds - (time.thread_time() - began)))
    except ParseFailed:
        return tree
    return tree if len(_errors(tree)) < len(_errors(plain)) else plain


_MACRO_ROUNDS = 3  # a macro's items may hold another macro's (``cfg_rt! { cfg_net! { … } }``)


def _macro_items(loaded: Loaded, source: bytes, tree, deadline: float):
    """The tree of ``source`` with the items that macro calls wrap read as items (see
    ``spec.item_macro_parents``): each call's name, ``!`` and braces read as spaces when what
    the braces hold parses alone without errors (``thread_local! { static … }`` and
    ``lazy_static!``'s statics do too; ``bitflags!``'s own syntax does not, and stays a call).
    Every byte and line stays where it was: texts are still cut from ``source``. Its parses
    share one cap (``deadline``, this thread's CPU clock): past it, the tree read so far."""
    parents = loaded.spec.item_macro_parents
    read = source
    for _ in range(_MACRO_ROUNDS):
        spans = []
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            for child in node.children:
                if child.type in parents:
                    stack.append(child)
                elif child.type == "macro_invocation" and node.type in parents:
                    braces = _item_braces(loaded, read, child, deadline)
                    if braces is not None:
                        spans += braces
        if not spans:
            break
        blanked = bytearray(read)
        for start, end in spans:
            blanked[start:end] = bytes(b if b in b"\r\n" else 32 for b in blanked[start:end])
        try:
            tree = parse_with_deadline(loaded, bytes(blanked), max(0.0, deadline - time.thread_time()))
        except ParseFailed:
            break
        read = bytes(blanked)
    return tree


def _item_braces(loaded: Loaded, source: bytes, call, deadline: float) -> list[tuple[int, int]] | None:
    """The spans to read as spaces for the items ``call`` wraps (its name to its ``{``, and its
    ``}``), or None when it wraps none. A call of ``spec.item_macro_branches`` (``cfg_if!``)
    wraps items in each of its ``if #[cfg(…)] { … } else { … }`` branches: all but the contents
    of the branches that hold items is read as spaces."""
    body = call.children[-1] if call.children else None
    if body is None or body.type != "token_tree" or body.child_count < 2 or body.children[0].type != "{":
        return None
    name = source[call.start_byte : call.children[0].end_byte].decode("utf-8", "replace")
    if name.rpartition("::")[2] in loaded.spec.item_macro_branches:
        branches = [
            c for c in body.children[1:-1] if c.type == "token_tree" and c.children and c.children[0].type == "{"
        ]
    else:
        branches = [body]
    spans, start = [], call.start_byte
    for branch in branches:
        open_, close = branch.children[0], branch.children[-1]
        if _holds_items(loaded, source[open_.end_byte : close.start_byte], deadline):
            spans.append((start, open_.end_byte))
            start = close.start_byte
        # else a branch of no items (``compile_error!(…);``) is read as spaces with the rest
    if start == call.start_byte:
        return None
    spans.append((start, call.end_byte))
    return spans


def _holds_items(loaded: Loaded, inner: bytes, deadline: float) -> bool:
    """``inner`` parses alone without errors, as items (or calls that may wrap some)."""
    if not inner.strip():
        return False
    try:
        alone = parse_with_deadline(loaded, inner, max(0.0, deadline - time.thread_time()))
    except ParseFailed:
        return False
    return not alone.root_node.has_error and any(
        c.type.endswith("_item") or c.type == "macro_invocation" for c in alone.root_node.children
    )


def _readable(loaded: Loaded, source: bytes) -> bytearray | None:
    """``source`` with what the language's ``unreadable`` patterns find read as their bytes;
    None when they find nothing."""
    read = bytearray()
    for pattern, byte in loaded.spec.unreadable:
        for m in pattern.finditer(source):
            if not read:
                read = bytearray(source)
            start, end = m.span(1)
            read[start:end] = byte * (end - start)
    return read or None


_NEAR_BYTES = 200  # an error this close after a macro line may be its doing (the next statement)


def _errors(tree) -> list[int]:
    """Where the parse has error and missing nodes (start bytes): down the branches that hold
    one only, not the whole tree."""
    found, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append(node.start_byte)
        if node.has_error:
            stack.extend(node.children)
    return found
