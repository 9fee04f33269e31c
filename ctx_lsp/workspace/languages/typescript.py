"""TypeScript, TSX and JavaScript (JSX, ES modules, CommonJS): functions, classes and their
methods (class fields holding a function too), interfaces, type aliases, enums, namespaces,
module-level constants and the functions they hold (``export const f = (...) => {...}``, and
``export const X = make("X", (x) => {...})``); qualified names ``src/core/Ky.Ky.create``; JSDoc
comments; imports and ``require``."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ctx_lsp.workspace.languages.spec import Hooks, LanguageSpec, Named, Text, qualifier

_FUNCTION_VALUES = "[(arrow_function) (function_expression) (generator_function)]"
_COMMON = rf"""
(function_declaration name: (_) @name) @definition.function
(generator_function_declaration name: (_) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(program (lexical_declaration (variable_declarator name: (identifier) @name value: {_FUNCTION_VALUES}))
  @definition.function)
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name value: {_FUNCTION_VALUES}))
  @definition.function))
(program (lexical_declaration
  (variable_declarator name: (identifier) @name value: (call_expression arguments: (arguments {_FUNCTION_VALUES}))))
  @definition.function)
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name value: (call_expression arguments: (arguments {_FUNCTION_VALUES}))))
  @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name value: (class))) @definition.class)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: (class)))
  @definition.class))
(program (variable_declaration (variable_declarator name: (identifier) @name value: {_FUNCTION_VALUES}))
  @definition.function)
(program (expression_statement (assignment_expression left: (member_expression) @name right: {_FUNCTION_VALUES}))
  @definition.function)
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable))
"""
_TS_ONLY = rf"""
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.class
(type_alias_declaration name: (_) @name) @definition.class
(enum_declaration name: (_) @name) @definition.class
(internal_module name: (_) @name) @definition.namespace
(function_signature name: (_) @name) @definition.function
(abstract_method_signature name: (_) @name) @definition.method
(public_field_definition name: (_) @name value: {_FUNCTION_VALUES}) @definition.method
"""
_JS_ONLY = rf"""
(field_definition property: (_) @name value: {_FUNCTION_VALUES}) @definition.method
"""

_REFERENCES_COMMON = r"""
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
(new_expression constructor: (member_expression property: (property_identifier) @ref))
"""
_REFERENCES_TS = r"""
(type_identifier) @ref
(extends_clause value: (identifier) @ref)
"""
_REFERENCES_JS = r"""
(class_heritage (identifier) @ref)
"""
_REFERENCES_JSX = r"""
(jsx_opening_element name: (identifier) @ref)
(jsx_self_closing_element name: (identifier) @ref)
"""

IMPORTS = r"""
(import_statement) @import
(export_statement source: (string)) @import
(export_statement "default") @import
(export_statement (export_clause) !source) @import
(program (expression_statement (assignment_expression left: (member_expression) right: (identifier)) @import))
(variable_declarator value: (call_expression function: (identifier) arguments: (arguments (string)))) @import
"""

# the language's keywords: noise to a search
KEYWORDS = """
abstract as async await break case catch class const constructor continue debugger declare default delete do
else enum export extends false finally for from function get if implements import in instanceof interface keyof
let module namespace new null of private protected public readonly require return set static super switch this
throw true try type typeof undefined var void while with yield
"""
# names of the standard library every file uses: never a reference into the workspace
BUILTINS = """
any boolean never number object string symbol unknown Promise Array Object String Number Boolean Error Map Set
Record Partial Required Readonly Pick Omit console JSON Math Date RegExp
"""


# Methods of the language's own objects — arrays, strings, functions, promises, maps and sets,
# regular expressions, numbers and dates: ``names.push(x)`` is Array's whatever the workspace
# defines, and a reference by name would take it for the one ``push`` the workspace has.
BUILTIN_METHODS = """
    push pop shift unshift slice splice concat join reverse sort indexOf lastIndexOf includes find
    findIndex findLast findLastIndex filter map forEach reduce reduceRight some every flat flatMap
    fill keys values entries at charAt charCodeAt codePointAt split substring substr toLowerCase
    toUpperCase trim trimStart trimEnd padStart padEnd startsWith endsWith repeat replace
    replaceAll match matchAll search localeCompare normalize call apply bind then catch finally
    get set has add delete clear test exec toString valueOf hasOwnProperty toFixed toISOString
    getTime
