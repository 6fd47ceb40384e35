#!/usr/bin/env bash
# scripts/setup.sh — installs what building and running lmchatkit needs, on a fresh Debian 12
# machine (root, network limited to the package registries). Idempotent: every step first checks
# the installed version and does nothing when it already matches (about 1 s in total then).
#
#   - Rust target wasm32-unknown-unknown            (rustup)
#   - trunk 0.21.14                                  (crates.io; 0.22.x needs rustc >= 1.96.1)
#   - wasm-bindgen-cli = the wasm-bindgen in Cargo.lock (trunk only uses an exact match)
#   - wasm-opt from npm binaryen@132.0.0 into .tools/ (never Debian's binaryen 108: it corrupts the wasm)
#   - the code highlighter: npm @highlightjs/cdn-assets@11.11.1 into .tools/ (scripts/build-ui.sh
#     turns its core + a few languages into the UI's lazily loaded highlighter asset)
#
# Browser-test dependencies (Chromium, chromedriver) are installed by another script.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

TRUNK_VER=0.21.14
BINARYEN_VER=132.0.0
HLJS_VER=11.11.1
WB_VER=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$WB_VER" ]; then
  echo "setup: cannot find the wasm-bindgen version in Cargo.lock" >&2
  exit 1
fi

did=()
step() { echo "setup: $*"; }

# 1. wasm32 target
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "wasm32-unknown-unknown target present"
else
  step "adding rustup target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
  did+=("wasm32 target")
fi

# 2. trunk (P1: --locked with an explicit version; the newest trunk needs a newer rustc)
if [ "$(trunk --version 2>/dev/null || true)" = "trunk $TRUNK_VER" ]; then
  step "trunk $TRUNK_VER present"
else
  step "installing trunk $TRUNK_VER (cargo install, ~6-10 min on 2 cores)"
  # --force: cargo's own record may say it is installed while the binary is gone or another
  # version; this step only runs when `trunk --version` did not answer the pinned one.
  cargo install trunk --version "$TRUNK_VER" --locked --force
  did+=("trunk $TRUNK_VER")
fi

# 3. wasm-bindgen-cli (P2: its shipped lockfile may pin crates the reachable registry lacks)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" = "wasm-bindgen $WB_VER" ]; then
  step "wasm-bindgen-cli $WB_VER present"
else
  step "installing wasm-bindgen-cli $WB_VER (cargo install, ~2 min)"
  # --force, as for trunk: a record of an install whose binary is gone must not stop it.
  if ! cargo install wasm-bindgen-cli --version "$WB_VER" --locked --force; then
    step "--locked failed (lockfile pins a crate version the registry lacks); retrying without it"
    cargo install wasm-bindgen-cli --version "$WB_VER" --force
  fi
  did+=("wasm-bindgen-cli $WB_VER")
fi

# 4. npm packages in .tools/: wasm-opt (P3: pinned npm build; scripts/build-ui.sh puts it first on
#    PATH) and highlight.js. One `npm install` for both: with --no-save, npm removes any package
#    of the prefix that the command does not name.
npm_version() {
  sed -n 's/^  "version": "\(.*\)",$/\1/p' ".tools/node_modules/$1/package.json" 2>/dev/null || true
}
if [ "$(npm_version binaryen)" = "$BINARYEN_VER" ] && [ -x .tools/node_modules/.bin/wasm-opt ] \
  && [ "$(npm_version @highlightjs/cdn-assets)" = "$HLJS_VER" ]; then
  step "wasm-opt (npm binaryen@$BINARYEN_VER) and @highlightjs/cdn-assets@$HLJS_VER present in .tools/"
else
  if ! command -v npm >/dev/null; then
    step "npm not found; installing Debian's nodejs + npm"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
  fi
  step "installing npm binaryen@$BINARYEN_VER and @highlightjs/cdn-assets@$HLJS_VER into .tools/"
  mkdir -p .tools
  npm install --prefix .tools --no-audit --no-fund --no-save \
    "binaryen@$BINARYEN_VER" "@highlightjs/cdn-assets@$HLJS_VER"
  did+=("binaryen $BINARYEN_VER, highlight.js $HLJS_VER")
fi

if [ ${#did[@]} -eq 0 ]; then
  step "nothing to do"
else
  step "installed: ${did[*]}"
fi
echo "setup ok: $(trunk --version), $(wasm-bindgen --version), $(.tools/node_modules/.bin/wasm-opt --version), highlight.js $(npm_version @highlightjs/cdn-assets)"
