//! Options of [`PostgresStore`](super::PostgresStore), and the connection URL's handling.
//!
//! Decisions: the pool is bounded (default [`DEFAULT_MAX_CONNECTIONS`] connections) and a
//! request waits at most [`DEFAULT_ACQUIRE_TIMEOUT`] for a free connection, then fails (a 503
//! that says the pool is exhausted, never a hang). The `schema` option puts every table in a
//! schema of its own (created when missing) through the connection's `search_path`; without it
//! the tables go where the URL's user and database put them (normally `public`). Nothing here
//! prints the URL's password: `Debug` shows host, port, database, user and schema only, and
//! error texts are scrubbed of the password before they leave the module.

use std::fmt;
use std::time::Duration;

/// The pool size when none is given.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10;

/// How long a request waits for a free pooled connection (and a new connection for the server)
/// when none is given.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// How [`PostgresStore::connect`](super::PostgresStore::connect) sets up its pool.
///
/// ```
/// use std::time::Duration;
/// use lmchatkit::store::PostgresOptions;
///
/// let options = PostgresOptions::default()
///     .with_max_connections(4)
///     .with_acquire_timeout(Duration::from_secs(2))
///     .with_schema("tenant_a");
/// assert_eq!(options.max_connections(), 4);
/// assert_eq!(options.schema(), Some("tenant_a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    max_connections: usize,
    acquire_timeout: Duration,
    schema: Option<String>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            schema: None,
        }
    }
}

impl PostgresOptions {
    /// Sets the most connections the pool opens (default 10; `0` is taken as 1).
    pub fn with_max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets how long an operation waits for a pooled connection, and a new connection for the
    /// server, before it fails (default 5 s).
    pub fn with_acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Keeps the tables in this schema (created when missing), through the connections'
    /// `search_path`. The name must be 1–63 characters of lowercase ASCII letters, digits and
    /// `_`, not starting with a digit; [`connect`](super::PostgresStore::connect) refuses
    /// others.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// The pool size.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// The acquire timeout.
    pub fn acquire_timeout(&self) -> Duration {
        self.acquire_timeout
    }

    /// The schema, when one is set.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }
}

/// Whether `schema` is a plain lowercase identifier (safe to put in SQL and `search_path`
/// without quoting).
pub(super) fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    first_ok
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Where the store connects, for `Debug` and logs: never the password.
#[derive(Clone)]
pub(crate) struct Target {
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub dbname: Option<String>,
    pub user: Option<String>,
    pub schema: Option<String>,
}

impl Target {
    pub(crate) fn of(config: &tokio_postgres::Config, schema: Option<&str>) -> Self {
        Self {
            hosts: config
                .get_hosts()
                .iter()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(name) => name.clone(),
                    #[cfg(unix)]
                    tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                })
                .collect(),
            ports: config.get_ports().to_vec(),
            dbname: config.get_dbname().map(str::to_owned),
            user: config.get_user().map(str::to_owned),
            schema: schema.map(str::to_owned),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("hosts", &self.hosts)
            .field("ports", &self.ports)
            .field("dbname", &self.dbname)
            .field("user", &self.user)
            .field("schema", &self.schema)
            .finish()
    }
}

/// The secrets a connection string may carry: the URL's password (as written and
/// percent-decoded) and a key-value `password=`, so error texts can be scrubbed of them even
/// when the string does not parse.
pub(super) fn secrets_of(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && let Some((_, password)) = userinfo.split_once(':')
        {
            out.push(password.to_owned());
            if let Ok(decoded) = percent_encoding::percent_decode_str(password).decode_utf8() {
                out.push(decoded.into_owned());
            }
        }
        // `?password=…` in the query.
        if let Some((_, query)) = rest.split_once('?') {
            for pair in query.split('&') {
                if let Some(v) = pair.strip_prefix("password=") {
                    out.push(v.to_owned());
                    if let Ok(d) = percent_encoding::percent_decode_str(v).decode_utf8() {
                        out.push(d.into_owned());
                    }
                }
            }
        }
    } else {
        // Key-value form: `host=… password=secret` or `password='sec ret'`.
        for (i, _) in url.match_indices("password") {
            let rest = url[i + "password".len()..].trim_start();
            let Some(rest) = rest.strip_prefix('=') else {
                continue;
            };
            let rest = rest.trim_start();
            let value = match rest.strip_prefix('\'') {
                Some(quoted) => quoted.split('\'').next().unwrap_or(""),
                None => rest.split_whitespace().next().unwrap_or(""),
            };
            out.push(value.to_owned());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `text` with every secret replaced by `***` and every URL's user info removed.
pub(crate) fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = crate::secrets::redact_urls(text);
    for s in secrets {
        text = text.replace(s.as_str(), "***");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_found_in_urls_and_key_value_strings() {
        assert_eq!(
            secrets_of("postgres://u:p%40ss@h/db"),
            ["p%40ss".to_owned(), "p@ss".to_owned()]
        );
        assert_eq!(secrets_of("postgres://u@h/db?password=zz"), ["zz", "zz"]);
        assert_eq!(secrets_of("host=h password='a b' user=u"), ["a b"]);
        assert_eq!(secrets_of("host=h password = abc user=u"), ["abc"]);
        assert!(secrets_of("postgres://h/db").is_empty());
    }

    #[test]
    fn scrubbing_removes_the_password_wherever_it_appears() {
        let secrets = secrets_of("postgres://u:hunter2@h/db");
        let text = scrub("failed for postgres://u:hunter2@h/db: hunter2", &secrets);
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema("lmck_test_1"));
        assert!(valid_schema("_x"));
        for bad in ["", "1a", "A", "a-b", "a;drop", "a b", &"x".repeat(64)] {
            assert!(!valid_schema(bad), "{bad}");
        }
    }
}
