#!/usr/bin/env bash
# How the lint-* cases of benchmarks/tool_corpus/cases/ were made (type checkers, linters, builds).
#
# Documentation first, and a way to regenerate by hand; CI does not run it. It needs network access
# to PyPI, npm and Debian's apt, plus cargo/rustc (1.95 was used), gcc/g++ 12 and node 20.
# Everything happens under $W (default /tmp/corpus-lint); each step leaves the tool's combined
# stdout+stderr in $W/outs/<case-id>.txt. Turning those into <id>.json + <id>.out.gz
# (gzip -9n) was a small Python step that copied the text unchanged.
#
# Outputs hold absolute paths under /tmp/corpus-lint; rerunning elsewhere changes those paths, and
# tool versions change warning texts, so regenerated outputs will differ in detail (needles may move).
set -euo pipefail
. "$(dirname "$0")/common.sh"  # cargo_offline
W=${W:-/tmp/corpus-lint}
DATA=${DATA:-/work/main/benchmarks/.data}       # sympy, cpp-tree, downloads/*.tgz
mkdir -p "$W/outs" "$W/dl"
OUTS=$W/outs

# --- tools -------------------------------------------------------------------------------------
python3 -m venv "$W/venv"
"$W/venv/bin/pip" install mypy==2.4.1 ruff==0.17.6
"$W/venv/bin/pip" install urllib3 charset_normalizer idna certifi    # requests' deps, for mypy
apt-get update && apt-get install -y golang-go golang-github-google-go-cmp-dev \
    golang-github-prometheus-client-golang-dev          # the Go sources live in /usr/share/gocode
# (the librust-*-dev packages behind /usr/share/cargo/registry were already installed:
#  librust-tokio-dev and its dependencies, which include semver, memchr, tracing-core, either)
mkdir -p "$W/npm" && (cd "$W/npm" && npm init -y >/dev/null &&
    npm install typescript@5 eslint@9 @eslint/js@9 globals vitest@3 @types/node)

# --- step 1: mypy --strict on requests 2.32.3 (Apache-2.0), planted env-var override -----------
cd "$W/dl" && "$W/venv/bin/pip" download --no-deps --no-binary :all: requests==2.32.3 tabulate==0.10.0
tar xzf requests-2.32.3.tar.gz && tar xzf tabulate-0.10.0.tar.gz
cd "$W/dl/requests-2.32.3"
# planted: the pool count comes from an env var; os.environ.get(k, int) is str | int, not int
sed -i '260s/num_pools=connections,/num_pools=os.environ.get("REQUESTS_NUM_POOLS", DEFAULT_POOLSIZE),/' \
    src/requests/adapters.py
"$W/venv/bin/mypy" --strict src/requests > "$OUTS/lint-mypy-strict-requests.txt" 2>&1 || true

# --- step 2: ruff (default rules) on sympy/holonomic, sympy 1.14.0 (BSD-3-Clause) --------------
mkdir -p "$W/sympy" && cp -r "$DATA/sympy/sympy" "$W/sympy/" && cd "$W/sympy"
# planted: half-done rename in HolonomicFunction.change_ics (result stored as `solution`,
# still read as `sol` two lines later)
sed -i 's/^            sol = expr_to_holonomic(self.to_expr(), x=self.x, x0=b, lenics=lenics, domain=dom)/            solution = expr_to_holonomic(self.to_expr(), x=self.x, x0=b, lenics=lenics, domain=dom)/' \
    sympy/holonomic/holonomic.py
"$W/venv/bin/ruff" check sympy/holonomic > "$OUTS/lint-ruff-default-sympy-holonomic.txt" 2>&1 || true

# --- step 3: ruff with every rule on tabulate 0.10.0 (MIT), unmodified ------------------------
cd "$W/dl/tabulate-0.10.0"
"$W/venv/bin/ruff" check --select ALL --output-format concise tabulate \
    > "$OUTS/lint-ruff-all-tabulate.txt" 2>&1 || true

# --- step 4: go vet in GOPATH mode over Debian's Go sources (Apache-2.0 / BSD-3-Clause) --------
mkdir -p "$W/gopath" && cp -rL /usr/share/gocode/src "$W/gopath/src"
rm -rf "$W/gopath/src/github.com/aws" "$W/gopath/src/code.google.com"
cd "$W/gopath/src"
# planted: a reworded error message that gained a %v without an argument
sed -i '316s/has different label names or a different help string", desc)/has different label names (%v) or a different help string", desc)/' \
    github.com/prometheus/client_golang/prometheus/registry.go
# go vet prints per package as packages finish, so the order of blocks can vary between runs
GOPATH=$W/gopath GO111MODULE=off go vet golang.org/x/... github.com/prometheus/client_golang/... \
    github.com/golang/protobuf/... > "$OUTS/lint-go-vet-client-golang.txt" 2>&1 || true

# --- offline cargo against Debian's crate sources ------------------------------------------------
cargo_offline "$W/rust"

# --- step 5: cargo clippy, pedantic, on tracing-core 0.1.30 (MIT), unmodified ------------------
cd "$W/rust" && cp -r /usr/share/cargo/registry/tracing-core-0.1.30 . && cd tracing-core-0.1.30
rm -f Cargo.lock
cargo clippy -- -W clippy::pedantic > "$OUTS/lint-clippy-pedantic-tracing-core.txt" 2>&1 || true

# --- step 6: cargo build --keep-going, workspace of four real crates (MIT / Apache-2.0) --------
mkdir -p "$W/rust/ws" && cd "$W/rust/ws"
for c in semver-1.0.14 memchr-2.5.0 tracing-core-0.1.30 either-1.6.1; do
    cp -r /usr/share/cargo/registry/$c "${c%-*}"
