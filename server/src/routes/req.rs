//! One request as handlers receive it ([`Req`]), whatever body type the host's server uses.

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

use crate::api::{self, ApiError, BoxError};
use crate::host::RequestContext;
use crate::limits::BodyLimits;

/// The request body every handler sees, whatever body type the host's server uses.
pub(crate) type RequestBody = UnsyncBoxBody<Bytes, BoxError>;

/// One request, as handlers receive it.
pub(crate) struct Req {
    pub cx: RequestContext,
    pub parts: http::request::Parts,
    pub body: RequestBody,
    /// The body caps ([`Req::json`]).
    limits: BodyLimits,
}

impl Req {
    /// A request with its context, head, body and the body caps [`Req::json`] applies.
    pub(crate) fn new(
        cx: RequestContext,
        parts: http::request::Parts,
        body: RequestBody,
        limits: BodyLimits,
    ) -> Self {
        Self {
            cx,
            parts,
            body,
            limits,
        }
    }

    /// The body as `T`: `Content-Type: application/json` (else 415), at most the configured
    /// body limit, arriving within the body timeout (else 413, 408), opaque values within
    /// their caps (else 413, see [`crate::limits`]), valid JSON of the shape (else 400). Takes
    /// the body: a second call reads an empty one.
    pub async fn json<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        let body = std::mem::replace(&mut self.body, api::empty());
        api::read_json(&self.parts.headers, body, &self.limits).await
    }
}
