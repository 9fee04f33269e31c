"""Rust: items, ``impl`` blocks (their methods named ``Type::method``), traits, inline modules,
``macro_rules!``; qualified names ``crate::module::Type::method`` with the crate's own name (what
backtraces print); ``///`` and ``//!`` doc comments; ``#[cfg(test)]`` and ``#[test]`` code marked
as tests."""

from __future__ import annotations

from collections.abc import Mapping

from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text, qualifier

DEFINITIONS = r"""
(struct_item name: (_) @name) @definition.class
(enum_item name: (_) @name) @definition.class
(union_item name: (_) @name) @definition.class
(trait_item name: (_) @name) @definition.class
(type_item name: (_) @name) @definition.class
(impl_item type: (_) @name) @definition.impl
(mod_item name: (_) @name body: (_)) @definition.namespace
(function_item name: (_) @name) @definition.function
(function_signature_item name: (_) @name) @definition.function
(macro_definition name: (_) @name) @definition.function
(const_item name: (_) @name) @definition.variable
(static_item name: (_) @name) @definition.variable
"""

REFERENCES = r"""
(call_expression function: (identifier) @ref)
(call_expression function: (scoped_identifier name: (identifier) @ref))
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (generic_function function: (identifier) @ref))
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @ref)))
(call_expression function: (generic_function function: (field_expression field: (field_identifier) @ref)))
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
(scoped_identifier path: (identifier) @ref)
"""

IMPORTS = "(use_declaration) @import"

# the language's keywords: noise to a search
KEYWORDS = """
as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move
mut pub ref return self Self static struct super trait true type unsafe use where while
"""
# names of the standard library every file uses: never a reference into the workspace
BUILTINS = """
Some None Ok Err String Vec Option Result Box str usize isize u8 u16 u32 u64 u128 i8 i16 i32 i64 i128 f32 f64
bool char std core alloc
"""


def _type_name(node, src: Text) -> str:
    """``Foo`` of ``Foo``, ``Foo<T>``, ``&'a mut foo::Foo``, ``[Foo]``."""
    if node is None:
        return ""
    if node.type == "type_identifier":
        return src(node)
    if node.type == "scoped_type_identifier":
        name = node.child_by_field_name("name")
        return src(name) if name is not None else ""
    for child in node.named_children:
        found = _type_name(child, src)
        if found:
            return found
    return ""


def _name(kind: str, node, name_node, prefix: str, src: Text) -> Named | None:
    if kind == "impl":
        ty = _type_name(node.child_by_field_name("type"), src)
        if not ty:
            return None
        trait = _type_name(node.child_by_field_name("trait"), src)
        label = f"impl {trait} for {ty}" if trait else f"impl {ty}"
        return Named(label, label, children=ty)
    text = src(name_node) if name_node is not None else ""
    return Named(text, text) if text else None


def _is_test(node, attrs: list, src: Text) -> bool:
    """Code compiled for tests only (``#[cfg(test)] mod tests``, a helper); a test case is test
    code too (the walk counts ``_is_test_case`` as both)."""
    return any("".join(src(a).split()) == "#[cfg(test)]" for a in attrs)


def _is_test_case(node, attrs: list, src: Text) -> bool:
    """A function the test runner calls: ``#[test]``, ``#[tokio::test]``, ``#[test_case(…)]``,
    ``#[rstest]`` (a ``#[cfg(test)]`` helper is called by tests: not one)."""
    for attr in attrs:
        text = "".join(src(attr).split())
        if text == "#[test]" or text.startswith(("#[tokio::test", "#[test_case", "#[rstest")):
            return True
    return False


_STD_CRATES = ("std", "core", "alloc")
# std's types every file has without a ``use`` (the prelude's)
PRELUDE_TYPES = "Vec String Box Option Result"
_PRELUDE_TYPES = frozenset(PRELUDE_TYPES.split())
# std's macros: ``write!(f, …)`` in every ``Display`` is std's, not the workspace's ``write``
STD_MACROS = """
println print eprintln eprint format format_args write writeln vec panic assert assert_eq assert_ne debug_assert
debug_assert_eq debug_assert_ne todo unimplemented unreachable matches concat stringify include include_str
include_bytes env option_env cfg line column file module_path compile_error dbg thread_local
"""
_STD_MACROS = frozenset(STD_MACROS.split())


