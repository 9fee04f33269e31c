"""Every language the index reads: the same symbols (qualified names as that language's users
write them, kinds, spans from the doc comment, cards, exact bodies), references and imports,
from the real tree-sitter grammars, on the polyglot fixture workspace (tests/fixtures/poly_ws)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from ctx_lsp.memory.capsules import code_hash
from ctx_lsp.workspace import graph
from ctx_lsp.workspace.files import classify_content
from ctx_lsp.workspace.languages import kind_label, language_of, last_part
from ctx_lsp.workspace.languages.modules import rust_module
from ctx_lsp.workspace.languages.reading import ParseFailed, _parse_readable, parse_with_deadline
from ctx_lsp.workspace.languages.spec import load
from ctx_lsp.workspace.parse import parse_module

POLY = Path(__file__).parent / "fixtures" / "poly_ws"


def parse(rel: str):
    parsed = parse_module(rel, (POLY / rel).read_bytes(), root=str(POLY))
    assert parsed.error is None, parsed.error
    return parsed


def by_qualname(rel: str) -> dict:
    return {s.qualname: s for s in parse(rel).symbols}


def refs_of(rel: str, source: bytes, root: Path | None = None) -> dict[tuple[str, str], int]:
    """``(source qualname, target) → uses`` of a file given as its bytes."""
    return {(src, target): n for src, target, n in parse_module(rel, source, root=str(root) if root else None).refs}


@pytest.mark.parametrize(
    ("rel", "lang"),
    [
        ("src/lib.rs", "rust"),
        ("web/src/api/client.ts", "typescript"),
        ("web/src/components/Invoice.tsx", "tsx"),
        ("web/src/utils/format.js", "javascript"),
        ("lib/x.mjs", "javascript"),
        ("server/handler.go", "go"),
        ("java/src/main/java/com/shop/Inventory.java", "java"),
        ("native/checksum.c", "c"),
        ("native/checksum.h", "cpp"),
        ("native/codec.cpp", "cpp"),
        ("backend/app.py", "python"),
        ("dist/app.min.js", None),
        ("README.md", None),
        ("Makefile", None),
    ],
)
def test_language_of(rel: str, lang: str | None) -> None:
    assert language_of(rel) == lang


def test_last_part_in_every_spelling() -> None:
    assert last_part("krate::Type::method") == "method"
    assert last_part("pkg.Class.method") == "method"
    assert last_part("name") == "name"


def test_rust_items_impls_and_crate_names() -> None:
    syms = by_qualname("src/error.rs")
    enum = syms["ledger_core::error::LedgerError"]
    assert enum.kind == "class" and enum.signature == "pub enum LedgerError"
    assert enum.docstring == "Errors a ledger operation can raise."
    # the span starts at the doc comment, above the attribute
    assert enum.start_line == 3 and enum.body.startswith("/// Errors a ledger")
    assert "#[derive(Debug)]" in enum.body
    impl = syms["ledger_core::error::impl Iterator for Chain"]
    assert impl.kind == "class" and impl.signature == "impl<'a> Iterator for Chain<'a>"
    nxt = syms["ledger_core::error::Chain::next"]
    assert nxt.kind == "method" and nxt.parent == impl.qualname and nxt.name == "next"
    assert nxt.docstring == "Yields the current error and moves on to its source."
    assert nxt.body.strip().endswith("}") and "current.source()" in nxt.body
    assert "ledger_core::error::LedgerError::fmt" in syms and "ledger_core::error::LedgerError::source" in syms
    # the card: where it is, its doc comment, its signature and its first lines
    card = syms["ledger_core::error::Chain::new"].card
    assert card.startswith("// src/error.rs:40-43\n/// Starts the chain at `head`.\npub fn new(")


def test_rust_module_names_follow_cargo() -> None:
    root = str(POLY)
    assert rust_module("src/lib.rs", root) == "ledger_core"
    assert rust_module("src/error.rs", root) == "ledger_core::error"
    assert rust_module("src/a/mod.rs", root) == "ledger_core::a"
    assert rust_module("src/bin/tool.rs", root) == "tool"
    assert rust_module("tests/transfers.rs", root) == "transfers"


def test_rust_test_code_is_marked() -> None:
    syms = by_qualname("src/lib.rs")
    assert syms["ledger_core::tests"].decorators == ("test",)
    assert syms["ledger_core::tests::empty_ledger_has_zero_balance"].decorators == ("test", "test case")
    assert syms["ledger_core::total_balance"].decorators == ()
    assert syms["ledger_core"].docstring == "Ledger core: accounts, postings and the errors they raise."


def test_rust_references_and_imports() -> None:
    parsed = parse("src/account.rs")
    refs = {(src, target) for src, target, _ in parsed.refs}
    # a definition of the same file, by its qualified name
    assert ("ledger_core::account::Ledger::transfer", "ledger_core::account::Ledger::find") in refs
    # a name defined elsewhere: left for the workspace to resolve, from this file's folder
    assert ("ledger_core::account::Account::post", "rust|src|LedgerError") in refs
    assert ("LedgerError", "ledger_core::error::LedgerError") in parsed.imports


def test_typescript_classes_methods_and_arrow_functions() -> None:
    syms = by_qualname("web/src/api/client.ts")
    cls = syms["web/src/api/client.ApiClient"]
    assert cls.kind == "class" and cls.signature == "export class ApiClient"
    assert cls.docstring == "Talks to the ledger server over HTTP, retrying failed requests."
    balance = syms["web/src/api/client.ApiClient.balance"]
    assert balance.kind == "method" and balance.parent == cls.qualname
    backoff = syms["web/src/api/client.backoff"]
    assert backoff.kind == "function" and backoff.body.startswith("/** Waits longer")
    iface = syms["web/src/api/client.ClientOptions"]
    assert iface.kind == "class" and iface.signature.startswith("export interface ClientOptions")
    parsed = parse("web/src/api/client.ts")
    assert ("formatCents", "web/src/utils/format.formatCents") in parsed.imports
    refs = {(src, target) for src, target, _ in parsed.refs}
    assert ("web/src/api/client.ApiClient.balance", "web/src/api/client.ApiClient.request") in refs
    assert ("web/src/api/client.ApiClient.request", "web/src/api/client.backoff") in refs


def test_tsx_and_javascript() -> None:
    syms = by_qualname("web/src/components/Invoice.tsx")
    assert syms["web/src/components/Invoice.Invoice"].kind == "function"
    assert syms["web/src/components/Invoice.InvoiceProps"].kind == "class"
    js = by_qualname("web/src/utils/format.js")
    assert js["web/src/utils/format.formatCents"].docstring.startswith("Formats an amount in cents")
    assert "web/src/utils/format.module.exports.parseCents" in js


def test_go_methods_named_by_receiver_and_package() -> None:
    syms = by_qualname("server/handler.go")
    handle = syms["server.Server.Handle"]
    assert handle.kind == "method" and handle.parent == "server.Server"
    assert handle.docstring.startswith("Handle serves one request")
    assert handle.signature == "func (s *Server) Handle(w http.ResponseWriter, r *http.Request)"
    server = syms["server.Server"]
    assert server.kind == "class" and server.signature == "type Server struct"
    assert syms["server.NewServer"].kind == "function"
    assert syms["server/handler.go"].kind == "module"
    assert ("json", "encoding/json") in parse("server/handler.go").imports


def test_go_calls_into_the_standard_library_are_no_references(tmp_path: Path) -> None:
    # the workspace defines a Join, an Errorf method and a Duration type: by name alone,
    # strings.Join, t.Errorf (t *testing.T) and time.Duration would each have become an edge to them
    (tmp_path / "go.mod").write_text("module example.com/shop\n")
    source = b"""package app

