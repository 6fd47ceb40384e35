#!/usr/bin/env bash
# The full benchmark of issue 7, in one command:
#   scripts/bench.sh [extra bench flags, e.g. --rounds 5 --open-streams 0]
# Installs the peers pinned into project-local folders (npm: .tools/bench, pip: .tools/litellm-venv),
# builds the bench in release, runs every path side by side on loopback and writes
# bench-results/results.json and bench-results/results.md (ratios printed last), including the
# history store's save cost with synchronous=FULL vs NORMAL (`durability`; alone, in seconds:
# `bench --history-only`), and the relay on SQLite + in-process against PostgreSQL + Redis and
# PostgreSQL alone (the machine's own at 127.0.0.1, fresh schemas and a key prefix, removed
# after; skipped, saying so, when either is unreachable; alone: `bench --engines-only`).
# Takes about 10 minutes on 2 cores (plus a first release build, which honours CARGO_TARGET_DIR).
# BENCH_REINSTALL=1 reinstalls the peers (their install times go into the results).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/.tools
mkdir -p "$tools/bench"

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
times=()

# Vercel AI SDK relay: ai@6.0.326 + @ai-sdk/openai-compatible@2.0.92 (tests/bench/package.json).
if [[ ${BENCH_REINSTALL:-0} == 1 || ! -f $tools/bench/install-time ]] \
    || ! cmp -s tests/bench/package.json "$tools/bench/package.json"; then
    echo "installing the AI SDK relay (npm) into $tools/bench" >&2
    rm -rf "$tools/bench/node_modules" "$tools/bench/package-lock.json"
    cp tests/bench/package.json "$tools/bench/package.json"
    t=$(now)
    (cd "$tools/bench" && npm install --no-audit --no-fund --loglevel=error >&2)
    elapsed "$t" > "$tools/bench/install-time"
fi
times+=(--install-time "ai-sdk=$(cat "$tools/bench/install-time")")

# LiteLLM proxy: litellm[proxy]==1.108.7 in its own venv, one worker.
venv=$tools/litellm-venv
if [[ ${BENCH_REINSTALL:-0} == 1 || ! -f $venv/install-time ]]; then
    echo "installing LiteLLM (pip) into $venv" >&2
    rm -rf "$venv"
    t=$(now)
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'litellm[proxy]==1.108.7' >&2
    elapsed "$t" > "$venv/install-time"
fi
times+=(--install-time "litellm=$(cat "$venv/install-time")")

cargo build --release -p lmchatkit-tests --bin bench >&2
target=${CARGO_TARGET_DIR:-$root/target}
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec "$target/release/bench" \
    --aisdk-dir "$tools/bench" \
    --litellm-bin "$venv/bin/litellm" \
    --out "$root/bench-results" \
    "${times[@]}" "$@"
