"""Go: functions, methods on receivers (``cli.Command.Run``: the package, the receiver's type,
the method), types (structs, interfaces, aliases), package-level constants and variables; the
comment right above a declaration is its doc (``// Run runs …``).

A package is named by its folder, as Go's import paths name it (``internal/store.Open``): two
folders may declare packages of one name (every ``cmd/*/main.go`` is ``package main``), and each is
a package of its own. A name called through an imported package (``store.Open()``) is that
package's: the folder its import path names (``gomod``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text, qualifier

DEFINITIONS = r"""
(function_declaration name: (_) @name) @definition.function
(method_declaration name: (_) @name) @definition.method
(type_declaration (type_spec name: (_) @name) @definition.class)
(type_declaration (type_alias name: (_) @name) @definition.class)
(source_file (const_declaration (const_spec name: (_) @name) @definition.variable))
(source_file (var_declaration (var_spec name: (_) @name) @definition.variable))
"""

REFERENCES = r"""
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression field: (field_identifier) @ref))
(type_identifier) @ref
(qualified_type name: (type_identifier) @ref)
"""

IMPORTS = "(import_spec) @import"

# the language's keywords: noise to a search
KEYWORDS = """
break case chan const continue default defer else fallthrough for func go goto if import interface map package
range return select struct switch type var nil true false iota
"""
# names of the standard library every file uses: never a reference into the workspace
BUILTINS = """
error string int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 bool byte rune
any len cap make new append panic recover copy delete fmt
"""


def _receiver_type(node, src: Text) -> str:
    """``Command`` of ``(c *Command)``, ``(s Server[T])``."""
    if node is None:
        return ""
    if node.type == "type_identifier":
        return src(node)
    for child in node.named_children:
        found = _receiver_type(child, src)
        if found:
            return found
    return ""


def _name(kind: str, node, name_node, prefix: str, src: Text) -> Named | None:
    text = src(name_node) if name_node is not None else ""
    if not text or text == "_":
        return None
    if kind == "method":
        receiver = _receiver_type(node.child_by_field_name("receiver"), src)
        if receiver:
            parent = f"{prefix}.{receiver}" if prefix else receiver
            return Named(text, f"{receiver}.{text}", parent=parent)
        return Named(text, text, kind="function")
    return Named(text, text)


def _package(root, src: Text, rel: str) -> str | None:
    """What the file's top-level names are qualified with: its folder (``internal/store``; an
    external test package ``store_test`` its folder and ``_test``, as its import path has it); a
    file at the workspace's root, the package it declares (``main``)."""
    declared = _declared(root, src)
    folder = rel.rpartition("/")[0]
    if declared is None or not folder:
        return declared
    return f"{folder}_test" if declared.endswith("_test") else folder


def _declared(root, src: Text) -> str | None:
    for child in root.named_children:
        if child.type == "package_clause":
            for part in child.named_children:
                if part.type == "package_identifier":
                    return src(part)
    return None


def _imports(node, prefix: str, src: Text) -> list[tuple[str, str]]:
    path = node.child_by_field_name("path")
    if path is None:
        return []
    target = src(path).strip('"`')
    alias = node.child_by_field_name("name")
    local = src(alias) if alias is not None else package_name(target)
    return [(local, target)] if local not in ("_", ".") else [("*", target)] if local == "." else []


_MAJOR = re.compile(r"v[2-9]\d*")


def package_name(path: str) -> str:
    """The name an import path's package goes by (its package clause, by Go's convention): the
    last element, before a major version (``…/cli/v2`` is ``cli``) and without gopkg.in's
    (``gopkg.in/yaml.v3`` is ``yaml``)."""
    parts = path.split("/")
    last = parts[-1]
    if _MAJOR.fullmatch(last) and len(parts) > 1:
        last = parts[-2]
    return re.sub(r"\.v\d+$", "", last)


