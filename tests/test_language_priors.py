"""Path priors in every language: what counts as test code, a vendored copy, generated code or
the project's tooling (outside its package) — and what does not (Go's ``cmd/``, ``src/build``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_lsp.workspace import priors
from ctx_lsp.workspace.languages import language_of
from ctx_lsp.workspace.priors import path_role, prior_for, request_words

TEST = ("test", "test")
GENERATED = ("generated", "generated")


@pytest.mark.parametrize(
    "rel",
    [
        "internal/billing/store_test.go",  # Go
        "src/billing/invoice.test.ts",  # Jest / Vitest, every JS and TS extension
        "src/billing/invoice.test.tsx",
        "lib/cart.test.js",
        "lib/cart.test.jsx",
        "lib/cart.test.mjs",
        "lib/cart.test.cjs",
        "src/cart.test.mts",
        "src/cart.test.cts",
        "src/billing/invoice.spec.ts",
        "src/app.e2e-spec.ts",  # NestJS
        "src/components/Button.cy.tsx",  # Cypress
        "src/billing/__tests__/invoice.ts",
        "src/__mocks__/axios.js",
        "src/components/__snapshots__/Button.tsx",
        "e2e/checkout.ts",
        "test/parser.js",  # Mocha
        "tests/cli.rs",  # Rust's integration tests
        "src/parser/tests.rs",  # ``mod tests;`` in its own file
        "src/parser/parser_tests.rs",
        "src/test/java/com/acme/billing/InvoiceTest.java",  # Maven
        "core/src/test/java/com/acme/Helpers.java",
        "InvoiceTests.java",
        "CheckoutIT.java",  # failsafe's integration tests
        "Test.java",
        "test_cart.c",
        "src/cart_test.c",
        "src/cart_test.cc",
        "src/cart_test.cpp",
        "src/cart_unittest.cc",  # Chromium, gtest
        "src/cart_tests.cpp",
        "test/test_helpers.h",
        "internal/billing/testdata/invoice.go",  # Go's test data
        "tests/test_app.py",  # Python, as before
        "pkg/conftest.py",
    ],
)
def test_test_code_in_every_language(rel: str) -> None:
    assert path_role(rel) == TEST


@pytest.mark.parametrize(
    "rel",
    [
        "src/billing/invoice.ts",
        "src/main/java/com/acme/billing/Invoice.java",
        "src/main/java/com/acme/billing/Contest.java",  # ends in ``test``, not ``Test``
        "src/main/java/com/acme/JIT.java",
        "internal/billing/store.go",
        "internal/testing.go",  # a file, not the ``testing`` folder
        "src/attest.rs",
        "src/latest.c",
        "src/spectrum.ts",
        "jinja2/tests.py",  # Jinja's template tests are its own code (Python keeps its rule)
    ],
)
def test_the_projects_own_code_is_not_test_code(rel: str) -> None:
    assert path_role(rel) is None


@pytest.mark.parametrize(
    ("rel", "what"),
    [
        ("vendor/github.com/pkg/errors/errors.go", "errors"),  # Go: host/owner/repo
        ("vendor/golang.org/x/net/http2/frame.go", "net"),
        ("vendor/go.uber.org/zap/logger.go", "zap"),  # a vanity host: host/name
        ("vendor/gopkg.in/yaml.v3/decode.go", "yaml"),
        ("vendor/serde/src/de.rs", "serde"),  # ``cargo vendor``
        ("node_modules/lodash/map.js", "lodash"),
        ("node_modules/@angular/core/index.d.ts", "@angular/core"),
        ("node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/map.js", "lodash"),  # the innermost package
        ("node_modules/jest/node_modules/chalk/index.js", "chalk"),
        ("third_party/abseil-cpp/absl/strings/str_cat.cc", "abseil-cpp"),
        ("external/zlib/inflate.c", "zlib"),  # Bazel
        ("extern/pybind11/include/pybind11/pybind11.h", "pybind11"),
        (".cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.188/src/de/mod.rs", "serde"),
        (".cargo/registry/src/index.crates.io-6f17d22bba15001f/serde_json-1.0.108/src/lib.rs", "serde_json"),
        (".cargo/git/checkouts/tokio-8d7a4c5e2f1b3a9c/a1b2c3d/tokio/src/lib.rs", "tokio"),
        ("go/pkg/mod/github.com/pkg/errors@v0.9.1/errors.go", "errors"),  # Go's module cache
        ("vendor/left_pad.js", "left_pad"),  # no package folder: the file's name, extension stripped
        ("third_party/stb_image.h", "stb_image"),
        ("third_party/sqlite3.c", "sqlite3"),
        ("requests/packages/urllib3/util/timeout.py", "urllib3"),  # Python, as before
        ("pip/_vendor/rich/console.py", "rich"),
    ],
)
def test_vendored_copies_name_their_project(rel: str, what: str) -> None:
    assert path_role(rel) == ("vendored", what)


def test_a_packages_folder_is_a_javascript_workspace_not_a_vendored_copy() -> None:
    assert path_role("web/packages/ui/src/Button.tsx") is None
    assert path_role("packages/core/src/index.ts") is None
    assert path_role("shop/packages/moneylib/rounding.py") == ("vendored", "moneylib")  # Python's rule stays


@pytest.mark.parametrize(
    "rel",
    [
        "api/v1/invoice.pb.go",
        "api/v1/invoice.pb.gw.go",
        "api/v1/invoice_grpc.pb.go",
        "internal/model/model_generated.go",
        "zz_generated.deepcopy.go",
        "pkg/apis/v1/zz_generated.deepcopy.go",
        "proto/invoice.pb.cc",
        "proto/invoice.pb.h",
        "web/gen/invoice_pb.js",
        "web/src/invoice_pb.d.ts",
        "web/src/invoice_pb.js",
        "src/graphql/schema.generated.ts",
        "src/__generated__/AppQuery.graphql.ts",  # Relay
        "target/generated-sources/annotations/com/acme/Invoice_.java",
        "dist/index.js",  # build output at the top ...
        "build/index.js",
        "out/main.js",
        "target/debug/build/fd-1a2b/out/bindings.rs",
        "bazel-bin/src/main.cc",
        "cmake-build-debug/CMakeFiles/feature_tests.c",
        ".next/server/app/page.js",
        "coverage/lcov-report/sorter.js",
        "packages/ui/dist/index.js",  # ... or at the top of a monorepo's package
        "crates/parser/target/debug/build.rs",
        "build/lib/shop/billing.py",  # setuptools' copy of the package
        "api/service_pb2.py",  # Python, as before
    ],
)
def test_generated_code_in_every_language(rel: str) -> None:
    assert path_role(rel) == GENERATED


@pytest.mark.parametrize(
    "rel",
    [
        "src/build/mod.rs",  # a Rust module named build
        "internal/build/build.go",  # a Go package named build
        "src/pip/_internal/operations/build/wheel.py",
        "lib/out/format.ts",
        "cmd/shop/main.go",  # Go's own binaries
        "src/bin/fd.rs",
        "src/main/java/com/acme/target/Target.java",
    ],
)
def test_folders_named_like_build_output_inside_the_source_are_the_projects_own(rel: str) -> None:
    assert path_role(rel) is None


def test_type_declarations_rank_as_generated_unless_the_request_names_them() -> None:
    assert path_role("src/types/index.d.ts") == ("generated", "index.d.ts")
    assert path_role("types/global.d.ts") == ("generated", "global.d.ts")
    prior = prior_for("src/types/index.d.ts", request_words("how is an invoice rounded?"))
    assert prior is not None and prior.factor == priors.GENERATED_FACTOR
    assert prior.why == "type declarations, not the code (index.d.ts) (×0.4)"
    assert prior_for("src/types/index.d.ts", request_words("what does index.d.ts declare for Invoice?")) is None
    assert prior_for("src/types/index.d.ts", request_words("fix src/types/index.d.ts")) is None


@pytest.mark.parametrize(
    ("rel", "what"),
    [
        ("benches/parse.rs", "benches"),  # Rust
        ("bench/parse_bench.cc", "bench"),
        ("examples/hello.rs", "examples"),
        ("example/main.go", "example"),
        ("docs/conf.py", "docs"),
        ("docs/.vuepress/config.ts", "docs"),
        ("scripts/release.mjs", "scripts"),
        ("tools/tools.go", "tools"),
        ("hack/update-codegen.go", "hack"),  # Kubernetes' convention
        ("samples/Client.java", "samples"),
        ("contrib/completion.c", "contrib"),
        ("src/examples/demo.ts", "examples"),
        ("build.rs", "build"),  # build code, like setup.py
        ("crates/parser/build.rs", "build"),
        ("setup.py", "setup"),  # Python, as before
        ("conanfile.py", "conanfile"),
        ("vite.config.ts", "vite"),  # JavaScript tools' configuration at a package's root
        ("packages/ui/vitest.config.mts", "vitest"),
        ("jest.config.js", "jest"),
        (".eslintrc.cjs", "eslint"),
        ("gulpfile.js", "gulpfile"),
        ("karma.conf.js", "karma"),
        ("src/components/Button.stories.tsx", "stories"),  # Storybook
    ],
)
def test_aux_code_outside_the_package(rel: str, what: str) -> None:
    assert path_role(rel) == ("aux", what)


@pytest.mark.parametrize(
    "rel",
    [
        "cmd/fd/main.go",  # Go's cmd/ is the project's binaries
        "src/build.rs",  # ``mod build;``
        "src/app/app.config.ts",  # Angular's application configuration is the application's
        "src/config/database.config.ts",
        "lib/setup.py",  # only the top-level setup.py is the build's
        "src/main.rs",
    ],
)
def test_the_projects_own_code_is_not_aux(rel: str) -> None:
    assert path_role(rel) is None


def test_requests_that_mention_tests_in_any_ecosystems_words() -> None:
    for query in (
        "why does the jest run fail?",
        "the invoice spec is red",
        "vitest snapshot mismatch",
        "mocha times out on checkout",
        "junit reports a failure in InvoiceTest",
        "testify's assert.Equal fails on the store",
    ):
        prior = prior_for("internal/billing/store_test.go", request_words(query))
        assert prior is not None and prior.factor == priors.TEST_MENTIONED_FACTOR, query
    # the word ``test`` itself (``cargo test``, ``#[test]``, ``go test``) names what test code is: no prior
    for query in ("cargo test fails on #[test] picks_the_third_job", "go test ./... hangs"):
        assert prior_for("internal/billing/store_test.go", request_words(query)) is None, query
    # ... as the user writes it: a ``test`` variable in the code they pasted, a ``Test`` class, are theirs
    for report in (
        "Memory leaks on sequence access\n```python\nfor i in range(100):\n    test = ds.SourceImageSequence\n```\n",
        "error during inference of a class inheriting with `mod.Type`: if a class `Test` inherits from `level.Model`",
    ):
        prior = prior_for("tests/test_dataset.py", request_words(report))
        assert prior is not None and prior.factor == priors.TEST_FACTOR, report
    prior = prior_for("tests/test_dataset.py", request_words("```python\ntest = ds.X\n```\nthe test passes here"))
    assert prior is None
    prior = prior_for("src/billing/invoice.spec.ts", request_words("how is an invoice rounded?"))
    assert prior is not None and prior.factor == priors.TEST_FACTOR


def test_a_request_naming_the_vendored_project_lifts_its_prior() -> None:
    rel = "node_modules/@angular/core/fesm2022/core.mjs"
    assert prior_for(rel, request_words("how does change detection run?")) is not None
    assert prior_for(rel, request_words("does @angular/core batch change detection?")) is None
    go = "vendor/github.com/pkg/errors/errors.go"
    prior = prior_for(go, request_words("how are errors wrapped with a stack?"))
    assert prior is None  # ``errors`` is named: the request may well be about it
    prior = prior_for(go, request_words("how is the invoice stored?"))
    assert prior is not None and prior.why == "vendored copy of errors (×0.3)"
    crate = ".cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.188/src/de/mod.rs"
    assert prior_for(crate, request_words("why does serde reject the config?")) is None
    assert prior_for("benches/parse.rs", request_words("are the benches representative?")) is None


def test_path_role_is_cached() -> None:
    path_role.cache_clear()
    path_role("src/x.test.ts")
    path_role("src/x.test.ts")
    assert path_role.cache_info().hits == 1


def test_the_polyglot_workspaces_tests_and_own_code() -> None:
    root = Path(__file__).parent / "fixtures" / "poly_ws"
    roles = {
        p.relative_to(root).as_posix(): path_role(p.relative_to(root).as_posix())
        for p in root.rglob("*")
        if p.is_file() and language_of(p.name)
    }
    assert {rel for rel, role in roles.items() if role is not None} == {
        "server/handler_test.go",
        "java/src/test/java/com/shop/InventoryTest.java",
        "web/src/api/client.test.ts",
        "tests/transfers.rs",
    }
    assert {role for role in roles.values() if role is not None} == {TEST}
