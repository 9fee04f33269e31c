"""The languages the workspace index reads, and which one a file is in.

Everything above the parser is language-free (DESIGN §4a): a file's language is decided here, by
its extension, and ``parse.parse_module`` hands it to the parser for that language — Python's
``ast`` path, or tree-sitter with a prebuilt grammar wheel and a small description of the
language (``spec``), loaded only when a file of that language is parsed.
"""

from __future__ import annotations

import functools
import re

# extension → language. ``.h`` is read as C++: the C++ grammar parses C headers too, and the
# C grammar stops at every ``class`` or ``namespace`` of a C++ header.
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
}
SOURCE_SUFFIXES: tuple[str, ...] = tuple(EXTENSIONS)
# What the parsers make, in every language: a change to a language's description (its queries,
# hooks, keywords) or to the walk that changes a symbol bumps it, and indexes made before are
# built again (``index.db``), as for a new schema.
PARSER_VERSION = "29"
# A symbol's marks (its ``decorators``, where Python keeps its decorators): test code, and a test
# case the runner calls (no reference by name resolves to one)
TEST_MARK = "test"
TEST_CASE_MARK = "test case"
# ... and a function declared without its code, for its doc (a C++ header's): the code is elsewhere
DECLARATION_MARK = "declaration"
LANGUAGES: tuple[str, ...] = tuple(dict.fromkeys(EXTENSIONS.values()))

# Languages whose code can name each other's definitions (TypeScript imports JavaScript; a C++
# file includes a C header): references are resolved within a family.
FAMILY: dict[str, str] = {
    "python": "python",
    "rust": "rust",
    "typescript": "js",
    "tsx": "js",
    "javascript": "js",
    "go": "go",
    "java": "java",
    "c": "c",
    "cpp": "c",
}
# How that language's users join the parts of a qualified name.
SEPARATOR: dict[str, str] = {"rust": "::", "cpp": "::", "c": "::"}


@functools.lru_cache(maxsize=65536)
def language_of(rel: str) -> str | None:
    """The language of a workspace-relative path by its extension, or None (not source we read).
    Minified bundles (``*.min.js``) are build output, not source."""
    name = rel.rpartition("/")[2].lower()
    dot = name.rfind(".")
    if dot <= 0:
        return None
    lang = EXTENSIONS.get(name[dot:])
    if lang == "javascript" and (name.endswith((".min.js", ".min.mjs", ".min.cjs")) or ".bundle." in name):
        return None
    return lang


def separator(lang: str | None) -> str:
    """``::`` for Rust and C/C++, ``.`` for the others."""
    return SEPARATOR.get(lang or "", ".")


# What people call each language, and how its qualified names are written (for prompts).
DISPLAY = {
    "python": "Python",
    "rust": "Rust",
    "typescript": "TypeScript",
    "tsx": "TypeScript",
    "javascript": "JavaScript",
    "go": "Go",
    "java": "Java",
    "c": "C",
    "cpp": "C++",
}
NAME_FORMS = {
    "Python": "package.module.Class.method",
    "Rust": "crate::module::Type::method",
    "TypeScript": "path/to/module.Class.method",
    "JavaScript": "path/to/module.Class.method",
    "Go": "package.Type.Method",
    "Java": "package.Class.method",
    "C": "function",
    "C++": "namespace::Class::method",
}


def display_names(paths: list[str]) -> list[str]:
    """The languages of ``paths`` as people name them, most files first (ties by name)."""
    counts: dict[str, int] = {}
    for path in paths:
        name = DISPLAY.get(language_of(path) or "", "")
        if name:
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts, key=lambda n: (-counts[n], n))


def describe(names: list[str]) -> str:
    """``Rust``, ``Rust and Go``, ``Rust, Go and Java``; more than three: ``multi-language``."""
    if len(names) <= 1:
        return "".join(names)
    if len(names) <= 3:
        return f"{', '.join(names[:-1])} and {names[-1]}"
    return "multi-language"


def comment_mark(path: str | None) -> str:
    """How a line comment starts in a file's language (``#`` for Python, ``//`` for the others):
    the header above code shown to a model is a comment in that code's own language."""
    lang = language_of(path) if path else None
    return "#" if lang in (None, "python") else "//"


def last_part(qualname: str) -> str:
    """The last part of a qualified name in any language's spelling: ``method`` of
    ``pkg.Class.method`` and of ``krate::Type::method``."""
    dot, colons = qualname.rfind("."), qualname.rfind("::")
    if colons > dot:
        return qualname[colons + 2 :]
    return qualname[dot + 1 :]


# What a language's users call a definition the index files as a ``class``, by the keyword its
# signature declares it with: a Rust struct, trait or impl block, a C union, a Java record or
# interface, a Go struct type, a TypeScript type alias. Ranking reads ``kind``; people read this.
_LABELS = {
    "class": "class",
    "struct": "struct",
    "enum": "enum",
    "union": "union",
    "trait": "trait",
    "impl": "impl",
    "interface": "interface",
    "record": "record",
    "annotation": "annotation",
    "namespace": "namespace",
    "mod": "module",
    "module": "module",
    "type": "type",
    "typedef": "type",
    "using": "type",
}
# attributes, annotations, strings and type parameters (``#[derive]``, ``@Component(…)``, Go's
# ``List[T any]``): words in them are not the declaring keyword
_ATTRIBUTES = re.compile(r"#!?\[[^\]]*\]|\[[^\]]*\]|@(?!interface\b)[\w.]+(?:\([^)]*\))?|\"[^\"]*\"|'[^']*'")
_WORD = re.compile(r"@interface|[A-Za-z_]\w*")
_SCANNED_WORDS = 8
_AFTER_TYPE = frozenset({"struct", "enum", "union", "interface"})


def kind_label(kind: str, signature: str) -> str:
    """``kind`` as that language's users say it: ``struct``, ``enum``, ``trait``, ``impl``,
    ``interface``, … for what the index calls a class; any other kind as it is."""
    if kind != "class" or not signature:
        return kind
    words = _WORD.findall(_ATTRIBUTES.sub(" ", signature.split("\n", 1)[0]))[:_SCANNED_WORDS]
    for i, word in enumerate(words):
        label = _LABELS.get("annotation" if word == "@interface" else word)
        if label is None:
            continue
        if label == "type":  # ``type Server struct`` (Go), ``typedef struct {…} x`` (C)
            after = next((_LABELS[w] for w in words[i + 1 : i + 3] if _LABELS.get(w) in _AFTER_TYPE), None)
            return after or label
        return label
    return kind
