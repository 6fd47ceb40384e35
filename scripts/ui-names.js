// scripts/ui-names.js DIR CSS DEST — step 5 of scripts/build-ui.sh: copies the split UI build in
// DIR (wasm-bindgen's glue and main wasm, wasm-split-cli's loader and parts, all under their
// tools' names) into DEST with one content hash in every name, rewriting the names the files
// use for each other (each rewrite must find what it replaces), and the stylesheet CSS as
// `style-<its hash>.css`. One hash over all the files breaks the cycle of the glue and the
// loader importing each other.
"use strict";
const fs = require("fs"), path = require("path"), crypto = require("crypto");
const [dir, css, dest] = process.argv.slice(2);
const files = fs.readdirSync(dir).sort();
// This script is hashed too: a change to how it rewrites the files changes their names.
const hash = crypto.createHash("sha256").update(fs.readFileSync(__filename));
for (const f of files) hash.update(f).update(fs.readFileSync(path.join(dir, f)));
const h = hash.digest("hex").slice(0, 16);
const renamed = (f) =>
  f === "lmchatkit-web.js" ? `lmchatkit-web-${h}.js`
  : f === "lmchatkit-web_bg.wasm" ? `lmchatkit-web-${h}_bg.wasm`
  : f === "__wasm_split.js" ? `lmchatkit-split-${h}.js`
  : /^(split|chunk)_[A-Za-z0-9_]+\.wasm$/.test(f) ? f.replace(/\.wasm$/, `-${h}.wasm`)
  : null;
// Replaces `from` by `to` in a text: exactly once, or (with `many`) at least once.
const rewrite = (text, from, to, many = false) => {
  const parts = text.split(from);
  if (many ? parts.length < 2 : parts.length !== 2) {
    console.error(`build-ui: expected ${many ? "some" : "one"} ${from} in the output, found ${parts.length - 1}`);
    process.exit(1);
  }
  return parts.join(to);
};
const quoted = (name) => `"./${name}"`;
fs.mkdirSync(dest, { recursive: true });
for (const f of files) {
  const to = renamed(f);
  if (to === null) { console.error(`build-ui: unexpected output file ${f}`); process.exit(1); }
  let body = fs.readFileSync(path.join(dir, f));
  if (f === "lmchatkit-web.js") {
    // Only the import statements: the imports object keeps the module name the wasm imports from.
    const split = "__wasm_split.js";
    const text = rewrite(body.toString(), `from ${quoted(split)}`, `from ${quoted(renamed(split))}`, true);
    // The glue's default URL of its wasm (the loader passes the wasm itself; kept right anyway).
    const wasm = "lmchatkit-web_bg.wasm";
    body = rewrite(text, `'${wasm}'`, `'${renamed(wasm)}'`);
  } else if (f === "__wasm_split.js") {
    let text = body.toString();
    for (const name of ["lmchatkit-web.js", ...files.filter((p) => /^(split|chunk)_/.test(p))]) {
      text = rewrite(text, quoted(name), quoted(renamed(name)));
    }
    body = text;
  }
  fs.writeFileSync(path.join(dest, to), body, { mode: 0o644 });
}
const style = fs.readFileSync(css);
const cssHash = crypto.createHash("sha256").update(style).digest("hex").slice(0, 16);
fs.writeFileSync(path.join(dest, `style-${cssHash}.css`), style, { mode: 0o644 });
