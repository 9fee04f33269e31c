"""Java: classes, interfaces, enums, records and annotation types (nested ones too), methods and
constructors; qualified names ``package.Outer.Inner.method`` from the package the file declares;
Javadoc comments; annotations are part of a definition."""

from __future__ import annotations

from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text

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


def _package(root, src: Text) -> str | None:
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
        hooks=Hooks(name=_name, package=_package, imports=_imports),
    )
}
