#!/usr/bin/env bash
# scripts/package.sh — the crates as crates.io gets them. Builds the release UI bundle
# (./scripts/setup.sh installs the wasm tools, ./scripts/build-ui.sh writes server/assets/) and
# runs `cargo package` for every crate meant for crates.io: lmchatkit-protocol, lmchatkit and
# lmchatkit-app, and `cargo publish --dry-run` of the three. The `.crate` files land in
# target/package/.
#
# The library's `.crate` carries the bundle (server/assets/, named in its `include`), so a
# build from it needs nothing but crates.io: no trunk, wasm-bindgen, wasm-opt, node or npm. A
# packaged copy without the bundle does not compile (server/build.rs says why); inside the
# repository an unbuilt UI is only a "not built" page.
#
# `cargo package` does not build what it packs here (`--no-verify`): the consumer test does,
# from the `.crate` files alone (tests/tests/packaged.rs, which ./scripts/test.sh runs after
# this script), the way a user's build would. Set PACKAGE_VERIFY=1 to have cargo build each
# package as well. Takes no arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -gt 0 ]; then
  echo "package: takes no arguments" >&2
  exit 2
fi
export PATH="$HOME/.cargo/bin:$PATH"
./scripts/setup.sh
./scripts/build-ui.sh

verify=(--no-verify)
if [ "${PACKAGE_VERIFY:-0}" = 1 ]; then
  verify=()
fi
# --allow-dirty: a developer packages the working tree as it is; CI packages a clean clone
# (the bundle in server/assets/ is ignored by git, so it never makes the tree dirty).
cargo package -p lmchatkit-protocol -p lmchatkit -p lmchatkit-app \
  --allow-dirty "${verify[@]}" -j"${JOBS:-2}"
# What `cargo publish` checks before it uploads (metadata, the dependencies' versions on the
# registry side, the crates in order), without uploading.
cargo publish --dry-run -p lmchatkit-protocol -p lmchatkit -p lmchatkit-app \
  --allow-dirty --no-verify
for c in target/package/*.crate; do
  printf '%s\t%s bytes\n' "$c" "$(stat -c %s "$c")"
done
