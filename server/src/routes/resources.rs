//! `GET /api/resources` and `POST /api/resources/read` (with `via`: only from the server that
//! owns that tool; without, only a URI that a listing offers).

use lmchatkit_protocol::ResourceReadRequest;

use crate::access;
use crate::http_util::{ApiError, Response, json, json_etag};
use crate::service::Req;
use crate::state::State;

pub(crate) async fn list(state: &State, req: Req) -> Result<Response, ApiError> {
    let resources = access::list_resources(&*state.host, &req.cx, None).await?;
    Ok(json_etag(&req.parts.headers, &resources))
}

pub(crate) async fn read(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: ResourceReadRequest = req.json().await?;
    let result = access::read_resource(&*state.host, &req.cx, &body.uri, body.via.as_deref()).await?;
    Ok(json(http::StatusCode::OK, &result))
}
