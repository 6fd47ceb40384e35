//! The real Vercel AI SDK as a client of our endpoints: `tests/aisdk/drive.mjs` runs the `ai`
//! package's own `AbstractChat` + `DefaultChatTransport` under Node against a URL, step by step
//! (send, approve, tamper, stop, resume, load a thread), and prints the chat's state and every
//! raw HTTP exchange after each step. Tests here only pass a scenario and judge the JSON.
//!
//! Decisions:
//! - Three pinned client versions, side by side under npm aliases (`tests/aisdk/package.json`,
//!   installed by `scripts/setup-test.sh` into `.tools/aisdk`): `6.0.0`, whose chunk schemas are
//!   strict (an unknown key fails the stream), the newest 6.0.x and `7.0.185` (npm's latest
//!   major; it asks for Node 22 and runs on this machine's Node 20 with a warning). Every test
//!   runs all three; [`AI_V7`] is the one that may ask for the v7 stream.
//! - Missing packages skip the test with a note, or fail it under `LMCHATKIT_EXPECT_MCP=1`
//!   ([`crate::installed`]), as the MCP tests do.
//! - The driver never hangs (each step has its own timeout and records `"timeout": true`);
//!   [`drive`] adds an outer guard so a wedged Node process still ends the test.
//! - [`Relay`] is the AI SDK's own server side (`streamText` + `toUIMessageStreamResponse`),
//!   the reference the harness is checked against before it meets our endpoint.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// The pinned client versions every AI SDK test runs against.
pub const AI_VERSIONS: [&str; 3] = ["6.0.0", "6.0.326", AI_V7];

/// The pinned `ai@7` (its stream may hold the v7-only chunks when it asks for them).
pub const AI_V7: &str = "7.0.185";

/// The driver's default per-step timeout (`LMCHATKIT_AISDK_STEP_TIMEOUT_MS` overrides it).
const STEP_TIMEOUT_MS: u64 = 20_000;

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("aisdk")
}

/// Where the node packages are: `$LMCHATKIT_AISDK_DIR`, or `<repo>/.tools/aisdk`.
pub fn install_dir() -> PathBuf {
    std::env::var_os("LMCHATKIT_AISDK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/aisdk"))
}

/// Whether the driver and its node packages are installed; when not, tests skip with a message,
/// except when `LMCHATKIT_EXPECT_MCP=1` (CI), where missing packages panic.
pub fn available() -> bool {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        return crate::installed::installed(Path::new("node (on PATH)"));
    }
    let dir = install_dir();
    AI_VERSIONS
        .iter()
        .map(|v| dir.join(format!("node_modules/ai-{v}/package.json")))
        .chain([dir.join("node_modules/@ai-sdk/openai-compatible/package.json")])
        .all(|p| crate::installed::installed(&p))
}

/// Runs the driver for one version with the scenario; returns the parsed stdout JSON
/// (`{"steps": [...]}`). Panics with the driver's stderr when the harness itself broke.
pub async fn drive(version: &str, scenario: &Value) -> Value {
    let steps = scenario["steps"].as_array().map_or(0, Vec::len) as u64;
    let step_ms = scenario["stepTimeoutMs"].as_u64().unwrap_or_else(|| {
        std::env::var("LMCHATKIT_AISDK_STEP_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(STEP_TIMEOUT_MS)
    });
    let mut child = Command::new("node")
        .arg(scripts().join("drive.mjs"))
        .arg(version)
        .env("LMCHATKIT_AISDK_DIR", install_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node tests/aisdk/drive.mjs");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(scenario.to_string().as_bytes())
        .await
        .expect("write the scenario");
    drop(stdin);
    let guard = Duration::from_millis(step_ms * (steps + 1) + 30_000);
    let out = tokio::time::timeout(guard, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("drive.mjs {version} did not finish within {guard:?}"))
        .expect("wait for drive.mjs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "drive.mjs {version} failed ({}):\n{stderr}",
        out.status
    );
    if !stderr.trim().is_empty() {
        eprintln!("drive.mjs {version} stderr:\n{stderr}");
    }
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "drive.mjs {version} printed no JSON ({e}):\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The AI SDK's own chat server (`tests/aisdk/relay.mjs`: `POST /api/chat` runs `streamText`
/// against an OpenAI-compatible upstream and answers `toUIMessageStreamResponse()`), on
/// loopback. Killed when dropped.
pub struct Relay {
    /// `http://127.0.0.1:N/api/chat`, the `api` of a scenario.
    pub api: String,
    _child: Child,
}

impl Relay {
    /// Starts the relay (server side on `ai@6.0.326`) against `upstream_v1` (a `/v1` base URL).
    pub async fn start(upstream_v1: &str) -> Self {
        let mut child = Command::new("node")
            .arg(scripts().join("relay.mjs"))
            .env("LMCHATKIT_AISDK_DIR", install_dir())
            .env("UPSTREAM_BASE_URL", upstream_v1)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn node tests/aisdk/relay.mjs");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("relay stdout") {
                if let Some(addr) = line.strip_prefix("LISTEN ") {
                    return addr.trim().to_owned();
                }
            }
            panic!("relay.mjs exited without listening");
        })
        .await
        .expect("relay.mjs did not report its address within 30 s");
        Self {
            api: format!("http://{addr}/api/chat"),
            _child: child,
        }
    }
}

/// Posts `body` to `{served}/chat/api/aisdk/chat` as a plain HTTP client and reads the whole
/// answer: its status and the UI Message Stream chunks (each `data:` line's JSON).
pub async fn post_turn(
    served: &crate::serve::Served,
    body: &serde_json::Value,
) -> (u16, Vec<serde_json::Value>) {
    let res = reqwest::Client::new()
        .post(served.url("/chat/api/aisdk/chat"))
        .json(body)
        .send()
        .await
        .expect("the AI SDK route answers");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    let chunks = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    (status, chunks)
}
