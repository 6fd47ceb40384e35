#!/usr/bin/env bash
# scripts/setup.sh — installs what building and running lmchatkit needs, on a fresh Debian 12
# machine (root, network limited to the package registries). Idempotent: every step first checks
# the installed version and does nothing when it already matches (about 1 s in total then).
#
#   - Rust target wasm32-unknown-unknown            (rustup)
#   - wasm-bindgen-cli = the wasm-bindgen in Cargo.lock (the glue must match the crate exactly)
#   - wasm-split-cli 0.2.4 (crates.io wasm_split_cli_support): splits the UI's wasm at its split
#     points (frontend/src/lazy.rs) before wasm-bindgen, in scripts/build-ui.sh
#   - with --dev only: trunk 0.21.14 (crates.io; 0.22.x needs rustc >= 1.96.1), for the UI's dev
#     loop (scripts/dev.sh) and its test (app/tests/it/dev_flow.rs, which scripts/test.sh runs);
#     building the bundle does not use it. --trunk installs it alone.
#   - wasm-opt from npm binaryen@132.0.0 into .tools/ (never Debian's binaryen 108: it corrupts the wasm)
#   - the code highlighter: npm @highlightjs/cdn-assets@11.11.1 into .tools/ (scripts/build-ui.sh
#     turns its core + a few languages into the UI's lazily loaded highlighter asset)
#   - the diagram renderer: npm mermaid@12.4.0's one-file build (dist/mermaid.min.js, checked
#     against its SHA-256) into .tools/mermaid-<version>/, with its gzip and brotli copies made
#     once here (scripts/build-ui.sh copies the three into the bundle; compressing 5.8 MB again
#     on every UI build would cost it ~40 s)
#   - zopfli (Debian's package, Google's reference implementation): scripts/build-ui.sh writes
#     the bundle's precompressed `.gz` copies with it (the same gzip format, ~5% smaller than
#     zlib's level 9)
#
# Browser-test dependencies (Chromium, chromedriver) are installed by another script.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

TRUNK_VER=0.21.14
SPLIT_VER=0.2.4
DEV=0
ONLY_TRUNK=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    # trunk alone: scripts/test.sh builds it in the background while the rest runs.
    --trunk) DEV=1; ONLY_TRUNK=1 ;;
    *) echo "setup: unknown argument $arg (--dev or --trunk)" >&2; exit 2 ;;
  esac
done
BINARYEN_VER=132.0.0
HLJS_VER=11.11.1
MERMAID_VER=12.4.0
MERMAID_SHA256=c0891e4c0413d0710ad193b431d8cbbe9d031636e51c467d11daa4721ba22094
WB_VER=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$WB_VER" ]; then
  echo "setup: cannot find the wasm-bindgen version in Cargo.lock" >&2
  exit 1
fi

did=()
step() { echo "setup: $*"; }
# apt runs one at a time: scripts/test.sh runs the setup scripts side by side.
apt_install() {
  flock "${TMPDIR:-/tmp}/lmchatkit-apt.lock" sh -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"' apt "$@"
}

# `cargo install` of the tools, built for a fast install rather than a fast tool: their work
# here takes seconds (one wasm, one book), while their own release profiles take minutes to
# compile on 2 cores (trunk's: fat LTO and one codegen unit, 410 s as published). OPT is the
# opt-level (1 for the tools that rewrite the UI's wasm, 0 for trunk, which only drives them).
# One target folder for every install, removed afterwards: what two tools share builds once.
# (trunk's own with --trunk, which may run beside another install).
tools_target="${CARGO_TARGET_DIR:-$PWD/target}/tools-build"
[ "$ONLY_TRUNK" = 1 ] && tools_target="$tools_target-trunk"
tool_install() {
  local opt=$1
  shift
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt" CARGO_PROFILE_RELEASE_DEBUG=false \
    CARGO_PROFILE_RELEASE_INCREMENTAL=false CARGO_TARGET_DIR="$tools_target" \
    cargo install "$@" -j"${JOBS:-2}"
}
trap 'rm -rf "$tools_target"' EXIT

install_trunk() {
  if [ "$(trunk --version 2>/dev/null || true)" = "trunk $TRUNK_VER" ]; then
    step "trunk $TRUNK_VER present"
  else
    step "installing trunk $TRUNK_VER (cargo install, ~3 min on 2 cores)"
    # No default features: no TLS and no update check; it runs the tools installed here
    # rather than downloading its own.
    tool_install 0 trunk --version "$TRUNK_VER" --locked --no-default-features --force
    did+=("trunk $TRUNK_VER")
  fi
}
if [ "$ONLY_TRUNK" = 1 ]; then
  install_trunk
  echo "setup ok: $(trunk --version)"
  exit 0
fi

# 1. wasm32 target
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "wasm32-unknown-unknown target present"
else
  step "adding rustup target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
  did+=("wasm32 target")
fi

# 2. wasm-split-cli (--locked with an explicit version). It prints no version, so the version
#    cargo installed is read from cargo's install record, and the binary must be there too.
if command -v wasm-split-cli >/dev/null \
  && cargo install --list | grep -qx "wasm_split_cli_support v$SPLIT_VER:"; then
  step "wasm-split-cli $SPLIT_VER present"
