"""The language server on a mixed repository (Rust, TypeScript, Go, Java, C++ and Python): pins at
the cursor and by name, code lenses, plans that retrieve each language's code, buffers re-indexed
as they are typed, capsules that go stale on a code change (not on a comment)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import capsules_stale, save, server_command, start
from tests.lsp.test_server import error_of, line_of, req
from tests.workspaces import copy_poly


@pytest.fixture(scope="module")
def poly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_poly(tmp_path_factory.mktemp("lsp-poly") / "ws")


@pytest.fixture
async def client(poly: Path):
    lsp = await ClientServerConfig(server_command=server_command()).start()
    await start(lsp, poly, session="poly")
    yield lsp
    await lsp.shutdown_session()


def open_doc(client: LanguageClient, root: Path, rel: str, language: str) -> str:
    uri = (root / rel).as_uri()
    item = types.TextDocumentItem(uri=uri, language_id=language, version=1, text=(root / rel).read_text())
    client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    return uri


async def test_pins_at_the_cursor_and_by_name_in_every_language(client: LanguageClient, poly: Path):
    rel = "src/account.rs"
    line, _ = line_of(poly, rel, "pub fn transfer")
    uri = (poly / rel).as_uri()
    # inside the body, not on the name: the innermost definition around the cursor
    pin = await req(
        client, "ctx/pinSymbol", {"textDocument": {"uri": uri}, "position": {"line": line + 2, "character": 8}}
    )
    assert pin.symbol == "ledger_core::account::Ledger::transfer"
    # on a use of a name defined in another file: the definition it names
    use, ucol = line_of(poly, rel, "use crate::error::LedgerError")
    named = await req(
        client,
        "ctx/pinSymbol",
        {"textDocument": {"uri": uri}, "position": {"line": use, "character": ucol + len("use crate::error::")}},
    )
    assert named.symbol == "ledger_core::error::LedgerError"
    by_name = {
        "ApiClient.balance": "web/src/api/client.ApiClient.balance",
        "Server.Handle": "server.Server.Handle",
        "com.shop.Inventory.reserve": "com.shop.Inventory.reserve",
        "Chain::next": "ledger_core::error::Chain::next",
        "crate::account::Account::post": "ledger_core::account::Account::post",
        "ledger::Codec::encode": "ledger::Codec::encode",
    }
    for name, qualname in by_name.items():
        assert (await req(client, "ctx/pinSymbol", {"symbol": name})).symbol == qualname
    plan = await req(client, "ctx/planContext", {"query": "what does a transfer do when an account is short?"})
    pinned = {i.symbol for i in plan.included if i.reason == "pinned"}
    assert {pin.symbol, "web/src/api/client.ApiClient.balance", "server.Server.Handle"} <= pinned
    body = next(i for i in plan.included if i.symbol == pin.symbol)
    assert body.path == rel and body.range.start.line == line_of(poly, rel, "/// Transfers")[0]
    err = await error_of(client, "ctx/pinSymbol", {"symbol": "Ledger::nothing_here"})
    assert err.code == -32002 and "no symbol" in str(err)
    for p in await req(client, "ctx/listPins", {}):
        await req(client, "ctx/unpin", {"pinId": p.id})


async def test_code_lenses_on_rust_and_typescript(client: LanguageClient, poly: Path):
    for rel, language, symbol, def_line in [
        ("src/error.rs", "rust", "ledger_core::error::Chain::next", "fn next(&mut self)"),
        ("web/src/api/client.ts", "typescript", "web/src/api/client.ApiClient.balance", "async balance("),
        ("server/handler.go", "go", "server.Server.Handle", "func (s *Server) Handle"),
    ]:
        uri = open_doc(client, poly, rel, language)
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
        lens = next(lens for lens in lenses if lens.data["symbol"] == symbol)
        # on the definition's own line, below its doc comment
        assert lens.range.start.line == line_of(poly, rel, def_line)[0]
        resolved = await client.code_lens_resolve_async(lens)
        assert resolved.command.command == "ctx.pinSymbol"


async def test_plans_retrieve_each_languages_code(client: LanguageClient, poly: Path):
    for query, rel, code in [
        ("how does the error chain iterate over source errors?", "src/error.rs", "self.next = current.source()"),
        ("how does the api client retry failed requests with backoff?", "web/src/api/client.ts", "await backoff("),
        ("which status does the server return for an unknown account?", "server/handler.go", "StatusNotFound"),
        (
            "what happens when there is not enough stock to reserve?",
            "java/src/main/java/com/shop/Inventory.java",
            "IllegalStateException",
        ),
        ("how is the adler32 checksum computed?", "native/checksum.c", "% MOD_ADLER"),
    ]:
        plan = await req(client, "ctx/planContext", {"query": query})
        line = line_of(poly, rel, code)[0]
        shown = [
            i.symbol
            for i in plan.included
            if i.section == "rag"
            and i.kind == "symbol_body"
            and i.path == rel
            and i.range.start.line <= line <= i.range.end.line
        ]
        assert shown, (query, [i.symbol for i in plan.included if i.section == "rag"])


async def test_a_buffer_is_indexed_as_it_is_typed(client: LanguageClient, poly: Path):
    rel = "server/handler.go"
    uri = open_doc(client, poly, rel, "go")
    text = (poly / rel).read_text() + "\n// Refund returns money to an account.\nfunc Refund(name string) {}\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    for _ in range(60):
        await asyncio.sleep(0.1)
        try:
            pin = await req(client, "ctx/pinSymbol", {"symbol": "server.Refund"})
            break
        except Exception:
            continue
    else:
        raise AssertionError("the new Go function never became pinnable")
    assert pin.symbol == "server.Refund"
    await req(client, "ctx/unpin", {"pinId": pin.id})


async def test_a_typescript_capsule_goes_stale_on_code_not_on_comments(client: LanguageClient, poly: Path):
    rel = "web/src/api/client.ts"
    path = poly / rel
    capsules = await req(client, "ctx/refreshCapsules", {"paths": [rel]})
    mine = next(c for c in capsules if c.path == rel)
    assert not mine.stale and "ApiClient" in mine.text

    original = path.read_text()
    client.notifications.clear()
    await save(client, path, original.replace("\n\n", "\n\n\n", 2) + "\n// only a comment\n")
    assert not [p for m, p in client.notifications if m == "ctx/capsulesStale"]
    await save(client, path, original.replace("100 * 2 ** attempt", "250 * 2 ** attempt"))
    stale = await capsules_stale(client)
    assert stale and stale[0].files == [rel]
    path.write_text(original)
