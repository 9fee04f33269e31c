#!/usr/bin/env bash
# How the vcs-* cases of the tool-output corpus were made (search and version control).
#
# Documentation and a way to regenerate by hand; CI does not run it. Every output is the real
# tool run here on real, permissively licensed code:
#   - the trees already unpacked in benchmarks/.data/ (sympy, rust-tokio, ts-tree, js-tree),
#   - this repository's own history (git log / git show of /work/main),
#   - repositories built in /tmp from successive real releases of packaging (PyPI) and semver (npm).
#
# Each step writes $OUT/<id>.out (stdout and stderr as the terminal shows them) and then
# gzips it the reproducible way into $OUT/<id>.out.gz (gzip -9n); the .out.gz files are copied
# into benchmarks/tool_corpus/cases/ by hand, next to the hand-written <id>.json.
#
# Needs: git, ripgrep (apt-get install ripgrep; 13.0.0 was used), pip (the project's venv),
# npm, GNU grep and find. Scratch work goes in /tmp/corpus-vcs.
#
# Notes on reproducibility:
#   - rg is run with --sort path, so its order is stable (without it rg's threads print files
#     in a different order every run). rg --json prints elapsed times, which differ run to run.
#   - grep -r and find print in directory order, which depends on the filesystem the tree was
#     unpacked on; the stored outputs are the order found here.
#   - the release repositories get fixed author names, empty e-mails and the release dates, so
#     their commit ids are the same every time they are built.
set -euo pipefail

MAIN=${MAIN:-/work/main}
DATA=$MAIN/benchmarks/.data
WORK=${WORK:-/tmp/corpus-vcs}
OUT=${OUT:-$WORK/out}
mkdir -p "$WORK" "$OUT"

finish() {  # finish ID: compress $OUT/ID.out reproducibly
    gzip -9n -c "$OUT/$1.out" > "$OUT/$1.out.gz"
}

# ---------------------------------------------------------------------------------------------
# Step 1. vcs-grep-sympy-xfail: grep -rn for a common word over sympy (BSD-3-Clause,
# sympy 1.14.0 from PyPI, unpacked in benchmarks/.data/sympy). The request asks where the XFAIL
# decorator is defined; the ~540 usages in test files are noise.
( cd "$DATA/sympy" && grep -rn XFAIL sympy ) > "$OUT/vcs-grep-sympy-xfail.out" 2>&1
finish vcs-grep-sympy-xfail

# ---------------------------------------------------------------------------------------------
# Step 2. vcs-rg-heading-tokio-semaphore: ripgrep's grouped output (--heading, as on a
# terminal) over the Debian librust-*-dev crates of benchmarks/.data/rust-tokio (tokio 1.24.2,
# MIT). The request asks for the public Semaphore, not the crate-private ones.
( cd "$DATA/rust-tokio" && rg -n --heading --sort path Semaphore ) > "$OUT/vcs-rg-heading-tokio-semaphore.out" 2>&1
finish vcs-rg-heading-tokio-semaphore

# ---------------------------------------------------------------------------------------------
# Step 3. vcs-rg-json-effect-withspan: rg --json over benchmarks/.data/ts-tree (effect 4.1.0,
# @effect/platform 0.97.2, zod, rxjs, @tanstack/*; all MIT or Apache-2.0). The request asks
# where Effect.withSpan is defined.
( cd "$DATA/ts-tree" && rg --json --sort path withSpan ) > "$OUT/vcs-rg-json-effect-withspan.out" 2>&1
finish vcs-rg-json-effect-withspan

# ---------------------------------------------------------------------------------------------
# Step 4. vcs-rg-n-zod-uuid: rg -n -i over zod 4.6.7's TypeScript sources (MIT) in
# benchmarks/.data/ts-tree/zod. The request asks which regex backs uuid validation (v4 and v3).
( cd "$DATA/ts-tree" && rg -n -i --sort path uuid zod ) > "$OUT/vcs-rg-n-zod-uuid.out" 2>&1
finish vcs-rg-n-zod-uuid

# ---------------------------------------------------------------------------------------------
# Step 5. vcs-find-webpack-splitchunks: find . -type f over benchmarks/.data/js-tree
# (webpack 5.113.0 and eslint 10.15.0 from npm, both MIT). The request asks for one file.
( cd "$DATA/js-tree" && find . -type f ) > "$OUT/vcs-find-webpack-splitchunks.out" 2>&1
finish vcs-find-webpack-splitchunks

# ---------------------------------------------------------------------------------------------
# Step 6. vcs-git-log-p-gateway-replan: git log -p of this repository's own history, limited to
# ctx_lsp/gateway (ours to use). The request asks what one commit (a held request whose re-plan
# fails) changed. The last 3 commits touching the gateway at the time are left out by -n.
# The history was at 3be2e78 when this was made; later commits to ctx_lsp/gateway change what
# -n 17 shows, so name the start: the output was made with HEAD = 3be2e78.
git -C "$MAIN" log -p -n 17 3be2e78 -- ctx_lsp/gateway > "$OUT/vcs-git-log-p-gateway-replan.out" 2>&1
finish vcs-git-log-p-gateway-replan

# ---------------------------------------------------------------------------------------------
# Step 7. vcs-git-show-polyglot-trees: git show of one big commit of this repository (ef4b3d0,
# which added benchmarks/polyglot_trees.py and parse_floor.py). The request asks which package
# versions it pins.
git -C "$MAIN" show ef4b3d0 > "$OUT/vcs-git-show-polyglot-trees.out" 2>&1
finish vcs-git-show-polyglot-trees

