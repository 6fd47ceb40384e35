//! Which database the app keeps history, approvals and users' MCP servers in: `--db` (or
//! `db = …` in the file) is a SQLite file path (the default), `memory:`, or a PostgreSQL URL
//! (`postgres://…` / `postgresql://…`), whose pool size is `--db-max-connections` (default
//! 10; ignored for SQLite).
//!
//! Decisions: a PostgreSQL URL is checked when the settings load, so a malformed one exits 2
//! before anything starts, with a message that never holds its password; the URL is never
//! printed (`Debug` shows it without user info, logs show the host and database only). A
//! PostgreSQL URL is never taken relative to the config file's directory. With PostgreSQL the
//! user MCP key file (`[user_mcp] key_file`) must be given: there is no database directory to
//! put it next to, and every instance sharing the database must seal with the same key, which
//! a per-machine default would silently break.

use std::fmt;

use lmchatkit::secrets::redact_url;
use lmchatkit::store::{PostgresStore, postgres::DEFAULT_MAX_CONNECTIONS};

/// `--db postgres://…`, resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresDb {
    /// The connection URL (holds the password; never printed).
    pub url: String,
    /// The pool size.
    pub max_connections: usize,
}

impl fmt::Debug for PostgresDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresDb")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

/// Whether `db` names a PostgreSQL database rather than a file.
pub fn is_postgres(db: &str) -> bool {
    let lower = db.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Splits the `db` setting: the file path or `memory:` stays in the first place, a PostgreSQL
/// URL (checked) goes to the second.
pub fn resolve(
    db: Option<String>,
    max_connections: Option<usize>,
) -> Result<(Option<String>, Option<PostgresDb>), String> {
    match db {
        Some(url) if is_postgres(&url) => {
            PostgresStore::check_url(&url).map_err(|e| format!("db: {e}"))?;
            let max_connections = max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
            if max_connections == 0 {
                return Err("db_max_connections must be at least 1".into());
            }
            Ok((
                None,
                Some(PostgresDb {
                    url,
                    max_connections,
                }),
            ))
        }
        other => Ok((other, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_urls_are_told_from_paths() {
        assert!(is_postgres("postgres://h/db"));
        assert!(is_postgres("PostgreSQL://h/db"));
        assert!(!is_postgres("data/history.db"));
        assert!(!is_postgres("memory:"));
    }

    #[test]
    fn a_postgres_url_is_checked_and_never_shown_with_its_password() {
        let (db, pg) = resolve(Some("postgres://u:hunter2@h/db".into()), Some(3)).unwrap();
        assert_eq!(db, None);
        let pg = pg.unwrap();
        assert_eq!(pg.max_connections, 3);
        assert!(!format!("{pg:?}").contains("hunter2"));
        let err = resolve(Some("postgres://u:hunter2@h:port/db".into()), None).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(resolve(Some("postgres://h/db".into()), Some(0)).is_err());
        let (db, pg) = resolve(Some("h.db".into()), None).unwrap();
        assert_eq!((db.as_deref(), pg), (Some("h.db"), None));
    }
}
