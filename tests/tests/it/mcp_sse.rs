//! The hub over the older HTTP+SSE transport (`McpServerConfig::sse`, `transport = "sse"`):
//! against a real server that speaks only it, the Python `mcp` package's
//! (`tests/python/sse_server.py`, installed by `scripts/setup-test.sh`), and against a hand-made
//! stream whose server names an endpoint on another origin (refused before anything is sent
//! there). Skipped with a note when the Python package is missing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lmchatkit::Scope;
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit_tests::mcp_server::{free_port, python_bin};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `tests/python/sse_server.py` on a free port. Killed when dropped.
struct PythonSse {
    _child: tokio::process::Child,
    port: u16,
}

impl PythonSse {
    async fn start() -> Option<Self> {
        let python = python_bin()?;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/sse_server.py");
        let port = free_port();
        let child = tokio::process::Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python SSE server");
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(Self {
                    _child: child,
                    port,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the Python SSE server did not listen on {port}");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }
}

#[tokio::test]
async fn a_server_that_speaks_only_http_sse_lists_calls_and_prompts_through_the_hub() {
    let Some(server) = PythonSse::start().await else {
        return;
    };
    let hub = McpHub::new(vec![McpServerConfig::sse("older", server.url())]);
    hub.start().await;
    assert_eq!(hub.status()[0].status, "connected", "{:?}", hub.status());
    // The transport is the older one; the protocol is what the two agree on (this server
    // answers `server/discover`).
    let version = hub.protocol_version("older").await.unwrap_or_default();
    assert_eq!(version, "2026-07-28");

    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["older__add", "older__fail", "older__shout"]);
    let add = tools.iter().find(|t| t.name == "older__add").unwrap();
    assert_eq!(
        add.input_schema.as_ref().unwrap()["properties"]["a"]["type"],
        "integer"
    );

    let r = hub
        .call_tool(&Scope::default(), "older__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(!r.is_error && r.content.contains("42"), "{r:?}");
    // Calls overlap on the one stream: each answer finds its call.
    let scope = Scope::default();
    let (a, b) = tokio::join!(
        hub.call_tool(&scope, "older__shout", json!({"text": "one"})),
        hub.call_tool(&scope, "older__shout", json!({"text": "two"})),
    );
    assert_eq!(
        (a.unwrap().content, b.unwrap().content),
        ("ONE".into(), "TWO".into())
    );
    // A tool's failure is the call's error result, and the connection stays.
    let r = hub
        .call_tool(
            &Scope::default(),
            "older__fail",
            json!({"reason": "no disk"}),
        )
        .await
        .unwrap();
    assert!(r.is_error && r.content.contains("no disk"), "{r:?}");

    let prompts = hub.list_prompts(&Scope::default()).await.unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["older__greet"]
    );
    let r = hub
        .get_prompt(
            &Scope::default(),
            "older__greet",
            BTreeMap::from([("name".to_owned(), "Ada".to_owned())]),
        )
        .await
        .unwrap();
    assert!(
        r.messages.iter().any(|m| m.content.contains("Ada")),
        "{r:?}"
    );
    assert_eq!(hub.status()[0].status, "connected");
}

/// A stream that names its endpoint on `elsewhere`, recording each request head it gets.
async fn stream_naming(elsewhere: String, heads: Arc<std::sync::Mutex<Vec<String>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let (elsewhere, heads) = (elsewhere.clone(), heads.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                heads
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let body = format!("event: endpoint\ndata: {elsewhere}\n\n");
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            cache-control: no-cache\r\n\r\n";
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                // Keep the stream open, as a server does.
                tokio::time::sleep(Duration::from_secs(30)).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_before_anything_is_sent_there() {
    // The other origin: a listener counting what reaches it.
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_port = other.local_addr().unwrap().port();
    let reached = Arc::new(AtomicUsize::new(0));
    {
        let reached = reached.clone();
        tokio::spawn(async move {
            while let Ok((_s, _)) = other.accept().await {
                reached.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let port = stream_naming(
        format!("http://127.0.0.1:{other_port}/messages?session=1"),
        heads.clone(),
    )
    .await;
    let hub = McpHub::new(vec![
        McpServerConfig::sse("sly", format!("http://127.0.0.1:{port}/sse"))
            .with_bearer("t0k3n-of-the-operator")
            .with_header("X-Team", "blue"),
    ]);
    hub.start().await;
    let status = &hub.status()[0];
    assert_ne!(status.status, "connected", "{status:?}");
    let problems = format!("{:?} {:?}", hub.status(), hub.problems());
    assert!(problems.contains("another origin"), "{problems}");
    assert!(!problems.contains("t0k3n-of-the-operator"), "{problems}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "nothing reached the other origin"
    );
    // The stream's own request carried the headers and the token, and asked for events.
    let heads = heads.lock().unwrap().clone();
    let first = heads
        .first()
        .map(|h| h.to_ascii_lowercase())
        .unwrap_or_default();
    assert!(first.starts_with("get /sse "), "{first}");
    assert!(
        first.contains("authorization: bearer t0k3n-of-the-operator"),
        "{first}"
    );
    assert!(first.contains("x-team: blue"), "{first}");
    assert!(first.contains("accept: text/event-stream"), "{first}");
}

#[test]
fn the_config_file_names_the_transport() {
    let file = lmchatkit::mcp::McpConfigFile::from_toml_str(
        r#"
        [[mcp.servers]]
        name = "older"
        url = "http://127.0.0.1:8000/sse"
        transport = "sse"
        bearer = "b"
        "#,
    )
    .unwrap();
    assert!(matches!(
        &file.servers[0].transport,
        lmchatkit::mcp::McpTransport::Sse { bearer: Some(b), .. } if b == "b"
    ));
    for (bad, says) in [
        (
            "url = \"http://x/sse\"\ntransport = \"websocket\"",
            "unknown transport",
        ),
        ("command = \"srv\"\ntransport = \"sse\"", "always stdio"),
    ] {
        let e = lmchatkit::mcp::McpConfigFile::from_toml_str(&format!(
            "[[mcp.servers]]\nname = \"x\"\n{bad}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
