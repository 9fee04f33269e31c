"""The shrinkers of big tool outputs: the needle survives, the output is never longer than the
input, the same input gives the same bytes; reads of files and short outputs pass unchanged."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctx_lsp.core.shrink import shrink
from ctx_lsp.core.tokens import counter_for

COUNT = counter_for("cl100k_base").count


def _shrink(text: str, tool: str = "Bash", query: str = "", threshold: int = 500):
    return shrink(text, tool=tool, query=query, count=COUNT, threshold=threshold, expand_id="m-1")


def pytest_log(passing: int, failure: str) -> str:
    lines = ["============================= test session starts ==============================", "collected"]
    lines += [f"tests/test_a.py::test_ok_{n} PASSED [ {n}%]" for n in range(passing)]
    lines += [
        "=================================== FAILURES ===================================",
        "________________________________ test_discount _________________________________",
        "    def test_discount():",
        ">       assert apply(100) == 90",
        f"E       AssertionError: {failure}",
        "tests/test_a.py:12: AssertionError",
        "=========================== short test summary info ============================",
        f"FAILED tests/test_a.py::test_discount - AssertionError: {failure}",
        f"========================= 1 failed, {passing} passed in 1.00s =========================",
    ]
    return "\n".join(lines)


def test_a_test_log_keeps_its_failure_and_summary() -> None:
    log = pytest_log(800, "assert 95 == 90")
    out = _shrink(log)
    assert out is not None and out.kind == "test_log"
    assert "tests/test_a.py::test_discount" in out.text and "assert 95 == 90" in out.text
    assert "1 failed, 800 passed" in out.text
    assert out.tokens < out.original_tokens * 0.2


def test_reads_of_files_and_short_outputs_pass_unchanged() -> None:
    log = pytest_log(800, "x")
    assert _shrink(log, tool="Read") is None
    assert _shrink(log, tool="mcp__files__read_file") is None
    assert _shrink(pytest_log(3, "x")) is None  # under the threshold


def test_unrecognised_output_of_a_non_command_tool_is_left_alone() -> None:
    prose = "\n".join(f"Paragraph {n}: the quick brown fox jumps over the lazy dog." for n in range(400))
    assert _shrink(prose, tool="web_fetch") is None
    out = _shrink(prose + "\nfatal: could not read config", tool="Bash")
    assert out is not None and out.kind == "command" and "fatal: could not read config" in out.text


def test_search_output_ranks_the_files_the_request_names() -> None:
    hits = [f"pkg/module_{n}.py:{n}:def helper_{n}(x): return x" for n in range(600)]
    hits.insert(420, "pkg/pricing/rounding.py:33:def round_price(amount): return amount.quantize(CENT)")
    out = _shrink("\n".join(hits), query="where is round_price in pricing")
    assert out is not None and out.kind == "search"
    kept = out.text.splitlines()
    assert any("round_price" in line for line in kept[:4])  # ranked first
    assert "more files" in out.text


def test_json_keeps_the_shape_and_the_items_that_match() -> None:
    items = [{"name": f"pkg{n}", "version": "1.0", "status": "ok"} for n in range(500)]
    items[333] = {"name": "leftpad", "version": "0.0.1", "status": "conflict with requests"}
    out = _shrink(json.dumps({"packages": items}, indent=2), query="why does leftpad conflict")
    assert out is not None and out.kind == "json"
    assert "leftpad" in out.text and "packages" in out.text and "500 items" in out.text


def test_json_keeps_the_entry_the_request_names_deep_in_a_tree() -> None:
    """``npm ls --all --json``: packages are keys of nested objects, not items of an array."""

    def package(name: str, depth: int) -> dict:
        deps = {f"{name}-dep{n}": package(f"{name}-dep{n}", depth - 1) for n in range(4)} if depth else {}
        return {"version": "1.0.0", "resolved": f"https://registry.example/{name}.tgz", "dependencies": deps}

    tree = {
        "name": "client",
        "version": "0.1.0",
        "dependencies": {f"tool{n}": package(f"tool{n}", 3) for n in range(6)},
    }
    tree["dependencies"]["tool4"]["dependencies"]["tool4-dep2"]["dependencies"]["vscode-languageclient"] = {
        "version": "9.0.1"
    }
    out = _shrink(json.dumps(tree, indent=2), query="which version of vscode-languageclient do we have?")
    assert out is not None and out.kind == "json" and len(out.text) < len(json.dumps(tree)) / 4
    assert '"vscode-languageclient": {\n              "version": "9.0.1"' in out.text  # as printed
    assert out.text.count('"version"') < 15  # "version", in every package, points at none


@settings(max_examples=40, deadline=None)
@given(
    passing=st.integers(min_value=0, max_value=900),
    noise=st.lists(st.text(alphabet="abcdef 0123:/._-", min_size=0, max_size=60), max_size=200),
    failure=st.text(alphabet="abcdefghij =<>!0123456789", min_size=3, max_size=40).filter(str.strip),
)
def test_the_needle_survives_and_nothing_grows(passing: int, noise: list[str], failure: str) -> None:
    log = pytest_log(passing, failure) + "\n" + "\n".join(noise)
    out = _shrink(log)
    if out is None:
        return
    assert f"AssertionError: {failure}" in out.text
    assert out.tokens <= COUNT(log)
    assert _shrink(log) == out  # deterministic: the same bytes every time


def test_what_the_model_reads_is_never_shrunk() -> None:
    from ctx_lsp.core.shrink.command import command_of, reads_file

    source = "\n".join(f"def helper_{n}(x):\n    return x * {n}\n" for n in range(600))
    reads = ("cat src/app.py", "head -n 400 src/app.py", "sed -n '1,400p' src/app.py", "nl -ba a.py", "cat a.py | head")
    for command in reads:
        assert reads_file(command), command
        assert shrink(source, tool="Bash", query="", count=COUNT, threshold=500, expand_id="m", command=command) is None
    for command in ("cat a.py | grep def", "pytest -q", "git log -p", "grep -rn helper .", "grep -rn x . | head -50"):
        assert not reads_file(command), command
    assert command_of('{"command": ["bash", "-lc", "cat a.py"], "workdir": "/w"}') == "cat a.py"
    assert command_of('{"cmd": "cargo test"}') == "cargo test" and command_of("not json") == ""
    assert command_of('{"input": "a question for a sub-agent"}') == ""  # not a command: no shell to expand with


def test_the_request_is_read_as_terms_with_aliases_and_version_ranges() -> None:
    from ctx_lsp.core.shrink.request import read, rules_out

    terms = {t.text: t.weight for t in read("Why does semver.coerce() drop '-rc'? See src/range.js, PR 4521, 8.x")}
    assert terms["semver.coerce"] > terms["semver"] and terms["coerce"] == terms["semver.coerce"]
    assert "src/range.js" in terms and "range.js" in terms and "4521" in terms and "8." in terms
    assert "-rc" in terms and "does" not in terms
    assert "engines" in {t.text for t in read("which Node.js versions are supported?")}
    assert rules_out('"requires_python": ">=3.10",', "3.9") and not rules_out('"requires_python": ">=3.8"', "3.9")
    assert rules_out('"node": "^20.19.0 || ^22.13.0 || >=24"', "18")
    assert not rules_out('"node": "^20.19.0 || ^22.13.0 || >=24"', "22.14")


def test_a_git_log_keeps_the_commit_asked_about_whole_and_one_line_for_the_others() -> None:
    commits = []
    for n in range(60):
        subject = "Pricing: round half to even in invoices" if n == 37 else f"Refactor module {n}"
        diff = "\n".join(f"+    value_{n}_{k} = compute({k})" for k in range(25))
        commits.append(
            f"commit {n:040x}\nAuthor: A <a@example.org>\nDate:   Mon Nov 2{n % 10} 10:00:00 2026 +0000\n\n"
            f"    {subject}\n\ndiff --git a/m{n}.py b/m{n}.py\n--- a/m{n}.py\n+++ b/m{n}.py\n@@ -1,3 +1,28 @@\n{diff}"
        )
    log = "\n".join(commits)
    out = _shrink(log, query="what did the commit that rounds invoices half to even change?")
    assert out is not None and out.kind == "vcs" and out.tokens < COUNT(log) / 5
    assert "value_37_24 = compute(24)" in out.text  # the commit asked about, whole
    assert "Refactor module 12" in out.text and "value_12_3" not in out.text  # the others: one line each


def test_a_sign_is_credited_to_its_own_line_not_the_blank_line_above() -> None:
    from ctx_lsp.core.shrink.lines import scores

    lines = ["  ✓ passes", "", "  ● suite › fails", "", "    Expected number of calls: 8", "    Received: 7"]
    found, filler = scores([*lines, "\tat org.eclipse.jetty.server.Server.handle(Server.java:516)"], ())
    assert found[1] == 0 and found[2] > 0 and found[3] == 0 and found[4] > 0 and found[5] > 0
    assert filler == {0, 6}  # a pass, a library's frame


def test_lines_inside_a_named_symbol_are_kept_when_the_index_places_it() -> None:
    """A type checker names files and lines, not functions: the index's place of the function
    the request names picks its diagnostics out of hundreds like them."""
    from ctx_lsp.core.shrink.request import Place

    report = [
        f"{'shop/billing/invoice.py' if n % 3 == 0 else f'shop/m{n % 40}.py'}:{5 + n % 60}: error: "
        "Function is missing a type annotation  [no-untyped-def]"
        for n in range(600)
    ]
    report.insert(377, "shop/billing/invoice.py:78: error: Returning Any from function declared to return Decimal")
    text = "\n".join(report)
    needle = "shop/billing/invoice.py:78: error: Returning Any"
    asked: list[list[str]] = []

    def places(request):
        asked.append(request.names())
        return (Place("shop/billing/invoice.py", 76, 78),)

    query = "What does mypy say about billing.tax_for?"
    plain = shrink(text, tool="Bash", query=query, count=COUNT, threshold=500, expand_id="m")
    placed = shrink(text, tool="Bash", query=query, count=COUNT, threshold=500, expand_id="m", places=places)
    assert plain is not None and needle not in plain.text
    assert placed is not None and needle in placed.text
    assert asked == [["billing.tax_for", "tax_for"]]


def test_nothing_is_cut_that_the_model_cannot_bring_back() -> None:
    log = pytest_log(800, "assert 95 == 90")
    assert shrink(log, tool="web_fetch", query="", count=COUNT, threshold=500, expand_id="m", expand_tool=False) is None
    by_shell = shrink(log, tool="Bash", query="", count=COUNT, threshold=500, expand_id="g-1", expand_tool=False)
    assert by_shell is not None and "`ctx-lsp expand g-1 --match REGEX` in a shell" in by_shell.text
    assert "with the ctx tools" not in by_shell.text
    both = shrink(log, tool="Bash", query="", count=COUNT, threshold=500, expand_id="g-1")
    assert (
        both is not None and "expand('g-1', match=…) with the ctx tools" in both.text and "ctx-lsp expand" in both.text
    )
    again = shrink(
        log, tool="Bash", query="", count=COUNT, threshold=500, expand_id="g-2", command="ctx-lsp expand g-1"
    )
    assert again is None  # what the model asked back comes whole


def test_a_client_can_expand_when_its_tools_hold_ctx_lsps_expand() -> None:
    from ctx_lsp.core.shrink import can_expand
    from ctx_lsp.gateway.translate import tool_names

    assert can_expand(["Bash", "mcp__ctx__expand"])  # Claude Code: one tool per MCP tool
    assert can_expand(["expand"]) and can_expand(["ctx.expand"]) and can_expand(["ctx/expand"])
    # Codex 0.169 sends an MCP server's tools as one namespace (seen from the real Codex, wrap codex)
    codex = [
        {"type": "function", "name": "exec_command", "parameters": {}},
        {"type": "namespace", "name": "mcp__ctx", "tools": [{"type": "function", "name": "expand"}]},
        {"type": "web_search"},
    ]
    assert can_expand(tool_names(json.dumps(codex)))
    assert not can_expand(tool_names(json.dumps(codex[:1] + codex[2:])))
    assert not can_expand(["Bash", "mcp__other__search", "mcp__ctxother", "expander", "mcp__ctx__get_symbol"])


LINE_PIECES = st.sampled_from(
    [
        "FAILED tests/a.py::t - AssertionError: x",
        "  at com.x.Y.z(Y.java:12)",
        '  File "a/b.py", line 3, in f',
        "error[E0308]: mismatched types",
        "   --> src/a.rs:1:2",
        "commit 0123456789abcdef0123456789abcdef01234567",
        "diff --git a/x b/x",
        "@@ -1 +1 @@",
        "src/x.ts(3,4): error TS2322: no",
        "a/b.py:12:def f():",
        "____ test_x ____",
        "  ● suite › test",
        "#3  0x0000 in f (x=1) at a.c:9",
        "goroutine 7 [running]:",
        "{",
        '  "key": [',
        "}",
        "",
        "\t",
        "ok",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.one_of(LINE_PIECES, st.text(max_size=80)), min_size=1, max_size=400),
    query=st.text(max_size=120),
    command=st.sampled_from(["", "cat a.py", "git log -p", "rg x", "pytest", "kubectl get pods -o json"]),
)
def test_any_output_and_request_shrink_without_error_and_never_grow(pieces, query, command) -> None:
    text = "\n".join(pieces) * 3
    out = shrink(text, tool="Bash", query=query, count=COUNT, threshold=50, expand_id="m", command=command)
    if out is not None:
        assert out.tokens <= COUNT(text) and out.text.startswith("[ctx_lsp shortened this")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
    max_leaves=300,
)


@settings(max_examples=60, deadline=None)
@given(value=JSON_VALUES, query=st.text(max_size=60), indent=st.sampled_from([None, 2, 4]))
def test_any_json_shrinks_without_error(value, query: str, indent: int | None) -> None:
    text = json.dumps({"items": [value] * 30}, indent=indent)
    out = shrink(text, tool="Bash", query=query, count=COUNT, threshold=50, expand_id="m", command="curl x")
    if out is not None:
        assert out.tokens <= COUNT(text)


def test_a_json_string_holding_a_unicode_line_break_shrinks() -> None:
    """One line of JSON is printed before it is cut, and the printer leaves U+0085 and U+2028 in
    strings as they are: the printed lines break at newlines only."""
    text = json.dumps({"items": [{"": {"\x85]": None, "\u2028": 1}}] * 30})
    out = shrink(text, tool="Bash", query="", count=COUNT, threshold=50, expand_id="m", command="curl x")
    assert out is None or out.tokens <= COUNT(text)
