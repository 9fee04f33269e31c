"""Every row's head (``SymbolHead``) kept by the postings, in columns instead of objects.

A new question's hits are a few hundred rows, and reading their heads from SQLite cost more
than scoring them (~1.4 ms on sympy), so the postings keep every row's head. As 139k objects on
the Rust tree (``benchmarks/polyglot_trees.py``) they took ~50 MB: the structs, the qualnames
and three boxed integers each. Here a head is a row of arrays by position (the postings'
positions): the strings many rows repeat (names, kinds, paths, parents) once, as codes; the
integers in int32 arrays; a qualname as its parent, a separator and its name when it is that
(87% of the Rust tree's), else as UTF-8 bytes in one blob. ~11 MB on the Rust tree. A head is
made again on demand, a few hundred per new question (~0.3 ms).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ctx_lsp.workspace.index.db import SymbolHead

# how a qualname is parent + separator + name (its ``qual`` is -1 - the separator's index)
_SEPARATORS = (".", "::", "/")
_INT_COLUMNS = ("start", "end", "end_col", "secrets")
_CODE_COLUMNS = ("name", "kind", "path", "parent")


class Heads:
    """The heads of rows by position (see the module's docstring); ``grow`` before ``put``."""

    def __init__(self, size: int) -> None:
        self.strings: list[str] = []  # code → string
        self.codes: dict[str, int] = {}  # string → code
        self.blob = bytearray()  # the qualnames not made of parent, separator and name
        self.held = np.zeros(size, bool)  # a head is kept at this position
        self.ids = np.zeros(size, np.int64)
        self.qual = np.zeros(size, np.int64)  # offset into ``blob``, or -1 - a separator's index
        self.qual_len = np.zeros(size, np.int32)
        for column in (*_CODE_COLUMNS, *_INT_COLUMNS):
            setattr(self, column, np.zeros(size, np.int32))

    def code(self, text: str) -> int:
        found = self.codes.get(text)
        if found is None:
            found = self.codes[text] = len(self.strings)
            self.strings.append(text)
        return found

    def grow(self, size: int) -> None:
        """Room for ``size`` positions at least."""
        extra = size - len(self.held)
        if extra <= 0:
            return
        for column in ("held", "ids", "qual", "qual_len", *_CODE_COLUMNS, *_INT_COLUMNS):
            array = getattr(self, column)
            setattr(self, column, np.concatenate([array, np.zeros(extra, array.dtype)]))

    def put(self, positions: Sequence[int], rows: Iterable[tuple]) -> None:
        """Keep these heads (rows in ``SELECT_HEADS`` order) at these positions."""
        code, blob = self.code, self.blob
        columns: dict[str, list[int]] = {c: [] for c in ("ids", "qual", "qual_len", *_CODE_COLUMNS, *_INT_COLUMNS)}
        ids, qual, qual_len = columns["ids"], columns["qual"], columns["qual_len"]
        names, kinds, paths, parents = (columns[c] for c in _CODE_COLUMNS)
        starts, ends, end_cols, secrets_ = (columns[c] for c in _INT_COLUMNS)
        for i, qualname, name, kind, path, start, end, end_col, parent, secrets in rows:
            ids.append(i)
            names.append(code(name))
            kinds.append(code(kind))
            paths.append(code(path))
            parents.append(code(parent))
            starts.append(start)
            ends.append(end)
            end_cols.append(end_col)
            secrets_.append(secrets)
            if qualname.startswith(parent) and qualname.endswith(name):
                sep = qualname[len(parent) : len(qualname) - len(name)]
                if sep in _SEPARATORS and len(parent) + len(sep) + len(name) == len(qualname):
                    qual.append(-1 - _SEPARATORS.index(sep))
                    qual_len.append(0)
                    continue
            data = qualname.encode("utf-8", "surrogatepass")
            qual.append(len(blob))
            qual_len.append(len(data))
            blob += data
        at = np.asarray(positions, np.int64)
        for column, values in columns.items():
            array = getattr(self, column)
            array[at] = np.asarray(values, array.dtype)
        self.held[at] = True

    def drop(self, positions: np.ndarray) -> None:
        self.held[positions] = False

    def get(self, positions: np.ndarray) -> list[SymbolHead]:
        """The heads kept at these positions (positions holding none are left out)."""
        at = positions[(positions >= 0) & (positions < len(self.held))]
        at = at[self.held[at]]
        strings, blob = self.strings, self.blob
        out = []
        cols = [getattr(self, c)[at].tolist() for c in ("ids", "qual", "qual_len", *_CODE_COLUMNS, *_INT_COLUMNS)]
        for i, q, q_len, name, kind, path, parent, start, end, end_col, secrets in zip(*cols, strict=True):
            name_s, parent_s = strings[name], strings[parent]
            if q < 0:
                qualname = f"{parent_s}{_SEPARATORS[-1 - q]}{name_s}"
            else:
                qualname = blob[q : q + q_len].decode("utf-8", "surrogatepass")
            out.append(
                SymbolHead(i, qualname, name_s, strings[kind], strings[path], start, end, end_col, parent_s, secrets)
            )
        return out
