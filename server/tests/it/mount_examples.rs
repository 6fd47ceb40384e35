//! Every mount example (`examples/`) is started as its own process and must answer
//! `/chat/api/models` and stream `/chat/api/chat` (cargo builds the examples before the tests).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};

struct Example(Child, String);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn example_path(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

fn start(name: &str) -> Example {
    let path = example_path(name);
    assert!(path.exists(), "{} is not built", path.display());
    let mut child = Command::new(path)
        .env("ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{name} printed {line:?}"))
        .to_owned();
    Example(child, url)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// Models answer, and a chat streams (the first chunk arrives before the reply is complete).
async fn check(ex: &Example, user: Option<&str>, model: &str) {
    let with_user = |rb: reqwest::RequestBuilder| match user {
        Some(u) => rb.header("x-user", u),
        None => rb,
    };
    let res = with_user(client().get(format!("{}/api/models", ex.1)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let models: Value = res.json().await.unwrap();
    assert_eq!(models[0]["id"], model);
    let res = with_user(client().post(format!("{}/api/chat", ex.1)))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hello there"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert!(
        res.headers().get("content-encoding").is_none(),
        "SSE must not be compressed"
    );
    let mut body = res.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    // A run's events carry their sequence id (for resume) before the data line.
    let data = match first.strip_prefix(b"id: ") {
        Some(rest) => {
            let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            assert!(rest[..line_end].iter().all(u8::is_ascii_digit), "{first:?}");
            &rest[(line_end + 1).min(rest.len())..]
        }
        None => &first[..],
    };
    assert!(data.starts_with(b"data: {\"type\""), "{first:?}");
    let mut all = String::from_utf8_lossy(&first).into_owned();
    while let Some(chunk) = body.next().await {
        all.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(all.contains("\"type\":\"done\""), "{all}");
}

#[tokio::test]
async fn hyper_example() {
    check(&start("hyper"), None, "lmchatkit-demo").await;
}

#[tokio::test]
async fn custom_host_example() {
    let ex = start("custom_host");
    check(&ex, None, "reverser").await;
}

#[tokio::test]
async fn axum_example_with_auth_layer() {
    let ex = start("axum");
    check(&ex, Some("alice"), "lmchatkit-demo").await;
    let res = client()
        .get(format!("{}/api/models", ex.1))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        401,
        "the host's auth layer runs before the chat"
    );
    let home = ex.1.trim_end_matches("/chat").to_owned() + "/";
    assert_eq!(
        client()
            .get(home)
            .header("x-user", "a")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "the host's own home page"
    );
    // History is scoped by the principal the layer set.
    let put = |user: &str| {
        client()
            .put(format!("{}/api/conversations/c-1", ex.1))
            .header("x-user", user)
            .json(&json!({"id": "c-1", "title": "t", "revision": 0, "messages": []}))
    };
    assert_eq!(put("alice").send().await.unwrap().status(), 200);
    let list = |user: &str| {
        client()
            .get(format!("{}/api/conversations", ex.1))
            .header("x-user", user)
            .send()
    };
    assert_eq!(list("bob").await.unwrap().text().await.unwrap(), "[]");
    assert!(
        list("alice")
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .contains("\"c-1\"")
    );
}

#[tokio::test]
async fn actix_example_streams() {
    check(&start("actix"), None, "lmchatkit-demo").await;
}

#[tokio::test]
async fn layers_example_compresses_json_but_not_sse() {
    let ex = start("layers");
    check(&ex, None, "lmchatkit-demo").await;
    let res = client()
        .get(format!("{}/api/personas", ex.1))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // reqwest here has no gzip decoder: the raw header tells what the layer did.
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let raw = res.bytes().await.unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b], "a gzip stream");
}
