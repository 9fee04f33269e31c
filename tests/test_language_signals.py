"""Exact signals in other languages' error output: stack frames (outermost first, innermost
last, whatever order the tool prints them in), paths of every source extension, ``::`` names,
exception lines and their messages' fixed text.

The traces are real: printed by rustc 1.95, Node 20 (TypeScript 5 with ``--enable-source-maps``),
OpenJDK 17, GCC 12's AddressSanitizer and gdb from tiny programs, pasted as they came (Java's
and Go's tabs written ``\\t``). Go is not installed here: its traces are written in the format
Go 1.21+ prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest
from ctx_lsp.workspace import request_text, retrieval, signals
from ctx_lsp.workspace.index import WorkspaceIndex
from ctx_lsp.workspace.signals import Frame
from tests.workspaces import copy_poly


def places(sig: signals.Signals) -> list[tuple[str, int, str | None]]:
    return [(f.path, f.line, f.func) for f in sig.frames]


# --- JavaScript / TypeScript -------------------------------------------------------------

NODE_TS = """/tmp/traces/node/src/billing/invoice.ts:6
    return this.lines.reduce((sum, l) => sum + l.qty, 0) + this.currency!.code.length;
                                                                          ^


TypeError: Cannot read properties of undefined (reading 'code')
    at Invoice.total (/tmp/traces/node/src/billing/invoice.ts:6:75)
    at run (/tmp/traces/node/src/main.ts:5:19)
    at Object.<anonymous> (/tmp/traces/node/src/main.ts:11:3)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
"""


def test_a_node_trace_of_typescript_reads_innermost_last() -> None:
    sig = signals.read("The invoice page crashes:\n" + NODE_TS)
    assert places(sig) == [
        ("node:internal/main/run_main_module", 28, None),
        ("node:internal/modules/run_main", 164, "Function.executeUserEntryPoint"),
        ("node:internal/modules/cjs/loader", 1091, "Module._load"),
        ("node:internal/modules/cjs/loader", 1266, "Module.load"),
        ("node:internal/modules/cjs/loader", 1623, "Module._extensions..js"),
        ("node:internal/modules/cjs/loader", 1521, "Module._compile"),
        ("/tmp/traces/node/src/main.ts", 11, "Object.<anonymous>"),
        ("/tmp/traces/node/src/main.ts", 5, "run"),
        ("/tmp/traces/node/src/billing/invoice.ts", 6, "Invoice.total"),
    ]
    # Node's header repeats the innermost frame: part of the trace, not a path named apart;
    # ``Module._extensions..js`` is a function, not a file
    assert sig.locations == ()
    assert sig.exceptions == ("TypeError",)
    assert sig.fragments == ("Cannot read properties of undefined",)
    assert sig.dotted == ()  # the frames' functions are the frames', not names the user wrote
    assert "/tmp/traces" not in sig.search_text and "node:internal" not in sig.search_text
    assert "Invoice.total" in sig.search_text  # the functions stay for the lexical search
    assert "The invoice page crashes" in sig.prose
    assert "Invoice.total" not in sig.prose and "TypeError" not in sig.prose and "^" not in sig.prose


NODE_ESM = """file:///tmp/traces/esm/lib/cart.mjs:3
  total() { return this.items.map((i) => i.price()).reduce((a, b) => a + b, 0); }
                                           ^

TypeError: i.price is not a function
    at file:///tmp/traces/esm/lib/cart.mjs:3:44
    at Array.map (<anonymous>)
    at Cart.total (file:///tmp/traces/esm/lib/cart.mjs:3:31)
    at file:///tmp/traces/esm/main.mjs:3:15
    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)
    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)
    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)

Node.js v20.20.2
"""


def test_an_es_module_trace_drops_file_urls_and_merges_an_anonymous_frame_into_its_method() -> None:
    sig = signals.read(NODE_ESM)
    assert places(sig) == [
        ("node:internal/modules/run_main", 117, "asyncRunEntryPointWithESMLoader"),
        ("node:internal/modules/esm/loader", 606, "ModuleLoader.import"),
        ("node:internal/modules/esm/module_job", 325, "ModuleJob.run"),
        ("/tmp/traces/esm/main.mjs", 3, None),
        # ``at file:///…/cart.mjs:3:44`` (the arrow function) is on Cart.total's line: one frame
        ("/tmp/traces/esm/lib/cart.mjs", 3, "Cart.total"),
    ]
    assert sig.locations == ()
    assert sig.dotted == ("i.price",)  # from the message; ``Array.map (<anonymous>)`` is a frame
    assert sig.exceptions == ("TypeError",) and sig.fragments == ("i.price is not a function",)
    assert "file://" not in sig.search_text


NODE_CAUSE = """/tmp/traces/esm/lib/close.js:4
  try { load(id); } catch (err) { throw new InvoiceClosedError(`invoice ${id} is already closed`, { cause: err }); }
                                  ^