import (
	"strings"
	"testing"
	"time"

	"example.com/shop/util"
)

type Config struct {
	Wait time.Duration
}

func Run(names []string) string {
	return strings.Join(names, ",") + util.Join(names)
}

func TestRun(t *testing.T) {
	t.Run("empty", func(t *testing.T) { t.Errorf("bad") })
	if Run(nil) != "" {
		t.Errorf("bad")
	}
}

func Print(p *util.Printer, d util.Duration) {
	p.Errorf("%d", d)
}
"""
    refs = refs_of("app/app.go", source, tmp_path)
    # the workspace's own package: its Join, its types; a method on a value of a workspace type:
    # a reference by name
    assert refs == {
        ("app.Run", "go|app|example.com/shop/util.Join"): 1,
        ("app.TestRun", "app.Run"): 1,
        ("app.Print", "go|app|example.com/shop/util.Printer"): 1,
        ("app.Print", "go|app|example.com/shop/util.Duration"): 1,
        ("app.Print", "go|app|Errorf"): 1,
    }


def test_go_names_qualified_by_an_imported_package_are_that_packages() -> None:
    # ``st.Open()`` is package store's Open (an alias), ``cli.NewApp()`` cli's (a /v2 module),
    # ``yaml.Unmarshal`` yaml's (gopkg.in's .v3): by their bare names each went to the nearest
    # Open, NewApp, Unmarshal of any package
    source = b"""package cmd

import (
	"fmt"

	st "example.com/app/internal/store"
	"example.com/app/internal/cli/v2"
	"gopkg.in/yaml.v3"
)

func Run(db *st.DB) error {
	s := st.Open("x")
	fmt.Println(s)
	cli.NewApp()
	yaml.Unmarshal(nil, nil)
	return db.Close()
}
"""
    parsed = parse_module("cmd/run.go", source)
    assert dict(parsed.imports)["cli"] == "example.com/app/internal/cli/v2"
    store = "example.com/app/internal/store"
    assert {(src, target) for src, target, _ in parsed.refs} == {
        ("cmd.Run", f"go|cmd|{store}.DB"),
        ("cmd.Run", f"go|cmd|{store}.Open"),
        ("cmd.Run", "go|cmd|example.com/app/internal/cli/v2.NewApp"),
        ("cmd.Run", "go|cmd|gopkg.in/yaml.v3.Unmarshal"),
        ("cmd.Run", "go|cmd|Close"),  # a method on a value: by name
    }
    by_name = {
        "Open": [
            ("cmd.Open", "cmd/open.go"),
            ("internal/store.Open", "internal/store/db.go"),
            ("pkg/store.Open", "pkg/store/queue.go"),  # another package named store
            ("internal/store.DB.Open", "internal/store/db.go"),  # a method of that name
        ],
        "NewApp": [("internal/cli/v2.NewApp", "internal/cli/v2/app.go")],
        "NewFlag": [("cli.NewFlag", "cli.go")],  # a package at the workspace's root
        "Unmarshal": [("cmd.Unmarshal", "cmd/open.go")],
    }
    r = graph.Resolver({}, {}, {}, {}, by_name)
    assert r.resolve(f"go|cmd|{store}.Open") == "internal/store.Open"  # not the nearer cmd.Open, nor pkg/store's
    assert r.resolve("go|cmd|example.com/shop/pkg/store.Open") == "pkg/store.Open"
    assert r.resolve("go|cmd|Open") == "cmd.Open"
    assert r.resolve("go|cmd|example.com/app/internal/cli/v2.NewApp") == "internal/cli/v2.NewApp"
    assert r.resolve("go|x|github.com/urfave/cli/v2.NewFlag") == "cli.NewFlag"  # by its name
    assert r.resolve("go|cmd|gopkg.in/yaml.v3.Unmarshal") is None  # yaml is not in the workspace


def test_typescript_static_calls_are_their_classs_when_it_is_found() -> None:
    # ``Api.create()`` after ``import { ApiClient as Api }`` is ApiClient's create, not the
    # nearest create of any class; a namespace or default import goes by what it imports, a value
    # and a constant by name
    source = b"""import { ApiClient as Api } from "./api/client";
import * as utils from "./utils";
import React from "react";
const DEFAULTS = { merge() {} };
export class Store {
  static open(): Store { return new Store(); }
  load() { Api.create(1); utils.fmt(1); React.createElement("a"); DEFAULTS.merge(); Store.open(); }
}
"""
    refs = {(src, target) for src, target, _ in parse_module("web/src/store.ts", source).refs}
    load = "web/src/store.Store.load"
    assert refs == {
        # with the definition the imports name, tried first (``test_typescript_imported_names…``)
        (load, "js|web/src|ApiClient.create|web/src/api/client.ApiClient.create"),
        (load, "js|web/src|fmt|web/src/utils.fmt"),
        # a default import: its module's default; not in the workspace here, so its own name
        # decides, as a class's (a ``React`` with no ``createElement``: the bare name)
        (load, "js|web/src|React.createElement|react.default.createElement"),
        (load, "js|web/src|merge"),
        (load, "web/src/store.Store.open"),  # the file's own
    }
    by_name = {
        "create": [("web/src/store.Store.create", "web/src/store.ts"),
                   ("web/src/api/client.ApiClient.create", "web/src/api/client.ts")],
        "open": [("web/src/db.Db.open", "web/src/db.ts")],
    }  # fmt: skip
    r = graph.Resolver({}, {}, {}, {}, by_name)
    assert r.resolve("js|web/src|ApiClient.create") == "web/src/api/client.ApiClient.create"  # not the nearer one
    # a receiver named like a class that holds no such method (``Config.open()`` of a ``const
    # Config``): JavaScript's values may be named so, and the bare name decides, as before
    assert r.resolve("js|web/src|Config.open") == "web/src/db.Db.open"
    assert graph.Resolver({}, {}, {}, {}, {"new": [("c::x::Pool::new", "x/p.rs")]}).resolve("rust|x|Side::new") is None


def test_typescript_imported_names_are_the_definitions_their_imports_name() -> None:
    # effect's ``Option.isSome(x)`` after ``import * as Option from "./Option"``: by its bare name
    # it went to the nearest isSome, internal/option's; a named import the same. When the
    # workspace has no such definition (a package, a re-export through an index file), the name
    # decides as before
    source = b"""import * as Option from "./Option";
import { fmt, parse as toNumber } from "./lib/text";
import { useState } from "react";
export function show(o: unknown): string {
  return Option.isSome(o) ? fmt(toNumber("1")) : `${useState(0)}`;
}
"""
    refs = {target for _, target, _ in parse_module("src/internal/show.ts", source).refs}
    assert refs == {
        "js|src/internal|isSome|src/internal/Option.isSome",
        "js|src/internal|fmt|src/internal/lib/text.fmt",
        "js|src/internal|toNumber|src/internal/lib/text.parse",
        "js|src/internal|useState|react.useState",
    }
    kinds = {"src/internal/Option.isSome": "variable", "src/internal/lib/text.fmt": "function"}
    by_name = {
        "isSome": [("src/internal/option.isSome", "src/internal/option.ts"),
                   ("src/internal/Option.isSome", "src/internal/Option.ts")],
        "fmt": [("src/internal/fmt.fmt", "src/internal/fmt.ts")],
        "useState": [("src/internal/hooks.useState", "src/internal/hooks.ts")],
    }  # fmt: skip
    r = graph.Resolver(kinds, {}, {}, {}, by_name)
    assert r.resolve("js|src/internal|isSome") is None  # two equally near: no edge
    assert r.resolve("js|src/internal|isSome|src/internal/Option.isSome") == "src/internal/Option.isSome"
    assert r.resolve("js|src/internal|fmt|src/internal/lib/text.fmt") == "src/internal/lib/text.fmt"
    # react's useState is not the workspace's: the name decides, as without the import
    assert r.resolve("js|src/internal|useState|react.useState") == "src/internal/hooks.useState"


def test_typescript_imports_through_an_index_file_reach_the_definition() -> None:
    # zod's ``import * as z from "./v4"`` then ``z.array(…)``: ./v4 is a folder, its index.ts passes
    # on what other modules define (``export * from``, ``export { _gte as gte } from``); by its
    # name ``gte`` went to a test's own gte, or none
    index = parse_module(
        "zod/v4/index.ts",
        b"""export * from "./schemas";
