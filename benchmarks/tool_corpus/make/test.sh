#!/usr/bin/env bash
# How the test-* cases of the tool-output corpus were made (test runners).
#
# Documentation and a way to regenerate by hand; CI does not run it.
# Every output is a real run of a real test runner on a real package's own
# test suite, with one small planted bug so that some tests fail.  Each step
# prints the runner's stdout+stderr (interleaved, as a terminal shows them)
# into $W/out/<case id>.out; cases/<id>.out.gz is `gzip -9n` of that file.
# Timings, object addresses and hash suffixes in paths differ from run to run.
#
# Needs: PyPI, npm and Debian reachable; root for apt-get.
# Scratch work lives in /tmp/corpus-test (never in the repository).
set -euo pipefail
. "$(dirname "$0")/common.sh"  # cargo_offline

W=/tmp/corpus-test
mkdir -p "$W/out"
HERE=$(cd "$(dirname "$0")/.." && pwd)          # benchmarks/tool_corpus
DATA=$(cd "$HERE/../.data" && pwd)             # benchmarks/.data (downloads/)

# Replace exactly one occurrence of $2 by $3 in file $1 (fails if not found once).
plant() {
  python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
s = open(path, encoding="utf-8").read()
assert s.count(old) == 1, (path, s.count(old))
open(path, "w", encoding="utf-8").write(s.replace(old, new))
EOF
}

apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y golang-go librust-semver-dev \
  golang-github-google-go-cmp-dev golang-github-prometheus-common-dev librust-bytes-dev

# A venv for the Python runners (pytest 9.2, Python 3.11.7).
python3 -m venv "$W/py/venv"
"$W/py/venv/bin/pip" install pytest pretend
cd "$W/py"
"$W/py/venv/bin/pip" download --no-deps --no-binary :all: -d dl packaging==26.4 more-itertools==11.2.1
tar xzf dl/packaging-26.4.tar.gz
tar xzf dl/more_itertools-11.2.1.tar.gz

# ---------------------------------------------------------------------------
# Step 1: test-pytest-packaging-metadata
# packaging 26.4 (PyPI sdist, Apache-2.0 OR BSD-2-Clause), its own tests.
# Planted: Project-URL labels lower-cased in _parse_project_urls.
cd "$W/py/packaging-26.4"
plant src/packaging/metadata.py \
'        if label in urls:
            # The label' \
'        label = label.lower()
        if label in urls:
            # The label'
# command: python -m pytest tests/test_metadata.py -v
PYTHONPATH=src "$W/py/venv/bin/python" -m pytest tests/test_metadata.py -v \
  > "$W/out/test-pytest-packaging-metadata.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 2: test-pytest-more-itertools-many (-v) and
#         test-pytest-more-itertools-runlength (default verbosity)
# more-itertools 11.2.1 (PyPI sdist, MIT), its own tests: 28 of 765 fail.
# Planted: take() returns one item too few for n > 1.
cp -r "$W/py/more_itertools-11.2.1" "$W/py/more_itertools-bug"
cd "$W/py/more_itertools-bug"
plant more_itertools/recipes.py \
  'return list(islice(iterable, n))' \
  'return list(islice(iterable, n - 1 if n > 1 else n))'
# command: python -m pytest tests -v
"$W/py/venv/bin/python" -m pytest -p no:cacheprovider tests -v \
  > "$W/out/test-pytest-more-itertools-many.out" 2>&1 || true
# command: python -m pytest tests
"$W/py/venv/bin/python" -m pytest -p no:cacheprovider tests \
  > "$W/out/test-pytest-more-itertools-runlength.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 3: test-unittest-statistics
# CPython 3.11.7's own Lib/test/test_statistics.py (PSF licence) run with
# unittest against a local copy of Lib/statistics.py, which shadows the
# stdlib module because the current directory comes first on sys.path.
# Planted: _ss() divides the sum of squares by (count - 1) instead of count.
mkdir -p "$W/unittest" && cd "$W/unittest"
LIB=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
cp "$LIB/statistics.py" "$LIB/test/test_statistics.py" .
plant statistics.py \
  '        ssd = (count * sxx - sx * sx) / count' \
  '        ssd = (count * sxx - sx * sx) / (count - 1)'
