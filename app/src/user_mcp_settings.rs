//! `[user_mcp]` of the TOML file: whether signed-in users may add their own MCP servers, the
//! hosts the operator allows them to reach over http and at private addresses (`allow_hosts`),
//! and the key file that seals their credentials (`key_file`, default `user-mcp.key` next to
//! the history database, created 0600 on first run), and the presets every user is offered
//! (`[[user_mcp.presets]]` with `slug`, `url` and an optional `name`; see
//! `lmchatkit::user_mcp::UserMcpPreset`).
//!
//! Users' servers live in the history's database: its SQLite file (in memory with
//! `db = "memory:"`), or its PostgreSQL database, where `key_file` must be given (see
//! `db_settings.rs`). Only
//! signed-in principals have a registry: behind `--trusted-user-header`; with a token, every
//! request is the anonymous user and gets 401 from these routes (the app warns).

use std::path::{Path, PathBuf};

use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::user_mcp::UserMcpPreset;
use serde::Deserialize;

/// The file's `[user_mcp]` table.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUserMcp {
    enabled: Option<bool>,
    #[serde(default)]
    allow_hosts: Vec<String>,
    pub key_file: Option<PathBuf>,
    #[serde(default)]
    presets: Vec<FilePreset>,
}

/// One `[[user_mcp.presets]]` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePreset {
    slug: String,
    url: String,
    name: Option<String>,
}

/// `[user_mcp]`, resolved (present only when enabled).
#[derive(Debug, Clone, PartialEq)]
pub struct UserMcpSettings {
    /// Hosts users' servers may reach over http and at refused addresses.
    pub allow_hosts: Vec<String>,
    /// Where the sealing key lives (`None`: next to the history file).
    pub key_file: Option<PathBuf>,
    /// Servers offered to every user (checked against the policy when the service is built).
    pub presets: Vec<UserMcpPreset>,
}

impl UserMcpSettings {
    /// The operator's outbound policy.
    pub fn policy(&self) -> OutboundPolicy {
        self.allow_hosts
            .iter()
            .fold(OutboundPolicy::new(), |p, h| p.with_allowed_host(h))
    }

    /// The key file: as configured, else `user-mcp.key` in the history file's directory (the
    /// default data directory when the history is in memory).
    pub fn key_path(&self, db: &Path) -> PathBuf {
        match &self.key_file {
            Some(p) => p.clone(),
            None => db.parent().unwrap_or(Path::new("")).join("user-mcp.key"),
        }
    }
}

/// `Some` when `[user_mcp] enabled = true`; blank hosts are dropped.
pub fn resolve(file: FileUserMcp) -> Result<Option<UserMcpSettings>, String> {
    if file.enabled != Some(true) {
        if file.key_file.is_some() || !file.allow_hosts.is_empty() {
            tracing::debug!("[user_mcp] is configured but not enabled");
        }
        return Ok(None);
    }
    let allow_hosts: Vec<String> = file
        .allow_hosts
        .into_iter()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .collect();
    if let Some(bad) = allow_hosts.iter().find(|h| h.contains(['/', ' ', '@'])) {
        return Err(format!(
            "user_mcp.allow_hosts: {bad:?} is not a host name or IP address"
        ));
    }
    let mut settings = UserMcpSettings {
        allow_hosts,
        key_file: file.key_file,
        presets: Vec::new(),
    };
    // Checked here too, so that a bad preset is a configuration error (exit 2).
    let policy = settings.policy();
    for p in file.presets {
        let preset = UserMcpPreset::new(p.slug, p.url);
        let preset = match p.name {
            Some(name) => preset.with_name(name),
            None => preset,
        };
        settings
            .presets
            .push(preset.check(&policy).map_err(|e| e.to_string())?);
    }
    Ok(Some(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(toml_text: &str) -> FileUserMcp {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn user_mcp_is_off_unless_enabled() {
        assert_eq!(resolve(FileUserMcp::default()).unwrap(), None);
        assert_eq!(resolve(file("allow_hosts = [\"x\"]")).unwrap(), None);
        assert!(
            toml::from_str::<FileUserMcp>("allow_host = []").is_err(),
            "typos are errors"
        );
    }

    #[test]
    fn allowed_hosts_make_the_policy_and_the_key_sits_next_to_the_history() {
        let s = resolve(file(
            "enabled = true\nallow_hosts = [\" mcp.internal \", \"\"]",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(s.allow_hosts, ["mcp.internal"]);
        let policy = s.policy();
        assert!(policy.check_url("http://mcp.internal:8080/mcp").is_ok());
        assert!(policy.check_url("http://other.example/mcp").is_err());
        assert!(policy.check_url("https://127.0.0.1/").is_err());
        assert_eq!(
            s.key_path(Path::new("/data/history.db")),
            Path::new("/data/user-mcp.key")
        );
        let s = resolve(file("enabled = true\nkey_file = \"/k/key\""))
            .unwrap()
            .unwrap();
        assert_eq!(
            s.key_path(Path::new("/data/history.db")),
            Path::new("/k/key")
        );
        assert!(resolve(file("enabled = true\nallow_hosts = [\"http://x/\"]")).is_err());
    }

    #[test]
    fn presets_are_read_with_their_optional_name() {
        let s = resolve(file(
            "enabled = true\n[[presets]]\nslug = \"docs\"\nurl = \"https://mcp.example.com/mcp\"\n\
             [[presets]]\nslug = \"wiki\"\nurl = \"https://wiki.example.com/mcp\"\nname = \"Wiki\"",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            s.presets,
            [
                UserMcpPreset::new("docs", "https://mcp.example.com/mcp"),
                UserMcpPreset::new("wiki", "https://wiki.example.com/mcp").with_name("Wiki"),
            ]
        );
        assert!(
            toml::from_str::<FileUserMcp>(
                "[[presets]]\nslug = \"x\"\nurl = \"https://x/\"\nheaders = {}"
            )
            .is_err(),
            "a preset has no headers: credentials are each user's"
        );
    }
}