done
rm -f */Cargo.lock */.cargo-checksum.json
printf '[workspace]\nmembers = ["either", "memchr", "semver", "tracing-core"]\nresolver = "2"\n' > Cargo.toml
# planted: pre_is_compatible(cmp, ver) called with its arguments swapped -> E0308
sed -i 's/matches_impl(cmp, ver) \&\& (ver.pre.is_empty() || pre_is_compatible(cmp, ver))/matches_impl(cmp, ver) \&\& (ver.pre.is_empty() || pre_is_compatible(ver, cmp))/' \
    semver/src/eval.rs
# crates build in parallel: the E0308 lands in the middle only when semver fails before the other
# crates' warnings are printed; it was run a few times (cargo clean between) and such a run kept
cargo clean -q; cargo build --keep-going > "$OUTS/lint-cargo-build-e0308-semver.txt" 2>&1 || true

# --- step 7: make + gcc on Lua 5.1 from the lupa 2.8 sdist (MIT) -------------------------------
# (pip download of lupa's sdist also builds its metadata, which failed here; the tarball pip had
#  already fetched into its unpack folder was copied out)
cd "$W/dl" && "$W/venv/bin/pip" download --no-deps --no-binary :all: lupa==2.8 ||
    cp /tmp/pip-unpack-*/lupa-2.8.tar.gz "$W/dl/"
mkdir -p "$W/c" && cd "$W/c" && tar xzf "$W/dl/lupa-2.8.tar.gz" lupa-2.8/third-party/lua51
cd lupa-2.8/third-party/lua51
# planted: rehash() calls resize() with one argument missing
sed -i '348s/resize(L, t, nasize, totaluse - na);/resize(L, t, nasize);/' src/ltable.c
make clean >/dev/null
make -k posix CFLAGS="-O2 -Wall -Wextra -Wconversion -DLUA_USE_POSIX" \
    > "$OUTS/lint-make-gcc-lua51.txt" 2>&1 || true

# --- step 8: eslint (recommended rules) on webpack 5.113.0 lib/ (MIT) ---------------------------
cd "$W/npm" && tar xzf "$DATA/downloads/webpack-5.113.0.tgz" && mv package webpack && cd webpack
ln -sf ../node_modules node_modules
cat > eslint.config.mjs <<'EOF'
import js from "@eslint/js";
import globals from "globals";
export default [
  js.configs.recommended,
  { files: ["**/*.js"], languageOptions: { sourceType: "commonjs", ecmaVersion: "latest", globals: { ...globals.node } } },
];
EOF
# planted: typo maxRequests -> maxRequest in the max-requests check
sed -i '2291s/getRequests(chunk) >= maxRequests/getRequests(chunk) >= maxRequest/' lib/optimize/SplitChunksPlugin.js
npx eslint lib > "$OUTS/lint-eslint-webpack-splitchunks.txt" 2>&1 || true

# --- step 9: tsc (strict) on zod 4.6.7 src/v4/core incl. its tests (MIT) -----------------------
mkdir -p "$W/npm/zod" && tar xzf "$DATA/downloads/zod-4.6.7.tgz" -C "$W/npm/zod" && cd "$W/npm/zod/package"
ln -sf ../../node_modules node_modules
cat > tsconfig.json <<'EOF'
{
  "compilerOptions": {
    "target": "es2022", "module": "esnext", "moduleResolution": "bundler",
    "strict": true, "noEmit": true, "skipLibCheck": true, "allowImportingTsExtensions": true,
    "noUncheckedIndexedAccess": true, "exactOptionalPropertyTypes": true,
    "lib": ["es2022", "dom"]
  },
  "include": ["src/v4/core/**/*.ts"]
}
EOF
# planted: a string where the locale issue's `minimum` must be number | bigint
python3 - <<'EOF'
p = "src/v4/core/tests/locales/nl.test.ts"; s = open(p).read()
old = '      origin: "array",\n      minimum: 5,'
assert s.count(old) == 1
open(p, "w").write(s.replace(old, '      origin: "array",\n      minimum: "5",'))
EOF
npx tsc -p . > "$OUTS/lint-tsc-zod-nl-locale.txt" 2>&1 || true

# --- step 10: g++ on JUCE 7.0.5 juce_core (ISC), std::map keyed by a type without operator< ----
mkdir -p "$W/cpp" && cp -r "$DATA/cpp-tree/juce_core" "$W/cpp/" && cd "$W/cpp"
# planted: a cache std::map<URL, String> in URL::readEntireTextStream (juce::URL has no operator<)
python3 - <<'EOF'
p = "juce_core/network/juce_URL.cpp"; s = open(p).read()
old = """String URL::readEntireTextStream (bool usePostCommand) const
{
    const std::unique_ptr<InputStream> in"""
new = """String URL::readEntireTextStream (bool usePostCommand) const
{
    static std::map<URL, String> cache;

    if (auto cached = cache.find (*this); cached != cache.end())
        return cached->second;

    const std::unique_ptr<InputStream> in"""
assert s.count(old) == 1
s = s.replace(old, new)
old2 = "    if (in != nullptr)\n        return in->readEntireStreamAsString();\n\n    return {};\n}"
assert old2 in s
s = s.replace(old2, "    if (in != nullptr)\n        return cache[*this] = in->readEntireStreamAsString();\n\n    return {};\n}", 1)
open(p, "w").write(s)
EOF
g++ -std=c++17 -Wall -Wextra -Wuseless-cast -c juce_core/juce_core.cpp -I. \
    -DJUCE_GLOBAL_MODULE_SETTINGS_INCLUDED=1 -DJUCE_STANDALONE_APPLICATION=1 -DJUCE_USE_CURL=0 \
    -o juce_core.o > "$OUTS/lint-gpp-template-juce-url.txt" 2>&1 || true
