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
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev >/dev/null
# npm binaryen first: trunk must never pick up Debian's wasm-opt (see build-ui.sh).
export PATH="$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
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
trunk serve --port "$ui_port" --dist target/trunk-dev \
  --proxy-backend "http://127.0.0.1:$app_port/chat/api" ${TRUNK_ARGS:-}