InvoiceClosedError: invoice 42 is already closed
    at Object.closeInvoice (/tmp/traces/esm/lib/close.js:4:41)
    at Object.<anonymous> (/tmp/traces/esm/close.cjs:1:27)
    ... 5 lines matching cause stack trace ...
    at node:internal/main/run_main_module:28:49 {
  [cause]: SyntaxError: Expected property name or '}' in JSON at position 1
      at JSON.parse (<anonymous>)
      at load (/tmp/traces/esm/lib/close.js:2:33)
      at Object.closeInvoice (/tmp/traces/esm/lib/close.js:4:9)
      at Object.<anonymous> (/tmp/traces/esm/close.cjs:1:27)
      at Module._compile (node:internal/modules/cjs/loader:1521:14)
      at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
      at Module.load (node:internal/modules/cjs/loader:1266:32)
      at Module._load (node:internal/modules/cjs/loader:1091:12)
      at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
      at node:internal/main/run_main_module:28:49
}

Node.js v20.20.2
"""


def test_an_errors_cause_comes_after_it_so_the_root_cause_is_innermost() -> None:
    sig = signals.read(NODE_CAUSE)
    project = [(p, line, f) for p, line, f in places(sig) if p.startswith("/tmp")]
    assert project == [
        ("/tmp/traces/esm/close.cjs", 1, "Object.<anonymous>"),  # the error's own stack ...
        ("/tmp/traces/esm/lib/close.js", 4, "Object.closeInvoice"),
        ("/tmp/traces/esm/close.cjs", 1, "Object.<anonymous>"),  # ... then its cause's
        ("/tmp/traces/esm/lib/close.js", 4, "Object.closeInvoice"),
        ("/tmp/traces/esm/lib/close.js", 2, "load"),
    ]
    assert sig.frames[0] == Frame("node:internal/main/run_main_module", 28, None)  # ``… {`` still a frame
    assert sig.exceptions == ("InvoiceClosedError", "SyntaxError")
    # the template literal's fixed text: ``invoice ${id} is already closed``
    assert sig.fragments[0] == "is already closed"


JEST = """ FAIL  src/billing/__tests__/invoice.test.ts
  ● Invoice › total › adds up the lines

    TypeError: Cannot read properties of undefined (reading 'code')

       4 |
       5 |   total(): number {
    >  6 |     return this.lines.reduce((sum, l) => sum + l.qty, 0) + this.currency!.code.length;
         |                                                                          ^
       7 |   }

      at Invoice.total (src/billing/invoice.ts:6:75)
      at Object.<anonymous> (src/billing/__tests__/invoice.test.ts:9:16)
"""


def test_a_jest_report_gives_relative_frames_and_its_indented_error() -> None:
    sig = signals.read(JEST)
    assert places(sig) == [
        ("src/billing/__tests__/invoice.test.ts", 9, "Object.<anonymous>"),
        ("src/billing/invoice.ts", 6, "Invoice.total"),
    ]
    assert sig.locations == (("src/billing/__tests__/invoice.test.ts", None),)  # the FAIL line names the file
    assert sig.exceptions == ("TypeError",)


def test_v8_frames_of_every_shape() -> None:
    text = (
        "Error: invoice 7 has no lines\n"
        "    at new Invoice (src/billing/invoice.ts:12:11)\n"
        "    at async Promise.all (index 0)\n"
        "    at async Server.handle [as onRequest] (/srv/app/src/server.ts:40:5)\n"
        "    at src/x.js:3:7\n"
    )
    sig = signals.read(text)
    assert places(sig) == [
        ("src/x.js", 3, None),
        ("/srv/app/src/server.ts", 40, "Server.handle"),
        ("src/billing/invoice.ts", 12, "Invoice"),  # ``new Invoice``: the constructor
    ]
    assert sig.fragments == ("has no lines",) and sig.exceptions == ()  # a plain Error names no class


# --- Rust --------------------------------------------------------------------------------

RUST_UNWRAP = """thread 'main' (11803) panicked at src/exec/mod.rs:12:74:
called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: "No such file or directory" }
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: core::result::unwrap_failed
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/result.rs:1867:5
   3: core::result::Result<T,E>::unwrap
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/result.rs:1233:23
   4: fd::exec::run
             at ./src/exec/mod.rs:12:74
   5: fd::main
             at ./src/main.rs:9:24
   6: core::ops::function::FnOnce::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
"""
RUSTC = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library"


def test_a_rust_panic_with_its_backtrace() -> None:
    sig = signals.read("`fd` crashes on a missing config:\n\n" + RUST_UNWRAP)
    assert places(sig) == [
        (f"{RUSTC}/core/src/ops/function.rs", 250, "core::ops::function::FnOnce::call_once"),
        ("./src/main.rs", 9, "fd::main"),
        # the panic's own place (``src/exec/mod.rs:12:74``) is this frame's: one frame, named
        ("./src/exec/mod.rs", 12, "fd::exec::run"),
        (f"{RUSTC}/core/src/result.rs", 1233, "core::result::Result<T,E>::unwrap"),
        (f"{RUSTC}/core/src/result.rs", 1867, "core::result::unwrap_failed"),
        (f"{RUSTC}/core/src/panicking.rs", 80, "core::panicking::panic_fmt"),
        (f"{RUSTC}/std/src/panicking.rs", 689, "__rustc::rust_begin_unwind"),
    ]
    assert sig.locations == ()
    # unwrap's words and the error's Debug are not the project's text; ``Result::unwrap`` in the
    # message and the frames' functions are not names the user wrote
    assert sig.fragments == () and sig.exceptions == () and sig.dotted == ()
    assert "/rustc/" not in sig.search_text and "fd::exec::run" in sig.search_text
    assert "crashes on a missing config" in sig.prose and "panicked" not in sig.prose


RUST_BOUNDS = """thread 'main' (11801) panicked at src/exec/mod.rs:7:18:
index out of bounds: the len is 3 but the index is 3
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: core::panicking::panic_bounds_check
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:271:5
   3: <usize as core::slice::index::SliceIndex<[T]>>::index
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/slice/index.rs:272:10
   4: core::slice::index::<impl core::ops::index::Index<I> for [T]>::index
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/slice/index.rs:19:15
   5: <alloc::vec::Vec<T,A> as core::ops::index::Index<I>>::index
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/vec/mod.rs:3804:9
   6: fd::exec::Runner::pick
             at ./src/exec/mod.rs:7:18
   7: fd::exec::run_all
             at ./src/exec/mod.rs:17:7
   8: fd::main
             at ./src/main.rs:7:24
   9: core::ops::function::FnOnce::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
