"""Rows to values: how the rows of one table read as a Struct (or a dict), by column name.

A codec's ``columns`` are written once: ``select`` reads them in that order and ``decode`` maps
the row back name by name, so a query and its decoding cannot drift apart. For a Struct the
columns are its fields, each checked against the table at import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import msgspec

from ctx_lsp.memory.store.schema import Table

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)


def json_or_none(value: str | bytes | None) -> Any:
    return msgspec.json.decode(value) if value else None


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class Codec(Generic[T]):
    """One way to read a table's rows: ``columns`` in order, each row decoded to ``build(…)``
    with the column's value (after ``convert``, where given) under its key."""

    def __init__(
        self,
        table: Table,
        columns: Sequence[str],
        build: Callable[..., T],
        *,
        keys: Sequence[str] | None = None,
        convert: Mapping[str, Callable[[Any], Any]] | None = None,
    ) -> None:
        unknown = set(columns) - set(table.names)
        if unknown:
            raise ValueError(f"no column {', '.join(sorted(unknown))} in table {table.name}")
        self.table = table
        self.columns = tuple(columns)
        self.decode: Callable[[Sequence[Any]], T] = _decoder(build, tuple(keys or columns), self.columns, convert or {})

    @classmethod
    def struct(cls, table: Table, struct: type[S], **convert: Callable[[Any], Any]) -> Codec[S]:
        """Rows as ``struct``: its fields are the columns."""
        return cls(table, struct.__struct_fields__, struct, convert=convert)

    @classmethod
    def dicts(
        cls,
        table: Table,
        columns: Sequence[str],
        *,
        rename: Mapping[str, str] | None = None,
        keep_names: bool = False,
        **convert: Callable[[Any], Any],
    ) -> Codec[dict[str, Any]]:
        """Rows as dicts keyed by camelCase column names (or the names as they are, or ``rename``'s)."""
        keys = [(rename or {}).get(c) or (c if keep_names else camel(c)) for c in columns]
        return cls(table, columns, dict, keys=keys, convert=convert)

    def select(self, alias: str = "", **expressions: str) -> str:
        """The column list of a SELECT; ``expressions`` read a column from something else (a join)."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(expressions.get(c) or prefix + c for c in self.columns)

    def encode(self, value: msgspec.Struct, *, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
        """A Struct's columns by name, for an insert (``leave_out``: those the table fills in)."""
        return {c: getattr(value, c) for c in self.columns if c not in leave_out}


def _decoder(
    build: Callable[..., Any],
    keys: tuple[str, ...],
    columns: tuple[str, ...],
    convert: Mapping[str, Callable[[Any], Any]],
) -> Callable[[Sequence[Any]], Any]:
    """``row -> build(key=row[0], …)``, compiled once per codec (as dataclasses compile their
    ``__init__``): planning decodes every message row of a path, and this is as fast as the
    hand-written mapping, at about a fifth of the cost of ``build(**dict(zip(keys, row)))``."""
    env: dict[str, Any] = {"build": build}
    values = []
    for i, column in enumerate(columns):
        if column in convert:
            env[f"convert_{i}"] = convert[column]
            values.append(f"convert_{i}(row[{i}])")
        else:
            values.append(f"row[{i}]")
    if build is dict:
        body = "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, values, strict=True)) + "}"
    else:
        body = "build(" + ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) + ")"
    return eval(f"lambda row: {body}", env)
