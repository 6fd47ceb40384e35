#!/usr/bin/env bash
# Builds the UI and the app, then starts it. Arguments go to `lmchatkit` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build-ui.sh
exec cargo run --release -p lmchatkit-app -- "$@"
