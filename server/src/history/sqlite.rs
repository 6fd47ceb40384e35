//! SQLite history store (stub until implemented).

/// Keeps conversations in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore;
