//! The demo MCP App view speaks the MCP Apps protocol: its script, run in node with a minimal
//! fake DOM (`demo_view.js`), is driven through initialize, tool input/result, a `tools/call`
//! of the app-only tool, `ui/message`, cancellation, teardown and ping. The browser tests see
//! the view inside the real host.

use std::io::Write;
use std::process::{Command, Stdio};

use lmchatkit::mcp::{DEMO_VIEW_URI, McpHub, demo_server_config};

#[tokio::test]
async fn the_view_speaks_the_mcp_apps_protocol() {
    if Command::new("node").arg("--version").output().is_err() {
        // setup-test.sh installs node; only a bare machine gets here.
        assert!(
            std::env::var_os("LMCHATKIT_EXPECT_MCP").is_none(),
            "node is missing"
        );
        eprintln!("SKIPPED: node is missing; run ./scripts/setup-test.sh");
        return;
    }
    let hub = McpHub::new(vec![demo_server_config()]);
    let html = hub
        .read_resource(&lmchatkit::Scope::default(), DEMO_VIEW_URI)
        .await
        .unwrap()
        .text
        .unwrap();
    hub.shutdown().await;
    let harness = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/demo_view.js");
    let mut node = Command::new("node")
        .arg(harness)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    node.stdin
        .take()
        .unwrap()
        .write_all(html.as_bytes())
        .unwrap();
    let out = node.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.trim() == "ok",
        "{stdout}\n{stderr}"
    );
}
