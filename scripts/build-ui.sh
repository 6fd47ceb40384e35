#!/usr/bin/env bash
# scripts/build-ui.sh — builds the UI (frontend/) into server/assets/ with trunk (see Trunk.toml),
# for server/build.rs to embed. Needs the tools from ./scripts/setup.sh; downloads nothing.
# After a UI change, rebuild the server too (cargo notices the new files in server/assets/).
# Extra arguments go to `trunk build` (e.g. none for a size-optimised release build).
set -euo pipefail
cd "$(dirname "$0")/.."
# npm binaryen@132 first: trunk must never pick up Debian's wasm-opt 108 (it corrupts the wasm).
export PATH="$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
if ! command -v trunk >/dev/null || [ ! -x .tools/node_modules/.bin/wasm-opt ]; then
  echo "build-ui: trunk or wasm-opt missing; run ./scripts/setup.sh first" >&2
  exit 1
fi
start=$(date +%s)
trunk build --release "$@"
echo "build-ui: server/assets/ built in $(( $(date +%s) - start )) s:"
ls -l server/assets | sed -n '2,$p'
