//! The built `lmchatkit` app binary, started as its own process by the tests that need the
//! whole app (its CLI, its defaults, several instances): where it is, and starting it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// `target/<profile>/lmchatkit`, next to the running test's `deps/` directory (`cargo test
/// --workspace` builds it).
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("lmchatkit")
}

/// The binary's command with none of the environment's `LMCHATKIT_*` / `OPENAI_*` settings
/// (so the developer's shell cannot change a test) and stdout piped for [`spawn`].
pub fn command() -> Command {
    let mut cmd = Command::new(binary());
    for (key, _) in std::env::vars() {
        if key.starts_with("LMCHATKIT_") || key.starts_with("OPENAI_") {
            cmd.env_remove(key);
        }
    }
    cmd.stdout(Stdio::piped());
    cmd
}

/// A running app (killed when dropped) and the URL it printed to open.
pub struct App {
    pub child: Child,
    pub url: String,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` (from [`command`]) and waits for the URL the app prints first.
pub fn spawn(mut cmd: Command) -> App {
    let mut child = cmd.spawn().unwrap();
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
    App { child, url }
}
