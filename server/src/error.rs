//! [`Failure`]: why the service could not do what a request asked, in the domain's words. The
//! modules below the HTTP edge (access, the turn, runs, view tokens, engines, users' MCP servers)
//! answer with it; only the edge turns a kind into a status and a JSON body
//! ([`ApiError`](crate::ApiError), which every `Failure` converts into).
//!
//! Decisions:
//! - **Kinds, not statuses.** A kind says what went wrong for the caller (the input is invalid,
//!   the caller may not, the thing is busy), so a domain module never chooses an HTTP status and
//!   the edge maps each kind to exactly one (the table in [`ApiError`](crate::ApiError)'s
//!   `From<Failure>`).
//! - **Retry hints stay with the kind**: `TooMany` and `Busy` carry how long to wait, which the
//!   edge sends as `Retry-After`.

use std::time::Duration;

use crate::host::HostError;

/// The wait a busy store or engine asks for: long enough for a burst to drain, short enough
/// that a client retrying once sees no outage.
pub const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a request could not be served. Each kind is one HTTP status at the edge (in brackets).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The input is malformed or invalid (400).
    #[error("{0}")]
    Invalid(String),
    /// A principal or a credential is required and missing or wrong (401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this: visibility, ownership, origin, policy (403).
    #[error("{0}")]
    Denied(String),
    /// What the request names does not exist for the caller (404).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what the service holds, e.g. an approval already answered
    /// (409).
    #[error("{0}")]
    Conflict(String),
    /// The input arrived too slowly (408).
    #[error("{0}")]
    TimedOut(String),
    /// The input is larger than its cap (413).
    #[error("{0}")]
    TooLarge(String),
    /// Well-formed, but what it names cannot be used so, e.g. a resource that is not an MCP
    /// App view (422).
    #[error("{0}")]
    Unusable(String),
    /// Too many of this kind are open; try again after `retry_after` (429).
    #[error("{message}")]
    TooMany {
        /// What is full.
        message: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// The upstream (an LLM or an MCP server) failed (502).
    #[error("{0}")]
    Upstream(String),
    /// A store or shared engine is at capacity or briefly unreachable: nothing was changed, try
    /// again after `retry_after` (503).
    #[error("{message}")]
    Busy {
        /// What is busy.
        message: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// The service or a store failed (500).
    #[error("{0}")]
    Internal(String),
}

impl From<HostError> for Failure {
    fn from(e: HostError) -> Self {
        match e {
            HostError::NotFound(m) | HostError::Unsupported(m) => Failure::NotFound(m),
            HostError::InvalidInput(m) => Failure::Invalid(m),
            HostError::Upstream(m) => Failure::Upstream(m),
        }
    }
}
