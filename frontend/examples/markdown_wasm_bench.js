// Times the markdown renderer in wasm under node (V8): per-delta push + html while a 48 KB reply
// streams in 4-byte deltas. Run by markdown_wasm_bench.sh (argument: the wasm-bindgen output dir).
const path = require("path");
const wasm = require(path.resolve(process.argv[2], "markdown_wasm_bench.js"));

function deltas(text, size) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function report(name, times) {
  times.sort((a, b) => a - b);
  const pct = (p) => (times[Math.floor((times.length - 1) * p)] * 1000).toFixed(1);
  const total = times.reduce((a, b) => a + b, 0);
  console.log(
    `${name.padEnd(40)} deltas ${String(times.length).padStart(6)}  p50 ${pct(0.5)} µs  ` +
      `p95 ${pct(0.95)} µs  p99 ${pct(0.99)} µs  max ${(times[times.length - 1] * 1000).toFixed(1)} µs  ` +
      `total ${total.toFixed(1)} ms`,
  );
}

for (const [name, text] of [
  ["mixed", wasm.mixed_reply(48 * 1024)],
  ["one code block", wasm.code_reply(48 * 1024)],
]) {
  console.log(`${name} reply: ${text.length} chars, 4-char deltas`);
  for (const mode of ["push_html", "push_changed"]) {
    const stream = new wasm.Stream();
    const times = [];
    let rev = 0;
    for (const d of deltas(text, 4)) {
      const t = performance.now();
      if (mode === "push_html") stream.push_html(d);
      else {
        stream.push_changed(d, rev);
        rev = stream.rev();
      }
      times.push(performance.now() - t);
    }
    if (stream.push_html("") !== wasm.render_html(text)) throw new Error("mismatch");
    report(`  ${mode}`, times);
    stream.free();
  }
  let source = "";
  const times = [];
  for (const d of deltas(text, 4)) {
    source += d;
    const t = performance.now();
    wasm.render_html(source);
    times.push(performance.now() - t);
  }
  report("  full render per delta", times);
}