export * as core from "./core/index.js";
export { _gte as gte, lt } from "./api";
""",
    )
    assert index.imports == [
        ("*", "zod/v4/schemas"),
        ("core", "zod/v4/core/index"),
        ("gte", "zod/v4/api._gte"),
        ("lt", "zod/v4/api.lt"),
    ]
    user = parse_module("zod/tests/use.ts", b'import * as z from "../v4";\nexport const s = () => z.array(z.gte(1));\n')
    assert {t for _, t, _ in user.refs} == {"js|zod/tests|array|zod/v4.array", "js|zod/tests|gte|zod/v4.gte"}
    kinds = {"zod/v4/schemas.array": "function", "zod/v4/api._gte": "function"}
    modules = {m: f"{m}.ts" for m in ("zod/v4/index", "zod/v4/schemas", "zod/v4/api", "zod/v4/core/index")}
    imports = {"zod/v4/index.ts": {k: v for k, v in index.imports if k != "*"}}
    stars = {"zod/v4/index.ts": [v for k, v in index.imports if k == "*"]}
    by_name = {"gte": [("zod/tests/helpers.gte", "zod/tests/helpers.ts")]}
    r = graph.Resolver(kinds, modules, imports, stars, by_name)
    assert r.resolve("js|zod/tests|array|zod/v4.array") == "zod/v4/schemas.array"
    assert r.resolve("js|zod/tests|gte|zod/v4.gte") == "zod/v4/api._gte"  # not the test helper's gte


def test_javascript_requires_are_imports() -> None:
    # CommonJS as eslint and webpack write it: ``isInLoop`` after ``const { isInLoop } =
    # require("./utils/ast-utils")`` went, by its name, to another rule file's own isInLoop
    source = b"""const astUtils = require("./utils/ast-utils");
const { isInLoop } = require("./utils/ast-utils.js");
const { SourceProcessor: HtmlProcessor } = require("./syntax");
const Linter = require("../linter");
function create(node) {
  return isInLoop(node) && astUtils.isNullOrUndefined(node) && new HtmlProcessor() && Linter.verify();
}
module.exports = { create };
"""
    parsed = parse_module("lib/rules/no-loop.js", source)
    assert parsed.imports == [
        ("astUtils", "lib/rules/utils/ast-utils"),
        ("isInLoop", "lib/rules/utils/ast-utils.isInLoop"),
        ("Linter", "lib/linter.default"),  # what ``module.exports = Linter`` names there
    ]  # a renamed key is left to its name
    assert {target for _, target, _ in parsed.refs} == {
        "js|lib/rules|isInLoop|lib/rules/utils/ast-utils.isInLoop",
        "js|lib/rules|isNullOrUndefined|lib/rules/utils/ast-utils.isNullOrUndefined",
        "js|lib/rules|HtmlProcessor",
        "js|lib/rules|Linter.verify|lib/linter.default.verify",
    }
    # a binding of what a module exports is an import, not a definition of the file's own (2,209
    # of the JavaScript tree's 5,181 variables were ``const fs = require("node:fs")``)
    assert [s.qualname for s in parsed.symbols] == ["lib/rules/no-loop", "lib/rules/no-loop.create"]
    exporting = parse_module("lib/linter.js", b"class Linter { verify() {} }\nmodule.exports = Linter;\n")
    assert exporting.imports == [("default", "lib/linter.Linter")]


def test_typescript_syntax_its_grammar_does_not_know_costs_no_definitions() -> None:
    # variance marks (TypeScript 4.7) and overloads whose generic call signatures stand on lines
    # of their own, as effect writes them: the grammar read the rest of the file as errors, and
    # every definition after the first such line was lost (Effect.ts kept 20 of its thousands)
    source = b"""export interface Cache<in out K, out V> extends Iterable<[K, V]> {
  readonly get: (key: K) => V
}

export const match: {
  <B, A, C = B>(options: { readonly onNone: () => B }): (self: Option<A>) => B | C
  <A, B, C = B>(
    self: Option<A>,
    options: { readonly onNone: () => B }
  ): B | C
} = dual(2, (self, { onNone }) => onNone())

export const isSome: <A>(self: Option<A>) => boolean = option.isSome

export function getOrElse<A>(self: Option<A>, orElse: () => A): A {
  return isSome(self) ? self.value : orElse()
}

const later = 1 < 2 ? [1,
  2] : []
"""
    parsed = parse_module("src/Option.ts", source)
    names = {s.qualname: s.kind for s in parsed.symbols}
    assert {"src/Option.Cache", "src/Option.match", "src/Option.isSome", "src/Option.getOrElse"} <= set(names)
    cache = next(s for s in parsed.symbols if s.qualname == "src/Option.Cache")
    assert cache.body.startswith("export interface Cache<in out K, out V>")  # the code as written
    getter = next(s for s in parsed.symbols if s.qualname == "src/Option.getOrElse")
    assert (getter.start_line, getter.end_line) == (14, 16)


def test_typescript_calls_of_builtin_methods_are_no_references() -> None:
    # the file defines push and split; xs.push, line.split, Math.max, p.then are the language's.
    # q.push (q: Queue) is left out with them: no edge beats a wrong one, and without types a
    # built-in's name on any receiver but ``this`` cannot be told apart
    source = b"""import { request } from "./api";

export class Queue {
  items: number[] = [];
  push(n: number): void {
    this.items.push(n);
  }
  drain(): number {
    this.push(Math.max(...this.items));
    return this.items.length;
  }
}

export function split(line: string): string[] {
  return line.split(",").map((s) => s.trim());
}

export function load(q: Queue): Promise<string> {
  q.push(1);
  return request("/x").then((r) => split(r).join(""));
}
"""
    refs = refs_of("web/src/queue.ts", source)
    assert refs == {
        ("web/src/queue.Queue.drain", "web/src/queue.Queue.push"): 1,  # this.push: the class's own
        ("web/src/queue.load", "web/src/queue.Queue"): 1,  # a type
        ("web/src/queue.load", "js|web/src|request|web/src/api.request"): 1,
        ("web/src/queue.load", "web/src/queue.split"): 1,
    }


def test_java_calls_into_the_jdk_are_no_references() -> None:
    # by name, sb.append, prices.put, carts.add (a java.util List), Math.max, System.out.println,
    # String.valueOf and any toString() would each have become an edge to a workspace method
    source = b"""package org.shop;

import java.util.List;
import java.util.Map;
import java.util.ArrayList;
import org.shop.model.Cart;

public class Billing {
    private final Map<String, Integer> prices;
    private Cart cart;

    public String render(List<String> items, Cart other) {
        StringBuilder sb = new StringBuilder();
        for (String item : items) {
            sb.append(item.trim());
        }
        prices.put("x", Math.max(1, 2));
        System.out.println(sb.toString());
        cart.add("y");
        other.add("z");
        List<Cart> carts = new ArrayList<>();
        carts.add(cart);
        return String.valueOf(total()) + this.total();
    }

