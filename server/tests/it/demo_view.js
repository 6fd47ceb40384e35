// Drives the demo MCP App view's script (server/src/mcp/demo/view.html) as a host would, in
// node with a minimal fake DOM: the MCP Apps messages it must send and answer (2026-01-26).
// Run by demo_view.rs; the view's HTML comes on stdin. Exits non-zero on the first mismatch.
"use strict";
const assert = require("node:assert/strict");
const html = require("node:fs").readFileSync(0, "utf8");
const script = html.slice(html.indexOf("<script>") + 8, html.indexOf("</script>"));

const els = {};
const el = (id) => (els[id] ||= { id, textContent: "", on: {}, addEventListener(t, f) { this.on[t] = f; } });
const sent = [];
let onMessage;
const parent = {
  postMessage(msg, target) {
    assert.equal(target, "*");
    sent.push(JSON.parse(JSON.stringify(msg)));
  },
};
const vars = {};
global.window = { parent, addEventListener: (t, f) => { if (t === "message") onMessage = f; } };
global.document = {
  getElementById: el,
  body: {},
  documentElement: { dataset: {}, style: { setProperty: (k, v) => { vars[k] = v; } }, getBoundingClientRect: () => ({ height: 321.4 }) },
};
global.setInterval = () => 1;
global.clearInterval = () => {};
new Function(script)();

const deliver = (data, source = parent) => onMessage({ source, data });
const settle = () => new Promise((r) => setTimeout(r, 0));

(async () => {
  const init = sent.shift();
  assert.equal(init.method, "ui/initialize");
  assert.equal(init.params.protocolVersion, "2026-01-26");
  assert.deepEqual(init.params.appCapabilities.availableDisplayModes, ["inline", "fullscreen"]);
  deliver({ jsonrpc: "2.0", id: 99, method: "ping" }, {}); // not the parent: ignored
  assert.equal(sent.length, 0);
  deliver({ jsonrpc: "2.0", id: init.id, result: {
    hostInfo: { name: "test-host" },
    hostContext: { theme: "dark", styles: { variables: { "--color-text-primary": "red" } } },
  } });
  await settle();
  assert.equal(sent[0].method, "ui/notifications/initialized");
  assert.deepEqual(sent[1], { jsonrpc: "2.0", method: "ui/notifications/size-changed", params: { height: 322 } });
  assert.equal(document.documentElement.dataset.theme, "dark");
  assert.equal(vars["--color-text-primary"], "red");
  sent.length = 0;

  deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: { title: "Kitchen" } } });
  assert.match(els["tool-input"].textContent, /"title": "Kitchen"/);
  deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: {
    content: [{ type: "text", text: "it is noon" }], structuredContent: { unix_ms: 5 },
  } });
  assert.match(els["tool-result"].textContent, /^it is noon\n\{/);
  deliver({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: { theme: "light" } });
  assert.equal(document.documentElement.dataset.theme, "light");

  els["call-tool"].on.click();
  const call = sent.shift();
  assert.equal(call.method, "tools/call");
  assert.deepEqual(call.params, { name: "clock_now", arguments: {} });
  deliver({ jsonrpc: "2.0", id: call.id, result: { content: [{ type: "text", text: "Server time: X" }] } });
  await settle();
  assert.equal(els["call-result"].textContent, "Server time: X");

  els["send-message"].on.click();
  const message = sent.shift();
  assert.equal(message.method, "ui/message");
  assert.equal(message.params.role, "user");
  assert.equal(message.params.content[0].type, "text");

  deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: "stopped" } });
  assert.equal(els["tool-result"].textContent, "Cancelled: stopped");
  deliver({ jsonrpc: "2.0", id: 7, method: "ui/resource-teardown", params: { reason: "gone" } });
  deliver({ jsonrpc: "2.0", id: 8, method: "ping" });
  deliver({ jsonrpc: "2.0", id: 9, method: "no/such" });
  assert.deepEqual(sent[0], { jsonrpc: "2.0", id: 7, result: {} });
  assert.deepEqual(sent[1], { jsonrpc: "2.0", id: 8, result: {} });
  assert.equal(sent[2].error.code, -32601);
  console.log("ok");
})().catch((e) => { console.error(e); process.exit(1); });