"""


def test_a_rust_backtrace_keeps_generic_frames_whole_and_the_projects_innermost_frame_last_among_its_own() -> None:
    sig = signals.read(RUST_BOUNDS)
    project = [(p, line, f) for p, line, f in places(sig) if p.startswith("./")]
    assert project == [
        ("./src/main.rs", 7, "fd::main"),
        ("./src/exec/mod.rs", 17, "fd::exec::run_all"),
        ("./src/exec/mod.rs", 7, "fd::exec::Runner::pick"),
    ]
    assert sig.frames[-6] == Frame(
        f"{RUSTC}/alloc/src/vec/mod.rs", 3804, "<alloc::vec::Vec<T,A> as core::ops::index::Index<I>>::index"
    )
    assert len(sig.frames) == 10 and sig.dotted == ()


RUST_FULL = """  16:     0x561b48fe31ac - core[c1f1a4ba060b9bfa]::panicking::panic_bounds_check
                               at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:271:5
  17:     0x561b48fa5474 - <usize as core::slice::index::SliceIndex<[T]>>::index::hef2e1af220a64362
                               at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/slice/index.rs:272:10
  20:     0x561b48fa711a - fd::exec::Runner::pick::haee1359d98496b29
                               at /tmp/traces/fd/src/exec/mod.rs:7:18
  21:     0x561b48fa713f - fd::exec::run_all::h17728908b39511e7
                               at /tmp/traces/fd/src/exec/mod.rs:17:7
   5:     0x5563d3dc5aea - core[c1f1a4ba060b9bfa]::fmt::write
"""


def test_rust_backtrace_full_drops_symbol_hashes_and_crate_disambiguators() -> None:
    sig = signals.read(RUST_FULL)
    assert places(sig) == [
        ("/tmp/traces/fd/src/exec/mod.rs", 17, "fd::exec::run_all"),
        ("/tmp/traces/fd/src/exec/mod.rs", 7, "fd::exec::Runner::pick"),
        (f"{RUSTC}/core/src/slice/index.rs", 272, "<usize as core::slice::index::SliceIndex<[T]>>::index"),
        (f"{RUSTC}/core/src/panicking.rs", 271, "core::panicking::panic_bounds_check"),
    ]
    assert sig.dotted == ()  # a frame without debug info (``5: … core::fmt::write``) is still the trace's


RUST_EXPECT = """thread 'main' (13518) panicked at src/exec/mod.rs:12:74:
failed to read the job config: Os { code: 2, kind: NotFound, message: "No such file or directory" }
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
"""


def test_a_rust_panic_without_backtrace_is_one_frame_and_expects_message_is_the_projects_text() -> None:
    sig = signals.read(RUST_EXPECT)
    assert sig.frames == (Frame("src/exec/mod.rs", 12, None),)
    assert sig.locations == ()
    assert sig.fragments == ("failed to read the job config",)  # ``.expect("failed to read the job config")``
    old = signals.read("thread 'main' panicked at 'restock quantity must be positive', src/stock.rs:40:9")
    assert old.frames == (Frame("src/stock.rs", 40, None),)  # Rust before 1.73
    assert old.fragments == ("restock quantity must be positive",)


CARGO_TEST = """running 1 test
tests::picks_the_third_job --- FAILED

failures:

---- tests::picks_the_third_job stdout ----

thread 'tests::picks_the_third_job' (5128) panicked at src/main.rs:18:9:
assertion `left == right` failed
  left: 3
 right: 4
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::picks_the_third_job

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""


def test_a_failing_cargo_test_names_its_test_and_its_assertion() -> None:
    sig = signals.read(CARGO_TEST)
    assert sig.frames == (Frame("src/main.rs", 18, None),)
    assert sig.dotted == ("tests::picks_the_third_job",)
    assert sig.fragments == ()  # ``assertion `left == right` failed`` is the standard library's