    int total() { return 1; }
}
"""
    refs = refs_of("src/main/java/org/shop/Billing.java", source)
    here = "java|src/main/java/org/shop"
    assert refs == {
        ("org.shop.Billing", f"{here}|Cart"): 1,
        ("org.shop.Billing.render", f"{here}|Cart"): 2,
        ("org.shop.Billing.render", f"{here}|add"): 2,  # cart.add, other.add: Carts
        ("org.shop.Billing.render", "org.shop.Billing.total"): 2,
    }
    # the JDK's own source: there java.util's types are the workspace's
    jdk = source.replace(b"package org.shop;", b"package java.util.shop;")
    inside = parse_module("java.base/java/util/shop/Billing.java", jdk).refs
    assert any(target.endswith("|append") for _, target, _ in inside)


def test_java_static_calls_are_their_classs_methods() -> None:
    # ``Jsoup.parse(html)`` is Jsoup's parse, wherever Jsoup is: by its bare name it was the
    # nearest ``parse`` of any class (or none among several); a call on a variable, a field or a
    # constant stays a call by name, and the file's own class is its own
    source = b"""package org.shop;

import org.jsoup.Jsoup;

public class Report {
    private static final Parser DEFAULT = new Parser();
    private Parser parser;

    public String render(String html, Parser given) {
        Object doc = Jsoup.parse(html);
        Object full = org.jsoup.Jsoup.parse(html, "");
        Object row = Outer.Inner.of(1);
        given.parse(html);
        parser.parse(html);
        DEFAULT.parse(html);
        return Report.title() + title();
    }

    static String title() { return ""; }
}
"""
    refs = refs_of("src/main/java/org/shop/Report.java", source)
    here = "java|src/main/java/org/shop"
    assert refs == {
        ("org.shop.Report", f"{here}|Parser"): 3,
        ("org.shop.Report.render", f"{here}|Parser"): 1,
        ("org.shop.Report.render", f"{here}|Jsoup.parse"): 2,
        ("org.shop.Report.render", f"{here}|Inner.of"): 1,
        ("org.shop.Report.render", f"{here}|parse"): 3,  # on a parameter, a field, a constant
        ("org.shop.Report.render", "org.shop.Report.title"): 2,
    }
    by_name = {
        "parse": [("org.jsoup.Jsoup.parse", "src/main/java/org/jsoup/Jsoup.java"),
                  ("org.shop.Parser.parse", "src/main/java/org/shop/Parser.java")],
    }  # fmt: skip
    r = graph.Resolver({}, {}, {}, {}, by_name)
    assert r.resolve(f"{here}|Jsoup.parse") == "org.jsoup.Jsoup.parse"  # not the nearer Parser.parse
    assert r.resolve(f"{here}|parse") == "org.shop.Parser.parse"
    assert r.resolve(f"{here}|StringUtils.isBlank") is None  # no isBlank of a StringUtils here


def test_a_test_case_is_no_references_target() -> None:
    # jsoup's ElementsTest has a @Test method ``text``: every ``els.text()`` of its file (and, by
    # name, of the test folder) went to it. A test the runner calls is never what code calls.
    source = b"""package org.jsoup.select;

import org.junit.jupiter.api.Test;

public class ElementsTest {
    @Test public void text() {
        Elements els = Jsoup.parse("<p>x</p>").select("p");
        assertEquals("x", els.text());
        helper();
    }

    @org.junit.jupiter.params.ParameterizedTest
    void html() { els.text(); }

    void helper() { }
}
"""
    parsed = parse_module("src/test/java/org/jsoup/select/ElementsTest.java", source)
    marks = {s.qualname: s.decorators for s in parsed.symbols}
    assert marks["org.jsoup.select.ElementsTest.text"] == ("test", "test case")
    assert marks["org.jsoup.select.ElementsTest.html"] == ("test", "test case")
    assert marks["org.jsoup.select.ElementsTest.helper"] == ()
    here = "java|src/test/java/org/jsoup/select"
    refs = {(src, target) for src, target, _ in parsed.refs}
    assert ("org.jsoup.select.ElementsTest.text", f"{here}|text") in refs  # by name: not its own test
    assert ("org.jsoup.select.ElementsTest.html", f"{here}|text") in refs
    assert ("org.jsoup.select.ElementsTest.text", "org.jsoup.select.ElementsTest.helper") in refs
    rust = b"""#[cfg(test)]
mod tests {
    fn vec() -> Vec<u8> { Vec::new() }

    #[test]
    fn parse() { let v = vec(); drop(v); }

    #[tokio::test]
    async fn run() { parse(); }
}
"""
    parsed = parse_module("src/lib.rs", rust)
    marks = {s.qualname: s.decorators for s in parsed.symbols}
    assert marks["crate::tests::vec"] == ("test",)  # a helper only tests call: test code, callable
    assert marks["crate::tests::parse"] == marks["crate::tests::run"] == ("test", "test case")
    refs = {(src, target) for src, target, _ in parsed.refs}
    assert ("crate::tests::parse", "crate::tests::vec") in refs
    assert ("crate::tests::run", "rust|src|parse") in refs  # not the test ``parse`` beside it


def test_rust_paths_into_the_standard_library_are_no_references() -> None:
    # by name, HashMap::new, Vec::new, io::Error::new, Duration::from_secs, std::mem::take and the
    # HashMap and Duration types would each have become an edge to the workspace's nearest namesake
    source = b"""use std::collections::HashMap;
use std::io;
use std::time::Duration;
use crate::store::Store;

pub struct Cache {
    map: HashMap<String, u64>,
    ttl: Duration,
    store: Store,
}

impl Cache {
    pub fn load(&mut self) -> io::Result<()> {
        let v: Vec<u64> = Vec::new();
        let e = io::Error::new(io::ErrorKind::Other, "x");
        let t = Duration::from_secs(1);
        let taken = std::mem::take(&mut self.map);
        let other = Store::open();
        let again = Cache::new();
        Ok(())
    }

