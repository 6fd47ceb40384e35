//! The UI development flow the README documents: `./scripts/dev.sh` starts the app and
//! `trunk serve`, and the page trunk serves can use the API through trunk's proxy. Before the
//! script, the app refused every POST from that page ("cross-origin request from
//! http://127.0.0.1:8081 refused").
//!
//! Runs `trunk serve` as developers do, a debug build: `--release` would build the
//! `wasm-release` profile that `./scripts/build-ui.sh` also builds, with other flags (no split),
//! and each would rebuild the other's wasm (145 s a time here). `scripts/test.sh` makes that
//! debug build in the background while it builds the rest (`./scripts/dev.sh --build-only`,
//! into the script's own target folder), so here `trunk serve` finds it built; without that,
//! it builds it (about 200 s on a fresh machine). Skipped when trunk is missing unless
//! `LMCHATKIT_EXPECT_BUNDLE` says the toolchain is there.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the script's whole process group (the app and trunk) when dropped.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_dev_script_serves_the_ui_and_the_page_can_post_through_trunk() {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    let trunk = cargo_home
        .map(|h| h.join("bin/trunk"))
        .filter(|p| p.exists());
    if trunk.is_none() {
        assert!(
            std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_none(),
            "trunk is missing: run ./scripts/setup.sh"
        );
        eprintln!("skipped: trunk is not installed");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (app_port, ui_port) = (free_port(), free_port());
    let mut cmd = Command::new(root.join("scripts/dev.sh"));
    cmd.args(["--db", "memory:", "--no-demo-mcp"])
        .env("LMCHATKIT_BIN", env!("CARGO_BIN_EXE_lmchatkit"))
        .env("LMCHATKIT_DEV_APP_PORT", app_port.to_string())
        .env("LMCHATKIT_DEV_UI_PORT", ui_port.to_string())
        // A developer's shell: not the clippy driver CI compiles the tests with
        // (scripts/test.sh).
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let _group = Group(cmd.spawn().unwrap());

    let ui = format!("http://127.0.0.1:{ui_port}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = Instant::now();
    let page = loop {
        match client.get(format!("{ui}/")).send().await {
            Ok(r) if r.status() == 200 => break r.text().await.unwrap(),
            _ if started.elapsed() > Duration::from_secs(300) => {
                panic!("trunk serve did not answer within 300 s")
            }
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    assert!(page.contains("lmchatkit"), "{page}");
    eprintln!("trunk serve answered after {:?}", started.elapsed());

    // What the page sends: its own origin, through trunk's proxy.
    let res = client
        .put(format!("{ui}/chat/api/conversations/dev-1"))
        .header("origin", &ui)
        .json(&serde_json::json!({"id": "dev-1", "title": "from trunk serve", "messages": []}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    assert_eq!(status, 200, "{}", res.text().await.unwrap());
    let list = client
        .get(format!("{ui}/chat/api/conversations"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains("from trunk serve"), "{list}");
}