def test_rust_error_lines_from_main_and_anyhow() -> None:
    debug = signals.read('Error: Missing("config.toml")\n')
    assert debug.fragments == () and debug.frames == ()
    anyhow = signals.read(
        "Error: failed to read config file\n\nCaused by:\n    No such file or directory (os error 2)\n"
    )
    assert anyhow.fragments == ("failed to read config file",)
    assert "failed to read" not in anyhow.prose
    compile_error = signals.read(
        "warning: field `0` is never read\n --> src/main.rs:2:28\n  |\n2 | enum ConfigError { Missing(String) }\n"
    )
    assert compile_error.locations == (("src/main.rs", 2),) and compile_error.frames == ()


# --- Go ----------------------------------------------------------------------------------

GO_PANIC = (
    "panic: runtime error: index out of range [3] with length 3\n"
    "\n"
    "goroutine 1 [running]:\n"
    "main.(*Server).Handle(0xc000012345?, {0x4b3f22, 0x5})\n"
    "\t/home/u/proj/server.go:88 +0x1d\n"
    "main.main()\n"
    "\t/home/u/proj/main.go:14 +0x5b\n"
    "exit status 2\n"
)


def test_a_go_panic_names_methods_by_package_receiver_and_method() -> None:
    sig = signals.read(GO_PANIC)
    assert places(sig) == [
        ("/home/u/proj/main.go", 14, "main.main"),
        ("/home/u/proj/server.go", 88, "main.Server.Handle"),  # ``main.(*Server).Handle``
    ]
    assert sig.locations == () and sig.dotted == () and sig.exceptions == ()
    assert sig.fragments == ("index out of range",)  # ``runtime error:`` is Go's
    # the search reads the frames' names, not their paths nor their addresses
    assert "/home/u/proj" not in sig.search_text and "0x1d" not in sig.search_text
    assert "main.(*Server).Handle" in sig.search_text
    assert "runtime error" not in sig.prose and "goroutine 1" in sig.prose


GO_GOROUTINES = (
    "panic: loading invoice 42: open /etc/shop/invoices.db: no such file or directory\n"
    "\n"
    "goroutine 18 [running]:\n"
    "github.com/acme/shop/internal/billing.(*Store).Load(0xc0000a6000, 0x2a)\n"
    "\t/home/u/shop/internal/billing/store.go:57 +0x1a5\n"
    "github.com/acme/shop/internal/billing.Worker.func1()\n"
    "\t/home/u/shop/internal/billing/worker.go:31 +0x8e\n"
    "created by github.com/acme/shop/internal/billing.Worker in goroutine 1\n"
    "\t/home/u/shop/internal/billing/worker.go:29 +0x6f\n"
    "\n"
    "goroutine 1 [chan receive]:\n"
    "main.main()\n"
    "\t/home/u/shop/cmd/shop/main.go:22 +0x8c\n"
    "exit status 2\n"
)


BILLING = "github.com/acme/shop/internal/billing"  # the package's import path, kept: the index's ``internal/billing``


def test_go_goroutines_the_panicking_one_innermost_and_each_link_of_an_error_chain() -> None:
    sig = signals.read(GO_GOROUTINES)
    assert places(sig) == [
        ("/home/u/shop/cmd/shop/main.go", 22, "main.main"),  # another goroutine: outside the failure
        ("/home/u/shop/internal/billing/worker.go", 29, f"{BILLING}.Worker"),  # ``created by``: the outermost
        ("/home/u/shop/internal/billing/worker.go", 31, f"{BILLING}.Worker.func1"),
        ("/home/u/shop/internal/billing/store.go", 57, f"{BILLING}.Store.Load"),  # (*Store).Load
    ]
    # ``fmt.Errorf("loading invoice %d: %w", id, err)``: each link of the chain on its own
    assert sig.fragments[0] == "loading invoice"
    assert "no such file or directory" in sig.fragments


def test_go_test_output_and_trimmed_paths() -> None:
    sig = signals.read(
        "--- FAIL: TestStoreLoad (0.00s)\n    store_test.go:42: Load(42) = <nil>, want error\nFAIL\n"
        "panic: invalid port 99999 [recovered]\n"
        "github.com/acme/shop/internal/billing.Parse[...](...)\n"
        "\tgithub.com/acme/shop/internal/billing/parse.go:12\n"
    )
    assert sig.locations == (("store_test.go", 42),)
    assert places(sig) == [
        ("github.com/acme/shop/internal/billing/parse.go", 12, "github.com/acme/shop/internal/billing.Parse")
    ]
    assert sig.fragments == ("invalid port",)  # the value and Go's `` [recovered]`` left out


# --- Java --------------------------------------------------------------------------------

JAVA = (
    'Exception in thread "main" java.lang.IllegalStateException: invoice is not ready to close\n'
    "\tat com.acme.billing.Invoice.close(Invoice.java:30)\n"
    "\tat com.acme.billing.Invoice.main(Invoice.java:35)\n"
    'Caused by: java.lang.NullPointerException: Cannot invoke "String.length()" because "this.sku" is null\n'
    "\tat com.acme.billing.Invoice$Line.total(Invoice.java:16)\n"
    "\tat com.acme.billing.Invoice.lambda$total$0(Invoice.java:22)\n"
    "\tat com.acme.billing.Invoice.total(Invoice.java:23)\n"
    "\tat com.acme.billing.Invoice.close(Invoice.java:28)\n"
    "\t... 1 more\n"
)