def _from_std(name: str, imports: Mapping[str, str]) -> bool:
    """Whether ``name``, a path's first segment or a type, is the standard library's: ``std``
    itself, a prelude type, or a name the file ``use``s from ``std``, ``core`` or ``alloc``."""
    if name in _STD_CRATES:
        return True
    target = imports.get(name)
    if target is None:
        return name in _PRELUDE_TYPES
    return target.split("::", 1)[0] in _STD_CRATES


def _outside(node, src: Text, imports: Mapping[str, str], _prefix: str) -> bool:
    """A reference into the standard library, which a reference by name would take for the
    workspace's nearest definition of that name: ``Vec::new``, ``String::from``,
    ``HashMap::with_capacity`` (``use std::collections::HashMap``), ``std::mem::take``, a
    ``Duration`` type (``use std::time::Duration``), ``write!``."""
    parent = node.parent
    if parent is None:
        return False
    if node.type == "type_identifier" and parent.type != "scoped_type_identifier":
        return _from_std(src(node), imports)
    if parent.type == "macro_invocation":
        name = src(node)
        return name in _STD_MACROS and name not in imports
    if parent.type != "scoped_identifier":
        return False
    path = parent.child_by_field_name("path")
    if path is None:
        return False
    while path.type == "scoped_identifier":  # ``std::collections::HashMap``: its first segment
        inner = path.child_by_field_name("path")
        if inner is None:
            break
        path = inner
    if path.type != "identifier":  # ``crate::``, ``self::``, ``super::``, ``<T as Trait>::``
        return False
    # ``Vec::new``: the prelude's type; ``HashMap::new``, ``io::Error::new``: std's when the file
    # uses them from std; ``std::mem::take``
    return _from_std(src(path), imports)


def _owner(node, src: Text, _imports: Mapping[str, str]) -> str:
    """The type a call goes through: ``Store`` of ``Store::new()`` and of ``model::Store::new()``;
    "" for a module's function (``fs::read``: lower case), ``Self::``, ``crate::``."""
    path = qualifier(node, "scoped_identifier", "name", "path", ("scoped_identifier", "name"))
    if path is None or path.type != "identifier":
        return ""
    owner = src(path)
    return owner if owner[:1].isupper() and owner != "Self" else ""


def _imports(node, prefix: str, src: Text) -> list[tuple[str, str]]:
    """``use a::b::{c, d as e}`` → (c, a::b::c), (e, a::b::d); ``crate::`` is this crate."""
    crate = prefix.split("::", 1)[0]
    out: list[tuple[str, str]] = []

    def walk(n, path: str) -> None:
        t = n.type
        if t in ("identifier", "self", "crate", "super"):
            name = src(n)
            full = f"{path}::{name}" if path else name
            out.append((name if t == "identifier" else path.rpartition("::")[2], full))
        elif t == "scoped_identifier":
            full = src(n).replace(" ", "")
            if path:
                full = f"{path}::{full}"
            out.append((full.rpartition("::")[2], full))
        elif t == "use_as_clause":
            target = n.child_by_field_name("path")
            alias = n.child_by_field_name("alias")
            if target is not None and alias is not None:
                full = src(target).replace(" ", "")
                out.append((src(alias), f"{path}::{full}" if path else full))
        elif t == "scoped_use_list":
            head = n.child_by_field_name("path")
            base = src(head).replace(" ", "") if head is not None else ""
            base = f"{path}::{base}" if path and base else (base or path)
            lst = n.child_by_field_name("list")
            if lst is not None:
                walk(lst, base)
        elif t == "use_list":
            for child in n.named_children:
                walk(child, path)
        elif t == "use_wildcard":
            out.append(("*", path or src(n).removesuffix("::*")))

    arg = node.child_by_field_name("argument")
    if arg is not None:
        walk(arg, "")
    return [
        (local, target.replace("crate::", f"{crate}::", 1) if target.startswith("crate::") else target)
        for local, target in out
        if local
    ]


SPECS = {
    "rust": LanguageSpec(
        name="rust",
        grammar=("tree_sitter_rust", "language"),
        definitions=DEFINITIONS,
        references=REFERENCES,
        imports=IMPORTS,
        separator="::",
        comment_types=frozenset({"line_comment", "block_comment"}),
        leading_types=frozenset({"attribute_item"}),
        item_macro_parents=frozenset({"source_file", "mod_item", "impl_item", "trait_item", "declaration_list"}),
        item_macro_branches=frozenset({"cfg_if"}),
        keywords=KEYWORDS,
        builtins=BUILTINS,
        hooks=Hooks(
            name=_name, imports=_imports, is_test=_is_test, is_test_case=_is_test_case, outside=_outside, owner=_owner
        ),
    )
}
