#!/usr/bin/env bash
# apt-get install the Debian packages named (the caller names only what is missing): as root, else
# with sudo. apt's output goes to a scratch log, shown (its last lines) only when it fails.
# Exit 0: installed; 3: neither root nor sudo (nothing tried); else apt-get's failure.
set -euo pipefail
(($#)) || exit 0
SUDO=
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || exit 3
  SUDO=sudo
fi
echo "apt-get install $* (about a minute)" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"; } >"$log" 2>&1; then
  tail -20 "$log" >&2
  exit 1
fi
