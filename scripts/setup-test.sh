#!/usr/bin/env bash
# scripts/setup-test.sh — installs the real MCP servers the tests run, pinned, into the
# project-local folder .tools/mcp/ (gitignored). Idempotent: when the installed versions
# already match it does nothing (well under a second).
#
#   - npm @modelcontextprotocol/server-everything@2026.8.31   (stdio + streamableHttp)
#   - npm @modelcontextprotocol/server-basic-vanillajs@2.0.3  (an MCP Apps example, stdio)
#
# The MCP tests find them in .tools/mcp/node_modules/.bin/ (or in $LMCHATKIT_MCP_TOOLS) and
# skip with a message when they are missing, so `cargo test` alone never downloads anything.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=.tools/mcp
PKGS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
)

installed_version() { # name -> version installed in $DIR, or empty
  sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' "$DIR/node_modules/$1/package.json" 2>/dev/null | head -n1 || true
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
  exit 0
fi

if ! command -v npm >/dev/null; then
  echo "setup-test: npm not found; installing Debian's nodejs + npm"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi

mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"lmchatkit-test-mcp-servers","private":true}' >"$DIR/package.json"
echo "setup-test: installing ${missing[*]} into $DIR"
start=$(date +%s)
# --save-exact keeps the pins in .tools/mcp/package.json too; every package is listed so a
# partial earlier install is completed rather than pruned.
npm install --prefix "$DIR" --no-audit --no-fund --save-exact "${PKGS[@]}"
echo "setup-test: installed in $(( $(date +%s) - start )) s"