    pub fn new() -> Self {
        todo!()
    }
}
"""
    refs = refs_of("src/cache.rs", source)
    assert refs == {
        ("crate::cache::Cache", "rust|src|Store"): 1,
        ("crate::cache::Cache::load", "rust|src|Store"): 1,
        # called through their types: Store's open, wherever it is; the file's own Cache::new
        ("crate::cache::Cache::load", "rust|src|Store::open"): 1,
        ("crate::cache::Cache::load", "crate::cache::Cache::new"): 1,
        ("crate::cache::impl Cache", "crate::cache::Cache"): 1,
    }


def test_java_nested_classes_and_package() -> None:
    syms = by_qualname("java/src/main/java/com/shop/Inventory.java")
    assert syms["com.shop.Inventory"].kind == "class"
    nested = syms["com.shop.Inventory.Reservation"]
    assert nested.kind == "class" and nested.parent == "com.shop.Inventory"
    assert syms["com.shop.Inventory.Reservation.Reservation"].kind == "method"  # its constructor
    reserve = syms["com.shop.Inventory.reserve"]
    assert reserve.docstring.startswith("Reserves {@code quantity} items")
    assert reserve.body.lstrip().startswith("/** Reserves")


def test_c_and_cpp() -> None:
    c = by_qualname("native/checksum.c")
    assert c["adler32"].kind == "function" and c["adler32"].docstring == "Adler-32 checksum of a buffer."
    assert c["MOD_ADLER"].kind == "variable"
    cpp = by_qualname("native/codec.cpp")
    assert cpp["ledger::Codec"].kind == "class"
    encode = cpp["ledger::Codec::encode"]
    assert encode.kind == "method" and encode.parent == "ledger::Codec"
    assert encode.signature.startswith("std::string Codec::encode(")


def test_mixed_repository_python_keeps_ast_path() -> None:
    syms = by_qualname("backend/app.py")
    assert syms["backend.app.import_journal"].signature == "def import_journal(path: str) -> int"


@pytest.mark.parametrize(
    ("rel", "data", "error"),
    [
        ("src/bin.rs", b"fn main() {}\x00\x01\x02", "binary"),
        ("web/bundle.js", b"var a=1;" * 5000, "minified"),
    ],
)
def test_bad_files_get_a_reason(rel: str, data: bytes, error: str) -> None:
    parsed = parse_module(rel, data)
    assert parsed.error is not None and error in parsed.error and parsed.symbols == []


def test_syntax_errors_index_what_parses() -> None:
    src = b"pub fn good() -> u8 { 1 }\n\nfn broken( {\n\npub struct Kept { x: u8 }\n"
    parsed = parse_module("src/x.rs", src)
    assert parsed.error is None
    names = {s.name for s in parsed.symbols}
    assert {"good", "Kept"} <= names


def test_not_utf8_is_flagged() -> None:
    """Rust and Go sources are UTF-8 by their specifications: anything else would not compile."""
    assert parse_module("src/x.rs", b'fn f() { let s = "\xff\xfe"; }').decode_error
    assert parse_module("x.go", b"package x\n// caf\xe9\nfunc F() {}\n").decode_error


def test_legacy_encodings_where_the_language_takes_them() -> None:
    """A C file with a Latin-1 comment, a Java file saved as UTF-16 with its byte order mark:
    their compilers read them, and so does the index (the text decoded, not replaced)."""
    c = parse_module("src/menu.c", b"/* Caf\xe9 cr\xe8me: the \x80 price */\nint price(void) { return 3; }\n")
    assert not c.decode_error and c.error is None and c.encoding == "cp1252"
    (fn,) = [s for s in c.symbols if s.name == "price"]
    assert "Café crème: the € price" in fn.docstring + fn.body + fn.card
    java = "package shop;\n/** Größe. */\npublic class Size {\n  int get() { return 1; }\n}\n"
    parsed = parse_module("src/shop/Size.java", java.encode("utf-16"))
    assert parsed.error is None and parsed.encoding == "utf-16"
    assert {"shop.Size", "shop.Size.get"} <= {s.qualname for s in parsed.symbols}
    assert classify_content(java.encode("utf-16"), "src/shop/Size.java") is None
    # the same bytes are binary to a language that does not read UTF-16, and data is not text
    assert classify_content(java.encode("utf-16"), "src/size.rs") == "binary"
    noise = bytes(range(128, 256)) * 40 + b"int f(void);\n"
    assert parse_module("src/noise.c", noise).decode_error
    assert classify_content(noise, "src/noise.c") == "not_utf8"


def test_parse_time_cap() -> None:
    loaded = load("rust")
    assert loaded is not None
    src = b"fn f() { let x = [" + b"1, " * 400_000 + b"]; }"
    with pytest.raises(ParseFailed):
        parse_with_deadline(loaded, src, seconds=0.0)


def test_the_parse_time_cap_holds_for_a_file_read_two_ways() -> None:
    # a TypeScript file with variance marks is parsed as mended, then as it is when that has
    # errors: both parses share the one cap, and one the cap stopped gets no second one (it had
    # a fresh 2 s of its own)
    loaded = load("typescript")
    assert loaded is not None
    src = b"export interface Cache<in out K> { get: (k: K) => K }\nconst x = [" + b"1, " * 200_000 + b"];\n"
    assert _parse_readable(loaded, src).root_node.has_error is False
    with pytest.raises(ParseFailed):
        _parse_readable(loaded, src, seconds=0.0)


def test_a_parse_keeps_nothing_of_its_source() -> None:
    """py-tree-sitter 0.26 keeps every chunk a read callback returns; the parser releases them:
    a server re-parses a file on each save, and its text must not stay behind each time."""
    loaded = load("rust")
    assert loaded is not None
    parse_with_deadline(loaded, b"fn warm() {}\n")
    tracemalloc.start()
    try:
        for i in range(20):
            parse_with_deadline(loaded, b"fn f%d() { let x = 1; }\n" % i * 4_000)  # ~100 kB each
        gc.collect()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept < 200_000  # the 20 sources (2 MB) stayed before


def test_capsule_hash_ignores_comments_and_whitespace_in_every_language() -> None:
    a = code_hash("fn main() {\n    let x = 1; // one\n}\n", "src/main.rs")
    assert a == code_hash("fn main() { let x = 1;\n/* note */ }", "src/main.rs")
    assert a != code_hash("fn main() { let x = 2; }", "src/main.rs")
    ts = code_hash("export const f = () => 1;", "a.ts")
    assert ts == code_hash("// doc\nexport const f = () =>\n  1;", "a.ts")
    assert ts != code_hash("export const f = () => 2;", "a.ts")


def test_the_prompt_names_the_workspaces_languages(tmp_path: Path) -> None:
    import shutil

    from ctx_lsp.engine import Engine, PlanRequest

    mixed = tmp_path / "mixed"
    shutil.copytree(POLY, mixed, ignore=shutil.ignore_patterns(".ctx"))
    rust = tmp_path / "rust"
    (rust / "src").mkdir(parents=True)
    shutil.copy(POLY / "Cargo.toml", rust / "Cargo.toml")
    for name in ("lib.rs", "error.rs", "account.rs"):
        shutil.copy(POLY / "src" / name, rust / "src" / name)
    for ws, phrase, listing in (
        (
            mixed,
            "the multi-language workspace `mixed`",
            "modules in Rust, TypeScript, C++, Go, Java, C, JavaScript, Python",
        ),
        (rust, "the Rust workspace `rust`", "3 modules in Rust (symbols per module)"),
    ):
        engine = Engine(ws)
        try:
            engine.refresh_index()
            inputs, _, _ = engine.build_inputs(PlanRequest(query="how does a transfer fail?"))
            assert phrase in inputs.required[0].text
            scaffold = inputs.scaffold[0].text
            assert listing in scaffold and "Rust crate::module::Type::method" in scaffold
        finally:
            engine.close()


def test_a_large_workspace_folded_into_folders_keeps_its_languages(tmp_path: Path) -> None:
    """Past 40 modules the scaffold lists folders, whose names say nothing of the language: it
    still speaks of Rust and Rust's names, not of Python modules and ``__init__.py``."""
    from ctx_lsp.engine import Engine, PlanRequest

    for crate in ("net-io", "wire-codec", "store"):
        (tmp_path / crate / "src").mkdir(parents=True)
        (tmp_path / crate / "Cargo.toml").write_text(f'[package]\nname = "{crate}"\nversion = "0.1.0"\n')
        for k in range(16):
            (tmp_path / crate / "src" / f"part{k}.rs").write_text(f"pub fn step{k}() -> u32 {{ {k} }}\n")
    engine = Engine(tmp_path)
    try:
        engine.refresh_index()
        inputs, _, _ = engine.build_inputs(PlanRequest(query="how is a frame decoded?"))
        scaffold = inputs.scaffold[0].text
        head = scaffold.splitlines()[0]
        folded = "48 files in Rust; the 3 folders with the most symbols (symbols per folder)"
        assert head == f"# Workspace {tmp_path.name}: {folded}"
        assert "- wire-codec/src/ (32)" in scaffold
        note = next(line for line in scaffold.splitlines() if line.startswith("How to navigate: "))
        assert "Rust crate::module::Type::method" in note and ".py" not in note
        assert "Most code is under " in note and "net-io/" in note
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("signature", "label"),
    [
        ("class Invoice(Base, metaclass=Meta)", "class"),
        ("class Struct:", "class"),
        ("#[derive(Clone, Debug)] pub struct Receiver<T>", "struct"),
        ("pub(crate) enum State", "enum"),
        ("unsafe impl<T: Send> Send for Chan<T>", "impl"),
        ("pub trait AsyncRead", "trait"),
        ("mod tests", "module"),
        ("pub type Result<T> = std::result::Result<T, Error>;", "type"),
        ("typedef struct ofp_header ofp_header;", "struct"),
        ("typedef uint32_t ovs_be32;", "type"),
        ("typedef union { int a; } u;", "union"),
        ("type Handler interface {", "interface"),
        ("type List[T any] struct { items []T }", "struct"),
        ("type Celsius float64", "type"),
        ('@SuppressWarnings("serial") public class HashMap<K,V>', "class"),
        ("public @interface Documented", "annotation"),
        ("public record Point(int x, int y)", "record"),
        ("export interface ParseContext<T extends Base = never>", "interface"),
        ("export declare abstract class Base", "class"),
        ("namespace juce", "namespace"),
        ("template <typename T> struct Vec", "struct"),
        ("using Callback = std::function<void (int)>;", "type"),
        ("enum class Colour : uint8", "enum"),
        ("declare module 'http'", "module"),
        ("Foo", "class"),
    ],
)
def test_a_class_is_named_the_way_its_language_says_it(signature: str, label: str) -> None:
    assert kind_label("class", signature) == label
    assert kind_label("function", signature) == "function"  # only what the index calls a class


