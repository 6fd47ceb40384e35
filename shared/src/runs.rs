//! Runs: a turn running as a server task (see the server's `runs` module). A response that
//! starts a run names it in the [`RUN_ID_HEADER`] header; `GET {prefix}/api/runs/{id}/stream`
//! tails its events again and `POST {prefix}/api/runs/{id}/stop` stops it, answering a
//! [`RunInfo`]. The stream's response names the message the run writes in the
//! [`RUN_MESSAGE_HEADER`] header, so a tab that re-attaches renders into that message's bubble.

use serde::{Deserialize, Serialize};

/// The response header naming the run a chat request started.
pub const RUN_ID_HEADER: &str = "lmchatkit-run-id";

/// The response header of `GET {prefix}/api/runs/{id}/stream` naming the id of the message the
/// run writes (the chat request's `reply_id`).
pub const RUN_MESSAGE_HEADER: &str = "lmchatkit-run-message-id";

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still writing its reply.
    Running,
    /// Ended on its own (a reply, an upstream error reported in it, or a wait for approvals).
    Finished,
    /// Stopped by `POST …/stop`; the partial reply is kept, marked stopped.
    Stopped,
    /// Ended without finishing (the task failed); the partial reply is kept.
    Failed,
}

/// A run, as `POST {prefix}/api/runs/{id}/stop` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run's id.
    pub id: String,
    /// Where it is now.
    pub status: RunStatus,
}
