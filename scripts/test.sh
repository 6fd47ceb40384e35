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
# Nor is the line-table debug info of the workspace's own crates (the dependencies have none):
# a failing test still names its file and line (panics carry their location without it), and
# the run links faster into a smaller target directory.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
  export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-false}
fi

echo "== setup (at ${SECONDS} s)"
logs="${CARGO_TARGET_DIR:-target}"
mkdir -p "$logs"
setup_done="$logs/setup-background.setup-done"
rm -f "$setup_done"
# trunk (which the test of ./scripts/dev.sh, app/tests/it/dev_flow.rs, runs), then the UI's
# debug build that test serves (`./scripts/dev.sh --build-only`, in trunk's own target folder),
# then mdbook (for the book) build in the background, niced: on a fresh machine they take the
# cores the steps below leave idle (downloads, links, the wasm's LTO, wasm-opt, zopfli,
# rustdoc). The tests
# wait for trunk only (its marker file), and from then on what still runs in the background runs
# at normal priority (a niced build would starve beside the tests, and the dev-flow test would
# wait for it); the book, built after the tests, waits for mdbook.
tools_log="$logs/setup-background.log"
trunk_ready="$logs/setup-background.trunk-ready"
rm -f "$trunk_ready"
# trunk's install starts at once, beside setup.sh's (their cargo waits its turn for the package
# cache only); the dev build waits for the foreground setup, whose tools it uses. The UI's dev
# build only saves the dev-flow test time: when it fails, that test builds it itself, and says
# why if it cannot.
nice -n 19 bash -c "./scripts/setup.sh --trunk && touch '$trunk_ready' \
  && while [ ! -e '$setup_done' ]; do sleep 1; done \
  && { ./scripts/dev.sh --build-only || echo 'setup: the dev build failed; the dev-flow test builds its own'; } \
  && ./scripts/setup-test.sh --mdbook" >"$tools_log" 2>&1 &
tools_pid=$!
# The test tools (npm, PyPI) and Chromium (apt) download while setup.sh compiles the UI's tools
# (apt calls take turns, by a lock in the scripts); their output follows setup.sh's.
./scripts/setup-test.sh --no-mdbook >"$logs/setup-test.log" 2>&1 &
setup_test_pid=$!
./scripts/setup-browser.sh >"$logs/setup-browser.log" 2>&1 &
setup_browser_pid=$!
# `finish_job pid log what`: waits for a background job, shows its log, and ends the run
# saying "<what> failed" when the job did.
finish_job() {
  local status=0
  wait "$1" || status=$?
  cat "$2"
  if [ "$status" != 0 ]; then
    echo "$3 failed (exit $status)" >&2
    exit 1
  fi
}
# `each_in_tree f pid`: f on a process's descendants, then on it.
each_in_tree() {
  local child
  for child in $(pgrep -P "$2" || true); do each_in_tree "$1" "$child"; done
  "$1" "$2"
}
# On the way out, whatever still runs in the background goes too, with its children (cargo,
# trunk).
stop() { kill "$1" 2>/dev/null || true; }
trap 'for p in "$tools_pid" "$setup_test_pid" "$setup_browser_pid"; do each_in_tree stop "$p"; done' EXIT
./scripts/setup.sh
finish_job "$setup_test_pid" "$logs/setup-test.log" "setup-test.sh"
finish_job "$setup_browser_pid" "$logs/setup-browser.log" "setup-browser.sh"
export LMCHATKIT_EXPECT_MCP=1
export LMCHATKIT_EXPECT_BROWSER=1
touch "$setup_done"
# Back to normal priority.
unnice() { renice -n 0 -p "$1" >/dev/null 2>&1 || true; }
echo "== UI and packages (at ${SECONDS} s)"
# The release UI, and the crates packaged with it (target/package/*.crate): the consumer test
# (tests/tests/packaged.rs) builds a fresh crate and the app from those files alone.
./scripts/package.sh
export LMCHATKIT_EXPECT_PACKAGES=1

echo "== fmt (at ${SECONDS} s)";     cargo fmt --all -- --check
# Clippy over every target (`--test browser --test packaged`: those two are not in
# `--all-targets`, tests/Cargo.toml says why). In CI, which builds once in a fresh clone, the lints run while
# the tests' build compiles the workspace (below): clippy-driver is then the workspace's
# compiler, as `cargo clippy` makes it for `cargo check`, with the same `-D warnings`
# (CLIPPY_ARGS is how cargo-clippy hands it over), so the dependencies are compiled once
# instead of once checked for clippy and once built for the tests (164 of a cold run's 1,500 s
# went to that check). The tests' build covers what `--all-targets` does here (libraries,
# binaries, tests and examples; the workspace has no benches). A developer's run keeps the
# separate `cargo clippy`: alternating the two compilers would rebuild the workspace each time.
if [ -n "${CI:-}" ]; then
  clippy_in_build=1
