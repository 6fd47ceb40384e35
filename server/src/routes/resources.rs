//! `GET /api/resources` and `POST /api/resources/read` (with `via`: only from the server that
//! owns that tool; without, only a URI that a listing offers).

use lmchatkit_protocol::ResourceReadRequest;

use crate::access::{self, Scope};
use crate::api::{ApiError, Response, json, json_etag};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn list(state: &State, req: Req) -> Result<Response, ApiError> {
    let scope = Scope::user(req.cx.clone());
    let resources = access::list_resources(&*state.host, &scope).await?;
    Ok(json_etag(&req.parts.headers, &resources))
}

pub(crate) async fn read(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: ResourceReadRequest = req.json().await?;
    let host = &*state.host;
    let scope = access::scope_via(host, &req.cx, body.via.as_deref()).await?;
    let result = access::read_resource(host, &scope, &body.uri).await?;
    Ok(json(http::StatusCode::OK, &result))
}