def test_a_java_trace_with_its_cause_innermost_last() -> None:
    sig = signals.read(JAVA)
    assert places(sig) == [
        ("Invoice.java", 35, "com.acme.billing.Invoice.main"),
        ("Invoice.java", 30, "com.acme.billing.Invoice.close"),
        ("Invoice.java", 28, "com.acme.billing.Invoice.close"),  # Caused by: after what it caused
        ("Invoice.java", 23, "com.acme.billing.Invoice.total"),
        ("Invoice.java", 22, "com.acme.billing.Invoice.total"),  # ``lambda$total$0``: in total
        ("Invoice.java", 16, "com.acme.billing.Invoice.Line.total"),  # ``Invoice$Line``
    ]
    assert sig.exceptions == ("IllegalStateException", "NullPointerException")
    assert sig.fragments[0] == "invoice is not ready to close"
    assert "com.acme.billing.Invoice.close" not in sig.dotted and sig.locations == ()
    assert "Invoice.java" not in sig.search_text and "com.acme.billing.Invoice.close" in sig.search_text
    assert sig.prose.strip() == "... 1 more"


JAVA_MODULES = (
    'Exception in thread "main" java.lang.NullPointerException: sku must not be null\n'
    "\tat java.base/java.util.Objects.requireNonNull(Objects.java:235)\n"
    "\tat com.acme.cart.Cart$Item.<init>(Cart.java:9)\n"
    "\tat com.acme.cart.Cart.lambda$count$0(Cart.java:14)\n"
    "\tat java.base/java.util.stream.ReferencePipeline$3$1.accept(ReferencePipeline.java:197)\n"
    "\tat java.base/java.util.Spliterators$ArraySpliterator.forEachRemaining(Spliterators.java:992)\n"
    "\tat java.base/java.util.stream.AbstractPipeline.copyInto(AbstractPipeline.java:509)\n"
    "\tat java.base/java.util.stream.IntPipeline.sum(IntPipeline.java:473)\n"
    "\tat com.acme.cart.Cart.count(Cart.java:14)\n"
    "\tat com.acme.cart.Cart.main(Cart.java:18)\n"
    "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
)


def test_java_frames_drop_the_module_and_keep_anonymous_classes() -> None:
    sig = signals.read(JAVA_MODULES)
    assert sig.frames[-1] == Frame("Objects.java", 235, "java.util.Objects.requireNonNull")
    assert sig.frames[-2] == Frame("Cart.java", 9, "com.acme.cart.Cart.Item.Item")  # ``Cart$Item.<init>``
    assert Frame("ReferencePipeline.java", 197, "java.util.stream.ReferencePipeline$3$1.accept") in sig.frames
    assert sig.frames[0] == Frame("Cart.java", 18, "com.acme.cart.Cart.main")
    assert len(sig.frames) == 9  # ``(Native Method)`` has no place
    assert sig.exceptions == ("NullPointerException",) and sig.fragments == ("sku must not be null",)
    assert sig.dotted == ("java.lang.NullPointerException",)


# --- C / C++ -----------------------------------------------------------------------------

ASAN = """=================================================================
==12177==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x60200000001c at pc 0x56323491a60c bp 0x7fff34e14a90 sp 0x7fff34e14a88
READ of size 4 at 0x60200000001c thread T0
    #0 0x56323491a60b in shop::Invoice::total(int) const src/invoice.cpp:11
    #1 0x56323491a3d8 in run src/invoice.cpp:20
    #2 0x56323491a500 in main src/invoice.cpp:27
    #3 0x7f9996c45249 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58
    #4 0x7f9996c45304 in __libc_start_main_impl ../csu/libc-start.c:360
    #5 0x56323491a190 in _start (/tmp/traces/c/inv+0x1190)

0x60200000001c is located 0 bytes to the right of 12-byte region [0x602000000010,0x60200000001c)
allocated by thread T0 here:
    #0 0x7f9996eb9628 in operator new[](unsigned long) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:98
    #1 0x56323491a2d7 in run src/invoice.cpp:19
    #2 0x56323491a500 in main src/invoice.cpp:27
    #3 0x7f9996c45249 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58

SUMMARY: AddressSanitizer: heap-buffer-overflow src/invoice.cpp:11 in shop::Invoice::total(int) const
"""  # noqa: E501


def test_an_address_sanitizer_report_the_faulting_stack_innermost_and_the_allocation_before_it() -> None:
    sig = signals.read(ASAN)
    assert places(sig) == [
        # where the memory was allocated: context, outside the failure
        ("../sysdeps/nptl/libc_start_call_main.h", 58, "__libc_start_call_main"),
        ("src/invoice.cpp", 27, "main"),
        ("src/invoice.cpp", 19, "run"),
        ("../../../../src/libsanitizer/asan/asan_new_delete.cpp", 98, "operator new[]"),
        # the bad read
        ("../csu/libc-start.c", 360, "__libc_start_main_impl"),
        ("../sysdeps/nptl/libc_start_call_main.h", 58, "__libc_start_call_main"),
        ("src/invoice.cpp", 27, "main"),
        ("src/invoice.cpp", 20, "run"),
        ("src/invoice.cpp", 11, "shop::Invoice::total"),
    ]
    assert sig.locations == ()  # the summary repeats the innermost frame
    assert sig.dotted == ()


