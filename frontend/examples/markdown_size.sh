#!/usr/bin/env bash
# Measures what the markdown renderer adds to the UI's wasm (issue 4, "Measured"): builds the
# wasm-release bundle without and with the renderer linked in (feature markdown-size-probe, which
# exports a function calling it), runs wasm-bindgen and wasm-opt -Oz like trunk does, and prints
# raw and gzip -9 sizes. Run from anywhere; WASM_OPT defaults to the pinned .tools/ wasm-opt.
set -euo pipefail
cd "$(dirname "$0")/../.."
WASM_OPT=${WASM_OPT:-.tools/node_modules/.bin/wasm-opt}
target=${CARGO_TARGET_DIR:-target}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

size() { stat -c %s "$1"; }
gz() { gzip -9 -c "$1" | wc -c; }

for variant in without with; do
  features=()
  [ "$variant" = with ] && features=(--features markdown-size-probe)
  cargo build -q -p lmchatkit-web --target wasm32-unknown-unknown --profile wasm-release "${features[@]}"
  wasm-bindgen --target web --no-typescript --out-dir "$out/$variant" \
    "$target/wasm32-unknown-unknown/wasm-release/lmchatkit-web.wasm"
  "$WASM_OPT" -Oz "$out/$variant/lmchatkit-web_bg.wasm" -o "$out/$variant/opt.wasm"
  for f in lmchatkit-web_bg.wasm opt.wasm lmchatkit-web.js; do
    printf '%-8s %-22s raw %8d  gz %7d\n' "$variant" "$f" "$(size "$out/$variant/$f")" "$(gz "$out/$variant/$f")"
  done
done
for f in lmchatkit-web_bg.wasm opt.wasm; do
  printf 'delta    %-22s raw %+8d  gz %+7d\n' "$f" \
    $(( $(size "$out/with/$f") - $(size "$out/without/$f") )) \
    $(( $(gz "$out/with/$f") - $(gz "$out/without/$f") ))
done