# command: python -m unittest -v test_statistics
python3 -m unittest -v test_statistics > "$W/out/test-unittest-statistics.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 4: test-jest-cron
# cron@1.8.2 (npm tarball, MIT) ships tests/ written for jest 24.
# Planted: ranges in CronTime._parseField stop before their upper bound.
mkdir -p "$W/js" && cd "$W/js"
npm pack cron@1.8.2
rm -rf cron && mkdir cron && tar xzf cron-1.8.2.tgz -C cron --strip-components=1
cd cron
npm install --no-audit --no-fund --ignore-scripts jest@^24.9.0 sinon@~7.4 chai@~4.2 moment-timezone@^0.5
sed -i 's/} while (pointer <= upper);/} while (pointer < upper);/' lib/cron.js
# command: npx jest --verbose
npx jest --verbose > "$W/out/test-jest-cron.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 5: test-vitest-zod-messages
# zod@4.6.7 (npm tarball, MIT; the same file as benchmarks/.data/downloads)
# ships its TypeScript sources and vitest suites.  The v3 suite is run
# against src/ through an alias.  NO_COLOR=1 keeps ANSI codes out.
# Planted: 'element(s)' / 'character(s)' reworded in src/v3/locales/en.ts.
mkdir -p "$W/ts" && cd "$W/ts"
rm -rf zod && mkdir zod && tar xzf "$DATA/downloads/zod-4.6.7.tgz" -C zod --strip-components=1
cd zod
npm install --no-audit --no-fund --ignore-scripts vitest@3
cat > vitest.config.mjs <<'EOF'
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Run zod's own v3 test suite against the TypeScript sources shipped in the tarball.
export default defineConfig({
  resolve: {
    alias: [{ find: /^zod\/v3$/, replacement: fileURLToPath(new URL("./src/v3/index.ts", import.meta.url)) }],
  },
  test: { include: ["src/v3/tests/**/*.test.ts"] },
});
EOF
sed -i 's/} ${issue.minimum} character(s)`;/} ${issue.minimum} characters`;/;
        s/} ${issue.maximum} character(s)`;/} ${issue.maximum} characters`;/;
        s/} ${issue.minimum} element(s)`;/} ${issue.minimum} elements`;/;
        s/} ${issue.maximum} element(s)`;/} ${issue.maximum} elements`;/' src/v3/locales/en.ts