GDB = """Program received signal SIGSEGV, Segmentation fault.
0x0000555555555164 in cart_total (c=0x7fffffffe6c0) at src/cart.c:8
8\t    for (size_t i = 0; i < c->n; i++) s += c->items[i];
#0  0x0000555555555164 in cart_total (c=0x7fffffffe6c0) at src/cart.c:8
#1  0x00005555555551a5 in main () at src/cart.c:14
"""


def test_a_gdb_backtrace() -> None:
    sig = signals.read(GDB)
    assert places(sig) == [("src/cart.c", 14, "main"), ("src/cart.c", 8, "cart_total")]
    assert sig.locations == ()  # the stop line repeats frame #0


def test_a_cpp_uncaught_exception_and_a_sanitizer_frame_with_a_column() -> None:
    sig = signals.read(
        "terminate called after throwing an instance of 'std::runtime_error'\n  what():  invoice has no lines\n"
        "    #0 0x4005d6 in foo(int) /src/a.cpp:10:3\n"
        "    #1 0x4005f0 in (anonymous namespace)::helper(char const*) /src/a.cpp:20:5\n"
    )
    assert sig.exceptions == ("runtime_error",) and sig.fragments == ("invoice has no lines",)
    assert places(sig) == [("/src/a.cpp", 20, "(anonymous namespace)::helper"), ("/src/a.cpp", 10, "foo")]
    assert sig.dotted == ("std::runtime_error",)


# --- paths, names, mixed ------------------------------------------------------------------


def test_paths_of_every_source_extension_with_their_line() -> None:
    sig = signals.read(
        "It breaks in src/main.rs:40:9, src/x.ts:12:5 and ./lib/a.js:3; also cmd/main.go:88, Foo.java:31,\n"
        "src/a.cpp:10:3, include/a.hpp:7, src/b.c, lib/x.mjs, web/App.tsx:4, x.c++:3 and index.d.ts.\n"
        "tsc says src/main.ts(8,5): error TS2580. We run Node.js, not a file; a.rs.orig is a backup."
    )
    assert sig.locations == (
        ("src/main.rs", 40),
        ("src/x.ts", 12),
        ("./lib/a.js", 3),
        ("cmd/main.go", 88),
        ("Foo.java", 31),
        ("src/a.cpp", 10),
        ("include/a.hpp", 7),
        ("src/b.c", None),
        ("lib/x.mjs", None),
        ("web/App.tsx", 4),
        ("x.c++", 3),
        ("index.d.ts", None),
        ("src/main.ts", 8),
    )
    assert ":9" not in sig.prose and "src/main.rs" not in sig.prose and "Node.js" in sig.prose


def test_scoped_names_are_kept_as_written_and_files_are_not_names() -> None:
    sig = signals.read(
        "Why does fd::exec::Runner::pick panic when `crate::config::load` returns early? "
        "std::vector<int>::at(3) throws; self::helper and Self::new are local; see router.go and Invoice.total; "
        "https://docs.rs/tokio/latest/tokio::spawn, fe80::1, 10::20, utils.ts and v1.2.3 are not names."
    )
    assert sig.dotted == (
        "fd::exec::Runner::pick",
        "crate::config::load",
        "std::vector",
        "Invoice.total",
        "tokio::spawn",
    )


def test_python_and_javascript_traces_in_one_request_each_keep_their_order() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/api/app.py", line 3, in handler\n'
        '  File "/srv/api/billing.py", line 9, in total\n'
        "ValueError: no lines\n\n"
        "TypeError: x is not a function\n"
        "    at total (web/src/billing.ts:9:3)\n"
        "    at handler (web/src/app.ts:3:1)\n"
    )
    sig = signals.read(text)
    assert places(sig) == [
        ("/srv/api/app.py", 3, "handler"),
        ("/srv/api/billing.py", 9, "total"),
        ("web/src/app.ts", 3, "handler"),
        ("web/src/billing.ts", 9, "total"),
    ]
    assert sig.exceptions == ("ValueError", "TypeError")


def test_frames_in_toolchains_and_downloaded_dependencies_are_foreign() -> None:
    foreign = [
        f"{RUSTC}/core/src/result.rs",  # would match a crate's own src/result.rs by its end
        "/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.188/src/lib.rs",
        "/home/u/.cargo/git/checkouts/tokio-8d7a4c5e2f1b3a9c/a1b2c3d/tokio/src/lib.rs",
        "/home/u/go/pkg/mod/github.com/pkg/errors@v0.9.1/errors.go",
        "/usr/local/go/src/net/http/server.go",
        "/home/u/sdk/go1.22.0/src/runtime/panic.go",
        "/app/node_modules/express/lib/router/index.js",
        "node:internal/modules/cjs/loader",
        "/usr/lib/python3.12/site-packages/audit/hooks.py",
        "../sysdeps/nptl/libc_start_call_main.h",
        "../../../../src/libsanitizer/asan/asan_new_delete.cpp",
        "/usr/include/c++/12/bits/stl_vector.h",
    ]
    assert [p for p in foreign if not signals.foreign_path(p)] == []
    own = [
        "./src/exec/mod.rs",
        "/tmp/traces/fd/src/exec/mod.rs",
        "/home/u/proj/server.go",
        "/home/u/go/src/github.com/acme/shop/server.go",  # GOPATH: the project's own
        "github.com/acme/shop/internal/billing/parse.go",
        "/tmp/traces/node/src/billing/invoice.ts",
        "src/invoice.cpp",
        "Invoice.java",
    ]
    assert [p for p in own if signals.foreign_path(p)] == []
    # what a Rust backtrace leaves once the foreign frames are set aside: the project's
    assert [f.func for f in signals.read(RUST_UNWRAP).frames if not signals.foreign_path(f.path)] == [
        "fd::main",
        "fd::exec::run",
    ]


