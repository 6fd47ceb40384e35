//! `POST /api/tools/call`: a tool call of the model (approved in the UI) or of an MCP App view,
//! checked and run by the access layer. A call of a tool the operator's approval policy denies
//! is refused (403) before anything else, whoever calls (see [`crate::access::approval`]).
//!
//! A call may answer that it needs the user's input (`input_required` on the result, with a
//! ticket bound to the principal, `call_id`, the tool and its arguments); the UI asks the user
//! and posts the same call again with `input` (the ticket and the answers). The rules are
//! [`crate::access::input`]'s.

use lmchatkit_protocol::ToolCallRequest;

use crate::access::{self, Again, Role, input::Subject};
use crate::api::{ApiError, Response, json};
use crate::routes::Req;
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
    let subject = Subject {
        principal: principal.id(),
        thread: "",
        call_id: body.call_id.as_deref().unwrap_or(""),
        tool: body.name.trim(),
        input: &arguments,
    };
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