# ---------------------------------------------------------------------------------------------
# Step 8. vcs-git-log-stat-tokens: git log --stat -n 100 of this repository, from 3be2e78 (the
# agent ran it at HEAD = 3be2e78). The request asks which commit last touched ctx_lsp/core/tokens.py.
git -C "$MAIN" log --stat -n 100 3be2e78 > "$OUT/vcs-git-log-stat-tokens.out" 2>&1
finish vcs-git-log-stat-tokens

# ---------------------------------------------------------------------------------------------
# Steps 9-10 use a repository built from 8 real releases of packaging (PyPI sdists, Apache-2.0
# OR BSD-2-Clause): one commit per release, the tree replaced by the sdist's contents, the
# commit message "packaging X" followed by that release's bullets from the CHANGELOG.rst of
# packaging 25.0, the author and committer dates set to the release date from that changelog.
PKG_DL=$WORK/dl/packaging
mkdir -p "$PKG_DL"
PKG_VERSIONS="22.0 23.0 23.1 23.2 24.0 24.1 24.2 25.0"
for v in $PKG_VERSIONS; do
    [ -f "$PKG_DL/packaging-$v.tar.gz" ] ||
        "$MAIN/.venv/bin/pip" download -q --no-deps --no-binary :all: "packaging==$v" -d "$PKG_DL"
done
tar xzf "$PKG_DL/packaging-25.0.tar.gz" -O packaging-25.0/CHANGELOG.rst > "$WORK/packaging-CHANGELOG-25.0.rst"
cat > "$WORK/mkmsg.py" <<'EOF'
# Commit message for one packaging release, from the CHANGELOG.rst of packaging 25.0:
# prints "<date>" on the first line, then "packaging <v>" as subject and the release's bullets as body.
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
v = sys.argv[2]
m = re.search(r"^" + re.escape(v) + r" - (\d{4}-\d\d-\d\d)\n~+\n\n(.*?)(?=\n\S+ - \d{4}-\d\d-\d\d\n~|\Z)", text, re.S | re.M)
print(m.group(1))
print(f"packaging {v}")
print()
print(m.group(2).strip())
EOF
REPO=$WORK/repo-packaging
rm -rf "$REPO" && mkdir -p "$REPO"
(
    cd "$REPO"
    git init -q -b main
    for v in $PKG_VERSIONS; do
        find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
        tar xzf "$PKG_DL/packaging-$v.tar.gz" --strip-components=1
        python3 "$WORK/mkmsg.py" "$WORK/packaging-CHANGELOG-25.0.rst" "$v" > "$WORK/msg.txt"
        d=$(head -1 "$WORK/msg.txt")
        tail -n +2 "$WORK/msg.txt" > "$WORK/msg2.txt"
        # A fresh index: sdists carry fixed mtimes, and a reused inode with the same size and
        # mtime would make git's stat cache skip a changed file.
        rm -f .git/index
        git add -A
        GIT_AUTHOR_NAME="packaging release" GIT_AUTHOR_EMAIL="" \
        GIT_COMMITTER_NAME="packaging release" GIT_COMMITTER_EMAIL="" \
        GIT_AUTHOR_DATE="${d}T12:00:00Z" GIT_COMMITTER_DATE="${d}T12:00:00Z" \
            git commit -q -F "$WORK/msg2.txt"
        git tag "$v"
    done
)

# Step 9. vcs-git-log-p-packaging-specifiers: the history of one file across the releases.
# The request asks which release fixed specifier matching with an epoch and how.
git -C "$REPO" log -p -- src/packaging/specifiers.py > "$OUT/vcs-git-log-p-packaging-specifiers.out" 2>&1
finish vcs-git-log-p-packaging-specifiers

# Step 10. vcs-git-blame-packaging-tags: git blame of the 656-line src/packaging/tags.py at 25.0.
# The request asks which release added the free-threaded (Py_GIL_DISABLED) check.
git -C "$REPO" blame src/packaging/tags.py > "$OUT/vcs-git-blame-packaging-tags.out" 2>&1
finish vcs-git-blame-packaging-tags

# ---------------------------------------------------------------------------------------------
# Step 11. vcs-git-diff-semver-coerce: git diff between two real releases of semver (npm, ISC),
# 7.5.4 and 7.7.2, each unpacked from `npm pack` into one commit of a scratch repository.
# The request asks what changed in coerce().
NPM_DL=$WORK/dl/npm
mkdir -p "$NPM_DL"
( cd "$NPM_DL" && for v in 7.5.4 7.7.2; do [ -f semver-$v.tgz ] || npm pack -q semver@$v; done )
SREPO=$WORK/repo-semver
rm -rf "$SREPO" && mkdir -p "$SREPO"
(
    cd "$SREPO"
    git init -q -b main
    for v in 7.5.4 7.7.2; do
        find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
        tar xzf "$NPM_DL/semver-$v.tgz" --strip-components=1
        rm -f .git/index  # a fresh index, as for packaging above
        git add -A
        GIT_AUTHOR_NAME="npm release" GIT_AUTHOR_EMAIL="" GIT_COMMITTER_NAME="npm release" GIT_COMMITTER_EMAIL="" \
        GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z" \
            git commit -q -m "semver $v"
        git tag "v$v"
    done
)
git -C "$SREPO" diff v7.5.4 v7.7.2 > "$OUT/vcs-git-diff-semver-coerce.out" 2>&1
finish vcs-git-diff-semver-coerce

ls -l "$OUT"/*.out.gz
