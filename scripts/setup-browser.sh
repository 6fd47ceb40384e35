#!/usr/bin/env bash
# scripts/setup-browser.sh — installs what the browser end-to-end tests (tests/tests/browser/) need:
# Debian's `chromium` and `chromium-driver` (never a downloaded browser build). Idempotent: does
# nothing when both are already on PATH.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "setup-browser: $(chromium --version 2>/dev/null | head -1) and chromedriver present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-browser: chromium/chromedriver missing and not root; install Debian's chromium chromium-driver" >&2
  exit 1
fi
# apt runs one at a time: scripts/test.sh runs the setup scripts side by side.
apt_install() {
  flock "${TMPDIR:-/tmp}/lmchatkit-apt.lock" sh -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"' apt "$@"
}
start=$(date +%s)
echo "setup-browser: installing Debian chromium + chromium-driver (apt)"
apt_install --no-install-recommends chromium chromium-driver
echo "setup-browser: installed in $(( $(date +%s) - start )) s: $(chromium --version 2>/dev/null | head -1)"
