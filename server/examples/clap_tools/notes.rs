//! `notes`: the small real clap CLI of the `clap_tools` example (`main.rs` beside this file).
//! The end-to-end tests include this file too (`lmchatkit_tests::notes`), so they describe the
//! example binary's command line (`Notes::command()`) for the subprocess mode.
//!
//! Notes are kept one per line in the file `$NOTES_FILE`, or in memory for the life of the
//! process when it is unset.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{ArgMatches, FromArgMatches, Parser, Subcommand, ValueEnum};
use lmchatkit::clap_tools::{ClapToolset, CommandHint, DispatchError, ToolOutput};
use serde_json::json;

/// A tiny notebook.
#[derive(Parser, Debug)]
#[command(name = "notes", version)]
pub struct Notes {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// How `list` prints.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Add a note
    Add {
        /// The note's text
        text: String,
        /// Tags (repeatable)
        #[arg(long)]
        tag: Vec<String>,
    },
    /// List notes, oldest first
    List {
        /// Show at most this many
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Output format
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Remove a note by its number (as `list` shows it)
    Remove {
        /// The note's number, from 1
        number: usize,
    },
    /// Wait, then say so (to try timeouts and cancellation)
    Wait {
        /// How long, in milliseconds
        #[arg(long, default_value_t = 1000)]
        ms: u64,
        /// Write this process's id here first
        #[arg(long)]
        pid_file: Option<PathBuf>,
    },
    /// Serve the chat with these commands as tools (not a tool itself: hidden)
    #[command(hide = true)]
    ServeChat,
    /// Serve these commands as an MCP server on stdio (hidden)
    #[command(hide = true)]
    Mcp,
}

/// Where notes are kept.
#[derive(Clone, Debug, Default)]
pub struct Store {
    file: Option<PathBuf>,
    memory: Arc<Mutex<Vec<String>>>,
}

impl Store {
    /// `$NOTES_FILE`, or memory.
    pub fn from_env() -> Self {
        Self {
            file: std::env::var_os("NOTES_FILE").map(PathBuf::from),
            memory: Arc::default(),
        }
    }

    fn load(&self) -> Result<Vec<String>, DispatchError> {
        match &self.file {
            None => Ok(self.memory.lock().unwrap().clone()),
            Some(f) => match std::fs::read_to_string(f) {
                Ok(s) => Ok(s.lines().map(str::to_owned).collect()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            },
        }
    }

    fn save(&self, notes: Vec<String>) -> Result<(), DispatchError> {
        match &self.file {
            None => *self.memory.lock().unwrap() = notes,
            Some(f) => {
                let mut text = notes.join("\n");
                text.push('\n');
                std::fs::write(f, text)?;
            }
        }
        Ok(())
    }
}

/// Runs one command (the same code for the command line and for tools).
pub async fn run(cmd: Cmd, store: &Store) -> Result<ToolOutput, DispatchError> {
    match cmd {
        Cmd::Add { text, tag } => {
            let mut notes = store.load()?;
            let line = if tag.is_empty() {
                text
            } else {
                format!("{text} #{}", tag.join(" #"))
            };
            notes.push(line.replace('\n', " "));
            let n = notes.len();
            store.save(notes)?;
            Ok(ToolOutput::text(format!("added note {n}")))
        }
        Cmd::List { limit, format } => {
            let notes = store.load()?;
            let shown: Vec<(usize, &String)> = notes.iter().enumerate().take(limit).collect();
            Ok(match format {
                Format::Text if shown.is_empty() => ToolOutput::text("no notes"),
                Format::Text => ToolOutput::text(
                    shown
                        .iter()
                        .map(|(i, n)| format!("{}. {n}", i + 1))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Format::Json => ToolOutput::json(json!({
                    "notes": shown.iter().map(|(_, n)| n).collect::<Vec<_>>(),
                    "total": notes.len(),
                })),
            })
        }
        Cmd::Remove { number } => {
            let mut notes = store.load()?;
            if number == 0 || number > notes.len() {
                return Ok(ToolOutput::error(format!(
                    "there is no note {number} (there are {})",
                    notes.len()
                )));
            }
            let gone = notes.remove(number - 1);
            store.save(notes)?;
            Ok(ToolOutput::text(format!("removed: {gone}")))
        }
        Cmd::Wait { ms, pid_file } => {
            if let Some(f) = pid_file {
                std::fs::write(f, std::process::id().to_string())?;
            }
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(format!("waited {ms} ms")))
        }
        Cmd::ServeChat | Cmd::Mcp => Err("not a tool".into()),
    }
}

/// The hints: `list` and `wait` only read.
fn hinted(set: ClapToolset) -> ClapToolset {
    set.with_hint("list", CommandHint::ReadOnly)
        .with_hint("wait", CommandHint::ReadOnly)
}

/// The CLI as tools run in this process, over `store`.
pub fn in_process(store: Store) -> ClapToolset {
    use clap::CommandFactory;
    hinted(ClapToolset::new(Notes::command(), move |m: ArgMatches| {
        let store = store.clone();
        async move {
            let cli = Notes::from_arg_matches(&m)?;
            run(cli.cmd, &store).await
        }
    }))
}

/// The CLI as tools run by starting `program` (the built example) per call.
#[allow(dead_code)] // the end-to-end tests, which include this file, run the example this way
pub fn subprocess(program: impl Into<PathBuf>) -> ClapToolset {
    use clap::CommandFactory;
    hinted(ClapToolset::subprocess(Notes::command(), program))
}
