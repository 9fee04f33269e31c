"""C and C++: functions (out-of-class ``Class::method`` definitions too), structs, unions, enums,
classes and their inline methods, namespaces, typedefs and ``using`` aliases, macros; names
qualified by namespaces and classes (``ns::Parser::parse``; a C function is its own name);
``/** */``, ``///`` and ``//`` comments right above a definition are its doc."""

from __future__ import annotations

import re

from ctx_lsp.workspace.languages.overloads import inner_declarator
from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text

_DECLARATORS = (
    "[(function_declarator declarator: (_) @name) "
    "(pointer_declarator declarator: (function_declarator declarator: (_) @name)) "
    "(pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))"
)
# a function declared by its name (not a field that points to one: ``void (*callback)(int)``)
_DECLARED = "[(identifier) (field_identifier) (operator_name) (destructor_name)] @name"
_PROTOTYPES = (
    f"[(function_declarator declarator: {_DECLARED}) "
    f"(pointer_declarator declarator: (function_declarator declarator: {_DECLARED})) "
    f"(reference_declarator (function_declarator declarator: {_DECLARED}))]"
)
_C_DEFINITIONS = rf"""
(function_definition declarator: {_DECLARATORS}]) @definition.function
(struct_specifier name: (_) @name body: (_)) @definition.class
(union_specifier name: (_) @name body: (_)) @definition.class
(enum_specifier name: (_) @name body: (_)) @definition.class
(type_definition declarator: (type_identifier) @name) @definition.class
(preproc_function_def name: (_) @name) @definition.function
(preproc_def name: (_) @name) @definition.variable
"""
_CPP_DEFINITIONS = rf"""
(function_definition declarator: {_DECLARATORS} (reference_declarator (function_declarator declarator: (_) @name))])
  @definition.function
(class_specifier name: (_) @name body: (_)) @definition.class
(namespace_definition name: (_) @name body: (_)) @definition.namespace
(alias_declaration name: (_) @name) @definition.class
(concept_definition name: (_) @name) @definition.class
(field_declaration declarator: {_PROTOTYPES}) @definition.prototype
(declaration declarator: {_PROTOTYPES}) @definition.prototype
"""
_C_REFERENCES = r"""
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(type_identifier) @ref
"""
_CPP_REFERENCES = r"""
(call_expression function: (qualified_identifier name: (identifier) @ref))
(call_expression function: (template_function name: (identifier) @ref))
(namespace_identifier) @ref
"""

# the language's keywords: noise to a search
KEYWORDS = """
auto break case const continue default do else enum extern for goto if inline register restrict return signed
sizeof static struct switch typedef union unsigned volatile while true false NULL nullptr class namespace template
typename public private protected virtual override final new delete this operator using
"""
# names of the standard library every file uses: never a reference into the workspace
BUILTINS = """
char double float int long short void bool std size_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t
int64_t string vector
"""


_TAGGED = frozenset({"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"})


def _name(kind: str, node, name_node, prefix: str, src: Text) -> Named | None:
    if name_node is None:
        return None
    text = src(name_node)
    if name_node.type == "qualified_identifier":  # ``void Parser::parse() {...}`` outside its class
        text = "".join(text.split())
        scope, _, short = text.rpartition("::")
        scope = _without_arguments(scope)  # ``Coefficients<T>::makeLowPass``: the class's member
        text = f"{scope}::{short}"
        parent = f"{prefix}::{scope}" if prefix else scope
        return Named(short, text, parent=parent, kind="method" if kind == "function" else None)
    if not text or (node.type in _TAGGED and node.parent is not None and node.parent.type == "type_definition"):
        return None  # ``typedef struct node {...} node_t``: the typedef names it
    return Named(text, text)


def _without_arguments(scope: str) -> str:
    """A scope without its template arguments: ``Filter<SampleType>`` → ``Filter``, the name the
    class itself has (``juce::dsp::IIR::Filter``), so its members defined outside it are its."""
    if "<" not in scope:
        return scope
    out, depth = [], 0
    for c in scope:
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(c)
    return "".join(out)


# A library's export macro between ``class`` and the name (``class JUCE_API BigInteger``,
# ``class Q_CORE_EXPORT QString``): the grammar, which does not expand macros, reads the macro as
# the class and the rest as a function, so the class and all of its members were missing. Read as
# spaces (``spec.unreadable``): on JUCE, 633 classes in 437 headers.
_EXPORT_MACRO = re.compile(rb"\b(?:class|struct|union)[ \t]+([A-Z][A-Z0-9_]*)[ \t]+(?=[A-Za-z_]\w*\s*(?:[:{]|final\b))")

# A calling convention's macro between the return type and a function's name (``void
# JUCE_CALLTYPE fill (…)``, ``tresult PLUGIN_API queryInterface (…)``, ``LRESULT CALLBACK
# WndProc (…)``, ``jint JNICALL Java_…``): the grammar read the macro as the function's name.
# Read as spaces, by the suffixes such macros are named with.
_CALLING_CONVENTION = re.compile(
    rb"\b([A-Z][A-Z0-9_]*(?:API|CALLTYPE|CALL)|CALLBACK)[ \t]+(?=~?[A-Za-z_][\w:]*[ \t]*\(|operator\b)"
)

# headers: a ``static inline`` function there is every including file's
_HEADERS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl")


def _file_local(node, src: Text, rel: str) -> bool:
    """A definition of a source file (not a header) that no other file can use: a ``static``
    function, anything in an anonymous namespace (C++'s way to say the same), and the program's
    ``main`` (each program has its own; nothing calls it by name)."""
    if rel.endswith(_HEADERS):
        return False
    top = True
    parent = node.parent
    while parent is not None:
        if parent.type == "namespace_definition":
            if parent.child_by_field_name("name") is None:
                return True
            top = False
        parent = parent.parent
    if node.type != "function_definition":
        return False
    if any(c.type == "storage_class_specifier" and src(c) == "static" for c in node.children):
        return True
    return top and _declared_name(node, src) == "main"


def _declared_name(node, src: Text) -> str | None:
    """The plain name a function definition declares (``main`` of ``int main(void)``)."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type in ("pointer_declarator", "reference_declarator"):
        declarator = inner_declarator(declarator)
    if declarator is None or declarator.type != "function_declarator":
        return None
    name = declarator.child_by_field_name("declarator")
    return src(name) if name is not None and name.type == "identifier" else None


SPECS = {
    lang: LanguageSpec(
        name=lang,
        grammar=(f"tree_sitter_{lang}", "language"),
        definitions=_C_DEFINITIONS + (_CPP_DEFINITIONS if lang == "cpp" else ""),
        references=_C_REFERENCES + (_CPP_REFERENCES if lang == "cpp" else ""),
        separator="::",
        comment_types=frozenset({"comment"}),
        wrapper_types=frozenset({"template_declaration"}),
        keywords=KEYWORDS,
        builtins=BUILTINS,
        hooks=Hooks(name=_name, file_local=_file_local),
        # a header says what a function does above its declaration; the code elsewhere seldom
        # says it again (JUCE: ``/** Returns the largest value that will divide both ... */``)
        declaration_files=_HEADERS,
        # measured on JUCE (C++): 677 of its 1,691 files parse better so, +2,241 definitions; on
        # Open vSwitch (C) none gained (its macro lines are Windows types, or end in ``;``)
        macro_lines=lang == "cpp",
        unreadable=((_CALLING_CONVENTION, b" "),) + (((_EXPORT_MACRO, b" "),) if lang == "cpp" else ()),
    )
    for lang in ("c", "cpp")
}
