//! Limits measured on the real binary:
//! - Memory under hostile bodies: four concurrent 15 MiB bodies of opaque JSON once took the
//!   app from 21 to 1,168 MiB (parsed into `serde_json::Value`, ~30× their size). They are
//!   refused (413) before any tree is built.
//! - File descriptors: with few open files allowed, streams past what they carry are 429 with
//!   `Retry-After` while the app keeps answering, instead of failing to accept or connect.

use crate::support;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `VmHWM` (peak resident set) and `VmRSS` of a process, in MiB.
fn memory_mib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
            / 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// ~15 MiB of small numbers: the costliest shape for a JSON tree.
fn numbers(mib: usize) -> String {
    let mut s = String::with_capacity(mib << 20);
    s.push('[');
    while s.len() < (mib << 20) - 2 {
        s.push_str("1,");
    }
    s.push_str("1]");
    s
}

#[tokio::test]
async fn four_concurrent_15_mib_bodies_of_opaque_json_are_refused_in_little_memory() {
    let app = start(&["--no-demo", "--no-demo-mcp"], &[]);
    let pid = app.child.id();
    let base = app.url.clone();
    let (before, _) = memory_mib(pid);
    let big = numbers(15);
    // Two shapes: one huge field, and many fields each under its own cap (1 MiB of
    // structured results each) that add up.
    let context = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"model_context":{big}}}"#
    );
    let one = numbers(1);
    let results: Vec<String> = (0..14)
        .map(|i| {
            format!(
                r#"{{"role":"tool","tool_call_id":"c{i}","content":"r","structured_content":{one}}}"#
            )
        })
        .collect();
    let history = format!(
        r#"{{"id":"c","title":"t","messages":[{{"role":"user","content":"hi"}},{}]}}"#,
        results.join(",")
    );
    let client = http_client();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let (method, url, body) = if i % 2 == 0 {
            (
                reqwest::Method::POST,
                format!("{base}/api/chat"),
                context.clone(),
            )
        } else {
            (
                reqwest::Method::PUT,
                format!("{base}/api/conversations/c{i}"),
                history.clone(),
            )
        };
        assert!(body.len() > 14 << 20, "{} bytes", body.len());
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let res = client
                .request(method, url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.text().await.unwrap())
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let (peak, now) = memory_mib(pid);
    eprintln!(
        "four concurrent 15 MiB bodies: RSS {before} MiB before, peak {peak} MiB, {now} MiB after"
    );
    for (status, body) in answers {
        assert_eq!(status, 413, "{body}");
    }
    assert!(
        peak < 256,
        "peak RSS {peak} MiB (was 1,168 MiB before the caps)"
    );
}

/// An upstream that lists `slow-model` and answers every chat with one delta, then holds the
/// stream open until the test ends.
async fn holding_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
                if head.starts_with(b"GET") {
                    let body = r#"{"object":"list","data":[{"id":"slow-model","object":"model"}]}"#;
                    let res = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(res.as_bytes()).await;
                    return;
                }
                let chunk = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"held"},"finish_reason":null}]}"#;
                let res = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {chunk}\n\n"
                );
                let _ = conn.write_all(res.as_bytes()).await;
                // Held until the app or the test goes away.
                let _ = conn.read(&mut buf).await;
            });
        }
    });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_256_open_files_the_64th_stream_is_the_last_and_the_next_is_429_while_the_app_serves()
{
    let upstream = holding_upstream().await;
    // 256 descriptors carry (256 × 3/4 − 64) / 2 = 64 streams; the configured 1,000 is lowered.
    let mut cmd = command(
        &[
            "--no-demo-mcp",
            "--max-streams",
            "1000",
            "--max-streams-per-user",
            "1000",
        ],
        &[("OPENAI_BASE_URL", &upstream)],
    );
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| rlimit::setrlimit(rlimit::Resource::NOFILE, 256, 256));
    }
    let mut app = spawn(cmd, true);
    let base = app.url.clone();
    let client = http_client();
    let chat = || {
        client
            .post(format!("{base}/api/chat"))
            .json(&serde_json::json!({"model": "slow-model",
                "messages": [{"role": "user", "content": "hi"}]}))
            .send()
    };
    let mut open = Vec::new();
    for i in 0..64 {
        let res = chat().await.unwrap();
        assert_eq!(res.status(), 200, "stream {i}");
        open.push(res);
    }
    // Each of them streams: its first delta arrives.
    let first = open[63].chunk().await.unwrap().unwrap();
    assert!(
        String::from_utf8_lossy(&first).contains("held"),
        "{first:?}"
    );

    let refused = chat().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body = refused.text().await.unwrap();
    assert!(body.contains("at most 64"), "{body}");
    // The app still answers everything else, and a freed place is taken again: a client
    // leaving does not end its run (nor free its place); a stop does.
    let (status, _) = get(&format!("{base}/api/config")).await;
    assert_eq!(status, 200);
    let last = open.pop().unwrap();
    let run = last.headers()["lmchatkit-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let (status, body) = post(
        &format!("{base}/api/runs/{run}/stop"),
        serde_json::json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let mut again = None;
    for _ in 0..100 {
        let res = chat().await.unwrap();
        if res.status() == 200 {
            again = Some(res);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "the freed place was never given out again");

    drop(open);
    let _ = app.child.kill();
    let mut logs = String::new();
    use std::io::Read;
    app.stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    assert!(
        logs.contains("max_streams 1000") && logs.contains("limit is 256"),
        "the lowered cap is logged: {logs}"
    );
}
