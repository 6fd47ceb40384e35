#!/usr/bin/env bash
# scripts/setup-test.sh — installs the real MCP servers and the real AI SDK client the tests
# run, pinned, into project-local folders under .tools/ (gitignored). Idempotent: when the
# installed versions already match it does nothing (well under a second).
#
#   .tools/mcp/:
#   - npm @modelcontextprotocol/server-everything@2026.8.31   (stdio + streamableHttp)
#   - npm @modelcontextprotocol/server-basic-vanillajs@2.0.3  (an MCP Apps example, stdio)
#   - npm @modelcontextprotocol/sdk@1.32.2  (its example Streamable HTTP server with the demo
#     OAuth authorization server, `simpleStreamableHttp.js --oauth`: tests/user_mcp_oauth.rs)
#   .tools/py/: a Python virtual environment with tests/python/requirements.txt (the `mcp`
#     package, 2.3.0, and its dependencies, every version pinned), for tests/python/sse_server.py,
#     a server on the older HTTP+SSE transport only
#   .tools/aisdk/: tests/aisdk/package.json (ai@6.0.0, ai@6.0.326 and ai@7.0.185 side by side, npm aliases)
#   .tools/a11y/: npm axe-core@4.14.1, which the browser tests run in the page (WCAG 2.1 A/AA)
#   ~/.cargo/bin/mdbook: mdbook 0.5.4 from crates.io (search only: no server, no watcher), which
#   scripts/test.sh builds the book (docs/) with
#
# The MCP tests find them in .tools/mcp/node_modules/.bin/ (or in $LMCHATKIT_MCP_TOOLS), the
# AI SDK tests in .tools/aisdk/ (or in $LMCHATKIT_AISDK_DIR); both skip with a message when they
# are missing, so `cargo test` alone never downloads anything.
#
# --no-mdbook skips mdbook and --mdbook installs it alone: scripts/test.sh builds it in the
# background while the rest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK=1
ONLY_MDBOOK=0
for arg in "$@"; do
  case "$arg" in
    --no-mdbook) MDBOOK=0 ;;
    --mdbook) ONLY_MDBOOK=1 ;;
    *) echo "setup-test: unknown argument $arg (--mdbook or --no-mdbook)" >&2; exit 2 ;;
  esac
done

if [ "$ONLY_MDBOOK" = 0 ]; then
DIR=.tools/mcp
PKGS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
  "@modelcontextprotocol/sdk@1.32.2"
)

installed_version() { # name -> version installed in $DIR, or empty (the first "version" line,
  # whatever its indentation: the SDK's package.json indents by four)
  sed -n 's/^ *"version": "\(.*\)",\{0,1\}$/\1/p' "$DIR/node_modules/$1/package.json" 2>/dev/null | head -n1 || true
}

# apt runs one at a time: scripts/test.sh runs the setup scripts side by side.
apt_install() {
  flock "${TMPDIR:-/tmp}/lmchatkit-apt.lock" sh -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"' apt "$@"
}
ensure_npm() {
  if ! command -v npm >/dev/null; then
    echo "setup-test: npm not found; installing Debian's nodejs + npm"
    apt_install nodejs npm
  fi
}

missing=()
for spec in "${PKGS[@]}"; do
  name=${spec%@*}
  want=${spec##*@}
  if [ "$(installed_version "$name")" != "$want" ]; then
    missing+=("$spec")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-test: MCP servers present in $DIR (${PKGS[*]})"
else
  ensure_npm
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name":"lmchatkit-test-mcp-servers","private":true}' >"$DIR/package.json"
  echo "setup-test: installing ${missing[*]} into $DIR"
  start=$(date +%s)
  # --save-exact keeps the pins in .tools/mcp/package.json too; every package is listed so a
  # partial earlier install is completed rather than pruned.
  npm install --prefix "$DIR" --no-audit --no-fund --save-exact "${PKGS[@]}"
  echo "setup-test: installed in $(( $(date +%s) - start )) s"
fi

# The accessibility checker the browser tests run in the page (tests/tests/browser/ui_a11y.rs).
DIR=.tools/a11y
AXE=axe-core@4.14.1
if [ "$(installed_version axe-core)" = "${AXE##*@}" ]; then
  echo "setup-test: $AXE present in $DIR"
else
  ensure_npm
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name":"lmchatkit-test-a11y","private":true}' >"$DIR/package.json"
  echo "setup-test: installing $AXE into $DIR"
  npm install --prefix "$DIR" --no-audit --no-fund --save-exact "$AXE"
fi

# The Python MCP server's packages: re-installed only when tests/python/requirements.txt
# changed since the last install (the copy in .tools/py is written after pip succeeded).
PY=.tools/py
if cmp -s tests/python/requirements.txt "$PY/requirements.txt" && [ -x "$PY/bin/python" ]; then
  echo "setup-test: Python mcp present in $PY (tests/python/requirements.txt)"
else
  echo "setup-test: installing tests/python/requirements.txt into $PY"
  start=$(date +%s)
  rm -rf "$PY"
  python3 -m venv "$PY"
  "$PY/bin/pip" install --quiet --disable-pip-version-check --no-input -r tests/python/requirements.txt
  cp tests/python/requirements.txt "$PY/requirements.txt"
  echo "setup-test: installed in $(( $(date +%s) - start )) s"
fi

# The AI SDK client: re-installed only when tests/aisdk/package.json changed since the last
# install (the copy in .tools/aisdk is written after npm succeeded, so a failed install retries).
AISDK=.tools/aisdk
if cmp -s tests/aisdk/package.json "$AISDK/package.json" && [ -d "$AISDK/node_modules" ]; then
  echo "setup-test: AI SDK client present in $AISDK (tests/aisdk/package.json)"
else
  ensure_npm
  echo "setup-test: installing tests/aisdk/package.json into $AISDK"
  start=$(date +%s)
  rm -rf "$AISDK" "$AISDK.tmp"
  mkdir -p "$AISDK.tmp"
  cp tests/aisdk/package.json "$AISDK.tmp/package.json"
  (cd "$AISDK.tmp" && npm install --no-audit --no-fund --loglevel=error)
  mv "$AISDK.tmp" "$AISDK"
  echo "setup-test: installed in $(( $(date +%s) - start )) s"
fi
fi

# The book's builder.
MDBOOK_VER=0.5.4
export PATH="$HOME/.cargo/bin:$PATH"
if [ "$MDBOOK" = 0 ]; then
  :
elif [ "$(mdbook --version 2>/dev/null)" = "mdbook v$MDBOOK_VER" ]; then
  echo "setup-test: mdbook $MDBOOK_VER present"
else
  echo "setup-test: installing mdbook $MDBOOK_VER (cargo install, ~3 min)"
  start=$(date +%s)
  # Built for a fast install, as scripts/setup.sh builds its tools (it says why).
  tools_target="${CARGO_TARGET_DIR:-$PWD/target}/tools-build-mdbook"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false \
    CARGO_PROFILE_RELEASE_INCREMENTAL=false CARGO_TARGET_DIR="$tools_target" \
    cargo install mdbook --version "$MDBOOK_VER" --locked --no-default-features \
    --features search -j"${JOBS:-2}"
  rm -rf "$tools_target"
  echo "setup-test: installed in $(( $(date +%s) - start )) s"
fi
