//! rmcp's OAuth HTTP, through the operator's [`OutboundPolicy`]: [`PolicyHttp`] is the
//! [`OAuthHttpClient`] every discovery, registration, token and refresh request of a sign-in
//! (a user's, or the operator's) goes through. The URLs come from the MCP server and the
//! authorization server it names, so each is checked like a user's server's own URL: the
//! policy's URL rules before sending, its resolver on every connection (resolved addresses, DNS rebinding) and its same-origin
//! rule on every redirect. Answers are read up to [`MAX_BODY_BYTES`].

use std::time::Duration;

use futures_util::StreamExt;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::mcp::OutboundPolicy;

/// Largest answer an OAuth request may get (metadata, registration, tokens).
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

/// Why an OAuth request was not sent or its answer not read.
#[derive(Debug, thiserror::Error)]
enum HttpError {
    #[error("{0}")]
    Refused(#[from] crate::mcp::OutboundError),
    #[error("the answer is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
}

/// Sends rmcp's OAuth requests with the policy's clients: one following same-origin redirects,
/// one following none (rmcp asks for either per request).
pub(crate) struct PolicyHttp {
    policy: OutboundPolicy,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl PolicyHttp {
    /// The clients for `policy`, each request limited to `timeout`.
    pub(crate) fn new(policy: &OutboundPolicy, timeout: Duration) -> Result<Self, String> {
        let build = |b: reqwest::ClientBuilder| {
            b.timeout(timeout)
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        };
        Ok(Self {
            policy: policy.clone(),
            follow: build(policy.client_builder())?,
            stop: build(
                policy
                    .client_builder()
                    .redirect(reqwest::redirect::Policy::none()),
            )?,
        })
    }
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> OAuthHttpClientError {
    Box::new(e)
}

impl OAuthHttpClient for PolicyHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let OAuthHttpRequest {
                request,
                redirect_policy,
                ..
            } = request;
            self.policy
                .check_url(&request.uri().to_string())
                .map_err(|e| boxed(HttpError::Refused(e)))?;
            let client = match redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let request = reqwest::Request::try_from(request).map_err(boxed)?;
            let response = client.execute(request).await.map_err(boxed)?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(boxed)?;
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(boxed(HttpError::TooLarge));
                }
                body.extend_from_slice(&chunk);
            }
            builder.body(body).map_err(boxed)
        })
    }
}
