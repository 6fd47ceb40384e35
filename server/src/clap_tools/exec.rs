//! The two executors: the application's dispatcher in-process, or the clap binary as a
//! subprocess. Both run inside the caller's future, under the toolset's timeout, so dropping
//! the call cancels the command (the dispatcher's future is dropped; the child is killed).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use clap::ArgMatches;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{DispatchError, ToolOutput};

/// The application's dispatcher, boxed.
pub(crate) type Dispatcher =
    Arc<dyn Fn(ArgMatches) -> BoxFuture<'static, Result<ToolOutput, DispatchError>> + Send + Sync>;

/// A clap binary on disk and how it is started.
#[derive(Clone)]
pub(crate) struct Subprocess {
    pub program: PathBuf,
    pub env: BTreeMap<String, String>,
    pub inherit_env: Vec<String>,
    pub cwd: Option<PathBuf>,
}

#[derive(Clone)]
pub(crate) enum Executor {
    InProcess(Dispatcher),
    Subprocess(Subprocess),
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InProcess(_) => f.write_str("InProcess"),
            // Values of `env` may be secrets: names only.
            Self::Subprocess(s) => f
                .debug_struct("Subprocess")
                .field("program", &s.program)
                .field("env", &s.env.keys().collect::<Vec<_>>())
                .field("inherit_env", &s.inherit_env)
                .field("cwd", &s.cwd)
                .finish(),
        }
    }
}

/// Runs the dispatcher; a panic becomes an error output (and is logged), never a crash.
pub(crate) async fn in_process(
    dispatch: &Dispatcher,
    matches: ArgMatches,
    command: &str,
) -> ToolOutput {
    match AssertUnwindSafe(dispatch(matches)).catch_unwind().await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => ToolOutput::error(e.to_string()),
        Err(_) => {
            tracing::error!(command, "a CLI tool's dispatcher panicked");
            ToolOutput::error(format!("`{command}` failed: the command panicked"))
        }
    }
}

/// Runs `program args…` with stdin closed, stdout and stderr captured (each cut to `cap`
/// bytes), killed when the returned future is dropped.
pub(crate) async fn subprocess(
    sp: &Subprocess,
    args: &[String],
    cap: usize,
    command: &str,
) -> ToolOutput {
    let mut cmd = tokio::process::Command::new(&sp.program);
    cmd.args(args)
        .env_clear()
        .envs(crate::mcp::child_env(
            std::env::vars_os(),
            &sp.inherit_env,
            &sp.env,
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &sp.cwd {
        cmd.current_dir(dir);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(program = %sp.program.display(), error = %e, "starting a CLI tool failed");
            return ToolOutput::error(format!(
                "`{command}` could not start ({}): {e}",
                sp.program.display()
            ));
        }
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return ToolOutput::error(format!("`{command}`: the output pipes are missing"));
    };
    let (out, err, status) = tokio::join!(
        read_capped(stdout, cap),
        read_capped(stderr, cap),
        child.wait()
    );
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, command, "waiting for a CLI tool failed");
            return ToolOutput::error(format!("`{command}` failed: {e}"));
        }
    };
    if status.success() {
        let mut text = out;
        if !err.trim().is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&err);
        }
        ToolOutput::text(text)
    } else {
        let code = status
            .code()
            .map_or_else(|| "a signal".to_owned(), |c| format!("exit status {c}"));
        let mut text = format!("`{command}` failed with {code}");
        for (label, body) in [("stderr", &err), ("stdout", &out)] {
            if !body.trim().is_empty() {
                text.push_str(&format!("\n[{label}]\n{body}"));
            }
        }
        ToolOutput::error(text)
    }
}

/// Reads all of `r`, keeping the first `cap` bytes (lossy UTF-8) and noting what was cut; the
/// rest is read and dropped so the child never blocks on a full pipe.
async fn read_capped(mut r: impl AsyncRead + Unpin, cap: usize) -> String {
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
                dropped += n - room;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading a CLI tool's output failed");
                break;
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n[output cut: {dropped} more bytes]"));
    }
    text
}

/// `text` cut to `cap` bytes at a character boundary, noting what was cut.
pub(crate) fn cap_text(mut text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let dropped = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("\n[output cut: {dropped} more bytes]"));
    text
}
