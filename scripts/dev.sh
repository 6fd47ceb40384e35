#!/usr/bin/env bash
# Working on the UI: starts the app on 127.0.0.1:8080 and `trunk serve` on 127.0.0.1:8081, which
# rebuilds the UI on every change under frontend/ or shared/ and forwards /chat/api to the app.
# Open http://127.0.0.1:8081/. The app is told to accept requests from that page's origin
# (--allowed-origin; without it every POST from the page is refused as cross-origin). trunk
# writes into target/trunk-dev/, never into server/assets/ (the bundle the server embeds). Its build
# is not split (frontend/src/lazy.rs): every part of the UI is in the one wasm.
# Arguments go to lmchatkit (e.g. OPENAI_BASE_URL works as for ./scripts/run.sh).
#
# LMCHATKIT_DEV_APP_PORT and LMCHATKIT_DEV_UI_PORT change the two ports; LMCHATKIT_BIN runs a
# built lmchatkit instead of building one; TRUNK_ARGS adds `trunk serve` arguments (--release
# works, but its wasm-release build and ./scripts/build-ui.sh's, made with other flags, then
# rebuild each other's).
#
# trunk's cargo builds in a target folder of its own (target/trunk-dev-build, or below
# CARGO_TARGET_DIR): `--build-only` builds the UI the way `trunk serve` does, then exits, and
# ./scripts/test.sh runs it in the background while it builds the rest, so the test of this
# script (app/tests/it/dev_flow.rs) finds the UI built. In the workspace's own target folder that
# build would hold cargo's lock on it and stop the foreground builds until it ended.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev >/dev/null
# npm binaryen first: trunk must never pick up Debian's wasm-opt (see build-ui.sh).
export PATH="$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
trunk_target="${CARGO_TARGET_DIR:-$PWD/target}/trunk-dev-build"
if [ "${1:-}" = --build-only ]; then
  # Its own dist folder: trunk stages its output in the dist folder, and a `trunk serve`
  # started meanwhile (the dev-flow test's) would remove the stage under it.
  CARGO_TARGET_DIR="$trunk_target" trunk build --dist target/trunk-dev-prebuild
  exit 0
fi
app_port=${LMCHATKIT_DEV_APP_PORT:-8080}
ui_port=${LMCHATKIT_DEV_UI_PORT:-8081}
app=${LMCHATKIT_BIN:-}
if [ -z "$app" ]; then
  cargo build -p lmchatkit-app
  app=target/debug/lmchatkit
fi
"$app" --listen "127.0.0.1:$app_port" --allowed-origin "http://127.0.0.1:$ui_port" "$@" &
app_pid=$!
trap 'kill "$app_pid" 2>/dev/null || true' EXIT INT TERM
# shellcheck disable=SC2086 # TRUNK_ARGS is a list of arguments
CARGO_TARGET_DIR="$trunk_target" trunk serve --port "$ui_port" --dist target/trunk-dev \
  --proxy-backend "http://127.0.0.1:$app_port/chat/api" ${TRUNK_ARGS:-}
