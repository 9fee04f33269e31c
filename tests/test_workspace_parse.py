"""Parsing one module into symbols: qualnames, ranges, signatures, cards, imports, errors."""

from __future__ import annotations

import textwrap

import pytest

from ctx_lsp.workspace.parse import (
    MAX_IDENTIFIERS,
    ParsedModule,
    Symbol,
    decode_source,
    module_name_for,
    parse_module,
    split_lines,
)

SOURCE = textwrap.dedent(
    '''\
    """Billing helpers.

    Long description that is not part of the card.
    """

    from __future__ import annotations

    import functools
    from typing import overload

    TAX_RATE = 0.2
    """The VAT rate."""

    CURRENCY: str = "EUR"
    LIMIT: int
    a = b = 3
    x, y = 1, 2
    obj.attr = 5


    class Invoice(Base, metaclass=Meta):
        """An invoice."""

        lines: list = []

        class Line:
            """One line."""

            class Detail:
                def describe(self) -> str:
                    return "detail"

        @property
        def total(self) -> float:
            """The total.

            Second paragraph.
            """
            return sum(self.lines)

        @total.setter
        def total(self, value: float) -> None:
            self._total = value

        @staticmethod
        async def fetch(url: str, *, timeout: float = 1.0) -> bytes:
            return b""


    @functools.lru_cache(maxsize=None)
    def calculate_invoice_total(items, tax_rate=TAX_RATE):
        """Sum items and add tax."""

        def helper(item):
            return item.price

        subtotal = sum(helper(i) for i in items)
        tax = subtotal * tax_rate
        total = subtotal + tax
        rounded = round(total, 2)
        checked = max(rounded, 0)
        return checked


    @overload
    def parse(value: int) -> int: ...
    @overload
    def parse(value: str) -> str: ...
    def parse(value):
        return value


    async def main() -> None:
        class Local:
            pass

        await something()
    '''
)


@pytest.fixture(scope="module")
def parsed() -> ParsedModule:
    return parse_module("billing/invoice.py", SOURCE.encode())


def by_qualname(parsed: ParsedModule) -> dict[str, list[Symbol]]:
    out: dict[str, list[Symbol]] = {}
    for sym in parsed.symbols:
        out.setdefault(sym.qualname, []).append(sym)
    return out


def line_of(text: str) -> int:
    """0-based line of the first line of SOURCE containing ``text``."""
    for i, line in enumerate(SOURCE.splitlines()):
        if text in line:
            return i
    raise AssertionError(text)


@pytest.mark.parametrize(
    ("rel", "module"),
    [
        ("pkg/sub/mod.py", "pkg.sub.mod"),
        ("pkg/__init__.py", "pkg"),
        ("mod.py", "mod"),
        ("__init__.py", "__init__"),
        ("stubs/thing.pyi", "stubs.thing"),
        ("src/flask/app.py", "flask.app"),  # a src/ layout: as tracebacks and imports name it
        ("src/flask/__init__.py", "flask"),
        ("src/__init__.py", "src"),
        ("src/tool.py", "tool"),
    ],
)
def test_module_name_for(rel: str, module: str) -> None:
    assert module_name_for(rel) == module


def test_qualnames_and_kinds(parsed: ParsedModule) -> None:
    kinds = {q: [s.kind for s in syms] for q, syms in by_qualname(parsed).items()}
    assert kinds == {
        "billing.invoice": ["module"],
        "billing.invoice.TAX_RATE": ["variable"],
        "billing.invoice.CURRENCY": ["variable"],
        "billing.invoice.LIMIT": ["variable"],
        "billing.invoice.a": ["variable"],
        "billing.invoice.b": ["variable"],
        "billing.invoice.Invoice": ["class"],
        "billing.invoice.Invoice.Line": ["class"],
        "billing.invoice.Invoice.Line.Detail": ["class"],
        "billing.invoice.Invoice.Line.Detail.describe": ["method"],
        "billing.invoice.Invoice.total": ["method", "method"],  # getter and setter
        "billing.invoice.Invoice.fetch": ["method"],
        "billing.invoice.calculate_invoice_total": ["function"],
        "billing.invoice.parse": ["function", "function", "function"],  # overloads + impl
        "billing.invoice.main": ["function"],
    }
    # Nested functions and classes inside functions are not indexed; tuple targets and
    # attribute assignments are not module variables.
    names = {s.name for s in parsed.symbols}
    assert not {"helper", "Local", "x", "y", "attr"} & names
    assert parsed.symbols[0].kind == "module"  # the module comes first, then source order
    starts = [s.start_line for s in parsed.symbols[1:]]
    assert starts == sorted(starts)


