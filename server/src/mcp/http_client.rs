//! The Streamable HTTP client: rmcp's reqwest client, plus one fix-up. A server whose session
//! is gone should answer 404 (rmcp then re-initialises and retries), but the TypeScript SDK's
//! servers (e.g. server-everything) answer `400 {"error": {"message": "Bad Request: No valid
//! session ID provided"}}` without an id, which would leave the request waiting forever. That
//! answer to a request carrying a session id is treated as an expired session too.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// `reqwest::Client` with session-loss detection for servers that answer 400 instead of 404.
/// Redirects are followed only within the server's origin
/// ([`same_origin_redirects`](crate::secrets::same_origin_redirects)): the configured headers
/// must not reach another host.
#[derive(Clone)]
pub(crate) struct SessionAwareClient(reqwest::Client);

impl Default for SessionAwareClient {
    fn default() -> Self {
        let client = crate::tls::client_builder()
            .redirect(crate::secrets::same_origin_redirects())
            .build()
            // Only a broken TLS setup fails here, and then `Client::new` panics with why.
            .unwrap_or_default();
        Self(client)
    }
}

impl SessionAwareClient {
    /// Wraps `client` (e.g. one built on
    /// [`OutboundPolicy::client_builder`](super::OutboundPolicy::client_builder)).
    pub(crate) fn new(client: reqwest::Client) -> Self {
        Self(client)
    }
}

fn session_lost(m: &ServerJsonRpcMessage) -> bool {
    matches!(m, JsonRpcMessage::Error(e)
        if e.id.is_none() && e.error.message.to_ascii_lowercase().contains("session"))
}

fn fix(res: PostResult, had_session: bool) -> PostResult {
    match res {
        Ok(StreamableHttpPostResponse::Json(m, _)) if had_session && session_lost(&m) => {
            tracing::debug!("MCP HTTP session rejected ({m:?}); re-initialising");
            Err(StreamableHttpError::SessionExpired)
        }
        other => other,
    }
}

impl StreamableHttpClient for SessionAwareClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        let had = session_id.is_some();
        let r = self
            .0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        fix(r, had)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> PostResult {
        let had = session_id.is_some();
        let r = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        fix(r, had)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        let had = session_id.is_some();
        let r = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        fix(r, had)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