"""
# The language's global objects: ``Math.max``, ``JSON.parse``, ``Object.keys`` are theirs.
GLOBAL_OBJECTS = """
console JSON Math Object Array Promise Number String Boolean Reflect Date Symbol BigInt Intl process globalThis
window document
"""
_BUILTIN_METHODS = frozenset(BUILTIN_METHODS.split())
_GLOBAL_OBJECTS = frozenset(GLOBAL_OBJECTS.split())


def _outside(node, src: Text, imports: Mapping[str, str], _prefix: str) -> bool:
    """A call of a built-in method (``xs.push``, ``s.split``, ``p.then``, not ``this.push``:
    the class's own) or of a global object's (``Math.max``, unless a file imports that name)."""
    parent = node.parent
    if parent is None or parent.type != "member_expression":
        return False
    obj = parent.child_by_field_name("object")
    if obj is not None and obj.type == "identifier":
        name = src(obj)
        if name in _GLOBAL_OBJECTS and name not in imports:
            return True
    return src(node) in _BUILTIN_METHODS and (obj is None or obj.type != "this")


def _owner(node, src: Text, imports: Mapping[str, str]) -> str:
    """The class a static call goes through: ``ApiClient`` of ``ApiClient.create()`` and of
    ``Api.create()`` after ``import { ApiClient as Api }``; "" for a call on a value (lower
    case), ``this``, a namespace or default import, or a constant (``DEFAULTS.merge()``)."""
    obj = qualifier(node, "member_expression", "property", "object")
    if obj is None or obj.type != "identifier":
        return ""
    name = src(obj)
    target = imports.get(name)
    if target is not None and not target.endswith(".default"):  # ``{ ApiClient as Api }``: the class's own name
        module, _, name = target.rpartition(".")
        if not module:
            return ""
    # a default import goes by its own name (``Linter.create()``): written like a class, it likely is one
    return name if name[:1].isupper() and not name.isupper() else ""


def _imported(node, src: Text, imports: Mapping[str, str]) -> str | None:
    """What the file's imports make a name: ``fmt`` after ``import { fmt } from './lib/fmt'``
    is ``src/lib/fmt.fmt``; ``utils.fmt`` after ``import * as utils from './utils'`` is that
    module's ``fmt``, ``Api.create`` after ``import { ApiClient as Api }`` is ``ApiClient``'s
    ``create``; ``Button`` after ``import Button from './Button'`` is that module's ``default``,
    which its ``export default`` names (``_local_exports``). None for a name not imported."""
    obj = qualifier(node, "member_expression", "property", "object")
    if obj is not None:
        through = imports.get(src(obj)) if obj.type == "identifier" else None
        return f"{through}.{src(node)}" if through else None
    return imports.get(src(node))


def _name(kind: str, node, name_node, prefix: str, src: Text) -> Named | None:
    if kind == "variable" and name_node is not None and _is_require(name_node.parent.child_by_field_name("value"), src):
        return None  # ``const Linter = require('./linter')``: an import (``_required``), not a definition
    if name_node is None:
        return Named("default", "default") if kind in ("function", "class") else None
    text = src(name_node)
    if name_node.type == "member_expression":  # ``module.exports.f = function``, ``A.prototype.f =``
        text = text.replace(".prototype.", ".")
        return Named(text.rpartition(".")[2], text)
    if name_node.type == "string":
        text = text.strip("'\"`")
    return Named(text, text) if text else None


def _is_require(value, src: Text) -> bool:
    callee = value.child_by_field_name("function") if value is not None and value.type == "call_expression" else None
    return callee is not None and src(callee) == "require"


_QUOTES = "'\""  # around a specifier's name when it is a string (``export { "a-b" as ab }``)


def _module_of(spec: str, prefix: str) -> str:
    """The module an import names: ``./m`` beside the file (``prefix``) as the workspace's module,
    without its extension; a package's name as written."""
    if not spec.startswith("."):
        return spec
    base = prefix.rpartition("/")[0]
    parts = [p for p in base.split("/") if p] if base else []
    for piece in spec.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece not in (".", ""):
            parts.append(piece)
    target = "/".join(parts)
    for ext in (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs", ".mts", ".cts"):
        target = target.removesuffix(ext)
    return target


def _required(node, prefix: str, src: Text) -> list[tuple[str, str]]:
    """CommonJS: ``const text = require('./text')`` → (text, <module>); ``const { fmt } =
    require('./text')`` → (fmt, <module>.fmt). A name written like a class (``const Linter =
    require('./linter')``) is what the module exports, not the module: its default, which
    ``module.exports = Linter`` names (``_imports``); where none does, its own name decides, as a
    class's (``hooks.owner``). A renamed key is left to its name (``const { SourceProcessor: HtmlProcessor }``):
    ``module.exports = { SourceProcessor: HtmlProcessor }`` names a key, not a definition, and
    webpack's module that does so also defines a ``SourceProcessor`` of its own, another one."""
    call = node.child_by_field_name("value")
    if not _is_require(call, src):
        return []
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    string = next((c for c in args.named_children if c.type == "string"), None)
    bound = node.child_by_field_name("name")
    if string is None or bound is None:
        return []
    target = _module_of(src(string).strip("'\"`"), prefix)
    if bound.type == "identifier":
        name = src(bound)
        return [(name, f"{target}.default" if name[:1].isupper() else target)]
    out: list[tuple[str, str]] = []
    if bound.type == "object_pattern":
        for part in bound.named_children:
            if part.type == "shorthand_property_identifier_pattern":
                out.append((src(part), f"{target}.{src(part)}"))
    return out


def _reexports(node, target: str, src: Text) -> list[tuple[str, str]]:
    """What an index file passes on, read as imports (``graph.Resolver`` follows them as it does
    Python's re-exports): ``export * from './m'`` → ("*", m), ``export * as ns from './m'`` →
    (ns, m), ``export { a as b } from './m'`` → (b, m.a)."""
    for part in node.named_children:
        if part.type == "namespace_export":
            return _namespace(part, target, src)
        if part.type == "export_clause":
            return _specifiers(part, "export_specifier", target, src)
    return [("*", target)]


def _namespace(part, target: str, src: Text) -> list[tuple[str, str]]:
    """``* as ns`` (of an import or an export) → (ns, the module)."""
    ident = next((c for c in part.named_children if c.type == "identifier"), None)
    return [(src(ident), target)] if ident is not None else []


def _specifiers(part, kind: str, target: str, src: Text) -> list[tuple[str, str]]:
    """``{ a as b, c }`` (of an import or an export) → (b, module.a), (c, module.c)."""
    out: list[tuple[str, str]] = []
    for spec_node in part.named_children:
        name = spec_node.child_by_field_name("name") if spec_node.type == kind else None
        if name is not None:
            alias = spec_node.child_by_field_name("alias")
            out.append((src(alias or name).strip(_QUOTES), f"{target}.{src(name).strip(_QUOTES)}"))
    return out


def _local_exports(node, module: str, src: Text) -> list[tuple[str, str]]:
    """What a module exports under another name, read as its imports (``graph.Resolver``
    follows them as re-exports): ``export default function Button`` and ``export default ky``
    → (default, module.Button / module.ky), ``export { parse as toNumber }`` → (toNumber,
    module.parse). An anonymous default is a definition named ``default`` already."""
    declaration = node.child_by_field_name("declaration")
    value = node.child_by_field_name("value")
    if declaration is not None or value is not None:  # ``export default …``
        named = declaration.child_by_field_name("name") if declaration is not None else value
        if named is None or named.type not in ("identifier", "type_identifier"):
            return []
        return [("default", f"{module}.{src(named)}")]
    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
    if clause is None:
        return []
    return [
        (alias, target)
        for alias, target in _specifiers(clause, "export_specifier", module, src)
        if target != f"{module}.{alias}"
    ]


def _imports(node, prefix: str, src: Text) -> list[tuple[str, str]]:
    """``import {a as b} from './m'`` → (b, <module of ./m>.a); ``import x from 'pkg'`` → (x, pkg);
    ``export … from`` as ``_reexports`` reads it, ``require`` as ``_required`` does."""
    if node.type == "variable_declarator":
        return _required(node, prefix, src)
    if node.type == "assignment_expression":  # CommonJS ``module.exports = Linter``: its default
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        exported = left is not None and right is not None and src(left) == "module.exports"
        return [("default", f"{prefix}.{src(right)}")] if exported else []
    source = node.child_by_field_name("source")
    if source is None:
        return _local_exports(node, prefix, src) if node.type == "export_statement" else []
    target = _module_of(src(source).strip("'\"`"), prefix)
    if node.type == "export_statement":
        return _reexports(node, target, src)
    out: list[tuple[str, str]] = []
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        return [(target.rpartition("/")[2], target)]
    for part in clause.named_children:
        if part.type == "identifier":  # default import
            out.append((src(part), f"{target}.default"))
        elif part.type == "namespace_import":
            out += _namespace(part, target, src)
        elif part.type == "named_imports":
            out += _specifiers(part, "import_specifier", target, src)
    return out


# What the TypeScript grammar (0.23, the newest) cannot read, and what reading it so (as
# ``hooks.unreadable``) mends; on the TypeScript tree 221 of its 1,379 files had errors, 19 now:
# - variance marks on type parameters (TypeScript 4.7: ``interface Cache<in out K, out V>``), read
#   as spaces: the rest of the declaration, often of the file, was errors — effect's Effect.ts
#   (28k lines) kept 21 of its definitions (275 now);
# - a generic call signature on a line of its own after another member with no ``;`` (effect's
#   overloads ``{ <A>(…): X⏎ <A, B>(…): Y }``): ``X⏎<A, B>`` read as ``X<A, B>``; the first
#   character of its indentation read as ``;``. Not in TSX, whose lines start with elements.
_VARIANCE = re.compile(rb"[<,][ \t\r\n]*(in[ \t\r\n]+out|in|out)[ \t\r\n]+(?=[A-Za-z_$])")
_SIGNATURE_LINE = re.compile(  # after a line that ends a type (or a comment), not an expression's
    rb"(?:[\w$\])}{/]|(?<!=)>)[ \t\r\n]*\n([ \t])[ \t]*<[ \t\r\n]*(?:const[ \t]+)?[A-Za-z_$][\w$]*[ \t\r\n]*"
    rb"(?:[,>=]|extends\b)"
)
_UNREADABLE = {
    "typescript": ((_VARIANCE, b" "), (_SIGNATURE_LINE, b";")),
    "tsx": ((_VARIANCE, b" "),),
}


def _spec(name: str, grammar: tuple[str, str], definitions: str, references: str) -> LanguageSpec:
    return LanguageSpec(
        name=name,
        grammar=grammar,
        definitions=definitions,
        references=references,
        imports=IMPORTS,
        comment_types=frozenset({"comment"}),
        leading_types=frozenset({"decorator"}),
        wrapper_types=frozenset({"export_statement", "ambient_declaration"}),
        keywords=KEYWORDS,
        builtins=BUILTINS,
        hooks=Hooks(name=_name, imports=_imports, outside=_outside, owner=_owner, imported=_imported),
        unreadable=_UNREADABLE.get(name, ()),
    )


SPECS = {
    "typescript": _spec(
        "typescript",
        ("tree_sitter_typescript", "language_typescript"),
        _COMMON + _TS_ONLY,
        _REFERENCES_COMMON + _REFERENCES_TS,
    ),
    "tsx": _spec(
        "tsx",
        ("tree_sitter_typescript", "language_tsx"),
        _COMMON + _TS_ONLY,
        _REFERENCES_COMMON + _REFERENCES_TS + _REFERENCES_JSX,
    ),
    "javascript": _spec(
        "javascript",
        ("tree_sitter_javascript", "language"),
        _COMMON + _JS_ONLY,
        _REFERENCES_COMMON + _REFERENCES_JS + _REFERENCES_JSX,
    ),
}
