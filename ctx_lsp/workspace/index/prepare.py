"""Preparing one file for the index, with no database access: read, hash, mask secrets, parse,
and plan (or do) its token counting. A refresh runs this in a pool of processes for a large
change; ``pool_init`` and ``pool_prepare`` are the workers' entry points (module-level, so that
``multiprocessing``'s spawn can import them).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ctx_lsp.core.tokens import batch_counter
from ctx_lsp.workspace.files import (
    BINARY,
    MAX_FILE_BYTES,
    NOT_UTF8,
    UNREADABLE,
    PathRefused,
    is_binary,
    read_bounded,
)
from ctx_lsp.workspace.index import texts
from ctx_lsp.workspace.index.db import masking_key
from ctx_lsp.workspace.index.terms import fts_texts
from ctx_lsp.workspace.languages import comment_mark
from ctx_lsp.workspace.parse import ParsedModule, Symbol, parse_module
from ctx_lsp.workspace.secrets import SecretMasker


@dataclass(slots=True)
class FileWork:
    """The outcome of reading and parsing one changed file, written later in a batch."""

    rel: str
    size: int
    mtime_ns: int
    sha256: str = ""
    action: str = "replace"  # replace | stat | error | skip | remove
    reason: str = ""
    parsed: ParsedModule | None = None
    tokens: list[tuple[int, int, int]] | None = None  # (card, body, body header) per symbol
    fts: list[tuple[str, str, str, str, str]] | None = None  # search text per symbol
    # ``texts.pack`` per symbol, when a pool worker packed them (the symbols then travel without
    # the packed texts: less to pickle, and the parent's core is left to SQLite)
    packed: list[bytes | None] | None = None
    secrets: str = ""  # how secrets were masked in it (``masking_key``); stale results are dropped


def _safe_cut(text: str, k: int) -> bool:
    """Whether every tiktoken encoding splits ``text`` into pieces at ``k`` whatever follows and
    precedes it, so that ``count(text) == count(text[:k]) + count(text[k:])`` exactly. Tokens
    never cross the pieces the encoding's pattern cuts a text into (cl100k's, o200k's, r50k's:
    letters, up to 3 digits, punctuation, spaces; none looks behind), and these seams end one
    piece whatever comes next: a letter or digit before punctuation (not an apostrophe: o200k
    keeps ``it's`` whole), punctuation before a digit (a punctuation run never takes a digit,
    nor does a letter run's leading mark), punctuation before one space and a non-space."""
    if not 0 < k < len(text):
        return False
    a, b = text[k - 1], text[k]
    if a.isspace() or (a.isalnum() and not a.isascii()):
        return False
    if a.isascii() and a.isalnum():
        return b.isascii() and not b.isalnum() and not b.isspace() and b != "'"
    if b.isascii() and b.isdigit():
        return True
    return b == " " and k + 1 < len(text) and not text[k + 1].isspace()


def _pieces(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at those of ``cuts`` (ascending) that are safe (``_safe_cut``)."""
    out, last = [], 0
    for k in cuts:
        if k > last and _safe_cut(text, k):
            out.append(text[last:k])
            last = k
    out.append(text[last:])
    return out


def _card_pieces(card: str, place: str) -> list[str]:
    """A card, its first line's ``// path:`` apart (the same for every card of the file). The
    cut is safe by construction (``_safe_cut``): the place ends in ``:`` and a line range follows."""
    if not card.startswith(place):
        return [card]
    if card[len(place) : len(place) + 1].isdigit():
        return [place, card[len(place) :]]
    return _pieces(card, [len(place)])


def _header_pieces(s: Symbol, place: str) -> list[str]:
    """``body_header(s)`` as ``// path:`` · ``12-40 ·`` · `` parent`` · ``.name\n``: its file's
    part and its parent's are counted once for all the symbols that share them. The first two
    cuts are safe by construction (``_safe_cut``: ``:`` before a digit; ``·`` before one space
    and the qualified name); the parent's is checked."""
    rest = f" {s.qualname}\n"
    pieces = [place, f"{s.start_line + 1}-{s.end_line + 1} ·"]
    parent = s.parent
    if parent and s.qualname.startswith(parent) and _safe_cut(rest, 1 + len(parent)):
        pieces += (rest[: 1 + len(parent)], rest[1 + len(parent) :])
    else:
        pieces.append(rest)
    return pieces


def token_plan(parsed: ParsedModule) -> tuple[list[str], Callable[[list[int]], list[tuple[int, int, int]]]]:
    """The texts to count for one file, and how to turn their counts into
    ``(card_tokens, body_tokens, header_tokens)`` per symbol (the header: ``cards.body_header``).

    Each source line is counted about once: a leaf (function, method, variable) on its exact
    body; a container (class, module) as its own lines outside its children plus its
    children's totals, so a class is not re-tokenized on top of its methods. At the seams
    this can differ from counting the joined text by a token or so (runs of newlines split).

    Cards and headers are counted in pieces cut where the tokenizer cuts anyway (``_safe_cut``:
    the counts are those of the whole texts, exactly), each distinct piece once: the file's
    ``// path:`` and a method's class repeat in every card and header (on the Rust tree, long
    paths and qualified names, half the text counted).
    """
    syms = parsed.symbols
    lines = parsed.lines
    n = len(syms)
    texts: list[str] = []
    index: dict[str, int] = {}

    def counted(text: str) -> int:
        found = index.get(text)
        if found is None:
            found = index[text] = len(texts)
            texts.append(text)
        return found

    place_of: dict[str, str] = {}
    card_parts: list[list[int]] = []
    for s in syms:
        mark = comment_mark(s.path)
        place = place_of.get(mark)
        if place is None:
            place = place_of[mark] = f"{mark} {s.path}:"
        card_parts.append([counted(t) for t in _card_pieces(s.card, place)])
    own: list[list[int]] = [[] for _ in syms]  # indexes into texts making up i's own lines
    kids: dict[int, list[int]] = {}
    stack: list[int] = []
    for i, s in enumerate(syms):  # containers come before their children (source order)
        while stack and not (syms[stack[-1]].start_line <= s.start_line <= syms[stack[-1]].end_line):
            stack.pop()
        if stack and syms[stack[-1]].qualname == s.parent:
            kids.setdefault(stack[-1], []).append(i)
        if s.kind in ("module", "class"):
            stack.append(i)
    unique_kids: dict[int, list[int]] = {}
    for i, s in enumerate(syms):
        children = kids.get(i)
        if not children:
            own[i].append(counted(s.body if s.kind != "module" else "".join(lines)))
            continue
        by_range: dict[tuple[int, int], int] = {}
        for k in children:  # ``a = b = 1`` is two symbols over one range: count it once
            by_range.setdefault((syms[k].start_line, syms[k].end_line), k)
        unique_kids[i] = list(by_range.values())
        cur = s.start_line
        for start, end in sorted(by_range):
            if start > cur:
                own[i].append(counted("".join(lines[cur:start])))
            cur = max(cur, end + 1)
        if cur <= s.end_line:
            own[i].append(counted("".join(lines[cur : s.end_line + 1])))

    # then each symbol's body header, counted here rather than per plan
    header_parts = [[counted(t) for t in _header_pieces(s, place_of[comment_mark(s.path)])] for s in syms]

    def assemble(counts: list[int]) -> list[tuple[int, int, int]]:
        body = [0] * n
        for i in range(n - 1, -1, -1):  # children (later in the list) first
            body[i] = sum(counts[j] for j in own[i]) + sum(body[k] for k in unique_kids.get(i, ()))
        return [
            (sum(counts[j] for j in card_parts[i]), body[i], sum(counts[j] for j in header_parts[i])) for i in range(n)
        ]

    return texts, assemble


def classify(work: FileWork, parsed: ParsedModule) -> FileWork:
    """Record in ``work`` what the writer does with a parse result: skip (not UTF-8; a file its
    grammar cannot read: minified, binary, over the parse time cap), keep the last good symbols
    (a Python syntax error: tree-sitter indexes as far as a file parses), or replace them (with
    the file's search texts)."""
    if parsed.decode_error:
        work.action, work.reason = "skip", NOT_UTF8
    elif parsed.error is not None and parsed.language != "python":
        work.action, work.reason = "skip", parsed.error
    elif parsed.error is not None:
        work.action, work.reason = "error", parsed.error
    else:
        work.action, work.parsed = "replace", parsed
        work.fts = fts_texts(parsed)
    return work


def parse_source(work: FileWork, source: bytes, masker: SecretMasker | None, root: str | None = None) -> FileWork:
    """Parse ``source`` (secrets masked with ``masker``) into ``work``; ``root`` is the workspace
    (a Rust file's crate is named by its ``Cargo.toml``)."""
    return classify(work, parse_module(work.rel, source, masker=masker, root=root))


def prepare_file(
    rel: str, path: Path, size: int, mtime_ns: int, prev_sha: str | None, masker: SecretMasker | None = None
) -> FileWork:
    """Read, hash and parse one file (no database access), masking secrets with ``masker``."""
    work = FileWork(rel, size, mtime_ns, secrets=masking_key(masker))
    try:  # the walk checked the size; a file that grew since is still capped
        data = read_bounded(path, MAX_FILE_BYTES, rel)
    except (OSError, PathRefused):
        work.action, work.reason = "skip", UNREADABLE
        return work
    work.sha256 = hashlib.sha256(data).hexdigest()
    if work.sha256 == prev_sha:
        work.action = "stat"  # touched, not changed
        return work
    if is_binary(data, rel):  # whether it decodes, the parse says (``classify``)
        work.action, work.reason = "skip", BINARY
        return work
    spath = str(path)
    root = spath[: -len(rel) - 1] if spath.endswith("/" + rel) else None
    return parse_source(work, data, masker, root)


_worker_count: Callable[[list[str]], list[int]] | None = None
_worker_masker: SecretMasker | None = None


def pool_init(encoding: str, masking: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> None:
    global _worker_count, _worker_masker
    gc.disable()  # ASTs are acyclic: the cyclic GC would only re-traverse them
    _worker_count = batch_counter(encoding)  # nothing else runs here: the fastest exact count
    _worker_masker = SecretMasker(*masking) if masking is not None else None


def pool_prepare(args: tuple[str, str, int, int, str | None]) -> FileWork:
    """A pool worker's share of a refresh: read, hash, parse (secrets masked) and count tokens
    for one file, so the parent only writes rows."""
    rel, path, size, mtime_ns, prev_sha = args
    work = prepare_file(rel, Path(path), size, mtime_ns, prev_sha, _worker_masker)
    parsed = work.parsed
    if parsed is not None and _worker_count is not None:
        to_count, assemble = token_plan(parsed)
        work.tokens = assemble(_worker_count(to_count))
        parsed.lines = []  # only the token plan needed them: less to send back
        work.packed = [texts.pack(s.card, s.docstring, s.body) for s in parsed.symbols]
        parsed.symbols = [
            s if p is None else msgspec.structs.replace(s, card="", docstring="", body="")
            for s, p in zip(parsed.symbols, work.packed, strict=True)
        ]
    return work
