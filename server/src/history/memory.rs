//! In-memory history store (stub until implemented).

/// Keeps conversations in memory.
#[derive(Debug, Default)]
pub struct MemoryStore;