def _owner(node, src: Text, imports: Mapping[str, str]) -> str:
    """The import path of the package a name is qualified by, when it is an imported one outside
    the standard library (``example.com/app/internal/store`` of ``st.Open()`` after ``import st
    ".../internal/store"``, of a ``store.DB`` type): the reference is to that package's ``Open``,
    not to the nearest one (``gomod.of_go_package`` finds its folder)."""
    operand = qualifier(node, "qualified_type", "name", "package") or qualifier(
        node, "selector_expression", "field", "operand"
    )
    if operand is None or operand.type not in ("identifier", "package_identifier"):
        return ""
    target = imports.get(src(operand))
    return target if target is not None and not _standard(target) else ""


# the first elements of the standard library's import paths (``net/http``, ``encoding/json``)
STANDARD_ROOTS = """
archive bufio builtin bytes cmp compress container context crypto database debug embed encoding errors expvar flag
fmt go hash html image index io iter log maps math mime net os path plugin reflect regexp runtime slices sort strconv
strings structs sync syscall testing text time unicode unique unsafe weak C
"""
_STANDARD = frozenset(STANDARD_ROOTS.split())


def _standard(path: str) -> bool:
    """Go's standard library (``fmt``, ``net/http``): a module's own packages and every other
    module's start with their module path, a host (``github.com/…``) or, for a module kept on
    the machine, any first element but the standard library's (``module shop``)."""
    return path.partition("/")[0] in _STANDARD


def package_match(import_path: str, package: str) -> int:
    """How well a package of the workspace, by its qualified-name prefix (``internal/store``; a
    package at the root by its name), is the one ``import_path`` names: the number of trailing
    path elements the two share (the workspace's root need not be the module's); 0: not it."""
    want, have = import_path.split("/"), package.split("/")
    n = 0
    while n < min(len(want), len(have)) and want[-1 - n] == have[-1 - n]:
        n += 1
    if n == 0 and len(have) == 1 and package_name(import_path) == package:  # ``…/cli/v2`` is ``cli``
        return 1
    return n


_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})


def _declared_package(operand, src: Text) -> str:
    """The package of the type ``operand`` (an identifier) is declared with as a parameter or
    receiver of the function around it: ``testing`` for ``t`` in ``func TestX(t *testing.T)``;
    "" when it is not one, or its type is not qualified by a package."""
    name = src(operand)
    node = operand.parent
    while node is not None and node.type not in _FUNCTIONS:
        node = node.parent
    if node is None:
        return ""
    for field in ("receiver", "parameters"):
        params = node.child_by_field_name(field)
        for decl in params.named_children if params is not None else ():
            if decl.type != "parameter_declaration" or not any(
                src(n) == name for n in decl.children_by_field_name("name")
            ):
                continue
            kind = decl.child_by_field_name("type")
            while kind is not None and kind.type == "pointer_type":
                kind = kind.named_children[0] if kind.named_children else None
            if kind is not None and kind.type == "qualified_type":
                package = kind.child_by_field_name("package")
                return src(package) if package is not None else ""
            return ""
    return ""


def _outside(node, src: Text, imports: Mapping[str, str], _prefix: str) -> bool:
    """A reference into the standard library, which a reference by name would take for a
    workspace definition of the same name: ``fmt.Sprintf``, ``strings.Join``, a ``time.Duration``
    field, ``t.Errorf`` of a ``t *testing.T`` (a method of a standard-library type)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "qualified_type":
        package = parent.child_by_field_name("package")
        target = imports.get(src(package)) if package is not None else None
        return target is not None and _standard(target)
    if parent.type != "selector_expression":
        return False
    operand = parent.child_by_field_name("operand")
    if operand is None or operand.type != "identifier":
        return False
    target = imports.get(src(operand))
    if target is None:  # a value: of a standard-library type when declared with one
        target = imports.get(_declared_package(operand, src))
    return target is not None and _standard(target)


SPECS = {
    "go": LanguageSpec(
        name="go",
        grammar=("tree_sitter_go", "language"),
        definitions=DEFINITIONS,
        references=REFERENCES,
        imports=IMPORTS,
        comment_types=frozenset({"comment"}),
        group_types=frozenset({"type_declaration", "const_declaration", "var_declaration"}),
        keywords=KEYWORDS,
        builtins=BUILTINS,
        hooks=Hooks(name=_name, package=_package, imports=_imports, outside=_outside, owner=_owner),
    )
}
