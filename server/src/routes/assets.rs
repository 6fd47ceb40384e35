//! The page at `{prefix}` and the bundle under `{prefix}/assets/` (placeholder until the
//! bundle module lands).

use crate::config::Config;
use crate::http_util::{ApiError, Response};
use crate::service::Req;

pub(crate) fn page(_config: &Config, _head: bool) -> Result<Response, ApiError> {
    Err(ApiError::NotFound("the UI bundle is not wired yet".into()))
}

pub(crate) fn asset(_req: &Req, _path: &str, _head: bool) -> Result<Response, ApiError> {
    Err(ApiError::NotFound("not found".into()))
}
