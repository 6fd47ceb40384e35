//! The `lmchatkit` binary: starts on a free port, serves the page and the API on its defaults,
//! says clearly when no model is configured, and exits on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct App(Child, String);

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str], env: &[(&str, &str)]) -> App {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lmchatkit"));
    cmd.args(["--listen", "127.0.0.1:0", "--db", "memory:"])
        .args(args);
    for key in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_COMPLETIONS_URL",
        "LMCHATKIT_MODELS",
    ] {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split("open ")
        .nth(1)
        .unwrap_or_else(|| panic!("the app prints the URL to open first, got {line:?}"))
        .trim()
        .to_owned();
    App(child, url)
}

async fn get(url: &str) -> (u16, String) {
    let client = http_client();
    let res = client.get(url).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test]
async fn serves_page_and_api_and_says_when_no_model_is_configured() {
    let app = start(&["--no-demo"], &[]);
    assert!(app.1.ends_with("/chat"), "{}", app.1);
    let (status, page) = get(&app.1).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("data-prefix=\"/chat\"") && page.contains("/chat/assets/lmchatkit.js"),
        "{page}"
    );
    assert_eq!(
        get(&format!("{}/api/models", app.1)).await,
        (200, "[]".into())
    );
    let (_, config) = get(&format!("{}/api/config", app.1)).await;
    assert!(config.contains("\"history\":\"server\""), "{config}");
    let res = http_client()
        .post(format!("{}/api/chat", app.1))
        .json(&serde_json::json!({"model": "x", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let body = res.text().await.unwrap();
    assert!(body.contains("No model is configured"), "{body}");
}

#[tokio::test]
async fn configured_models_prefix_and_graceful_exit() {
    let mut app = start(
        &["--prefix", "/assistant", "--model", "a,b"],
        &[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
    );
    assert!(app.1.ends_with("/assistant"));
    let (_, models) = get(&format!("{}/api/models", app.1)).await;
    assert_eq!(models, r#"[{"id":"a"},{"id":"b"}]"#);
    let pid = app.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = app.0.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn with_nothing_configured_the_demo_model_answers() {
    let app = start(&[], &[]);
    let (_, models) = get(&format!("{}/api/models", app.1)).await;
    assert!(models.contains("\"id\":\"lmchatkit-demo\""), "{models}");
    let (_, config) = get(&format!("{}/api/config", app.1)).await;
    assert!(config.contains("\"demo\":true"), "{config}");
    let res = http_client()
        .post(format!("{}/api/chat", app.1))
        .json(&serde_json::json!({"model": "lmchatkit-demo", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let body = res.text().await.unwrap();
    assert!(
        body.contains("\"type\":\"reasoning\"")
            && body.contains(r#"{"type":"delta","delta":"built-in "}"#),
        "{body}"
    );
    assert!(body.contains("\"finish_reason\":\"stop\""), "{body}");
}

/// MCP servers from `--config` (a real npm server, installed by `scripts/setup-test.sh`).
#[tokio::test]
async fn mcp_servers_from_the_config_file() {
    let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/mcp/node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        assert!(
            std::env::var_os("LMCHATKIT_EXPECT_MCP").is_none(),
            "setup-test.sh did not install {}",
            bin.display()
        );
        eprintln!(
            "SKIPPED: {} is missing; run ./scripts/setup-test.sh",
            bin.display()
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("lmck-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("lmchatkit.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"everything\"\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
            bin.display()
        ),
    )
    .unwrap();
    let app = start(&["--config", config.to_str().unwrap()], &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, cfg) = get(&format!("{}/api/config", app.1)).await;
        if cfg.contains(r#"{"name":"everything","status":"connected"}"#) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the MCP server never connected: {cfg}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let res = http_client()
        .post(format!("{}/api/tools/call", app.1))
        .json(
            &serde_json::json!({"name": "everything__echo", "arguments": {"message": "hi there"}}),
        )
        .send()
        .await
        .unwrap();
    let body = res.text().await.unwrap();
    assert!(body.contains("Echo: hi there"), "{body}");
    let _ = std::fs::remove_dir_all(&dir);
}
