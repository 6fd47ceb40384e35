#!/usr/bin/env bash
# Runs every test: installs what building and testing need (idempotent, fast when present),
# builds the UI bundle (the wasm build of the UI and the wire types) and packages the crates, then
# formatting, lints and all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
JOBS=${JOBS:-2}
# CI builds once in a fresh clone: incremental-compilation data (2.6 GB of a 7.2 GB target
# directory in a cold run) would only be written, never read again. A developer's run keeps it
# for the next edit.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
fi

# --dev: trunk too, which the test of ./scripts/dev.sh (app/tests/it/dev_flow.rs) runs.
echo "== setup (at ${SECONDS} s)"
./scripts/setup.sh --dev
# One command a line: under `set -e` a failure on the left of `&&` would not stop the run.
./scripts/setup-test.sh
export LMCHATKIT_EXPECT_MCP=1
./scripts/setup-browser.sh
export LMCHATKIT_EXPECT_BROWSER=1
echo "== UI and packages (at ${SECONDS} s)"
# The release UI, and the crates packaged with it (target/package/*.crate): the consumer test
# (tests/tests/packaged.rs) builds a fresh crate and the app from those files alone.
./scripts/package.sh
export LMCHATKIT_EXPECT_PACKAGES=1

echo "== fmt (at ${SECONDS} s)";     cargo fmt --all -- --check
echo "== clippy (at ${SECONDS} s)";  cargo clippy --workspace --all-targets -j"$JOBS" -- -D warnings
echo "== clippy (no default features) (at ${SECONDS} s)"
cargo clippy -p lmchatkit --no-default-features --lib -j"$JOBS" -- -D warnings
cargo clippy -p lmchatkit --no-default-features --features test-support --lib -j"$JOBS" -- -D warnings
echo "== docs (at ${SECONDS} s)"
# As docs.rs builds them (server/Cargo.toml's package.metadata.docs.rs: every feature, `--cfg
# docsrs`, which turns on `doc(cfg)` feature badges; docs.rs runs a nightly rustdoc, and
# RUSTC_BOOTSTRAP=1 lets this stable one take the nightly feature), broken links an error. One
# package per command: `--features lmchatkit/redis` beside a second -p did not turn on the
# feature named like a dependency, and its items' links went unchecked.
# It has a target directory of its own: build scripts that probe the compiler (thiserror's)
# rerun when RUSTC_BOOTSTRAP changes, and in the shared one every later build would start over.
docsrs_target="${CARGO_TARGET_DIR:-target}/docsrs"
RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" CARGO_TARGET_DIR="$docsrs_target" \
  cargo doc --no-deps -p lmchatkit --all-features -j"$JOBS"
# A gated item carries its badge (docs.rs shows the same page).
grep -q 'Available on <strong>crate feature <code>redis</code></strong> only' \
  "$docsrs_target/doc/lmchatkit/live/struct.Redis.html" \
  || { echo "docs: live::Redis has no feature badge" >&2; exit 1; }
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p lmchatkit-protocol -j"$JOBS"
echo "== book (at ${SECONDS} s)"; mdbook build docs
echo "== tests (at ${SECONDS} s)";   LMCHATKIT_EXPECT_BUNDLE=1 cargo test --workspace -j"$JOBS"
echo "== TLS with ring alone (at ${SECONDS} s)"
# The library's defaults with rustls-ring instead of rustls: its clients speak TLS with ring.
cargo test -p lmchatkit --lib --no-default-features \
  --features sqlite,openai,anthropic,watch,mcp,rustls-ring -j"$JOBS" tls::
echo "== all tests passed (at ${SECONDS} s)"
