#!/usr/bin/env bash
# scripts/build-ui.sh — builds the UI (frontend/) into server/assets/, for server/build.rs to
# embed. Needs the tools from ./scripts/setup.sh; downloads nothing. After a UI change, rebuild
# the server too (cargo notices the new files in server/assets/). Takes no arguments.
#
# The wasm is split at the UI's split points (frontend/src/lazy.rs), so the first load carries
# only what the first paint needs:
#   1. cargo builds the UI for wasm32 (profile wasm-release) with `--cfg lmchatkit_split` and the
#      linker's relocations kept (`--emit-relocs`), which the splitter needs;
#   2. wasm-split-cli writes the main module, one wasm per split point (`split_<name>.wasm`), one
#      per run of code several split points share (`chunk_<n>.wasm`), and the JS that loads them
#      (`__wasm_split.js`, which the main module imports);
#   3. wasm-bindgen (--target web, keeping the exports the chunks link against) makes the JS glue
#      of the main module;
#   4. wasm-opt -Oz (npm binaryen, never Debian's) shrinks every wasm and drops its custom sections;
#   5. every file gets the same content hash in its name, `lmchatkit-web-<hash>.js` +
#      `lmchatkit-web-<hash>_bg.wasm` (the entry build.rs looks for), `lmchatkit-split-<hash>.js`,
#      `<part>-<hash>.wasm`, and the names the files use for each other are rewritten to match
#      (each rewrite checked). One hash over all files breaks the cycle of the glue and the split
#      JS naming each other; the service serves hashed names `immutable`.
# The stylesheet is copied as `style-<hash>.css`. trunk is not used here (it cannot split; it
# stays for ./scripts/dev.sh, whose unsplit build loads every part at once).
#
# Then it adds the code highlighter, which the UI loads lazily on the first fenced code block:
# highlight.js (npm @highlightjs/cdn-assets, installed by setup.sh) core + the languages in
# HLJS_LANGUAGES, wrapped into one classic script that publishes its private instance as
# `globalThis.__lmchatkit.hljs` (never the global `hljs`, so a host page's own copy is untouched),
# written as server/assets/lmchatkit-highlight-<sha256 prefix>.js. server/build.rs finds it and
# the stable loader tells the UI its URL. Its size is budgeted separately (<= 60 KB gzipped).
#
# And the diagram renderer, which the UI's sandboxed diagram frame ({prefix}/diagram) loads when a
# ```mermaid block appears: npm mermaid's one-file build as lmchatkit-mermaid-<hash>.js, with the
# compressed copies ./scripts/setup.sh made once, and the frame's own script (frontend/diagram.js)
# as lmchatkit-diagram-<hash>.js.
set -euo pipefail
cd "$(dirname "$0")/.."
# npm binaryen@132 first: trunk must never pick up Debian's wasm-opt 108 (it corrupts the wasm).
export PATH="$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
HLJS=.tools/node_modules/@highlightjs/cdn-assets
# `ini` highlights TOML, `xml` HTML; `shell` is console sessions (`$ cmd` + output).
HLJS_LANGUAGES="bash css diff go ini javascript json python rust shell sql typescript xml yaml"
HLJS_BUDGET=$((60 * 1024))
if [ "$#" -gt 0 ]; then
  echo "build-ui: takes no arguments" >&2
  exit 2
fi
for tool in wasm-bindgen wasm-split-cli .tools/node_modules/.bin/wasm-opt zopfli; do
  if ! command -v "$tool" >/dev/null; then
    echo "build-ui: $tool missing; run ./scripts/setup.sh first" >&2
    exit 1
  fi
done
MERMAID=$(sed -n 's/^MERMAID_VER=//p' scripts/setup.sh)
MERMAID_DIR=.tools/mermaid-$MERMAID
if [ ! -f "$MERMAID_DIR/mermaid.min.js.br" ]; then
  echo "build-ui: mermaid $MERMAID missing; run ./scripts/setup.sh first" >&2
  exit 1
fi
if [ ! -f "$HLJS/es/core.min.js" ]; then
  echo "build-ui: highlight.js missing; run ./scripts/setup.sh first" >&2
  exit 1
fi
start=$(date +%s)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# 1. The wasm. These flags replace .cargo/config.toml's for wasm32 (cargo takes one source of
#    rustflags), so `erase_components` is repeated here.
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--cfg erase_components --cfg lmchatkit_split -Clink-args=--emit-relocs" \
  cargo build -p lmchatkit-web --bin lmchatkit-web --profile wasm-release \
  --target wasm32-unknown-unknown --locked -j"${JOBS:-2}"
