"""One file of any tree-sitter language into the symbols Python's parser makes: the same
``Symbol`` fields (qualified name, kind, range, signature, doc comment, card, exact body,
identifiers) and the same references, so everything above the parser is language-free.

The walk is driven by the language's queries (``spec``): definitions are matched in C, sorted by
position and nested by their byte ranges — a definition inside a function's code is not a
symbol of its own (as in Python); a function inside a type is a method; a definition's span
starts at the doc comments and attributes right above it. References are the names the
``references`` query captures, resolved here to a definition of the same file when one has that
name, else left as a name for the workspace to resolve (``graph.Resolver``): best effort by
name, as Aider's repo map and most polyglot tools do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ctx_lsp.workspace.languages import DECLARATION_MARK, FAMILY, TEST_CASE_MARK, TEST_MARK
from ctx_lsp.workspace.languages.overloads import inner_declarator, one_line, parameter_key
from ctx_lsp.workspace.languages.reading import ParseFailed, parse_with_deadline, tree_of
from ctx_lsp.workspace.languages.spec import Loaded, Named, Text

_CARD_BODY_LINES = 5
_CARD_DOC_LINES = 6
_CARD_VALUE_LINES = 3
_CARD_LINE_CHARS = 160
_SIGNATURE_CHARS = 240
_CARD_NAMES = 12
# The ``kind`` of a ``Symbol`` is the role a definition plays, the same in every language; the
# language's own word (struct, trait, interface, impl …) is in its signature.
_SYMBOL_KIND = {"class": "class", "impl": "class", "namespace": "class", "function": "function"}
_TYPE_KINDS = frozenset({"class", "impl"})
_CODE_KINDS = frozenset({"function", "method", "variable"})  # what encloses no symbols of its own


def by_name_target(lang: str, rel: str, name: str, via: str | None = None) -> str:
    """A reference by name that only the whole workspace can resolve: ``family|dir|name``
    (``graph.Resolver`` prefers a definition of that name in the same language family, in the
    folder nearest ``dir``); ``family|dir|name|via`` when the file's imports name the definition
    (``hooks.imported``: a dotted target), which is tried first."""
    target = f"{FAMILY.get(lang, lang)}|{rel.rpartition('/')[0]}|{name}"
    return f"{target}|{via}" if via else target


@dataclass(slots=True)
class _Def:
    kind: str  # the capture's kind (class, impl, namespace, function, method, variable)
    node: object
    start_byte: int
    end_byte: int
    start_line: int  # where its span starts: doc comments and attributes included
    end_line: int
    qualname: str
    name: str
    parent: str
    child_prefix: str
    doc: str
    test: bool
    case: bool = False  # a test case (``hooks.is_test_case``): never a reference's target
    declared: bool = False  # a documented declaration (``spec.declaration_files``), not the code
    span: object = None  # the node its code starts at (``TreeBuilder.span``)
    body: object = None  # its body's node, if it has one (``TreeBuilder.body_node``)
    plain: str = ""  # its qualified name before an overload's was given (``TreeBuilder._overload``)


def _overloaded_declarations_named(defs: list[_Def], text: Text) -> list[_Def]:
    """``defs`` with the documented declarations of an overloaded name (declared or defined more
    than once in one class or namespace) named by their parameters' types too:
    ``juce::BigInteger::BigInteger(uint32)`` (``overloads.parameter_key``; the .cpp's definitions
    are matched to them by the same key, ``lookups.code_of``). A declaration whose key another
    one shares, or that has none, is not kept: which code it documents, nothing could tell."""
    if not any(d.declared for d in defs):
        return defs
    counts = Counter((d.parent, d.name) for d in defs if d.kind in ("function", "method"))
    named: dict[int, str | None] = {}
    for i, d in enumerate(defs):
        if d.declared and counts[(d.parent, d.name)] > 1:
            key = parameter_key(d.node, text)
            named[i] = f"{d.plain}{key}" if key is not None else None
    shared = Counter(named.values())
    out = []
    for i, d in enumerate(defs):
        if i in named:
            qualname = named[i]
            if qualname is None or shared[qualname] > 1:
                continue
            d.qualname = d.child_prefix = qualname
        out.append(d)
    return out


def _declared_only(node) -> bool:
    """A function declared without its code (TypeScript's overload signatures, an abstract
    method); not ``const f = () => …``, whose code is its value."""
    return node.child_by_field_name("body") is None and _value(node) is None


def _value(node):
    """What a definition binds its name to: ``const f = () => …``, ``X.f = function …`` (through
    the statement and the one declarator the definition's node is)."""
    for _ in range(3):
        found = node.child_by_field_name("value") or node.child_by_field_name("right")
        if found is not None or node.named_child_count != 1:
            return found
        node = node.named_children[0]
    return None


def text_of(source: bytes):
    """The ``Text`` of one file: a node's source, sliced from the file's bytes."""

    def text(node) -> str:
        return source[node.start_byte : node.end_byte].decode("utf-8", "replace") if node is not None else ""

    return text


_RULER = "=-*~_+#/"


def clean_comment(text: str) -> str:
    """A comment's words without its markers: ``///``, ``//!``, ``//``, ``/** … */``, ``#``."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        for marker in ("///", "//!", "//", "/**", "/*!", "/*", "#"):
            if s.startswith(marker):
                s = s[len(marker) :]
                break
        if s.endswith("*/"):
            s = s[:-2]
        s = s.strip()
        if s.startswith("* ") or s == "*":
            s = s[1:].strip()
        if len(s) >= 3 and not s.strip(_RULER):  # ``//====…`` above a section: no words
            s = ""
        out.append(s)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _leading(loaded: Loaded, node) -> tuple[object, list[object], list[object]]:
    """The node a definition's span starts at (itself, or the first of the doc comments and
    attributes directly above it, no blank line between), its comments, its attributes."""
    spec = loaded.spec
    first = node
    comments: list[object] = []
    attrs: list[object] = []
    top = node.start_point.row
    prev = node.prev_sibling
    while prev is not None:
        ptype = prev.type
        if ptype in spec.comment_types:
            end_row = prev.end_point.row - (1 if prev.end_point.column == 0 else 0)
            if end_row < top - 1:
                break
            before = prev.prev_sibling  # a comment trailing the line of the code before it
            if (
                before is not None
                and before.end_point.row == prev.start_point.row
                and before.type not in (spec.comment_types | spec.leading_types)
            ):
                break
            comments.append(prev)
        elif ptype in spec.leading_types:
            if prev.end_point.row < top - 1:
                break
            attrs.append(prev)
        else:
            break
        first = prev
        top = prev.start_point.row
        prev = prev.prev_sibling
    comments.reverse()
    attrs.reverse()
    return first, comments, attrs


class TreeBuilder:
    """Walks one parsed file (see the module's docstring)."""

    def __init__(
        self,
        loaded: Loaded,
        rel: str,
        source: bytes,
        lines: list[str],
        module: str,
        prefix: str,
        scan: Callable[[str, list[str], frozenset[bytes]], tuple[str, dict[bytes, int]]],
    ) -> None:
        self.loaded = loaded
        self.spec = loaded.spec
        self.rel = rel
        self.source = source
        self.lines = lines
        self.module = module
        self.prefix = prefix
        self.scan = scan
        self.comment = "//"
        self.text = text_of(source)

    # -- definitions ---------------------------------------------------------------------

    def _join(self, prefix: str, segment: str) -> str:
        return f"{prefix}{self.spec.separator}{segment}" if prefix else segment

    def definitions(self, matches: list[tuple[int, dict]]) -> list[_Def]:
        """The definitions of the file from its definition matches (``_matches``)."""
        found: dict[tuple[int, int], tuple[int, str, object, object]] = {}
        for pattern, caps in matches:
            node = kind = None
            for cap, nodes in caps.items():
                if cap.startswith("definition."):
                    kind, node = cap[11:], nodes[0]
            if node is None:
                continue
            key = (node.start_byte, node.end_byte)
            if key not in found or pattern < found[key][0]:  # the first pattern wins
                names = caps.get("name")
                found[key] = (pattern, kind, node, names[0] if names else None)
        ordered = sorted(found.items(), key=lambda kv: (kv[0][0], -kv[0][1], kv[1][0]))
        hooks = self.spec.hooks
        stack: list[_Def] = []
        out: list[_Def] = []
        taken: set[str] = set()
        for (start, end), (_, kind, node, name_node) in ordered:
            while stack and start >= stack[-1].end_byte:
                stack.pop()
            container = stack[-1] if stack else None
            if container is not None and container.kind in _CODE_KINDS:
                continue  # inside a function's code: not a symbol of its own
            declared = kind == "prototype"
            if declared:  # only where the doc is: a header's declaration with a comment above it
                if not self.rel.endswith(self.spec.declaration_files) or not _leading(self.loaded, self.span(node))[1]:
                    continue
                kind = "function"
            child_prefix = container.child_prefix if container is not None else self.prefix
            named: Named | None
            if hooks.name is not None:
                named = hooks.name(kind, node, name_node, child_prefix, self.text)
            else:
                text = self.text(name_node)
                named = Named(text, text) if text else None
            if named is None:
                continue
            kind = named.kind or kind
            if kind == "function" and container is not None and container.kind in _TYPE_KINDS:
                kind = "method"
            qualname = self._join(child_prefix, named.segment)
            inherited = ""
            if (
                hooks.file_local is not None
                # at the top or in a namespace (a class's members are the class's), once
                and (container is None or (container.kind == "namespace" and not qualname.startswith(f"{self.rel}:")))
                and hooks.file_local(node, self.text, self.rel)
            ):
                qualname = f"{self.rel}:{qualname}"
            plain = qualname
            if qualname in taken and kind in ("function", "method"):
                earlier = next((d for d in reversed(out) if d.qualname == qualname), None)
                if earlier is not None and earlier.declared and not declared:
                    # declared in its class, defined below it in the same header: one symbol, the
                    # code, which keeps the declaration's doc when it has none of its own
                    out.remove(earlier)
                    inherited = earlier.doc
                elif earlier is not None and earlier.kind not in ("function", "method"):
                    # a type and a value of one name (TypeScript's ``interface X`` and ``const X``,
                    # a variable and its getter, C's ``struct stat`` and ``stat()``): one name in
                    # that language, one here, as it already was the other way round
                    pass
                elif earlier is not None and _declared_only(earlier.node) and not _declared_only(node):
                    # TypeScript's overload signatures come before the implementation, which is
                    # what a pin by name or a reader wants: it takes the plain name
                    earlier.qualname = earlier.child_prefix = self._overload(qualname, earlier.node, container)
                    taken.add(earlier.qualname)
                else:
                    qualname = self._overload(qualname, node, container)
            taken.add(qualname)
            parent = named.parent or (container.qualname if container is not None else self.module)
            if kind == "impl":
                children = self._join(child_prefix, named.children) if named.children else qualname
            else:
                children = qualname
            span = self.span(node)
            first, comments, attrs = _leading(self.loaded, span)
            test = container.test if container is not None else False
            if not test and hooks.is_test is not None:
                test = hooks.is_test(node, attrs, self.text)
            case = hooks.is_test_case is not None and hooks.is_test_case(node, attrs, self.text)
            end_line = node.end_point.row - (1 if node.end_point.column == 0 and node.end_point.row > 0 else 0)
            d = _Def(
                kind=kind,
                node=node,
                start_byte=start,
                end_byte=end,
                start_line=first.start_point.row,
                end_line=max(end_line, first.start_point.row),
                qualname=qualname,
                name=named.name,
                parent=parent,
                child_prefix=children,
                doc="\n".join(clean_comment(self.text(c)) for c in comments).strip() or inherited,
                test=test or case,
                case=case,
                declared=declared,
                span=span,
                body=self._body_node(node),
                plain=plain,
            )
            out.append(d)
            stack.append(d)
        return _overloaded_declarations_named(out, self.text)

    def _overload(self, qualname: str, node, container: _Def | None) -> str:
        """A second definition of a name in one file (Java's and C++'s overloads, a Rust method
        of two trait impls of one type) is named the way that language tells them apart:
        ``resolve(URL base, String rel)``, ``<Chain as Debug>::fmt``. The first keeps the plain
        name, which a pin or a stack trace uses; one with no parameters shares it."""
        if container is not None and container.kind == "impl" and " for " in container.name:
            trait, _, ty = container.name.removeprefix("impl ").partition(" for ")
            head, sep, method = qualname.rpartition(self.spec.separator)
            scope = head.rpartition(self.spec.separator)[0]
            return self._join(scope, f"<{ty} as {trait}>{sep}{method}")
        value = _value(node)
        params = node.child_by_field_name("parameters") or (value and value.child_by_field_name("parameters"))
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and params is None:  # ``T& C::operator= (…)`` too
            params = declarator.child_by_field_name("parameters")
            declarator = inner_declarator(declarator)
        text = one_line(self.text(params)) if params is not None else ""
        # none to tell it by (a ``macro_rules!`` per ``cfg``): the same name, as in the source — a
        # line number would change with every edit above it
        return f"{qualname}{text}" if text.startswith("(") else qualname

    def span(self, node):
        """The node a definition's code starts at: an ``export`` or ``template<…>`` around it, a
        group declaring it alone."""
        spec = self.spec
        while node.parent is not None:
            parent = node.parent
            if parent.type in spec.wrapper_types or (parent.type in spec.group_types and parent.named_child_count == 1):
                node = parent
            else:
                break
        return node

    # -- texts ---------------------------------------------------------------------------

    def segment(self, start: int, end: int) -> str:
        return "".join(self.lines[max(start, 0) : end + 1])

    def _dedent(self, first: int, last: int, indent: str) -> list[str]:
        out = []
        for line in self.lines[first : last + 1]:
            line = line.rstrip("\r\n")
            line = line[len(indent) :] if line.startswith(indent) else line.lstrip()
            out.append(line if len(line) <= _CARD_LINE_CHARS else line[: _CARD_LINE_CHARS - 1] + "…")
        return out

    def _body_node(self, node):
        for name in self.spec.body_fields:
            body = node.child_by_field_name(name)
            if body is not None:
                return body
        # a declaration wrapping its definition (``const f = () => {...}``, Go's ``type X struct{}``)
        for child in node.named_children:
            for name in self.spec.body_fields:
                body = child.child_by_field_name(name)
                if body is not None:
                    return body
        return None

    def signature(self, d: _Def) -> str:
        node, body = d.node, d.body
        end = body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
        start = d.span.start_byte
        raw = self.source[start : min(end, start + 4 * _SIGNATURE_CHARS)].decode("utf-8", "replace")
        if body is None:
            raw = raw.split("\n", 1)[0]
        text = " ".join(raw.split()).rstrip(" {=:")
        return text if len(text) <= _SIGNATURE_CHARS else text[: _SIGNATURE_CHARS - 1] + "…"

    def card(self, d: _Def, members: list[str] | None) -> str:
        first_line = self.lines[d.start_line] if d.start_line < len(self.lines) else ""
        indent = first_line[: len(first_line) - len(first_line.lstrip())]
        out = [f"{self.comment} {self.rel}:{d.start_line + 1}-{d.end_line + 1}"]
        node_line = d.node.start_point.row
        code_start = d.span.start_point.row
        if code_start > d.start_line:  # doc comments and attributes: the comment's first paragraph
            out.extend(_doc_summary(self._dedent(d.start_line, code_start - 1, indent)))
        body = d.body
        if body is None or body.start_point.row >= d.end_line:
            last = min(d.end_line, code_start + _CARD_VALUE_LINES - 1)
            out.extend(self._dedent(code_start, last, indent))
            if d.end_line > last:
                out.append("...")
            return "\n".join(out)
        header_end = max(body.start_point.row, node_line)
        out.extend(self._dedent(code_start, header_end, indent))
        if members is not None:
            if members:
                out.append(f"    {self.comment} members: {_listing(members)}")
            if d.end_line > header_end:  # the closing line (``}``)
                out.extend(self._dedent(d.end_line, d.end_line, indent))
            return "\n".join(out).rstrip()
        code: list[str] = []
        for n in range(header_end + 1, d.end_line + 1):
            if self.lines[n].strip():
                code.extend(self._dedent(n, n, indent))
                if len(code) > _CARD_BODY_LINES:
                    break
        if len(code) > _CARD_BODY_LINES:
            out.extend(code[:_CARD_BODY_LINES])
            out.append(" " * (len(code[0]) - len(code[0].lstrip())) + "...")
        else:
            out.extend(code)
        return "\n".join(out)


def _doc_summary(lines: list[str]) -> list[str]:
    """The lines above a definition as its card shows them: attributes and annotations whole, a
    doc comment's first paragraph only (up to a blank comment line or a tag: ``@param``, Rust's
    ``# Examples``), at most _CARD_DOC_LINES of it, "…" where it was cut."""
    out: list[str] = []
    in_doc = cut = in_block = False
    for line in lines:
        s = line.strip()
        # inside /* … */ every line is the comment's, with or without a leading "*"
        is_comment = in_block or s.startswith(("//", "/*", "*"))
        if s.startswith("/*") or in_block:
            in_block = "*/" not in (s[2:] if s.startswith("/*") and not in_block else s)
        if not is_comment:
            out.append(line)
            in_doc = cut = False
            continue
        if cut:
            continue
        words = s.lstrip("/*!").strip()
        if (in_doc and (not words or words.startswith(("@", "# ")))) or len(out) >= _CARD_DOC_LINES:
            cut = True
            if not s.startswith("*/"):
                out.append(line[: len(line) - len(line.lstrip())] + ("*/" if s.startswith("*") else "…"))
            continue
        in_doc = in_doc or bool(words)
        out.append(line)
    return out


def _listing(names: list[str]) -> str:
    distinct = list(dict.fromkeys(names))
    shown = ", ".join(distinct[:_CARD_NAMES])
    return shown + (f" (+{len(distinct) - _CARD_NAMES} more)" if len(distinct) > _CARD_NAMES else "")


def build(
    loaded: Loaded,
    rel: str,
    text: str,
    lines: list[str],
    module: str,
    prefix: str | None,
    scan: Callable[..., tuple[str, dict[bytes, int]]],
    symbol_type: type,
) -> tuple[list, list[tuple[str, str]], list[tuple[str, str, int]]]:
    """Symbols (the module's first), imports and references of one file. ``prefix`` is what
    top-level names are qualified with (None: the package the file declares, else ``module``)."""
    source = text.encode("utf-8", "surrogatepass")
    tree = tree_of(loaded, source)
    root = tree.root_node
    spec = loaded.spec
    if prefix is None:
        declared = spec.hooks.package(root, text_of(source), rel) if spec.hooks.package is not None else None
        prefix = declared if declared is not None else module
    builder = TreeBuilder(loaded, rel, source, lines, module, prefix, scan)
    def_matches, ref_nodes, import_nodes = _matches(loaded, root)
    defs = builder.definitions(def_matches)

    # children of each definition (and of the module), for containers' own text and members
    kids: dict[int, list[int]] = {}
    stack: list[int] = []
    for i, d in enumerate(defs):
        while stack and d.start_byte >= defs[stack[-1]].end_byte:
            stack.pop()
        kids.setdefault(stack[-1] if stack else -1, []).append(i)
        stack.append(i)

    def own_text(start: int, end: int, children: list[int]) -> str:
        out, cur = [], start
        for k in children:
            c = defs[k]
            if c.start_line > cur:
                out.append(builder.segment(cur, c.start_line - 1))
            cur = max(cur, c.end_line + 1)
        if cur <= end:
            out.append(builder.segment(cur, end))
        return "".join(out)

    noise = loaded.noise
    symbols = []
    for i, d in enumerate(defs):
        children = kids.get(i, [])
        kind = _SYMBOL_KIND.get(d.kind, d.kind)
        is_container = d.kind in ("class", "impl", "namespace")
        names = [defs[k].name for k in children]
        body = builder.segment(d.start_line, d.end_line)
        words_text = own_text(d.start_line, d.end_line, children) if children else body
        identifiers, _ = scan(words_text, names, noise)
        decorators = (TEST_MARK, TEST_CASE_MARK) if d.case else (TEST_MARK,) if d.test else ()
        if d.declared:
            decorators += (DECLARATION_MARK,)
        symbols.append(
            symbol_type(
                qualname=d.qualname,
                name=d.name,
                kind=kind,
                path=rel,
                start_line=d.start_line,
                end_line=d.end_line,
                start_col=0,
                end_col=len(lines[d.end_line].rstrip("\r\n").encode("utf-8")) if d.end_line < len(lines) else 0,
                signature=builder.signature(d),
                docstring=d.doc,
                decorators=decorators,
                parent=d.parent,
                identifiers=identifiers,
                body=body,
                card=builder.card(d, names if is_container else None),
            )
        )

    end_line = max(len(lines) - 1, 0)
    top = kids.get(-1, [])
    top_names = [defs[k].name for k in top]
    doc = _module_doc(loaded, root, builder.text, source)
    card = f"// {rel}:1-{end_line + 1} (module {module})"
    if doc:
        card += "\n" + "\n".join(f"// {x}" for x in doc.splitlines()[:_CARD_DOC_LINES])
    if top_names:
        card += f"\n// defines: {_listing(top_names)}"
    identifiers, _ = scan(own_text(0, end_line, top), top_names, noise)
    last = lines[end_line].rstrip("\r\n") if lines else ""
    mod = symbol_type(
        qualname=module,
        name=module.rpartition("/")[2] if "/" in module else module.rpartition(spec.separator)[2],
        kind="module",
        path=rel,
        start_line=0,
        end_line=end_line,
        start_col=0,
        end_col=len(last.encode("utf-8")),
        docstring=doc,
        parent="",
        identifiers=identifiers,
        body="",
        card=card,
    )
    imports: list[tuple[str, str]] = []
    if import_nodes and spec.hooks.imports is not None:
        import_nodes.sort(key=lambda n: n.start_byte)  # in the file's order: a later import of a name wins
        for node in import_nodes:
            imports.extend(spec.hooks.imports(node, prefix, builder.text))
    refs = _references(loaded, rel, ref_nodes, defs, module, source, dict(imports), prefix)
    return [mod, *symbols], imports, refs


# A line that is only an upper-case macro's call, with no semicolon: C and C++ code wraps
# statements and class bodies in them (``JUCE_BEGIN_IGNORE_WARNINGS_MSVC (4661)``, ``Q_OBJECT``),
# and a grammar that does not expand macros may read the rest of the file into one error — JUCE's
# ``AudioBuffer::clear`` swallowed 660 lines and 60 methods with them.
def _matches(loaded: Loaded, root) -> tuple[list[tuple[int, dict]], list, list]:
    """One pass of the language's queries over the tree: the definitions' matches, the
    referenced names' nodes (``@ref``) and the import statements' (``@import``)."""
    from tree_sitter import QueryCursor

    defs: list[tuple[int, dict]] = []
    refs: list = []
    imports: list = []
    first_other = loaded.definition_patterns
    for pattern, caps in QueryCursor(loaded.queries).matches(root):
        if pattern < first_other:
            defs.append((pattern, caps))
            continue
        nodes = caps.get("ref")
        if nodes is not None:
            refs.extend(nodes)
        nodes = caps.get("import")
        if nodes is not None:
            imports.extend(nodes)
    return defs, refs, imports


def _module_doc(loaded: Loaded, root, text, source: bytes) -> str:
    """The file's own doc: the comments it starts with (Rust's ``//!``, Go's package comment, a
    ``/** @file */`` block), unless they are a licence header. (Only what the file itself starts
    with: not the first comment inside a macro call read as items, ``reading``.)"""
    comments = []
    end = 0
    for child in root.children:
        if child.type not in loaded.spec.comment_types or source[end : child.start_byte].strip():
            break
        comments.append(text(child))
        end = child.end_byte
    text = clean_comment("\n".join(comments)) if comments else ""
    lowered = text.lower()
    if "copyright" in lowered or "license" in lowered or "licence" in lowered:
        return ""
    return text


def _references(
    loaded: Loaded,
    rel: str,
    nodes: list,
    defs: list[_Def],
    module: str,
    source: bytes,
    imports: dict[str, str],
    prefix: str,
) -> list[tuple[str, str, int]]:
    """``(source qualname, target, count)``: each captured name, charged to the innermost
    definition around it (the module outside all of them), and resolved to the file's own
    definition of that name when there is exactly one, else to a ``by_name_target``; none for
    a name the language's ``hooks.outside`` places outside the workspace (``imports``: the
    file's, local name → target; ``prefix``: what its top-level names are qualified with)."""
    if not nodes:
        return []
    # a name two patterns capture (Go's ``time.Duration``: a type, and a qualified type's name)
    # is one use
    nodes = sorted(dict.fromkeys(nodes), key=lambda n: n.start_byte)
    local: dict[str, str | None] = {}
    owned: dict[str, str | None] = {}  # ``Type::name`` → the file's own definition of it
    owner_of = loaded.spec.hooks.owner
    imported = loaded.spec.hooks.imported
    sep = loaded.spec.separator
    for d in defs:
        if d.case:  # nothing calls a test case: ``els.text()`` in ElementsTest is not its test ``text``
            continue
        local[d.name] = d.qualname if d.name not in local else None  # two of a name: not decided here
        if owner_of is not None and sep in d.qualname:  # ``Cache::new`` of ``crate::cache::Cache::new``
            key = sep.join(d.qualname.rsplit(sep, 2)[-2:])
            owned[key] = d.qualname if key not in owned else None
    lang = loaded.spec.name
    noise = loaded.not_references
    outside = loaded.spec.hooks.outside
    text = text_of(source)
    found: dict[tuple[str, str], int] = {}
    stack: list[_Def] = []
    di = 0
    for n in nodes:
        at = n.start_byte
        while di < len(defs) and defs[di].start_byte <= at:
            while stack and defs[di].start_byte >= stack[-1].end_byte:
                stack.pop()
            stack.append(defs[di])
            di += 1
        while stack and at >= stack[-1].end_byte:
            stack.pop()
        src = stack[-1].qualname if stack else module
        raw = source[at : n.end_byte]
        if raw in noise:
            continue
        if outside is not None and outside(n, text, imports, prefix):
            continue
        name = raw.decode("utf-8", "replace")
        owner = owner_of(n, text, imports) if owner_of is not None else ""
        if owner:  # ``Store::new``: Store's, by name only among the ``new`` of a ``Store``
            name = f"{owner}{sep}{name}"
            target = owned.get(name)
        else:
            target = local.get(name)
        if target is None:
            target = by_name_target(lang, rel, name, imported(n, text, imports) if imported is not None else None)
        elif target == src or src.startswith(target + sep) or target.startswith(src + sep):
            continue  # itself, an enclosing or a nested definition
        key = (src, target)
        found[key] = found.get(key, 0) + 1
    return [(src, target, n) for (src, target), n in found.items()]


def syntax_digest(lang: str, text: str) -> str | None:
    """A hash of a file's syntax tree without comments, positions and whitespace: what a capsule
    records to know when its code changed. None when the language cannot be parsed here."""
    import hashlib

    from ctx_lsp.workspace.languages.spec import load

    loaded = load(lang)
    if loaded is None:
        return None
    source = text.encode("utf-8", "surrogatepass")
    try:
        tree = parse_with_deadline(loaded, source)
    except ParseFailed:
        return None
    comments = loaded.spec.comment_types
    digest = hashlib.sha256(lang.encode())
    cursor = tree.walk()
    while True:
        node = cursor.node
        if node.type in comments:
            pass  # a comment and everything in it: not code
        elif cursor.goto_first_child():
            continue
        else:  # a leaf: its kind and its text
            digest.update(node.type.encode())
            digest.update(b"\0")
            digest.update(source[node.start_byte : node.end_byte])
            digest.update(b"\0")
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return digest.hexdigest()
