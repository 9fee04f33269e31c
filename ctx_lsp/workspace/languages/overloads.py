"""Telling a C++ function's overloads apart the way its compiler does: by its parameters' types
and its qualifiers, not by the parameters' names (a header's ``BigInteger (uint32)`` is the
.cpp's ``BigInteger::BigInteger (uint32 value)``). Matches a header's documented declaration of
an overloaded name to its definition (``lookups.code_of``)."""

from __future__ import annotations

import functools
import re

from ctx_lsp.workspace.languages import language_of
from ctx_lsp.workspace.languages.reading import ParseFailed, parse_with_deadline
from ctx_lsp.workspace.languages.spec import Text, load

_OPENED = re.compile(r"([(<\[])\s+")
_CLOSED = re.compile(r",?\s+([)>\]])|,([)>\]])")
# a type as a key: ``const char *`` and ``const char*`` are one type, ``map<K,V>`` and ``map<K, V>`` too
_BEFORE = re.compile(r"\s+([*&,\[])")
_CALLED = re.compile(r"\)\s+\(")  # ``int (*) (int)``
_COMMA = re.compile(r",(?=\S)")
_QUALIFIERS = frozenset({"type_qualifier", "ref_qualifier"})  # ``const``, ``&&``: they overload
_PARSE_SECONDS = 0.05  # one function's text


def inner_declarator(node):
    """The declarator a declarator wraps (``&x`` → ``x``; ``f(…) const`` → ``f``), or None."""
    inner = node.child_by_field_name("declarator")
    if inner is not None:
        return inner
    return next((c for c in node.named_children if c.type.endswith("declarator") or c.type == "identifier"), None)


def parameter_key(node, text: Text) -> str | None:
    """``(const BigInteger&, int) const`` for a function definition or declaration ``node``:
    its parameters' types, names and default values left out, and its ``const``/``&``
    qualifiers; None when it declares no function."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = inner_declarator(declarator)
    if declarator is None:
        return None
    params = declarator.child_by_field_name("parameters")
    if params is None:
        return None
    types = [_type_of(p, text) for p in params.children if (p.is_named and p.type != "comment") or p.type == "..."]
    if types == ["void"]:
        types = []
    after = [text(c) for c in declarator.children if c.start_byte >= params.end_byte and c.type in _QUALIFIERS]
    return _tight(f"({', '.join(types)}) {' '.join(after)}")


def _type_of(param, text: Text) -> str:
    """A parameter's text without its name and its default value: ``const String& s = {}`` →
    ``const String&``."""
    whole = text(param).encode()
    cut_from = len(whole)
    default = param.child_by_field_name("default_value")
    if default is not None:
        cut_from = default.start_byte - param.start_byte
    name = param.child_by_field_name("declarator")
    while name is not None and name.type != "identifier":
        name = inner_declarator(name)
    kept = whole[:cut_from]
    if name is not None and name.end_byte - param.start_byte <= cut_from:
        start, end = name.start_byte - param.start_byte, name.end_byte - param.start_byte
        kept = kept[:start] + kept[end:]
    kept_text = _tight(kept.decode("utf-8", "replace").rstrip().removesuffix("="))
    # a copy's own ``const`` is no part of the type a caller passes: ``f (const int n)`` is ``f (int)``
    if not any(mark in kept_text for mark in "*&[("):
        return " ".join(w for w in kept_text.split(" ") if w not in ("const", "volatile"))
    return kept_text.removesuffix(" const") if kept_text.endswith("* const") else kept_text


def one_line(params: str) -> str:
    """A parameter list written over several lines as one would write it on one:
    ``(\n  options: Options<\n    A,\n    B\n  >,\n)`` → ``(options: Options<A, B>)``."""
    return _CLOSED.sub(r"\1\2", _OPENED.sub(r"\1", " ".join(params.split())))


def _tight(text: str) -> str:
    """``one_line``, and a type's spelling made one: ``(const char *, map<K,V>)`` →
    ``(const char*, map<K, V>)``."""
    return _COMMA.sub(", ", _CALLED.sub(")(", _BEFORE.sub(r"\1", one_line(text)))).strip()


@functools.lru_cache(maxsize=4096)
def overload_key(rel: str, code: str) -> str | None:
    """``parameter_key`` of the function whose code (or declaration) ``code`` is, read with the
    grammar of ``rel``'s language; None when it is not one. Kept: a plan that offers a
    declaration of ``String (…)`` reads the keys of its thirty definitions again."""
    lang = language_of(rel)
    loaded = load(lang) if lang is not None else None
    if loaded is None:
        return None
    source = code.encode("utf-8", "surrogatepass")
    try:
        tree = parse_with_deadline(loaded, source, _PARSE_SECONDS)
    except ParseFailed:
        return None
    node = next((c for c in tree.root_node.named_children if c.type != "comment"), None)
    while node is not None and node.type == "template_declaration":
        node = next((c for c in node.named_children if c.type in ("function_definition", "declaration")), None)
    if node is None:
        return None

    def text(n) -> str:
        return source[n.start_byte : n.end_byte].decode("utf-8", "replace")

    return parameter_key(node, text)