target_dir=$(cargo metadata --format-version 1 --no-deps | node -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')
# Up to date: what the steps below read (the wasm cargo just built, the stylesheet, this script,
# the naming script, the highlighter's package) is what the bundle in server/assets/ was built
# from. Rewriting the same bundle would only change its files' times, which makes cargo rebuild
# the library and relink every test binary, and repack the crates.
stamp_file="$target_dir/lmchatkit-ui.stamp"
stamp=$(cat "$target_dir/wasm32-unknown-unknown/wasm-release/lmchatkit-web.wasm" frontend/style.css \
  scripts/build-ui.sh scripts/ui-names.js scripts/setup.sh "$HLJS/package.json" frontend/diagram.js \
  | sha256sum | cut -c1-64)
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
  && ls server/assets/lmchatkit-web-*_bg.wasm >/dev/null 2>&1; then
  echo "build-ui: server/assets/ is up to date (built from the same wasm, stylesheet and scripts)"
  exit 0
fi
rm -f "$stamp_file"
# 2. Split.
wasm-split-cli "$target_dir/wasm32-unknown-unknown/wasm-release/lmchatkit-web.wasm" \
  "$stage/split" --out-name lmchatkit-web
# 3. The main module's glue.
wasm-bindgen "$stage/split/lmchatkit-web.wasm" --out-dir "$stage/out" --out-name lmchatkit-web \
  --target web --no-typescript --keep-lld-exports
# 4. Shrink. The `producers` and `target_features` custom sections (about 200 B in every file, which
#    no browser reads) are dropped: with some 50 wasm files, 42 of them fetched by the first sent
#    message, they cost that message 6.4 KB gzipped (321,872 -> 315,499 B; 5.4 KB brotli; issue 48).
STRIP="--strip-producers --strip-target-features"
wasm-opt -Oz $STRIP "$stage/out/lmchatkit-web_bg.wasm" -o "$stage/out/lmchatkit-web_bg.wasm"
for part in "$stage"/split/*.wasm; do
  [ "$(basename "$part")" = lmchatkit-web.wasm ] && continue
  wasm-opt -Oz $STRIP "$part" -o "$stage/out/$(basename "$part")" 2> >(grep -v 'unknown name subsection' >&2)
done
cp "$stage/split/__wasm_split.js" "$stage/out/"
# 5. Name by content.
node scripts/ui-names.js "$stage/out" frontend/style.css "$stage/assets"
rm -rf server/assets
mv "$stage/assets" server/assets

# The highlighter. The core is an ES module ending in `export{X as default};`: inside a function
# that line becomes `return X;`. The language files are classic scripts calling
# `hljs.registerLanguage`, which resolves to the private instance in the enclosing function.
core=$(sed -E 's/export\{([A-Za-z_$][A-Za-z0-9_$]*) as default\};?[[:space:]]*$/return \1;/' "$HLJS/es/core.min.js")
if ! grep -qE '^return [A-Za-z_$][A-Za-z0-9_$]*;$|[;}]return [A-Za-z_$][A-Za-z0-9_$]*;$' <<<"$core" \
  || grep -q 'export{' <<<"$core"; then
  echo "build-ui: unexpected shape of $HLJS/es/core.min.js (no trailing default export)" >&2
  exit 1
fi
hl_tmp=$(mktemp)
{
  printf '/*! lmchatkit code highlighter: highlight.js %s (BSD-3-Clause, (c) 2006-2024 Josh Goebel and\n' \
    "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$HLJS/package.json")"
  printf '    other contributors), core + %s. Built by scripts/build-ui.sh. */\n' "$HLJS_LANGUAGES"
  printf '(function () {\n"use strict";\nvar hljs = (function () {\n%s\n})();\n' "$core"
  for lang in $HLJS_LANGUAGES; do
    cat "$HLJS/languages/$lang.min.js"
    printf '\n'
  done
  printf '(globalThis.__lmchatkit = globalThis.__lmchatkit || {}).hljs = hljs;\n})();\n'
} >"$hl_tmp"
# Sanity check in node: it registers the languages on its own instance, not on a global `hljs`.
node -e '
  require(process.argv[1]);
  const h = globalThis.__lmchatkit.hljs;
  const want = process.argv.slice(2);
  const missing = want.filter((l) => !h.getLanguage(l));
  if (missing.length || typeof hljs !== "undefined") { console.error("missing", missing); process.exit(1); }
  if (!h.highlight("fn main() {}", { language: "rust" }).value.includes("hljs-keyword")) process.exit(1);
