//! `GET {prefix}/api/runs/{id}/stream` and `POST {prefix}/api/runs/{id}/stop` (see
//! [`crate::live::runs`]).
//!
//! Decisions:
//! - The stream replays the run's log after `Last-Event-ID` (or `?after=`; the header wins,
//!   as a browser's `EventSource` sends it on reconnecting) and follows it to the end; each
//!   event keeps the id it was logged with, so a client that reconnects again misses nothing
//!   and sees nothing twice. A finished run stays readable for a while after its end. The
//!   response names the message the run writes (`lmchatkit-run-message-id`), so a tab that
//!   re-attaches after a reload renders into that message's bubble.
//! - A stop answers once the run has ended (at most a couple of seconds; a run that has not
//!   ended by then answers `running` with 202), so the client knows the partial reply is saved
//!   when the answer comes. Stopping a run that already ended is not an error: it answers the
//!   run as it is.
//! - Another principal's run, or an unknown id, is a 404.
//! - With a shared engine ([`crate::live::runs`]) both work from any instance: the stream reads the
//!   run's log from Redis, and the stop reaches the instance running it.

use std::time::Duration;

use http::StatusCode;
use lmchatkit_protocol::{RUN_MESSAGE_HEADER, RunInfo, RunStatus};

use crate::api::{ApiError, Response, json};
use crate::host::Principal;
use crate::live::runs::Run;
use crate::routes::Req;
use crate::sse;
use crate::state::State;

/// How long a stop request waits for the run to end.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// The run's id in `param`, which must end with `/{action}`.
fn run_id<'a>(param: &'a str, action: &str) -> Result<&'a str, ApiError> {
    param
        .strip_suffix(action)
        .and_then(|p| p.strip_suffix('/'))
        .filter(|id| !id.is_empty() && !id.contains('/'))
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no such run route: a run's {action} is .../api/runs/{{id}}/{action}"
            ))
        })
}

/// The caller's run named in `param` (`{id}/{action}`); a 404 for anyone else's.
async fn owned_run(
    state: &State,
    principal: &Principal,
    param: &str,
    action: &str,
) -> Result<Run, ApiError> {
    let id = run_id(param, action)?;
    state
        .runs
        .get(principal, id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such run".into()))
}

/// `GET /api/runs/{id}/stream`.
pub(crate) async fn stream(state: &State, req: Req, param: &str) -> Result<Response, ApiError> {
    let after = after(&req)?;
    let run = owned_run(state, &req.cx.principal(), param, "stream").await?;
    let permit = state.streams.open(req.cx.principal().id())?;
    let mut res = sse::response(run.follow_holding(after, permit), state.settings.heartbeat);
    if let Ok(v) = http::HeaderValue::from_str(run.message_id()) {
        res.headers_mut().insert(RUN_MESSAGE_HEADER, v);
    }
    Ok(res)
}

/// Where a stream resumes: `Last-Event-ID`, else `?after=`, else the start.
fn after(req: &Req) -> Result<u64, ApiError> {
    let header = req
        .parts
        .headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or_default().trim().to_owned());
    let query = req
        .parts
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("after="))
        .map(str::to_owned);
    match header.or(query) {
        None => Ok(0),
        Some(v) if v.is_empty() => Ok(0),
        Some(v) => v.parse().map_err(|_| {
            ApiError::BadRequest(format!("invalid event id {v:?}: ids are whole numbers"))
        }),
    }
}

/// `POST /api/runs/{id}/stop`.
pub(crate) async fn stop(state: &State, req: Req, param: &str) -> Result<Response, ApiError> {
    let run = owned_run(state, &req.cx.principal(), param, "stop").await?;
    run.stop().await?;
    let status = run.settle(STOP_WAIT).await;
    let code = match status {
        RunStatus::Running => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    let info = RunInfo {
        id: run.id().to_owned(),
        status,
    };
    Ok(json(code, &info))
}