else
  step "installing wasm-split-cli $SPLIT_VER (cargo install, ~2 min)"
  # --force: cargo's own record may say it is installed while the binary is gone or another
  # version; this step only runs when the check above failed.
  tool_install 1 wasm_split_cli_support --version "$SPLIT_VER" --features build-binary \
    --locked --force
  did+=("wasm-split-cli $SPLIT_VER")
fi
# trunk, for scripts/dev.sh only (P1: --locked with an explicit version).
if [ "$DEV" = 1 ]; then
  install_trunk
fi

# 3. wasm-bindgen-cli (P2: its shipped lockfile may pin crates the reachable registry lacks)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" = "wasm-bindgen $WB_VER" ]; then
  step "wasm-bindgen-cli $WB_VER present"
else
  step "installing wasm-bindgen-cli $WB_VER (cargo install, ~2 min)"
  # --force, as for wasm-split-cli: a record of an install whose binary is gone must not stop it.
  if ! tool_install 1 wasm-bindgen-cli --version "$WB_VER" --locked --force; then
    step "--locked failed (lockfile pins a crate version the registry lacks); retrying without it"
    tool_install 1 wasm-bindgen-cli --version "$WB_VER" --force
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
    apt_install nodejs npm
  fi
  step "installing npm binaryen@$BINARYEN_VER and @highlightjs/cdn-assets@$HLJS_VER into .tools/"
  mkdir -p .tools
  npm install --prefix .tools --no-audit --no-fund --no-save \
    "binaryen@$BINARYEN_VER" "@highlightjs/cdn-assets@$HLJS_VER"
  did+=("binaryen $BINARYEN_VER, highlight.js $HLJS_VER")
fi

# 5. Mermaid, for the UI's diagrams (loaded only when a diagram appears). Only the package's
#    self-contained one-file build is kept: `npm pack` fetches the tarball (28 MB) without its
#    dependencies, which that file already holds. Its compressed copies are made here, once per
#    version: gzip level 9 and brotli quality 11 (window 2^24), each checked to decompress to it.
MERMAID_DIR=.tools/mermaid-$MERMAID_VER
if [ -f "$MERMAID_DIR/mermaid.min.js.br" ] && [ -f "$MERMAID_DIR/mermaid.min.js.gz" ] \
  && [ "$(sha256sum "$MERMAID_DIR/mermaid.min.js" 2>/dev/null | cut -c1-64)" = "$MERMAID_SHA256" ]; then
  step "mermaid $MERMAID_VER present in $MERMAID_DIR/"
else
  step "fetching npm mermaid@$MERMAID_VER (its one-file build) into $MERMAID_DIR/"
  rm -rf "$MERMAID_DIR" && mkdir -p "$MERMAID_DIR/pack"
  npm pack --silent --pack-destination "$MERMAID_DIR/pack" "mermaid@$MERMAID_VER" >/dev/null
  tar -xzf "$MERMAID_DIR/pack/mermaid-$MERMAID_VER.tgz" -C "$MERMAID_DIR/pack" \
    package/dist/mermaid.min.js package/LICENSE
  got=$(sha256sum "$MERMAID_DIR/pack/package/dist/mermaid.min.js" | cut -c1-64)
  if [ "$got" != "$MERMAID_SHA256" ]; then
    echo "setup: mermaid.min.js has SHA-256 $got, expected $MERMAID_SHA256" >&2
    exit 1
  fi
  mv "$MERMAID_DIR/pack/package/dist/mermaid.min.js" "$MERMAID_DIR/pack/package/LICENSE" "$MERMAID_DIR/"
  rm -rf "$MERMAID_DIR/pack"
  node -e '
    const fs = require("fs"), zlib = require("zlib"), file = process.argv[1];
    const body = fs.readFileSync(file);
    const gz = zlib.gzipSync(body, { level: 9 });
    const br = zlib.brotliCompressSync(body, { params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
      [zlib.constants.BROTLI_PARAM_LGWIN]: 24,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
    } });
    if (!zlib.gunzipSync(gz).equals(body) || !zlib.brotliDecompressSync(br).equals(body)) {
      console.error("setup: mermaid compression round trip failed"); process.exit(1);
    }
    fs.writeFileSync(file + ".gz", gz);
    fs.writeFileSync(file + ".br", br);
  ' "$MERMAID_DIR/mermaid.min.js"
  did+=("mermaid $MERMAID_VER")
fi

# 6. zopfli, for the bundle's `.gz` files.
if command -v zopfli >/dev/null; then
  step "zopfli present"
else
  step "installing Debian's zopfli (apt)"
  apt_install --no-install-recommends zopfli
  did+=("zopfli")
fi

if [ ${#did[@]} -eq 0 ]; then
  step "nothing to do"
else
  step "installed: ${did[*]}"
fi
trunk_note=""
[ "$DEV" = 1 ] && trunk_note="$(trunk --version), "
echo "setup ok: ${trunk_note}wasm-split-cli $SPLIT_VER, $(wasm-bindgen --version), $(.tools/node_modules/.bin/wasm-opt --version), highlight.js $(npm_version @highlightjs/cdn-assets), mermaid $MERMAID_VER, zopfli"