# command: npx vitest run --reporter=verbose
NO_COLOR=1 npx vitest run --reporter=verbose > "$W/out/test-vitest-zod-messages.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 6: test-mocha-papaparse
# papaparse@5.7.1 (npm tarball, MIT) ships tests/ for mocha + chai.
# Planted: escaped quotes are no longer unescaped when a closing quote is
# followed by the delimiter.
cd "$W/js"
npm pack papaparse@5.7.1
rm -rf papaparse && mkdir papaparse && tar xzf papaparse-5.7.1.tgz -C papaparse --strip-components=1
cd papaparse
npm install --no-audit --no-fund --ignore-scripts mocha@^12.0.3 chai@^4.2.0
plant papaparse.js \
'						if (input.substr(quoteSearch + 1 + spacesBetweenQuoteAndDelimiter, delimLen) === delim)
						{
							row.push(input.substring(cursor, quoteSearch).replace(quoteCharRegex, quoteChar));' \
'						if (input.substr(quoteSearch + 1 + spacesBetweenQuoteAndDelimiter, delimLen) === delim)
						{
							row.push(input.substring(cursor, quoteSearch));'
# command: npx mocha tests/node-tests.js tests/test-cases.js
npx mocha tests/node-tests.js tests/test-cases.js > "$W/out/test-mocha-papaparse.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 7: test-go-cmp
# golang-github-google-go-cmp-dev 0.5.9-1 (Debian, BSD-3-Clause); the module
# has no dependencies, so `go test ./...` runs offline in module mode.
# Planted: diffStats.String pluralises only from three items on.
mkdir -p "$W/go" && rm -rf "$W/go/go-cmp"
cp -r /usr/share/gocode/src/github.com/google/go-cmp "$W/go/"
cd "$W/go/go-cmp"
plant cmp/report_text.go \
'	if sum > 1 {
		name += "s"' \
'	if sum > 2 {
		name += "s"'
# command: go test ./...
GOPROXY=off GOFLAGS=-mod=mod go test ./... > "$W/out/test-go-cmp.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 8: test-go-prometheus-expfmt-v
# golang-github-prometheus-common-dev 0.39.0-2 (Debian, Apache-2.0), tested in
# GOPATH mode against Debian's /usr/share/gocode (symlinked), with a real copy
# of prometheus/common so that it can be edited.
# Planted: the \n escape in a label value yields the letter n, not a newline.
rm -rf "$W/go/gp" && mkdir -p "$W/go/gp/src" && cd "$W/go/gp/src"
cp -rs /usr/share/gocode/src/* .
rm -rf github.com/prometheus/common
cp -r /usr/share/gocode/src/github.com/prometheus/common github.com/prometheus/common
cd github.com/prometheus/common
# readTokenAsLabelValue is the second `case 'n':` of expfmt/text_parse.go
python3 - <<'EOF'
p = "expfmt/text_parse.go"
s = open(p).read()
i = s.index("func (p *TextParser) readTokenAsLabelValue()")
j = s.index("p.currentToken.WriteByte('\\n')", i)
open(p, "w").write(s[:j] + "p.currentToken.WriteByte('n')" + s[j + len("p.currentToken.WriteByte('\\n')"):])
EOF
# command: go test -v ./...
GO111MODULE=off GOPATH="$W/go/gp" go test -v ./... > "$W/out/test-go-prometheus-expfmt-v.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Step 9: test-cargo-bytes
# bytes 1.2.1 from Debian's librust-bytes-dev (installed with librust-tokio-dev
# in /usr/share/cargo/registry; MIT), built offline with Debian's registry as
# the crates.io source.  Debian ships neither serde_test nor loom here, so
# those two dev-dependencies are dropped (test_serde.rs needs feature "serde"
# anyway, loom only applies with --cfg loom).
# Planted: Bytes::split_to(0) hands back the whole buffer.
cargo_offline "$W/rust"
rm -rf "$W/rust/bytes-1.2.1"
cp -r /usr/share/cargo/registry/bytes-1.2.1 "$W/rust/"
cd "$W/rust/bytes-1.2.1"
python3 - <<'EOF'
s = open("Cargo.toml").read()
s = s.replace('[dev-dependencies.serde_test]\nversion = "1.0"\n', "")
s = s.replace('[target."cfg(loom)".dev-dependencies.loom]\nversion = "0.5"\n', "")
open("Cargo.toml", "w").write(s)
EOF
plant src/bytes.rs \
'        if at == 0 {
            return Bytes::new();
        }

        let mut ret = self.clone();

        unsafe { self.inc_start(at) };' \
'        if at == 0 {
            return mem::replace(self, Bytes::new());
        }

        let mut ret = self.clone();

        unsafe { self.inc_start(at) };'
# command: cargo test --no-fail-fast   (RUST_BACKTRACE unset)
env -u RUST_BACKTRACE CARGO_NET_OFFLINE=true cargo test --no-fail-fast \
  > "$W/out/test-cargo-bytes.out" 2>&1 || true

# ---------------------------------------------------------------------------
# Compress: cases/<id>.out.gz (the .json files hold request and needles).
for f in "$W"/out/*.out; do
  id=$(basename "$f" .out)
  gzip -9n -c "$f" > "$HERE/cases/$id.out.gz"
done
