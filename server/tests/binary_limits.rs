//! Memory under hostile bodies, measured on the real binary: four concurrent 15 MiB bodies of
//! opaque JSON once took the app from 21 to 1,168 MiB (parsed into `serde_json::Value`, ~30×
//! their size). They are refused (413) before any tree is built.

mod binary_support;

use binary_support::*;

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
