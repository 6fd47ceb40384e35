//! The `lmchatkit` binary: starts on a free port, serves the page and the API on its defaults,
//! says clearly when no model is configured, exits on SIGTERM, and with nothing configured runs
//! the demo model, the demo MCP server and the shipped personas and commands.
//! (Settings from the file, flags and environment: `binary_config.rs`.)

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{get, get_json, http_client, post, start};

#[tokio::test]
async fn serves_page_and_api_and_says_when_no_model_is_configured() {
    let app = start(&["--no-demo"], &[]);
    assert!(app.url.ends_with("/chat"), "{}", app.url);
    let (status, page) = get(&app.url).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("data-prefix=\"/chat\"") && page.contains("/chat/assets/lmchatkit.js"),
        "{page}"
    );
    assert_eq!(
        get(&format!("{}/api/models", app.url)).await,
        (200, "[]".into())
    );
    let (_, config) = get(&format!("{}/api/config", app.url)).await;
    assert!(config.contains("\"history\":\"server\""), "{config}");
    let res = http_client()
        .post(format!("{}/api/chat", app.url))
        .json(&serde_json::json!({"model": "x", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    // Nothing can serve a turn: refused up front, naming the (empty) menu.
    assert_eq!(res.status(), 400);
    let body = res.text().await.unwrap();
    assert!(body.contains("the model menu is empty"), "{body}");
}

#[tokio::test]
async fn configured_models_prefix_and_graceful_exit() {
    let mut app = start(
        &["--prefix", "/assistant", "--model", "a,b"],
        &[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
    );
    assert!(app.url.ends_with("/assistant"));
    let (_, models) = get(&format!("{}/api/models", app.url)).await;
    assert_eq!(
        models,
        r#"[{"id":"a","configured":true},{"id":"b","configured":true}]"#
    );
    let pid = app.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = app.child.try_wait().unwrap() {
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
    let (_, models) = get(&format!("{}/api/models", app.url)).await;
    assert!(models.contains("\"id\":\"lmchatkit-demo\""), "{models}");
    let (_, config) = get(&format!("{}/api/config", app.url)).await;
    assert!(config.contains("\"demo\":true"), "{config}");
    let res = http_client()
        .post(format!("{}/api/chat", app.url))
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
    // The demo model is provider `demo` at price 0: its reply costs $0, not an unknown cost.
    let done: serde_json::Value = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .find(|e| e["type"] == "done")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(done["cost_usd"], serde_json::json!(0.0), "{done}");
    assert!(models.contains("\"provider\":\"demo\""), "{models}");
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
        let (_, cfg) = get(&format!("{}/api/config", app.url)).await;
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
        .post(format!("{}/api/tools/call", app.url))
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

/// Waits until the demo MCP server reports `connected` in `/api/config`.
async fn demo_connected(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let cfg = get_json(&format!("{url}/api/config")).await;
        if cfg["mcp"] == json!([{"name": "demo", "status": "connected"}]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the demo server never connected: {cfg}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_demo_mcp_server_through_the_routes() {
    let app = start(&[], &[]);
    let url = &app.url;
    demo_connected(url).await;
    let prompts = get_json(&format!("{url}/api/prompts")).await;
    let explain = prompts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "demo__explain")
        .unwrap_or_else(|| panic!("{prompts}"));
    assert_eq!(explain["arguments"][0]["name"], "topic");
    let (status, got) = post(
        &format!("{url}/api/prompts/get"),
        json!({"name": "demo__explain", "args": {"topic": "SSE"}}),
    )
    .await;
    assert!(
        status == 200 && got.contains("Explain SSE to a curious beginner"),
        "{got}"
    );

    let resources = get_json(&format!("{url}/api/resources")).await.to_string();
    for uri in [
        "demo://lmchatkit/about.txt",
        "skill://dice-games/SKILL.md",
        "ui://lmchatkit-demo/clock.html",
    ] {
        assert!(resources.contains(uri), "{resources}");
    }

    let (status, rolled) = post(
        &format!("{url}/api/tools/call"),
        json!({"name": "demo__roll_dice", "arguments": {"sides": 20}}),
    )
    .await;
    assert!(status == 200 && rolled.contains("on a d20."), "{rolled}");

    let (status, view) = post(
        &format!("{url}/api/resources/read"),
        json!({"uri": "ui://lmchatkit-demo/clock.html", "via": "demo__show_clock"}),
    )
    .await;
    let view: serde_json::Value = serde_json::from_str(&view).unwrap();
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["mime_type"], "text/html;profile=mcp-app");
    assert!(view["text"].as_str().unwrap().contains("ui/initialize"));

    // The app-only tool: refused to the model, allowed to the view of its own server.
    let (status, _) = post(
        &format!("{url}/api/tools/call"),
        json!({"name": "demo__clock_now"}),
    )
    .await;
    assert_eq!(status, 403);
    let (status, now) = post(
        &format!("{url}/api/tools/call"),
        json!({"name": "demo__clock_now", "source": "app", "via": "demo__show_clock"}),
    )
    .await;
    assert!(status == 200 && now.contains("Server time: "), "{now}");
    // As the view's button calls it: through the app proxy, by its bare name.
    let (status, proxied) = post(
        &format!("{url}/api/app-proxy"),
        json!({"method": "tools/call", "params": {"name": "clock_now", "arguments": {}}, "via": "demo__show_clock"}),
    )
    .await;
    assert!(
        status == 200 && proxied.contains("Server time: "),
        "{proxied}"
    );
}

#[tokio::test]
async fn the_demo_model_calls_the_app_tool_when_asked() {
    let app = start(&[], &[]);
    demo_connected(&app.url).await;
    let chat = |text: &'static str| {
        let url = format!("{}/api/chat", app.url);
        async move {
            let body =
                json!({"model": "lmchatkit-demo", "messages": [{"role": "user", "content": text}]});
            post(&url, body).await.1
        }
    };
    let sse = chat("show me the clock").await;
    assert!(
        sse.contains(r#""type":"tool_call""#)
            && sse.contains(r#""name":"demo__show_clock""#)
            && sse.contains(r#""finish_reason":"tool_calls""#),
        "{sse}"
    );
    let sse = chat("hello").await;
    assert!(!sse.contains("tool_call") && sse.contains("clock"), "{sse}");
}

#[tokio::test]
async fn no_demo_mcp_switches_the_demo_server_off() {
    let app = start(&["--no-demo-mcp"], &[]);
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    assert_eq!(cfg["mcp"], json!([]), "{cfg}");
    assert_eq!(
        get_json(&format!("{}/api/prompts", app.url)).await,
        json!([])
    );
    let (status, _) = post(
        &format!("{}/api/tools/call", app.url),
        json!({"name": "demo__roll_dice"}),
    )
    .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn the_shipped_personas_and_commands_are_the_defaults() {
    let app = start(&[], &[]);
    let personas = get_json(&format!("{}/api/personas", app.url)).await;
    let names: Vec<&str> = personas
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Default", "Coder", "Writer"]);
    let commands = get_json(&format!("{}/api/commands", app.url))
        .await
        .to_string();
    assert!(
        commands.contains(r#""name":"review""#) && !commands.contains("todo"),
        "{commands}"
    );
    // A configured (here: empty) directory replaces them.
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    let app = start(&["--personas-dir", dir, "--commands-dir", dir], &[]);
    let personas = get_json(&format!("{}/api/personas", app.url)).await;
    assert_eq!(personas.as_array().unwrap().len(), 1, "{personas}");
    assert_eq!(
        get_json(&format!("{}/api/commands", app.url)).await,
        json!([])
    );
}

#[tokio::test]
async fn a_sandbox_listener_serves_views_in_proxy_mode_and_nothing_else() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sandbox = format!("127.0.0.1:{port}");
    let app = start(&["--sandbox-listen", &sandbox], &[]);
    let url = &app.url;
    demo_connected(url).await;
    let page = url.trim_end_matches("/chat");
    let res = http_client()
        .post(format!("{url}/api/apps/view"))
        .header("origin", page)
        .json(&json!({"via": "demo__show_clock", "uri": "ui://lmchatkit-demo/clock.html"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let view: serde_json::Value = res.json().await.unwrap();
    assert_eq!(view["proxy"], true);
    assert!(view["html"].as_str().unwrap().contains("ui/initialize"));
    let view_url = view["url"].as_str().unwrap();
    // The demo server's own sandbox host name, under the default `localhost` base.
    let authority = view_url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    assert!(
        authority.starts_with("v-") && authority.ends_with(&format!(".localhost:{port}")),
        "{view_url}"
    );
    assert!(view_url.contains("/chat/apps/sandbox?t="), "{view_url}");
    // The sandbox listener answers the proxy page (asked for by its own host name) and nothing else.
    let on_sandbox = view_url.replace(authority, &format!("127.0.0.1:{port}"));
    let res = http_client()
        .get(&on_sandbox)
        .header("host", authority)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.starts_with("default-src 'none'; "), "{csp}");
    assert!(
        res.text()
            .await
            .unwrap()
            .contains(&format!("var HOST = \"{page}\";"))
    );
    for path in ["/chat/api/models", "/chat", "/chat/api/conversations"] {
        let (status, _) = get(&format!("http://127.0.0.1:{port}{path}")).await;
        assert_eq!(status, 404, "{path} on the sandbox listener");
    }
}

/// DNS rebinding against the real app: a page on `rebind.example` resolved to 127.0.0.1 sends
/// its own name as `Host` (and a matching `Origin`). Before the host check the app answered it
/// with the conversation list and ran its tool calls.
#[tokio::test]
async fn the_app_serves_only_its_host_names() {
    let port = |url: &str| {
        url.split(':')
            .nth(2)
            .and_then(|p| p.split('/').next())
            .unwrap()
            .to_owned()
    };
    let ask = |url: String, host: String| async move {
        let origin = format!("http://{host}");
        let res = http_client()
            .get(url)
            .header("host", host)
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        res.status().as_u16()
    };
    let app = start(&["--no-demo"], &[]);
    let p = port(&app.url);
    let list = format!("{}/api/conversations", app.url);
    assert_eq!(ask(list.clone(), format!("rebind.example:{p}")).await, 403);
    assert_eq!(ask(list.clone(), format!("localhost:{p}")).await, 200);
    assert_eq!(ask(list.clone(), format!("127.0.0.1:{p}")).await, 200);

    let app = start(&["--no-demo", "--allowed-host", "chat.example"], &[]);
    let p = port(&app.url);
    let list = format!("{}/api/conversations", app.url);
    assert_eq!(ask(list.clone(), format!("chat.example:{p}")).await, 200);
    assert_eq!(ask(list, format!("rebind.example:{p}")).await, 403);
}

/// Slowloris: a client that never finishes its request head. Before the app set a timer on
/// its connections, such a connection stayed open indefinitely (65 s and counting, probed).
#[tokio::test]
async fn slow_silent_and_idle_connections_are_closed_on_the_header_timer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = start(&["--no-demo", "--header-timeout", "1"], &[]);
    let addr = app
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let started = Instant::now();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    conn.write_all(b"GET /chat/api/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let closed = tokio::time::timeout(Duration::from_secs(8), async {
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    let took = started.elapsed();
    assert!(
        closed.is_ok(),
        "the stalled connection is still open after 8 s"
    );
    assert!(
        took >= Duration::from_millis(900),
        "closed too early: {took:?}"
    );
    eprintln!("a stalled request head was dropped after {took:?} (timeout 1 s)");

    // A connection that says nothing at all is closed on the same timer.
    let started = Instant::now();
    let mut quiet = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(8), quiet.read(&mut buf)).await;
    assert!(
        closed.is_ok(),
        "the silent connection is still open after 8 s"
    );
    eprintln!(
        "a silent connection was dropped after {:?}",
        started.elapsed()
    );

    // So is a kept-alive connection that goes quiet after its response.
    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /chat/api/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let n = kept.read(&mut buf).await.unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    let started = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(8), async {
        while let Ok(n) = kept.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the idle kept-alive connection is still open after 8 s"
    );
    eprintln!(
        "an idle kept-alive connection was dropped after {:?}",
        started.elapsed()
    );
}