# --- what retrieval makes of them ---------------------------------------------------------

POLY_TRACES = {
    "rust": (
        "thread 'main' (11803) panicked at src/account.rs:23:20:\n"
        'called `Result::unwrap()` on an `Err` value: Overdrawn { account: "a", missing: 5 }\n'
        "stack backtrace:\n"
        "   0: __rustc::rust_begin_unwind\n"
        f"             at {RUSTC}/std/src/panicking.rs:689:5\n"
        "   1: ledger_core::account::Account::post\n"
        "             at ./src/account.rs:23:20\n"
        "   2: ledger_core::account::Ledger::transfer\n"
        "             at ./src/account.rs:48:9\n",
        "ledger_core::account::Account::post",
        "src/account.rs:23",
    ),
    "go": (
        "panic: runtime error: invalid memory address or nil pointer dereference\n\ngoroutine 1 [running]:\n"
        "server.(*Server).Handle(0x0, {0x0, 0x0}, 0x0)\n\t/home/u/ledger/server/handler.go:21 +0x1d\n"
        "main.main()\n\t/home/u/ledger/cmd/main.go:9 +0x25\n",
        "server.Server.Handle",
        "server/handler.go:21",
    ),
    "java": (
        'Exception in thread "main" java.lang.IllegalStateException: not enough apples\n'
        "\tat com.shop.Inventory.reserve(Inventory.java:25)\n\tat com.shop.Main.main(Main.java:7)\n",
        "com.shop.Inventory.reserve",
        "java/src/main/java/com/shop/Inventory.java:25",
    ),
    "typescript": (
        "TypeError: fetch failed\n"
        "    at ApiClient.request (/app/web/src/api/client.ts:24:30)\n"
        "    at ApiClient.balance (/app/web/src/api/client.ts:15:28)\n",
        "web/src/api/client.ApiClient.request",
        "web/src/api/client.ts:24",
    ),
}


@pytest.fixture(scope="module")
def poly_index(tmp_path_factory: pytest.TempPathFactory):
    with WorkspaceIndex(copy_poly(tmp_path_factory.mktemp("signals-poly") / "ws")) as index:
        index.refresh()
        yield index


@pytest.mark.parametrize("lang", sorted(POLY_TRACES))
def test_each_languages_innermost_project_frame_ranks_first(poly_index: WorkspaceIndex, lang: str) -> None:
    trace, qualname, place = POLY_TRACES[lang]
    sig = signals.read(trace)
    ranked = retrieval.rank(poly_index.search(sig.search_text), trace, graph=poly_index, signals=sig)
    sym, _, why = ranked[0]
    assert sym.qualname == qualname
    assert f"the innermost traceback frame in the project, {place} (×3.00)" in why
    # the frame's function is the index's own name for it
    innermost = [f for f in sig.frames if not signals.foreign_path(f.path)][-1]
    found = poly_index.resolve_name(innermost.func or "")
    assert found is not None and found.qualname == qualname


def test_a_dependencys_frame_reads_like_the_projects_file_unless_set_aside(poly_index: WorkspaceIndex) -> None:
    """Why ``foreign_path`` exists: the end of a crate's path in Cargo's registry is the
    project's ``src/lib.rs``."""
    path = "/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.35.0/src/lib.rs"
    assert poly_index.files_matching(path) == ["src/lib.rs"]
    assert signals.foreign_path(path)


def test_a_bug_report_is_read_without_its_template_links_versions_and_output() -> None:
    text = (
        "Parser fails on 2.0.1\n"  # a title that names a version stays
        "<!-- Instructions: paste the output of `import platform; print(platform.platform())` -->\n"
        "It broke when I upgraded to 2.0.1 from the old release last week.\n"  # a sentence stays
        "![image](https://user-images.example.invalid/1.png) see https://example.invalid/blob/master/x\n"
        "```\nb'Mori^Ogai=\\x1b$B?9'\nPrints [<Instance of .A at 0x7f3a2c>]\n```\n"
        "```python\nimport parser\nparser.parse_block(text)\n```\n"
        '```\nTraceback (most recent call last):\n  File "/srv/app/parser.py", line 3, in parse_block\n'
        "KeyError: 'x'\n```\n"
        "```\nparser 2.0.1\nPython 3.11.4\n[GCC 7.3.0]\nLinux-4.15.0-55-generic-x86_64-with-debian\n```\n"
    )
    sig = signals.read(text)
    assert sig.search_text.startswith("Parser fails on 2.0.1\n")
    assert "upgraded to 2.0.1" in sig.search_text
    for gone in ("Instructions", "platform", "image", "example", "blob", "x1b", "Mori", "Instance", "0x7f3a2c"):
        assert gone not in sig.search_text, gone
    for gone in ("parser 2.0.1", "3.11.4", "GCC", "Linux"):
        assert gone not in sig.prose, gone
    # the snippet and the traceback are read: the names they call, the frame, the error
    assert "parser.parse_block(text)" in sig.search_text and "KeyError" in sig.search_text
    assert [f.func for f in sig.frames] == ["parse_block"] and sig.exceptions == ("KeyError",)
    assert "platform.platform" not in sig.dotted and "parser.parse_block" in sig.dotted


