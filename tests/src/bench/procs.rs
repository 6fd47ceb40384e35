//! The processes of a run: the mock, the echo and lmchatkit (this binary's own `serve`
//! subcommands, each in its own process) and the peers (the AI SDK relay under Node, the
//! LiteLLM proxy). Each child is killed when its handle drops.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The AI SDK relay script, written next to the pinned `node_modules` it imports.
pub const AISDK_RELAY: &str = include_str!("../../bench/aisdk-relay.mjs");
/// The LiteLLM proxy config (reads `MOCK_BASE_URL`).
pub const LITELLM_CONFIG: &str = include_str!("../../bench/litellm.yaml");

/// A running child process with the address it listens on.
#[derive(Debug)]
pub struct Proc {
    /// Short name for messages.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl Proc {
    /// The process id (for CPU and RSS).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `cmd` and waits for the `LISTEN addr` line it prints on stdout.
fn spawn_listening(name: &str, mut cmd: Command) -> Result<Proc, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().map_err(|e| format!("{name}: spawn: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut sent = false;
        for line in lines.by_ref().map_while(Result::ok) {
            if !sent && let Some(a) = line.strip_prefix("LISTEN ") {
                let _ = tx.send(a.trim().to_owned());
                sent = true;
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| format!("{name}: did not report its address"))?;
    let addr = addr
        .parse()
        .map_err(|_| format!("{name}: bad address {addr}"))?;
    Ok(Proc {
        name: name.into(),
        addr,
        child,
    })
}

/// Starts one of this binary's `serve` subcommands (`mock`, `echo`, `lmchatkit`).
pub fn serve_self(name: &str, args: &[&str]) -> Result<Proc, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.arg("serve").args(args);
    spawn_listening(name, cmd)
}

/// Starts the AI SDK relay from `dir` (which holds the pinned `node_modules`).
pub fn aisdk(dir: &Path, upstream_v1: &str) -> Result<Proc, String> {
    if !dir.join("node_modules/ai").is_dir() {
        return Err(format!(
            "{}: no node_modules/ai (run scripts/bench.sh)",
            dir.display()
        ));
    }
    let script = dir.join("aisdk-relay.mjs");
    std::fs::write(&script, AISDK_RELAY).map_err(|e| e.to_string())?;
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .env("UPSTREAM_BASE_URL", upstream_v1)
        .env("PORT", "0")
        .env("NODE_ENV", "production");
    spawn_listening("ai-sdk", cmd)
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts the LiteLLM proxy (`litellm` CLI of a venv) with one worker and waits until its
/// liveness route answers.
pub fn litellm(bin: &Path, work: &Path, upstream_v1: &str) -> Result<Proc, String> {
    if !bin.is_file() {
        return Err(format!(
            "{}: not installed (run scripts/bench.sh)",
            bin.display()
        ));
    }
    let config: PathBuf = work.join("litellm.yaml");
    std::fs::write(&config, LITELLM_CONFIG).map_err(|e| e.to_string())?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg("--config")
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--num_workers", "1"])
        .env("MOCK_BASE_URL", upstream_v1)
        .env("LITELLM_LOG", "ERROR")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("NO_DOCS", "True")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("litellm: spawn: {e}"))?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let proc = Proc {
        name: "litellm".into(),
        addr,
        child,
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(180) {
        if liveness(addr) {
            return Ok(proc);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err("litellm: not live after 180 s".into())
}

fn liveness(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = "GET /health/liveliness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    s.read(&mut buf)
        .is_ok_and(|n| buf[..n].starts_with(b"HTTP/1.1 200"))
}
