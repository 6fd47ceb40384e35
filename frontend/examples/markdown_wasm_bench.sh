#!/usr/bin/env bash
# Builds the markdown renderer to wasm (wasm-release profile, wasm-opt -Oz like the bundle) and
# times it in node: per-delta push + html while a 48 KB reply streams (issue 4, "Measured").
# WASM_OPT defaults to the pinned .tools/ wasm-opt.
set -euo pipefail
cd "$(dirname "$0")/../.."
WASM_OPT=${WASM_OPT:-.tools/node_modules/.bin/wasm-opt}
target=${CARGO_TARGET_DIR:-target}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo build -q -p lmchatkit-web --example markdown_wasm_bench --target wasm32-unknown-unknown \
  --profile wasm-release
wasm-bindgen --target nodejs --no-typescript --out-dir "$out" \
  "$target/wasm32-unknown-unknown/wasm-release/examples/markdown_wasm_bench.wasm"
"$WASM_OPT" -Oz "$out/markdown_wasm_bench_bg.wasm" -o "$out/markdown_wasm_bench_bg.wasm"
node frontend/examples/markdown_wasm_bench.js "$out"