' "$hl_tmp" $HLJS_LANGUAGES toml html ts sh yml
hash=$(sha256sum "$hl_tmp" | cut -c1-16)
rm -f server/assets/lmchatkit-highlight-*.js server/assets/lmchatkit-highlight-*.js.gz server/assets/lmchatkit-highlight-*.js.br
mv "$hl_tmp" "server/assets/lmchatkit-highlight-$hash.js"
chmod 644 "server/assets/lmchatkit-highlight-$hash.js"
hl_gz=$(gzip -9c "server/assets/lmchatkit-highlight-$hash.js" | wc -c)
echo "build-ui: highlighter lmchatkit-highlight-$hash.js: $hl_gz bytes gzipped (budget $HLJS_BUDGET)"
if [ "$hl_gz" -gt "$HLJS_BUDGET" ]; then
  echo "build-ui: the highlighter is over its budget" >&2
  exit 1
fi
# The diagram renderer and the frame's script. Mermaid's name is its file's hash, so the browser's
# cached copy (5.8 MB, 1.3 MB as brotli) survives every UI release that keeps its version.
mm_hash=$(sha256sum "$MERMAID_DIR/mermaid.min.js" | cut -c1-16)
for ext in "" .gz .br; do
  cp "$MERMAID_DIR/mermaid.min.js$ext" "server/assets/lmchatkit-mermaid-$mm_hash.js$ext"
  chmod 644 "server/assets/lmchatkit-mermaid-$mm_hash.js$ext"
done
dg_hash=$(sha256sum frontend/diagram.js | cut -c1-16)
cp frontend/diagram.js "server/assets/lmchatkit-diagram-$dg_hash.js"
chmod 644 "server/assets/lmchatkit-diagram-$dg_hash.js"
# Precompressed copies of the text and wasm files: `<file>.gz` by zopfli (15 iterations: the
# gzip format every client reads, 5% smaller than zlib's level 9 on the main wasm, 386.0 ->
# 366.7 KB, for ~4 s of build time; more iterations gained 1 byte) and `<file>.br` by node's
# zlib (brotli quality 11, window 2^24). The service serves them by the request's
# Accept-Encoding (server/build.rs embeds them beside each file), so a host needs no compression
# layer and no CPU is spent per request. Each is checked to decompress to its file; one that is
# not smaller is not written.
find server/assets -type f \( -name '*.js' -o -name '*.css' -o -name '*.wasm' -o -name '*.svg' \) \
  ! -path '*/.*' ! -name 'lmchatkit-mermaid-*' -print0 | xargs -0 node -e '
  const fs = require("fs"), zlib = require("zlib"), { execFileSync } = require("child_process");
  for (const file of process.argv.slice(1)) {
    const body = fs.readFileSync(file);
    const text = !file.endsWith(".wasm");
    const variants = {
      gz: execFileSync("zopfli", ["-c", "--i15", file], { maxBuffer: 1 << 30 }),
      br: zlib.brotliCompressSync(body, { params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
        [zlib.constants.BROTLI_PARAM_LGWIN]: 24,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        [zlib.constants.BROTLI_PARAM_MODE]: text ? zlib.constants.BROTLI_MODE_TEXT : zlib.constants.BROTLI_MODE_GENERIC,
      } }),
    };
    const back = { gz: zlib.gunzipSync, br: zlib.brotliDecompressSync };
    for (const [ext, packed] of Object.entries(variants)) {
      if (!back[ext](packed).equals(body)) { console.error("build-ui: " + ext + " round trip failed for " + file); process.exit(1); }
      if (packed.length < body.length) fs.writeFileSync(file + "." + ext, packed, { mode: 0o644 });
    }
    console.log("build-ui: " + file + ": " + body.length + " B, gzip " + variants.gz.length + " B, brotli " + variants.br.length + " B");
  }'
echo "$stamp" >"$stamp_file"
echo "build-ui: server/assets/ built in $(( $(date +%s) - start )) s:"
ls -l server/assets | sed -n '2,$p'