def test_plans_and_tools_show_a_rust_struct_as_a_struct(tmp_path: Path) -> None:
    import shutil

    from ctx_lsp.engine import Engine, PlanRequest
    from ctx_lsp.workspace.cards import body_item, card_item

    ws = tmp_path / "poly"
    shutil.copytree(POLY, ws, ignore=shutil.ignore_patterns(".ctx"))
    engine = Engine(ws)
    try:
        engine.refresh_index()
        enum, block, go = (
            "ledger_core::error::LedgerError",
            "ledger_core::error::impl Error for LedgerError",
            "server.Server",
        )
        rows = engine.index.get_many([enum, block, go])
        assert card_item(rows[enum], 1.0).title == f"enum {enum}"
        assert body_item(rows[block], 1.0).title == f"impl {block} (body)"
        assert card_item(rows[go], 1.0).title == f"struct {go}"
        titles = [c.item.title for c in engine.plan(PlanRequest(query="LedgerError display")).result.chosen]
        assert f"enum {enum} (body)" in titles or f"enum {enum}" in titles
    finally:
        engine.close()


MIXER_CPP = """\
namespace audio
{

class Mixer::Message  : public Queue::Item
{
public:
    void deliver() override
    {
        if (auto m = mixer.get())
            m->handle (text);
    }

private:
    String text;

    DECLARE_NON_COPYABLE (Message)
};

Mixer::Mixer()
{
    // the engine must be running before a mixer is made
    ASSERT_ENGINE_RUNNING
}

Mixer::~Mixer()
{
    ASSERT_ENGINE_RUNNING
}

void Mixer::addInput (Input* const input)
{
    const ScopedLock sl (inputLock);

    if (input != nullptr)
        inputs.add (input);
}

void Mixer::removeInput (Input* const input)
{
    const ScopedLock sl (inputLock);
    inputs.removeValue (input);
}

} // namespace audio
"""


def test_a_macro_call_alone_on_its_line_does_not_swallow_the_rest_of_a_cpp_file() -> None:
    """JUCE-style code: a statement-like macro with no semicolon (``ASSERT_ENGINE_RUNNING``) made
    the grammar read the rest of the file into the constructor around it — the namespace, the
    destructor and both methods were lost. The line is read as blank where that parses with fewer
    errors, and the code shown is still the file's own."""
    symbols = {s.qualname: s for s in parse_module("src/Mixer.cpp", MIXER_CPP.encode()).symbols}
    assert {
        "audio::Mixer::Message::deliver",
        "audio::Mixer::~Mixer",
        "audio::Mixer::addInput",
        "audio::Mixer::removeInput",
    } <= set(symbols)
    ctor = symbols["audio::Mixer::Mixer"]
    assert (ctor.start_line, ctor.end_line) == (18, 22) and "ASSERT_ENGINE_RUNNING" in ctor.body
    # with CRLF line ends too
    assert "audio::Mixer::removeInput" in {
        s.qualname for s in parse_module("src/Mixer.cpp", MIXER_CPP.replace("\n", "\r\n").encode()).symbols
    }
    # a Windows return type alone on its line parses worse blanked: it is kept
    win = b"NTSTATUS\nOvsInit(VOID)\n{\n    return STATUS_SUCCESS;\n}\nVOID\nOvsCleanup(VOID)\n{\n}\n"
    assert {"OvsInit", "OvsCleanup"} <= {s.qualname for s in parse_module("ovs/Driver.h", win).symbols}


def test_a_typescript_overloaded_function_is_its_implementation_by_name() -> None:
    """TypeScript's overload signatures come first; the plain name (a pin, get_symbol, a stack
    trace's function) is the implementation with its code, the signatures go by their parameters."""
    src = (
        b"export function parse(raw: string): Doc;\n"
        b"export function parse(raw: Buffer): Doc;\n"
        b"export function parse(\n  raw: Options<\n    string,\n    Buffer\n  >,\n): Doc;\n"
        b"export function parse(raw: string | Buffer): Doc {\n  return new Doc(String(raw));\n}\n"
    )
    symbols = {s.qualname: s for s in parse_module("src/parse.ts", src).symbols}
    assert "return new Doc" in symbols["src/parse.parse"].body
    # a parameter list over several lines is named as written on one (Prettier's layout)
    named = {"parse(raw: string)", "parse(raw: Buffer)", "parse(raw: Options<string, Buffer>)"}
    assert {f"src/parse.{name}" for name in named} <= set(symbols)


def test_secrets_are_masked_before_a_rust_file_is_parsed() -> None:
    from ctx_lsp.workspace.secrets import SecretMasker

    src = b'/// Talks to S3.\npub fn client() -> Client {\n    let key = "AKIAIOSFODNN7EXAMPLF";\n'
    src += b"    Client::new(key)\n}\n"
    parsed = parse_module("src/s3.rs", src, masker=SecretMasker((), ()))
    fn = next(s for s in parsed.symbols if s.name == "client")
    assert "AKIAIOSFODNN7EXAMPLF" not in fn.body + fn.card and "secret masked" in fn.body
    assert fn.secrets == 1 and parsed.symbols[0].secrets == 1  # the module holds it too


def test_a_javadoc_without_leading_stars_is_cut_to_its_first_paragraph_on_the_card() -> None:
    """Many Javadoc comments carry no "*" on their inner lines: they are still the comment's, and
    the card shows the first paragraph only, not a 60-line example."""
    example = "\n".join(f"     session.step({n});" for n in range(60))
    src = (
        "package p;\n\npublic interface Connection {\n"
        "    /**\n     Set the authenticator to use for this connection.\n\n     <p>For example:\n"
        f"     <code><pre>\n{example}\n     </pre></code>\n"
        "     * @param authenticator the authenticator\n     */\n"
        "    default Connection auth(Object authenticator) {\n        throw new RuntimeException();\n    }\n}\n"
    ).encode()
    parsed = parse_module("src/p/Connection.java", src)
    (auth,) = [s for s in parsed.symbols if s.name == "auth"]
    assert "Set the authenticator" in auth.card and "default Connection auth" in auth.card
    assert "session.step" not in auth.card and "@param" not in auth.card
    assert "session.step(59)" in auth.body  # the body is the exact code, its comment included


