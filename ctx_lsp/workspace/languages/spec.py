"""What the tree-sitter parser needs to know about one language: a small description, loaded
only when a file of that language is parsed (its grammar wheel imported, its queries compiled).

A description is mostly queries (tree-sitter's S-expressions, like the ``tags.scm`` each grammar
ships, but ours):

- ``definitions``: one pattern per kind of definition, the definition captured as
  ``@definition.<kind>`` and its name as ``@name``. Kinds: ``class`` (any type: class, struct,
  enum, trait, interface, type alias), ``namespace`` (an inline module or namespace: a container
  of its own), ``impl`` (a Rust ``impl`` block: its children are named after its type),
  ``function`` (a method when its container is a type), ``method`` and ``variable``.
- ``references``: names a definition's code uses (calls, types, constructors) as ``@ref``; a
  pattern may add the qualifier in front of it (``Type`` of ``Type::new``) as ``@scope``.
- ``imports``: import statements as ``@import`` (``hooks.imports`` reads each).

Where a query cannot say it (the name of a Go method's receiver type, a C++ ``Foo::bar``
definition, the package a Java or Go file declares), a language's ``Hooks`` does.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query

Kind = str  # class | namespace | impl | function | method | variable
# A node's source text. (Never ``Node.text``: on a tree parsed through a read callback, which the
# parse time cap needs, every ``.text`` calls back into Python for a 64 kB slice.)
Text = Callable[["Node"], str]


@dataclass(frozen=True, slots=True)
class Named:
    """What a hook says about one definition: its short ``name``, the ``segment`` it adds to the
    qualified name (``Server.Handle`` for a Go method), the ``parent`` it belongs to when that
    is not its container (a Go method's type), and its ``kind`` when the capture's is not right."""

    name: str
    segment: str
    parent: str | None = None
    kind: Kind | None = None
    children: str | None = None  # the segment its children are named under (a Rust impl's type)


@dataclass(frozen=True, slots=True)
class Hooks:
    """Per-language code for what queries cannot say. Every hook has a generic default."""

    # (kind, definition node, name node, container's child prefix, text) → Named, or None to
    # leave the definition out
    name: Callable[[Kind, Node, Node | None, str, Text], Named | None] | None = None
    # the qualified-name prefix every top-level definition of the file gets (Java's package, Go's
    # package folder), from the tree and the file's path; None: the module's own name
    package: Callable[[Node, Text, str], str | None] | None = None
    # one import statement (and the file's prefix) → (local name, target) pairs
    imports: Callable[[Node, str, Text], list[tuple[str, str]]] | None = None
    # a definition that is test code by its own marks (Rust's ``#[cfg(test)]``, ``#[test]``)
    is_test: Callable[[Node, list[Node], Text], bool] | None = None
    # a test the runner calls, never the code (Rust's ``#[test] fn``, Java's ``@Test`` method):
    # no reference by name resolves to it (a ``text()`` call is not jsoup's test ``text``)
    is_test_case: Callable[[Node, list[Node], Text], bool] | None = None
    # a captured reference that names nothing in the workspace by the language's own rules (Go:
    # ``fmt.Sprintf``, ``t.Errorf`` of a ``t *testing.T``), given the file's imports (local name
    # → target) and what its top-level names are qualified with (Java's package): no edge, where
    # a reference by name would find an unrelated definition
    outside: Callable[[Node, Text, Mapping[str, str], str], bool] | None = None
    # the type (Go: the imported package) a captured name is called through, when the code says
    # it (Rust's ``Store::new``: ``Store``; Java's ``Jsoup.parse``; Go's ``store.Open``), given the
    # file's imports: the reference is to that type's ``new``, not to any ``new``; "" when it does not
    owner: Callable[[Node, Text, Mapping[str, str]], str] | None = None
    # the definition a captured name is by the file's imports, when they say (TypeScript's
    # ``fmt`` after ``import { fmt } from './fmt'``, ``utils.fmt`` after ``import * as utils``):
    # tried first; when the workspace has no such definition (a package, a re-export), the
    # name decides as without it
    imported: Callable[[Node, Text, Mapping[str, str]], str | None] | None = None
    # a top-level definition only its own file can use (C's ``static`` functions), given the
    # file's path: named ``FILE:NAME`` (gdb's way), as every program's ``usage`` is one of its own
    file_local: Callable[[Node, Text, str], bool] | None = None


def qualifier(
    node: Node, parent_type: str, name_field: str, qualifier_field: str, chain: tuple[str, str] | None = None
) -> Node | None:
    """What a captured name is qualified by, for a ``hooks.owner``: in a ``parent_type`` node that
    holds the name in ``name_field``, its ``qualifier_field``, or the last part of a qualifier
    that is itself a ``chain`` (type, field): ``Store`` of ``model::Store::new``, ``Jsoup`` of
    ``org.jsoup.Jsoup.parse``. None when the name is not the qualified part of such a node."""
    parent = node.parent
    if parent is None or parent.type != parent_type or parent.child_by_field_name(name_field) != node:
        return None
    found = parent.child_by_field_name(qualifier_field)
    if chain is not None and found is not None and found.type == chain[0]:
        found = found.child_by_field_name(chain[1])
    return found


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    grammar: tuple[str, str]  # (module, function) returning the grammar's language pointer
    definitions: str
    references: str
    imports: str = ""
    separator: str = "."
    comment_types: frozenset[str] = frozenset({"comment"})
    # nodes right above a definition that belong to it (attributes, decorators)
    leading_types: frozenset[str] = frozenset()
    # a definition's parent whose span is the definition's (``export``, ``template<...>``)
    wrapper_types: frozenset[str] = frozenset()
    # ... only when it holds this one definition (Go's ``type``/``var`` groups)
    group_types: frozenset[str] = frozenset()
    # the field of a definition's node that holds its body (the card shows what is above it)
    body_fields: tuple[str, ...] = ("body",)
    keywords: str = ""  # space-separated: dropped from a symbol's identifiers and references
    builtins: str = ""  # space-separated: dropped from references only
    hooks: Hooks = field(default_factory=Hooks)
    # C++: a line that is only a macro's call (``JUCE_END_IGNORE_WARNINGS_MSVC``, ``Q_OBJECT``)
    # may be read as blank where that parses with fewer errors (``reading``)
    macro_lines: bool = False
    # the nodes that hold items, down to where a macro's call may wrap some (Rust: a file, a
    # ``mod``, an ``impl``, a ``trait`` and their bodies):
    # tokio's ``cfg_rt! { pub fn spawn … }`` holds its items as tokens, which the grammar does not
    # read as definitions; where the braces' content parses alone without errors, the macro's
    # name and braces are read as spaces (``reading``)
    item_macro_parents: frozenset[str] = frozenset()
    # ... and macros whose items are in branches: ``cfg_if! { if #[cfg(unix)] { … } else { … } }``
    item_macro_branches: frozenset[str] = frozenset()
    # files whose documented declarations (``@definition.prototype``: a function declared
    # without its code) are symbols of their own, marked ``DECLARATION_MARK``: the doc is there
    declaration_files: tuple[str, ...] = ()
    # what the grammar cannot read, each (pattern, byte): the spans of the pattern's first group
    # read as that byte, kept unless the file parses with fewer errors as it is (``reading``):
    # TypeScript's variance marks as spaces
    unreadable: tuple[tuple[re.Pattern[bytes], bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Loaded:
    """A description with its grammar loaded and its queries compiled."""

    spec: LanguageSpec
    language: Language
    # The three queries as one (definitions' patterns first, then references', then imports'):
    # one walk of the tree instead of three. A query's walk costs about as much as the work on
    # its matches (Rust tree: 0.47 s for three passes, 0.22 s for one).
    queries: Query
    definition_patterns: int  # patterns below this index are definitions'
    noise: frozenset[bytes]  # words dropped from a symbol's identifiers: keywords, 1-letter names
    not_references: frozenset[bytes]  # ... and from its references: the standard library's names too


_MODULES = {
    "rust": "rust",
    "typescript": "typescript",
    "tsx": "typescript",
    "javascript": "typescript",
    "go": "go",
    "java": "java",
    "c": "cfamily",
    "cpp": "cfamily",
}


def spec_for(lang: str) -> LanguageSpec | None:
    """The description of a tree-sitter language, or None (Python, or unknown)."""
    module = _MODULES.get(lang)
    if module is None:
        return None
    return importlib.import_module(f"ctx_lsp.workspace.languages.{module}").SPECS[lang]


@functools.cache
def load(lang: str) -> Loaded | None:
    """``lang``'s grammar and compiled queries, once per process; None when the language has no
    description or its grammar wheel is missing (the file is then skipped with that reason)."""
    spec = spec_for(lang)
    if spec is None:
        return None
    try:
        from tree_sitter import Language, Query

        module, function = spec.grammar
        language = Language(getattr(importlib.import_module(module), function)())
    except ImportError:
        return None
    letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
    noise = frozenset(w.encode() for w in spec.keywords.split()) | frozenset(bytes([c]) for c in letters)
    return Loaded(
        spec=spec,
        language=language,
        queries=Query(language, "\n".join((spec.definitions, spec.references, spec.imports))),
        definition_patterns=Query(language, spec.definitions).pattern_count,
        noise=noise,
        not_references=noise | frozenset(w.encode() for w in spec.builtins.split()),
    )