def test_parents(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    assert q["billing.invoice"][0].parent == ""
    assert q["billing.invoice.Invoice"][0].parent == "billing.invoice"
    assert q["billing.invoice.Invoice.Line.Detail"][0].parent == "billing.invoice.Invoice.Line"
    assert q["billing.invoice.Invoice.Line.Detail.describe"][0].parent == "billing.invoice.Invoice.Line.Detail"
    assert q["billing.invoice.TAX_RATE"][0].parent == "billing.invoice"


def test_ranges_are_zero_based_inclusive_and_include_decorators(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    calc = q["billing.invoice.calculate_invoice_total"][0]
    assert calc.start_line == line_of("@functools.lru_cache")
    assert calc.end_line == line_of("return checked")
    assert calc.start_col == 0
    assert calc.end_col == len("    return checked")
    getter = q["billing.invoice.Invoice.total"][0]
    assert getter.start_line == line_of("    @property")
    assert getter.start_col == 4
    module = parsed.symbols[0]
    assert (module.start_line, module.end_line) == (0, len(SOURCE.splitlines()) - 1)
    assert parsed.line_count == len(SOURCE.splitlines())


def test_body_is_the_exact_source(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    calc = q["billing.invoice.calculate_invoice_total"][0]
    lines = SOURCE.splitlines(keepends=True)
    assert calc.body == "".join(lines[calc.start_line : calc.end_line + 1])
    assert calc.body.startswith("@functools.lru_cache(maxsize=None)\ndef calculate_invoice_total(")
    assert parsed.symbols[0].body == ""  # the module's text is not duplicated


def test_signatures(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    assert q["billing.invoice.Invoice"][0].signature == "class Invoice(Base, metaclass=Meta)"
    assert q["billing.invoice.Invoice.Line"][0].signature == "class Line"
    assert q["billing.invoice.Invoice.fetch"][0].signature == (
        "async def fetch(url: str, *, timeout: float=1.0) -> bytes"
    )
    assert q["billing.invoice.main"][0].signature == "async def main() -> None"
    assert q["billing.invoice.calculate_invoice_total"][0].signature == (
        "def calculate_invoice_total(items, tax_rate=TAX_RATE)"
    )
    assert q["billing.invoice.TAX_RATE"][0].signature == "TAX_RATE = 0.2"
    assert q["billing.invoice.CURRENCY"][0].signature == "CURRENCY: str = 'EUR'"
    assert q["billing.invoice.LIMIT"][0].signature == "LIMIT: int"
    assert q["billing.invoice.a"][0].signature == "a = 3"
    assert q["billing.invoice.b"][0].signature == "b = 3"
    assert parsed.symbols[0].signature == ""


def test_long_variable_values_are_truncated() -> None:
    src = "TABLE = {" + ", ".join(f"'k{i}': {i}" for i in range(100)) + "}\n"
    src += "BIG = [\n" + "".join(f"    {i},\n" for i in range(5000)) + "]\n"
    syms = {s.name: s for s in parse_module("t.py", src).symbols}
    assert len(syms["TABLE"].signature) <= len("TABLE = ") + 80
    assert syms["TABLE"].signature.endswith("…")
    assert syms["BIG"].signature.startswith("BIG = [0, 1, 2")
    assert len(syms["BIG"].signature) <= len("BIG = ") + 80


def test_docstrings_and_decorators(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    assert parsed.symbols[0].docstring.startswith("Billing helpers.")
    assert q["billing.invoice.Invoice"][0].docstring == "An invoice."
    assert q["billing.invoice.Invoice.total"][0].docstring == "The total.\n\nSecond paragraph."
    assert q["billing.invoice.TAX_RATE"][0].docstring == "The VAT rate."  # attribute docstring
    assert q["billing.invoice.CURRENCY"][0].docstring == ""
    assert q["billing.invoice.Invoice.total"][0].decorators == ("property",)
    assert q["billing.invoice.Invoice.total"][1].decorators == ("total.setter",)
    assert q["billing.invoice.Invoice.fetch"][0].decorators == ("staticmethod",)
    assert q["billing.invoice.calculate_invoice_total"][0].decorators == ("functools.lru_cache(maxsize=None)",)
    assert [s.decorators for s in q["billing.invoice.parse"]] == [("overload",), ("overload",), ()]


def test_function_card(parsed: ParsedModule) -> None:
    calc = by_qualname(parsed)["billing.invoice.calculate_invoice_total"][0]
    lines = calc.card.split("\n")
    assert lines[0] == f"# billing/invoice.py:{calc.start_line + 1}-{calc.end_line + 1}"
    assert lines[1] == "@functools.lru_cache(maxsize=None)"
    assert lines[2] == "def calculate_invoice_total(items, tax_rate=TAX_RATE):"
    assert lines[3] == '    """Sum items and add tax."""'
    # The first five non-blank body lines after the docstring, then an ellipsis.
    assert lines[4:] == [
        "    def helper(item):",
        "        return item.price",
        "    subtotal = sum(helper(i) for i in items)",
        "    tax = subtotal * tax_rate",
        "    total = subtotal + tax",
        "    ...",
    ]


def test_card_keeps_only_the_first_docstring_paragraph(parsed: ParsedModule) -> None:
    getter = by_qualname(parsed)["billing.invoice.Invoice.total"][0]
    assert '"""The total."""' in getter.card
    assert "Second paragraph" not in getter.card
    assert getter.card.split("\n")[-1] == "    return sum(self.lines)"  # short body: no "..."


def test_class_and_module_cards(parsed: ParsedModule) -> None:
    cls = by_qualname(parsed)["billing.invoice.Invoice"][0]
    assert cls.card.split("\n")[1:] == [
        "class Invoice(Base, metaclass=Meta):",
        '    """An invoice."""',
        "    # members: Line, total, fetch",  # a setter does not repeat the name
    ]
    module = parsed.symbols[0]
    assert module.card.startswith(f"# billing/invoice.py:1-{module.end_line + 1} (module billing.invoice)")
    assert '"""Billing helpers."""' in module.card
    assert "Long description" not in module.card


def test_identifiers(parsed: ParsedModule) -> None:
    q = by_qualname(parsed)
    calc = q["billing.invoice.calculate_invoice_total"][0].identifiers.split()
    assert {"subtotal", "helper", "price", "tax_rate", "round", "TAX_RATE"} <= set(calc)
    assert not {"def", "return", "for", "in", "self"} & set(calc)
    assert len(calc) == len(set(calc))
    # A class's identifiers are its own lines plus member names, not its methods' bodies.
    cls = q["billing.invoice.Invoice"][0].identifiers.split()
    assert {"Invoice", "Base", "Meta", "lines", "total", "fetch", "Line"} <= set(cls)
    assert "_total" not in cls and "describe" not in cls


def test_identifiers_are_capped() -> None:
    body = "\n".join(f"    v{i} = w{i}" for i in range(400))
    sym = parse_module("t.py", f"def f():\n{body}\n").symbols[1]
    assert len(sym.identifiers.split()) == MAX_IDENTIFIERS


def test_imports_resolved_against_the_package() -> None:
    src = textwrap.dedent(
        """\
        import os
        import os.path as osp
        import xml.etree.ElementTree
        from . import sibling
        from .models import Product as Item
        from ..config import TAX_RATE
        from shop.util import *

        def f():
            from .lazy import loader
            if True:
                import json as j
        """
    )
    mod = parse_module("shop/billing/invoice.py", src)
    assert mod.imports == [
        ("os", "os"),
        ("osp", "os.path"),
        ("xml", "xml"),
        ("sibling", "shop.billing.sibling"),
        ("Item", "shop.billing.models.Product"),
        ("TAX_RATE", "shop.config.TAX_RATE"),
        ("*", "shop.util"),
        ("j", "json"),
        ("loader", "shop.billing.lazy.loader"),
    ]
    # In a package's __init__, "." is the package itself.
    init = parse_module("shop/billing/__init__.py", "from .invoice import Invoice\nfrom .. import config\n")
    assert init.module == "shop.billing"
    assert init.imports == [("Invoice", "shop.billing.invoice.Invoice"), ("config", "shop.config")]


def test_syntax_error_returns_error_and_no_symbols() -> None:
    mod = parse_module("bad.py", b"def f(:\n    pass\n")
    assert mod.error is not None
    assert mod.error.startswith("SyntaxError: ")
    assert mod.error.endswith("(line 1)")
    assert mod.symbols == [] and mod.imports == []


@pytest.mark.parametrize("source", [b"x = 1\x00\n", b"(" * 500 + b")" * 500 + b"\n"])
def test_hostile_sources_do_not_raise(source: bytes) -> None:
    mod = parse_module("weird.py", source)
    assert mod.error is not None or mod.symbols


def test_decoding() -> None:
    latin = b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n"
    mod = parse_module("l.py", latin)
    assert (mod.encoding, mod.decode_error) == ("iso-8859-1", False)
    assert mod.symbols[1].signature == "NAME = 'été'"
    bad = parse_module("b.py", b"NAME = 'caf\xe9'\n")  # not UTF-8, no cookie: tolerated, flagged
    assert bad.decode_error is True and bad.error is None
    assert bad.symbols[1].signature == "NAME = 'caf\ufffd'"
    bom = parse_module("bom.py", b"\xef\xbb\xbfX = 1\n")
    assert bom.decode_error is False and bom.symbols[1].qualname == "bom.X"
    assert decode_source(b"x = 1\n") == ("x = 1\n", "utf-8", True)


def test_str_source_and_empty_file() -> None:
    mod = parse_module("pkg/__init__.py", "")
    assert mod.error is None
    assert [(s.qualname, s.kind, s.start_line, s.end_line) for s in mod.symbols] == [("pkg", "module", 0, 0)]
    assert parse_module("a.py", "def f(): pass\n").symbols[1].qualname == "a.f"


def test_line_endings_match_python() -> None:
    # \r\n and \r are line breaks for Python; \x0c (form feed) is not.
    src = "A = 1\r\n\x0c\r\nclass C:\r\n    def m(self):\r\n        return 1\r\n"
    mod = parse_module("crlf.py", src)
    method = next(s for s in mod.symbols if s.name == "m")
    assert (method.start_line, method.end_line) == (3, 4)
    assert method.body == "    def m(self):\r\n        return 1\r\n"
    assert split_lines("a\rb\r\nc\x0cd\ne") == ["a\r", "b\r\n", "c\x0cd\n", "e"]
    assert split_lines("") == []


def test_module_level_defs_under_if_and_try() -> None:
    src = textwrap.dedent(
        """\
        import sys
        if sys.version_info >= (3, 11):
            def fast(): pass
        else:
            def fast(): pass
        try:
            import ujson as json
        except ImportError:
            json = None
        """
    )
    mod = parse_module("compat.py", src)
    assert [s.qualname for s in mod.symbols] == ["compat", "compat.fast", "compat.fast", "compat.json"]
    assert ("json", "ujson") in mod.imports


def test_cards_show_the_source_as_written() -> None:
    source = textwrap.dedent(
        '''\
        class Client:
            @retry(times=3)  # flaky upstream
            def fetch(
                self,
                url: "str",
                timeout: float = 1e-3,
            ) -> bytes:  # the raw body
                """Fetch ``url``.

                    Indented example that is not part of the card.
                """
                return b""

        ROUTES = {
            "a": 1,
            "b": 2,
            "c": 3,
        }
        """Where requests go."""

        def one(x): return x
        '''
    )
    q = by_qualname(parse_module("net.py", source))
    fetch = q["net.Client.fetch"][0].card.split("\n")
    # decorators, annotations and comments as written (not unparsed), dedented to the method
    assert fetch == [
        "# net.py:2-12",
        "@retry(times=3)  # flaky upstream",
        "def fetch(",
        "    self,",
        '    url: "str",',
        "    timeout: float = 1e-3,",
        ") -> bytes:  # the raw body",
        '    """Fetch ``url``."""',
        '    return b""',
    ]
    assert q["net.ROUTES"][0].card.split("\n") == [
        "# net.py:14-18",
        "ROUTES = {",
        '    "a": 1,',
        '    "b": 2,',
        "...",
        '"""Where requests go."""',
    ]
    assert q["net.one"][0].card == "# net.py:21-21\ndef one(x): return x"
    module = parse_module("net.py", source).symbols[0]
    assert module.card.endswith("# defines: Client, one")  # its classes and functions