def test_a_cpp_class_with_its_librarys_export_macro_is_a_class() -> None:
    """``class JUCE_API BigInteger`` (Qt's ``Q_CORE_EXPORT``, LLVM's ``LLVM_ABI``): the grammar
    read the macro as the class and the rest as a function named ``BigInteger``, so the class
    and every member were missing (633 classes of JUCE's headers) and their methods' callers
    resolved to nothing or to a wrong ``juce::getHeight``. The macro is read as spaces, also
    where a macro line in the class (``JUCE_LEAK_DETECTOR (Widget)``) needs reading so too."""
    header = """namespace juce
{
class JUCE_API  Widget  : public Component
{
public:
    Widget() = default;
    int getHeight() const noexcept { return height; }

private:
    int height = 0;

    JUCE_LEAK_DETECTOR (Widget)
};

struct JUCE_API Point final { int x, y; };
} // namespace juce
"""
    symbols = {s.qualname: s for s in parse_module("ui/juce_Widget.h", header.encode()).symbols}
    assert symbols["juce::Widget"].kind == "class"
    assert symbols["juce::Widget::getHeight"].kind == "method"
    assert symbols["juce::Point"].kind == "class"
    assert "JUCE_API" not in symbols and "juce::getHeight" not in symbols
    assert symbols["juce::Widget"].body.startswith("class JUCE_API  Widget")  # the text as written


BIGINT_H = """namespace juce
{
class JUCE_API BigInteger
{
public:
    //==============================================================================
    /** Returns the largest value that will divide both this value and the argument. */
    BigInteger findGreatestCommonDivisor (BigInteger other) const;

    /** Returns the number of set bits. */
    int countBits() const noexcept;

    int undocumented() const;
    void (*onChange) (int);

    /** Creates a BigInteger from an unsigned value. */
    BigInteger (uint32 value);
    /** Creates a BigInteger from a signed value. */
    BigInteger (int64 value);

    /** Shifts the bits left. */
    BigInteger& operator<<= (int numBitsToShift);
};

/** Writes a BigInteger as decimal digits. */
OutputStream& operator<< (OutputStream& stream, const BigInteger& value);

inline int BigInteger::countBits() const noexcept { return 0; }
} // namespace juce
"""


def test_a_cpp_headers_documented_declarations_are_symbols_for_their_doc() -> None:
    """A C++ library says what a function does above its declaration in the header (JUCE, Qt,
    LLVM); the definition in the .cpp seldom says it again, so its words were nowhere but in the
    class's text. A documented declaration in a header is a symbol now, marked ``declaration``;
    an undocumented one, a pointer to a function and a source file's are not, and one defined
    below it in the same header is that definition, which keeps the doc. An overloaded name's
    are named by their parameters' types too, as the compiler tells them apart. A ``//====``
    ruler is no part of a doc."""
    symbols = {s.qualname: s for s in parse_module("maths/juce_BigInteger.h", BIGINT_H.encode()).symbols}
    gcd = symbols["juce::BigInteger::findGreatestCommonDivisor"]
    assert gcd.kind == "method" and gcd.decorators == ("declaration",)
    assert gcd.docstring == "Returns the largest value that will divide both this value and the argument."
    assert symbols["juce::BigInteger::operator<<="].decorators == ("declaration",)
    assert symbols["juce::operator<<"].kind == "function" and "declaration" in symbols["juce::operator<<"].decorators
    count = symbols["juce::BigInteger::countBits"]
    assert count.decorators == () and count.docstring == "Returns the number of set bits."  # its definition
    assert count.body.startswith("inline int BigInteger::countBits")
    assert not {"juce::BigInteger::undocumented", "juce::BigInteger::onChange"} & symbols.keys()
    # an overloaded name: the plain name would be the .cpp's first definition, whichever that is
    ctors = sorted(q for q in symbols if q.startswith("juce::BigInteger::BigInteger"))
    assert ctors == ["juce::BigInteger::BigInteger(int64)", "juce::BigInteger::BigInteger(uint32)"]
    assert symbols[ctors[0]].docstring == "Creates a BigInteger from a signed value."
    source = {s.qualname for s in parse_module("maths/juce_BigInteger.cpp", BIGINT_H.encode()).symbols}
    assert "juce::BigInteger::findGreatestCommonDivisor" not in source


TOKIO_SPAWN = b"""use crate::runtime::Handle;

cfg_rt! {
    /// Spawns a new asynchronous task, returning a
    /// [`JoinHandle`](super::JoinHandle) for it.
    #[track_caller]
    pub fn spawn<T>(future: T) -> JoinHandle<T::Output> {
        spawn_inner(future, None)
    }

    pub(super) fn spawn_inner<T>(future: T, name: Option<&str>) -> JoinHandle<T::Output> {
        Handle::current().spawn(future, name)
    }
}

impl Runtime {
    cfg_net! {
        /// Binds the runtime's driver.
        pub fn bind(&self) {}
    }
}

mod io { cfg_io_util! { cfg_fs! { pub fn copy() {} } } }

thread_local! { static CURRENT: u8 = 0; }

bitflags! { pub struct Ready: u8 { const READABLE = 0b01; } }
"""


def test_rust_items_a_macro_call_wraps_are_symbols() -> None:
    """tokio writes much of its API inside ``cfg_rt! { … }`` and its kin (``tokio::spawn`` among
    them): the grammar keeps a macro call's braces as tokens, so none of it was a symbol, a pin
    or a reference. Where the braces hold items that parse alone, they are read as items, nested
    calls too, at their own lines; ``bitflags!``'s syntax is not Rust's and stays a call."""
    parsed = parse_module("src/task/spawn.rs", TOKIO_SPAWN)
    symbols = {s.qualname.rpartition("spawn::")[2]: s for s in parsed.symbols}
    spawn = symbols["spawn"]
    assert spawn.kind == "function" and spawn.docstring.startswith("Spawns a new asynchronous task")
    assert spawn.start_line == 3 and spawn.body.lstrip().startswith("/// Spawns")  # the file's own lines
    bind = symbols["Runtime::bind"]
    assert bind.kind == "method" and bind.docstring == "Binds the runtime's driver."
    assert "io::copy" in symbols and "CURRENT" in symbols
    assert not {"Ready", "READABLE"} & symbols.keys()
    refs = {(src.rpartition("::")[2], target) for src, target, _ in parsed.refs}
    assert any(src == "spawn" and target.endswith("spawn_inner") for src, target in refs)
    assert parsed.symbols[0].docstring == ""  # the file starts with no doc of its own


CFG_IF = b"""cfg_if::cfg_if! {
    if #[cfg(unix)] {
        /// The thread's id on Unix.
        pub fn thread_id() -> u64 { unsafe { libc::pthread_self() as u64 } }
    } else if #[cfg(windows)] {
        pub fn thread_id() -> u64 { 0 }
    } else {
        compile_error!("no thread ids here");
    }
}
"""


def test_rust_items_in_cfg_if_branches_are_symbols() -> None:
    """``cfg_if!`` (libc, getrandom, crossbeam: 293 calls on the Rust tree) holds its items in
    ``if #[cfg(…)] { … } else { … }`` branches: each branch's items are read as items."""
    symbols = parse_module("src/sys.rs", CFG_IF).symbols
    ids = [s for s in symbols if s.name == "thread_id"]
    assert [s.start_line for s in ids] == [2, 5]
    assert ids[0].docstring == "The thread's id on Unix." and symbols[0].docstring == ""


