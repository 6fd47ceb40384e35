//! Options of [`SqliteStore`](super::SqliteStore): today the `synchronous` mode.
//!
//! Decision: [`Synchronous::Full`] is the default, for the library as for the app. In WAL mode
//! `FULL` syncs the WAL on every commit, so a save the store acknowledged survives a power loss
//! or an OS crash; `NORMAL` syncs only at checkpoints, so the last saves before a power loss can
//! be lost (the database stays consistent). Both survive the process being killed (the WAL is
//! in the OS page cache). The bench measures the cost (`bench --history-only`): one fsync per
//! save, measured at p50 1.8 ms (128 saves/s one after another) against 0.2 ms (2,460/s) for
//! `NORMAL` on a loaded 2-core machine; small next to a model's reply, and a save happens once
//! per turn. Hosts that need the throughput choose `Normal`.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// SQLite's `PRAGMA synchronous` for the store's connection: how hard a commit waits for the
/// disk. Read from and printed as `full` / `normal`.
///
/// ```
/// use lmchatkit::store::Synchronous;
///
/// assert_eq!("normal".parse::<Synchronous>().unwrap(), Synchronous::Normal);
/// assert_eq!(Synchronous::default().to_string(), "full");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Synchronous {
    /// Every commit syncs the WAL to disk before the save is acknowledged: nothing acknowledged
    /// is lost to a power loss or an OS crash. The default.
    #[default]
    Full,
    /// The WAL is synced at checkpoints only: faster saves, and the most recent acknowledged
    /// saves can be rolled back by a power loss or an OS crash (never by a process crash).
    Normal,
}

impl Synchronous {
    /// The modes, in the order `--help` and errors list them.
    pub const ALL: [Synchronous; 2] = [Synchronous::Full, Synchronous::Normal];

    /// The name used in flags, files and logs (`full`, `normal`).
    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Full => "full",
            Synchronous::Normal => "normal",
        }
    }

    /// The value given to `PRAGMA synchronous`.
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

impl fmt::Display for Synchronous {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `synchronous` mode that is neither `full` nor `normal`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown synchronous mode {0:?} (expected full or normal)")]
pub struct UnknownSynchronous(pub String);

impl FromStr for Synchronous {
    type Err = UnknownSynchronous;

    /// `full` or `normal`, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Synchronous::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownSynchronous(s.to_owned()))
    }
}

/// How [`SqliteStore::open_with`](super::SqliteStore::open_with) sets up the connection.
///
/// ```
/// use lmchatkit::store::{SqliteOptions, SqliteStore, Synchronous};
///
/// let dir = tempfile::tempdir().unwrap();
/// let options = SqliteOptions::default().with_synchronous(Synchronous::Normal);
/// let store = SqliteStore::open_with(dir.path().join("h.db"), options).unwrap();
/// assert_eq!(store.synchronous(), Synchronous::Normal);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    synchronous: Synchronous,
}

impl SqliteOptions {
    /// Sets the `synchronous` mode (default [`Synchronous::Full`]).
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// The `synchronous` mode.
    pub fn synchronous(&self) -> Synchronous {
        self.synchronous
    }
}
