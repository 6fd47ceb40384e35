//! `POST /api/tools/call`: a tool call of the model (approved in the UI) or of an MCP App view,
//! checked and run by the access layer. A call of a tool the operator's approval policy denies
//! is refused (403) before anything else, whoever calls (see [`crate::access::approval`]).
//!
//! A call may answer that it needs the user's input (`input_required` on the result, with a
//! ticket bound to the principal, `call_id`, the tool and its arguments); the UI asks the user
//! and posts the same call again with `input` (the ticket and the answers). The rules are
//! [`crate::access::input`]'s.
//!
//! Asked for as `text/event-stream`, the answer is events ([`ToolCallEvent`]): the call's
//! progress reports (MCP `notifications/progress`) as they come, then its result, which ends
//! the stream. The UI asks so for the model's calls and shows a progress bar on the card.

use std::sync::Arc;

use lmchatkit_protocol::{CallProgress, ToolCallEvent, ToolCallRequest};

use crate::access::{self, Again, Role, Scope, input::Subject};
use crate::api::{ApiError, Response, json};
use crate::host::{ProgressSink, ToolProgress};
use crate::routes::Req;
use crate::sse;
use crate::state::State;

pub(crate) async fn call(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: ToolCallRequest = req.json().await?;
    let host = &*state.host;
    let scope = access::call_scope(host, &req.cx, &body).await?;
    let approvals = &state.approvals;
    access::approval::check_not_denied(approvals, &scope, &body.name, &body.arguments).await?;
    let principal = req.cx.principal();
    let arguments = match &body.arguments {
        serde_json::Value::Null => serde_json::Value::Object(Default::default()),
        v => v.clone(),
    };
    let subject = subject(&principal, &body, &arguments);
    let again = match (&body.input, &body.task) {
        (Some(answers), _) => Some(Again::Input(
            state.input_tickets.open(&scope, &subject, answers)?,
        )),
        (None, Some(poll)) => Some(Again::Task {
            id: state
                .input_tickets
                .open_task(&scope, &subject, &poll.ticket)?,
            cancel: poll.cancel,
        }),
        (None, None) => None,
    };
    if wants_events(&req.parts.headers) {
        return Ok(streamed(state, scope, body, arguments, again));
    }
    let mut result =
        access::call_tool_with(host, &scope, &body.name, &body.arguments, again).await?;
    if scope.role() == Role::App && result.task.is_some() {
        // A view waits for its call's result as before: the service follows the task.
        result =
            access::follow_task(host, &scope, &body.name, &body.arguments, result, |_| {}).await;
    }
    let result = state.input_tickets.issue(&scope, &subject, result);
    Ok(json(http::StatusCode::OK, &result))
}

/// Where a streamed call is: running (its result to come), its result ready (the reports still
/// queued go first), or done.
enum Events<F> {
    Running(
        std::pin::Pin<Box<F>>,
        tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    ),
    Draining(
        bytes::Bytes,
        tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    ),
    Done,
}

/// What a request for input or a task of this call is bound to: the caller, the model's call
/// id, the tool and its arguments (`{}` for none); native calls have no conversation.
fn subject<'a>(
    principal: &'a crate::host::Principal,
    body: &'a ToolCallRequest,
    arguments: &'a serde_json::Value,
) -> Subject<'a> {
    Subject {
        principal: principal.id(),
        thread: "",
        call_id: body.call_id.as_deref().unwrap_or(""),
        tool: body.name.trim(),
        input: arguments,
    }
}

/// Whether the caller asks for the call as events (`Accept: text/event-stream`).
fn wants_events(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// The call as server-sent events: its progress reports as they come, then its result (or
/// an error), which ends the stream. The checks have run: what fails now is an `error` event.
/// Dropping the body (the caller left) drops the call, as a dropped JSON request does.
fn streamed(
    state: &State,
    scope: Scope,
    body: ToolCallRequest,
    arguments: serde_json::Value,
    again: Option<Again>,
) -> Response {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let sink = ProgressSink(Arc::new(move |p: ToolProgress| {
        let event = ToolCallEvent::Progress(CallProgress {
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
        let _ = tx.send(sse::frame(None, &event));
    }));
    let (host, tickets) = (state.host.clone(), state.input_tickets.clone());
    let call = async move {
        let scope = scope.with_extension(sink);
        let mut result =
            access::call_tool_with(&*host, &scope, &body.name, &body.arguments, again).await;
        // The scope held the sink: without it the progress stream ends once its queue is read.
        let principal = scope.principal();
        let plain = scope.clone();
        drop(scope);
        let event = match result.as_mut() {
            Ok(result) => {
                let subject = subject(&principal, &body, &arguments);
                ToolCallEvent::Result {
                    result: tickets.issue(&plain, &subject, std::mem::take(result)),
                }
            }
            Err(e) => ToolCallEvent::Error {
                error: e.to_string(),
            },
        };
        sse::frame(None, &event)
    };
    // Reports as they come; once the call has its result, the reports still queued, then it.
    let frames = futures_util::stream::unfold(Events::Running(Box::pin(call), rx), |st| async {
        let (call, mut rx) = match st {
            Events::Running(call, rx) => (call, rx),
            Events::Draining(last, mut rx) => {
                return Some(match rx.try_recv() {
                    Ok(f) => (f, Events::Draining(last, rx)),
                    Err(_) => (last, Events::Done),
                });
            }
            Events::Done => return None,
        };
        let mut call = call;
        tokio::select! {
            Some(f) = rx.recv() => Some((f, Events::Running(call, rx))),
            last = &mut call => Some(match rx.try_recv() {
                Ok(f) => (f, Events::Draining(last, rx)),
                Err(_) => (last, Events::Done),
            }),
        }
    });
    sse::response(frames, state.settings.heartbeat)
}