def test_a_calling_conventions_macro_is_not_the_functions_name() -> None:
    """``void JUCE_CALLTYPE fill (…)``, ``tresult PLUGIN_API queryInterface (…)``, Win32's
    ``LRESULT CALLBACK WndProc (…)``, JNI's ``jint JNICALL Java_…``: the grammar named the
    function after the macro (122 of JUCE's functions were ``JUCE_CALLTYPE``, ``PLUGIN_API``…)."""
    cpp = b"""namespace juce {
void JUCE_CALLTYPE FloatVectorOperations::fill (float* dest, float value, int num) { dest[0] = value; }
struct Host { tresult PLUGIN_API queryInterface (const TUID iid, void** obj) override { return 0; } };
}
"""
    names = {s.qualname for s in parse_module("native/juce_Vector.cpp", cpp).symbols}
    assert {"juce::FloatVectorOperations::fill", "juce::Host::queryInterface"} <= names
    c = b"LRESULT CALLBACK WndProc (HWND h) { return 0; }\n"
    c += b"JNIEXPORT jint JNICALL Java_org_x_Y_z (JNIEnv* e) { return 0; }\n"
    names = {s.qualname for s in parse_module("win/main.c", c).symbols}
    assert {"WndProc", "Java_org_x_Y_z"} <= names and not {"CALLBACK", "JNICALL"} & names


def test_a_cpp_overload_is_told_by_its_parameters_types_as_the_compiler_does() -> None:
    """A header declares ``BigInteger (uint32)``, the .cpp defines ``BigInteger::BigInteger
    (uint32 value)``: one key for both, names, default values and spacing aside; ``const`` and
    ``&`` qualifiers tell overloads apart, ``(void)`` is ``()``; a ``T& operator= (…)``
    overload is named by its parameters, not its line. (A declaration's key is read in
    its class, where a constructor's parses: ``test_a_cpp_headers_documented_declarations_…``.)"""
    from ctx_lsp.workspace.languages.overloads import overload_key

    same = [
        ("a.h", "BigInteger& operator<< (uint32);"),
        ("a.cpp", "BigInteger::BigInteger (uint32 value)\n    : allocatedSize (4)\n{\n}\n"),
        ("a.cpp", "/** doc */\ntemplate <typename T>\nBigInteger::BigInteger (uint32 v = 0u) {}"),
    ]
    assert {overload_key(rel, code) for rel, code in same} == {"(uint32)"}
    assert overload_key("a.cpp", "int f (const std::map<int,int> & m, char const *s, ...) const & {}") == (
        "(const std::map<int, int>&, char const*, ...) const&"
    )
    assert overload_key("a.cpp", "int g (int (*fn) (int), int xs[4]) {}") == "(int (*)(int), int[4])"
    # a copy's own ``const`` is not part of the type (``getEntry (const int index)`` is ``(int)``)
    assert overload_key("a.cpp", "void k (const int n, char* const p, const char* q) {}") == "(int, char*, const char*)"
    assert overload_key("a.cpp", "void h (void) {}") == overload_key("a.cpp", "void h() {}") == "()"
    assert overload_key("a.cpp", "int x = 1;") is None and overload_key("a.txt", "void h() {}") is None
    source = b"T& T::operator= (const T& other) { return *this; }\nT& T::operator= (const String& s) { return *this; }"
    names = [s.qualname for s in parse_module("t.cpp", source).symbols[1:]]
    assert names == ["T::operator=", "T::operator=(const String& s)"]


def test_a_cpp_class_templates_members_defined_outside_it_are_its_members() -> None:
    """``void Filter<SampleType>::reset (…)`` defines ``Filter``'s ``reset``: the template's
    arguments are no part of the name (they were: ``juce::dsp::IIR::Filter<SampleType>::reset``,
    which no pin, lookup or header declaration named)."""
    source = b"""namespace juce { namespace dsp {
template <typename SampleType>
struct Filter
{
    /** Resets the filter's state. */
    void reset (SampleType resetToValue);
};

template <typename SampleType>
void Filter<SampleType>::reset (SampleType resetToValue) { state = resetToValue; }

template <typename T>
typename Coefficients<T>::Ptr Coefficients<std::vector<T>>::makeLowPass (double rate) { return {}; }
}}
"""
    symbols = {s.qualname: s for s in parse_module("dsp/Filter.cpp", source).symbols}
    reset = symbols["juce::dsp::Filter::reset"]
    assert (reset.kind, reset.parent, reset.start_line) == ("method", "juce::dsp::Filter", 8)
    assert symbols["juce::dsp::Coefficients::makeLowPass"].parent == "juce::dsp::Coefficients"
    assert not [q for q in symbols if "<" in q]


def test_a_type_and_a_value_of_one_name_keep_it_and_no_name_is_a_line_number() -> None:
    """TypeScript's ``interface ZodIntersection`` and ``const ZodIntersection`` (zod, effect: a
    type and its constructor) are one name in TypeScript; the value was named by its line
    (``ZodIntersection#4``), which every edit above it changed, and no pin or trace found. A
    ``const f = () => …`` is code, not an overload signature: a getter of the same name no
    longer takes its name, and a ``X.f = (…) => …`` beside a method ``f`` is told by its
    parameters."""
    ts = b"""export interface ZodIntersection<A> extends ZodType {
  left: A;
}
export const ZodIntersection: core.$constructor<ZodIntersection> = core.$constructor("ZodIntersection", (inst, def) => {
  inst.left = def.left;
});
export function parse(raw: string): Node;
export function parse(raw: string | Buffer): Node {
  return toNode(raw);
}
"""
    js = b"""let buffersSerializer;
const parser = () => _parser || (_parser = require("./syntax-parser"));
class Dependency {
  canConcatenate(a, b) { return false; }
}
Dependency.canConcatenate = (c, d) => true;
module.exports = {
  get parser() { return parser(); },
  get buffersSerializer() { return buffersSerializer; },
};
"""
    names = [(s.qualname, s.kind) for s in parse_module("src/schemas.ts", ts).symbols[1:]]
    assert names == [
        ("src/schemas.ZodIntersection", "class"),
        ("src/schemas.ZodIntersection", "function"),
        ("src/schemas.parse(raw: string)", "function"),
        ("src/schemas.parse", "function"),
    ]
    names = [(s.qualname, s.start_line) for s in parse_module("lib/syntax.js", js).symbols[1:]]
    assert names == [
        ("lib/syntax.buffersSerializer", 0),
        ("lib/syntax.parser", 1),
        ("lib/syntax.Dependency", 2),
        ("lib/syntax.Dependency.canConcatenate", 3),
        ("lib/syntax.Dependency.canConcatenate(c, d)", 5),
        ("lib/syntax.parser()", 7),
        ("lib/syntax.buffersSerializer", 8),
    ]


def test_a_name_defined_twice_without_parameters_is_never_named_by_its_line() -> None:
    """A ``macro_rules!`` per platform (``compiler_builtins``' ``bl``, winapi's ``MAKELANGID``)
    has no parameters to tell the two apart: both keep the name, as in the source (it was
    ``bl#4``: every edit above it changed it, and a pin by that name was lost)."""
    src = b"#[cfg(unix)]\nmacro_rules! bl {\n    () => { 1 };\n}\n"
    src += b"#[cfg(not(unix))]\nmacro_rules! bl {\n    () => { 2 };\n}\n"
    names = [(s.qualname, s.start_line) for s in parse_module("src/arm.rs", src).symbols if s.kind != "module"]
    assert [q for q, _ in names] == ["crate::arm::bl", "crate::arm::bl"] and [line for _, line in names] == [0, 4]
