"""Java: classes, interfaces, enums, records and annotation types (nested ones too), methods and
constructors; qualified names ``package.Outer.Inner.method`` from the package the file declares;
Javadoc comments; annotations are part of a definition."""

from __future__ import annotations

from collections.abc import Mapping

from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text, qualifier

DEFINITIONS = r"""
(class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.class
(enum_declaration name: (_) @name) @definition.class
(record_declaration name: (_) @name) @definition.class
(annotation_type_declaration name: (_) @name) @definition.class
(method_declaration name: (_) @name) @definition.method
(constructor_declaration name: (_) @name) @definition.method
(compact_constructor_declaration name: (_) @name) @definition.method
"""

REFERENCES = r"""
(method_invocation name: (identifier) @ref)
(object_creation_expression type: (type_identifier) @ref)
(type_identifier) @ref
(method_reference (identifier) @ref)
"""

IMPORTS = "(import_declaration) @import"

# the language's keywords: noise to a search
KEYWORDS = """
abstract assert break case catch class const continue default do else enum extends final finally for goto if
implements import instanceof interface native new package private protected public return static strictfp super
switch synchronized this throw throws transient try void volatile while true false null var record
"""
# names of the standard library every file uses: never a reference into the workspace
BUILTINS = """
boolean byte char double float int long short String Object Override List Map Set Integer Long Boolean
Exception RuntimeException
"""


# java.lang's classes, which every file uses without an import
JAVA_LANG = """
Object String StringBuilder StringBuffer CharSequence Integer Long Short Byte Double Float Boolean Character Number
Math StrictMath System Thread Runtime Class ClassLoader Enum Iterable Comparable Runnable AutoCloseable Throwable
Exception RuntimeException Error IllegalArgumentException IllegalStateException NullPointerException
IndexOutOfBoundsException UnsupportedOperationException ClassCastException
"""
# java.lang.Object's methods: every object has them
OBJECT_METHODS = "toString equals hashCode getClass"
_JAVA_LANG = frozenset(JAVA_LANG.split())
_OBJECT_METHODS = frozenset(OBJECT_METHODS.split())
_SCOPES = frozenset({"method_declaration", "constructor_declaration", "lambda_expression", "class_body"})


_JDK_PACKAGES = ("java.", "javax.", "jdk.")


def _jdk(type_name: str, imports: Mapping[str, str]) -> bool:
    """Whether a type named so in a file is the JDK's: java.lang's, or imported from ``java.``,
    ``javax.`` or ``jdk.`` (a qualified name is its own import)."""
    if "." in type_name:
        return type_name.startswith(_JDK_PACKAGES)
    if type_name in _JAVA_LANG:
        return type_name not in imports  # a class of the same name imported from elsewhere
    return imports.get(type_name, "").startswith(_JDK_PACKAGES)


def _type_name(node, src: Text) -> str:
    """``List`` of ``List<String>``, ``java.util.List`` of itself, ``String`` of ``String[]``."""
    while node is not None and node.type in ("generic_type", "array_type"):
        node = node.named_children[0] if node.named_children else None
    return src(node) if node is not None else ""


_scopes_read: tuple[object, dict[tuple[int, int], dict[str, str]]] = (None, {})


def _declared(scope, src: Text) -> dict[str, str]:
    """The variables a method (or class body) declares, with their types' names: parameters,
    locals, for-each variables (a class body: its fields). One walk per scope, kept while its
    file is read (``src`` is the file's; no node is kept, nor its tree)."""
    global _scopes_read
    read_for, read = _scopes_read  # one read: another thread's file never mixes with this one's
    if read_for is not src:
        read = {}
        _scopes_read = (src, read)
    key = (scope.start_byte, scope.end_byte)
    found = read.get(key)
    if found is None:
        found = read[key] = _declarations(scope, src)
    return found


def _declarations(scope, src: Text) -> dict[str, str]:
    out: dict[str, str] = {}
    stack = [scope]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("formal_parameter", "local_variable_declaration", "field_declaration", "enhanced_for_statement"):
            type_name = _type_name(node.child_by_field_name("type"), src)
            if kind in ("formal_parameter", "enhanced_for_statement"):
                name = node.child_by_field_name("name")
                if name is not None:
                    out.setdefault(src(name), type_name)
            else:
                for declarator in node.children_by_field_name("declarator"):
                    name = declarator.child_by_field_name("name")
                    if name is not None:
                        out.setdefault(src(name), type_name)
        if node is scope or kind not in _SCOPES:  # a nested class or lambda has scopes of its own
            stack.extend(node.named_children)
    return out


