//! `POST /api/chat`: a native turn ([`crate::turn::native`] checks and prepares it, and starts
//! it as a run), streamed as SSE frames (`id:` and `data:`) with a `: ping` heartbeat; the
//! `lmchatkit-run-id` header names the run. The client leaving does not stop the run
//! (`POST /api/runs/{id}/stop` does).

use std::sync::Arc;

use lmchatkit_protocol::{ChatRequest, RUN_ID_HEADER};

use crate::api::{ApiError, Response};
use crate::routes::Req;
use crate::sse;
use crate::state::State;
use crate::turn::native;

pub(crate) async fn chat(state: &State, mut req: Req) -> Result<Response, ApiError> {
    // Counted before the body is read: a client at its cap costs no parse. The place is held
    // by the run and by the response's body, and freed when both are gone: a run may end
    // before its client has read it (see `runs::launch`), or its client leave first.
    let permit = Arc::new(state.streams.open(req.cx.principal().id())?);
    let body: ChatRequest = req.json().await?;
    let services = state.turn();
    let plan = native::plan(&services, &req.cx, body).await?;
    let run = native::run(&services, plan, permit.clone()).await?;
    let mut res = sse::response(run.follow_holding(0, permit), state.settings.heartbeat);
    if let Ok(v) = http::HeaderValue::from_str(run.id()) {
        res.headers_mut().insert(RUN_ID_HEADER, v);
    }
    Ok(res)
}