else
  clippy_in_build=0
  echo "== clippy (at ${SECONDS} s)"
  cargo clippy --workspace --all-targets --test browser --test packaged -j"$JOBS" -- -D warnings
fi
echo "== clippy (no default features) (at ${SECONDS} s)"
cargo clippy -p lmchatkit --no-default-features --lib -j"$JOBS" -- -D warnings
cargo clippy -p lmchatkit --no-default-features --features test-support --lib -j"$JOBS" -- -D warnings
# An OpenAI-compatible upstream alone (no Anthropic backend): a variant only `anthropic` builds
# went unused here unnoticed.
cargo clippy -p lmchatkit --no-default-features --features openai --lib -j"$JOBS" -- -D warnings
# The default features alone, as a crates.io user builds them (the workspace's runs unify more
# features: two search methods only the PostgreSQL store uses went unused here unnoticed).
cargo clippy -p lmchatkit --lib -j"$JOBS" -- -D warnings
echo "== docs (at ${SECONDS} s)"
# As docs.rs builds them (server/Cargo.toml's package.metadata.docs.rs: every feature, `--cfg
# docsrs`, which turns on `doc(cfg)` feature badges; docs.rs runs a nightly rustdoc, and
# scripts/rustdoc-nightly.sh lets this stable one take the nightly feature), broken links an
# error. One package per command: `--features lmchatkit/redis` beside a second -p did not turn
# on the feature named like a dependency, and its items' links went unchecked.
RUSTDOC="$PWD/scripts/rustdoc-nightly.sh" RUSTDOCFLAGS="--cfg docsrs -D warnings" \
  cargo doc --no-deps -p lmchatkit --all-features -j"$JOBS"
# A gated item carries its badge (docs.rs shows the same page).
grep -q 'Available on <strong>crate feature <code>redis</code></strong> only' \
  "${CARGO_TARGET_DIR:-target}/doc/lmchatkit/live/struct.Redis.html" \
  || { echo "docs: live::Redis has no feature badge" >&2; exit 1; }
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p lmchatkit-protocol -j"$JOBS"
echo "== tests (at ${SECONDS} s)"
export LMCHATKIT_EXPECT_BUNDLE=1
if [ "$clippy_in_build" = 1 ]; then
  echo "== clippy runs in the tests' build (CI)"
  RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
  export RUSTC_WORKSPACE_WRAPPER
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
fi
cargo test --workspace --no-run -j"$JOBS"
cargo test --workspace --no-run --test browser --test packaged -j"$JOBS"
echo "== trunk (at ${SECONDS} s)"
while [ ! -e "$trunk_ready" ]; do
  if ! kill -0 "$tools_pid" 2>/dev/null; then
    cat "$tools_log"
    echo "setup: installing trunk failed" >&2
    exit 1
  fi
  sleep 1
done
each_in_tree unnice "$tools_pid"
echo "== tests run (at ${SECONDS} s)"
# Two phases, each `--workspace` so all use the build above:
# 1. all the tests but the browser ones, beside the packaged crates' consumer
#    (tests/tests/packaged.rs): its cargo builds fill the cores the waiting tests leave idle;
# 2. then the browser tests (tests/tests/browser/) alone. Beside both (as until 2026-12-07) a
#    page on two loaded cores took over 20 s to show what takes it a second, and four runs in
#    a row each failed two or three different browser tests that pass alone. Alone they took
#    355 s of a warm run (682 s in all); beside the others, 605 s of CI's last cold run.
# The few tests that time a latency still take turns with the browser tests
# (tests/src/quiet.rs) for a developer's runs that overlap them. The packaged crates' output
# follows the others'.
packaged_log="${CARGO_TARGET_DIR:-target}/packaged-tests.log"
cargo test --workspace --no-fail-fast --test packaged -j"$JOBS" >"$packaged_log" 2>&1 &
packaged_pid=$!
others=0
# --no-fail-fast: every failing binary shows in one run.
cargo test --workspace --no-fail-fast -j"$JOBS" || others=$?
packaged=0
wait "$packaged_pid" || packaged=$?
echo "== packaged crates' tests (ended at ${SECONDS} s)"
cat "$packaged_log"
echo "== browser tests (at ${SECONDS} s)"
browser=0
cargo test --workspace --no-fail-fast --test browser -j"$JOBS" || browser=$?
echo "== browser tests ended (at ${SECONDS} s)"
if [ "$others" != 0 ] || [ "$browser" != 0 ] || [ "$packaged" != 0 ]; then
  echo "tests failed (the others: exit $others; the browser tests: exit $browser;" \
    "the packaged crates: exit $packaged)" >&2
  exit 1
fi
echo "== mdbook (at ${SECONDS} s)"
finish_job "$tools_pid" "$tools_log" "setup: installing mdbook"
echo "== book (at ${SECONDS} s)"; mdbook build docs
echo "== all tests passed (at ${SECONDS} s)"