def _variable_type(identifier, src: Text) -> str:
    """The declared type of the variable ``identifier`` names: the innermost method, lambda or
    class body around it that declares it (scoping inside a method is not followed)."""
    name = src(identifier)
    node = identifier.parent
    while node is not None:
        if node.type in _SCOPES:
            found = _declared(node, src).get(name)
            if found is not None:
                return found
        node = node.parent
    return ""


def _outside(node, src: Text, imports: Mapping[str, str], package: str) -> bool:
    """A reference into the JDK, which a reference by name would take for a workspace definition
    of the same name: ``sb.append`` of a ``StringBuilder sb``, ``map.put`` of a ``Map`` imported
    from ``java.util``, ``Math.max``, ``System.out.println``, ``x.toString()``, a ``List`` type
    imported from ``java.util`` — not in the JDK's own source (``package`` ``java.…``), where the
    JDK's types are the workspace's."""
    parent = node.parent
    if parent is None or package.startswith(_JDK_PACKAGES):
        return False
    if node.type == "type_identifier":
        return _jdk(src(node), imports) and parent.type != "scoped_type_identifier"
    if parent.type != "method_invocation":
        return False
    receiver = parent.child_by_field_name("object")
    if receiver is None or receiver.type in ("this", "super"):
        return False  # the class's own (or inherited) method
    if src(node) in _OBJECT_METHODS:
        return True
    while receiver.type == "field_access":  # ``System.out.println``: the chain's first name
        receiver = receiver.child_by_field_name("object")
        if receiver is None:
            return False
    if receiver.type != "identifier":
        return False
    name = src(receiver)
    if name[:1].isupper() and _jdk(name, imports):  # a static call: ``Math.max``, ``Objects.equals``
        return True
    declared = _variable_type(receiver, src)
    return bool(declared) and _jdk(declared, imports)


def _owner(node, src: Text, _imports: Mapping[str, str]) -> str:
    """The class a static call goes through: ``Jsoup`` of ``Jsoup.parse(html)`` and of
    ``org.jsoup.Jsoup.parse(html)``, ``Inner`` of ``Outer.Inner.of()``; "" for a call on a
    variable, a field, ``this``, or a constant (``DEFAULT.parse()``: no lower-case letter)."""
    receiver = qualifier(node, "method_invocation", "name", "object", ("field_access", "field"))
    if receiver is None or receiver.type != "identifier":
        return ""
    name = src(receiver)
    if not name[:1].isupper() or name.isupper() or _variable_type(receiver, src):
        return ""
    return name


# JUnit 4 and 5's and TestNG's annotations of a test the runner calls
TEST_ANNOTATIONS = "Test ParameterizedTest RepeatedTest TestFactory TestTemplate"
_TEST_ANNOTATIONS = frozenset(TEST_ANNOTATIONS.split())


def _is_test_case(node, attrs: list, src: Text) -> bool:
    """A method annotated ``@Test`` (``@org.junit.Test``, ``@ParameterizedTest(…)``, …)."""
    if node.type != "method_declaration":
        return False
    for child in node.children:
        if child.type == "modifiers":
            for mark in child.named_children:
                if mark.type in ("marker_annotation", "annotation"):
                    name = mark.child_by_field_name("name")
                    if name is not None and src(name).rpartition(".")[2] in _TEST_ANNOTATIONS:
                        return True
    return False


def _package(root, src: Text, _rel: str) -> str | None:
    for child in root.named_children:
        if child.type == "package_declaration":
            for part in child.named_children:
                if part.type in ("scoped_identifier", "identifier"):
                    return src(part)
    return ""  # the default package: classes are named by themselves


def _name(kind: str, node, name_node, prefix: str, src: Text) -> Named | None:
    text = src(name_node) if name_node is not None else ""
    return Named(text, text) if text else None


def _imports(node, prefix: str, src: Text) -> list[tuple[str, str]]:
    text = src(node).removeprefix("import").strip().rstrip(";").strip()
    text = text.removeprefix("static ").strip()
    if text.endswith(".*"):
        return [("*", text[:-2])]
    return [(text.rpartition(".")[2], text)] if text else []


SPECS = {
    "java": LanguageSpec(
        name="java",
        grammar=("tree_sitter_java", "language"),
        definitions=DEFINITIONS,
        references=REFERENCES,
        imports=IMPORTS,
        comment_types=frozenset({"line_comment", "block_comment"}),
        keywords=KEYWORDS,
        builtins=BUILTINS,
        hooks=Hooks(
            name=_name, package=_package, imports=_imports, is_test_case=_is_test_case, outside=_outside, owner=_owner
        ),
    )
}