def test_pasted_traces_of_other_languages_are_not_taken_for_output() -> None:
    rust = "```\nthread 'main' panicked at src/main.rs:40:9:\nno rows\nstack backtrace:\n```\n"
    go = "```\npanic: no rows\n\ngoroutine 1 [running]:\nmain.run()\n\t/home/u/p/main.go:9 +0x1d\n```\n"
    node = "```\nTypeError: x is not a function\n    at total (web/src/billing.ts:9:3)\n```\n"
    for text in (rust, go, node):
        assert request_text.output_spans(text) == [], text
    output = "```\n42\n[1, 2, 3]\n```"
    assert request_text.output_spans(f"Got:\n{output}\n") == [(5, 5 + len(output))]


def test_the_versions_section_of_a_report_is_left_out_up_to_the_next_heading_or_prose() -> None:
    text = (
        "Versions are not the bug\n"
        "It fails.\n\n"
        "**Versions:**\n - ``pvlib.__version__``:  master/g684b247\n - python: 3.10\n\n"
        "More prose after it stays.\n"
        "#### Environment\nLinux, conda, numpy from conda-forge\n"
        "## Additional context\nThe rest stays too.\n"
    )
    cleaned = request_text.clean(text)
    assert cleaned.startswith("Versions are not the bug\nIt fails.")  # the title is never a section
    for gone in ("__version__", "master/g684b247", "conda-forge"):
        assert gone not in cleaned
    assert "More prose after it stays." in cleaned and "The rest stays too." in cleaned
    assert "pvlib.__version__" not in signals.read(text).dotted


def test_the_commands_a_template_asks_for_to_print_versions_are_left_out_a_sentence_stays() -> None:
    text = (
        "Inference fails on a starred assignment\n"
        '### `python -c "from astroid import __pkginfo__; print(__pkginfo__.version)"` output\n'
        "2.5.1\n"
        ">>> import sys; print('Python', sys.version)\n"
        '❯ py -c "import platform; print(platform.platform())"\n'
        ">>> pydicom.__version__\n"
        " - ``pvlib.__version__``: '0.9.3'\n"
        "The __version__ attribute reads the wrong file.\n"  # a sentence about it stays
    )
    sig = signals.read(text)
    for gone in ("pkginfo", "sys.version", "platform", "pydicom", "pvlib"):
        assert gone not in sig.search_text, gone
    assert not any("version" in name for name in sig.dotted), sig.dotted
    assert "The __version__ attribute reads the wrong file." in sig.search_text


def test_a_code_hosts_link_to_a_line_names_the_file_and_the_line() -> None:
    text = (
        "TypeError with Arrays\n"
        "raised at https://github.com/o/p/blob/dc617d0c/pvlib/modelchain.py#L1525 and\n"
        "https://github.com/o/p/blob/81598e4/pvlib/singlediode.py#L644-L649,\n"
        "[see](https://gitlab.com/g/p/-/blob/main/src/exec/mod.rs#L40) or\n"
        "https://bitbucket.org/o/p/src/abc123/lib/y.py#lines-9 and the whole https://github.com/o/p/blob/main/z/q.py\n"
        # a blame view points at its line as well (pvlib's report linked ``blame/master/…#L1589-L1606``)
        "https://github.com/o/p/blame/master/pvlib/tools.py#L1589-L1606 and https://gitlab.com/g/p/-/blame/v2/a/b.go#L7\n"
    )
    assert signals.read(text).locations == (
        ("pvlib/modelchain.py", 1525),
        ("pvlib/singlediode.py", 644),
        ("src/exec/mod.rs", 40),
        ("lib/y.py", 9),
        ("z/q.py", None),
        ("pvlib/tools.py", 1589),
        ("a/b.go", 7),
    )
    assert not {"blob", "blame"} & set(signals.read(text).search_text.split())  # the address is no search words


def test_a_stack_trace_in_any_language_gets_thin_cards_in_a_small_room(tmp_path: Path) -> None:
    engine = Engine(copy_poly(tmp_path / "ws"))
    engine.refresh_index()
    try:
        trace = POLY_TRACES["typescript"][0]
        small = engine.plan(PlanRequest(query=trace, budget=BudgetOverrides(rag_budget=600)))
        thin = {c.symbol: c for c in small.inputs.candidates if c.id.startswith("head:")}
        request = thin["web/src/api/client.ApiClient.request"]
        assert request.text.startswith("// web/src/api/client.ts:")  # TypeScript's comment, and its class
        assert request.text.splitlines()[0].endswith(" · web/src/api/client.ApiClient.request")
        included = [i.id for i in small.result.plan.included if i.section == "rag"]
        assert any(i.startswith("head:") for i in included)
    finally:
        engine.close()
