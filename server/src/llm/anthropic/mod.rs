//! The native Anthropic backend: [`AnthropicBackend`] is a [`Host`] that streams completions
//! out of Anthropic's Messages API (`POST {base}/messages`) and lists models from
//! `GET {base}/models` or from its configuration.
//!
//! The request body is built by [`request_body`] and the SSE reply read by [`translate`].
//!
//! Wire facts relied on (Anthropic's Messages API reference and its streaming, extended
//! thinking, tool use and prompt caching guides):
//! - Requests carry `x-api-key`, `anthropic-version: 2023-06-01` and a JSON body with `model`,
//!   `max_tokens` (required), a top-level `system`, `messages` of content blocks in alternating
//!   user/assistant turns, `tools` (`name`, `description`, `input_schema`), `tool_choice`,
//!   `thinking: {type: "enabled", budget_tokens}` (at least 1024 and below `max_tokens`; not
//!   combinable with `temperature` or `top_k`, `top_p` only from 0.95) and `stream: true`.
//! - The stream is `message_start` (usage so far), per content block `content_block_start`,
//!   `content_block_delta`s (`text_delta`, `thinking_delta`, `signature_delta`,
//!   `input_json_delta`) and `content_block_stop`, then `message_delta` (`stop_reason`,
//!   cumulative `usage.output_tokens`) and `message_stop`; `ping`s anywhere; an `error` event
//!   (e.g. `overloaded_error`) may come at any point, even after a 200; new event kinds may be
//!   added. Cached prompt tokens are reported apart from `input_tokens`
//!   (`cache_creation_input_tokens`, `cache_read_input_tokens`).
//! - Errors outside the stream are a non-2xx reply with `{"type": "error", "error": {type,
//!   message}}`.
//!
//! Decisions (the OpenAI backend's, where they apply):
//! - **URL**: the base URL ends in `/v1` (default [`DEFAULT_BASE_URL`]); `/messages` and
//!   `/models` are appended.
//! - **Failures are events**: a non-2xx reply is `Error("upstream returned <status>: <type>:
//!   <message>")` (the raw body's first 512 bytes when it is not Anthropic's error JSON); an
//!   unreachable upstream, a reset connection or a stall (no bytes for
//!   [`AnthropicConfig::with_idle_timeout`], default 120 s) an `Error` with the reason; an
//!   `error` event is `Error("upstream error: <type>: <message>")`.
//! - **Limits**: one turn may take [`AnthropicConfig::with_total_timeout`] in all (default 15
//!   min); an SSE event larger than 2 MiB or a tool input past 1 MiB ends the turn in an `Error`.
//! - **Truncated replies are not complete**: a body that ends before the stop reason ends in
//!   `Error("the reply was cut off: …")` after the partial text, its tool calls dropped (see
//!   [`translate`]).
//! - **Cancellation**: the returned stream owns the request and the response; no task is
//!   spawned, so dropping the stream closes the upstream connection.
//! - **Reasoning effort** becomes a thinking budget ([`request::THINKING_BUDGETS`]); earlier
//!   turns' reasoning is not sent back, as `Message` keeps no thinking signature.
//! - **Models**: the configured list, else `{base}/models` (up to 1000, `display_name` as the
//!   label, provider `anthropic`), kept for [`AnthropicConfig::with_models_ttl`] (default 60
//!   s, as the OpenAI backend's); while `/models` fails the last list is served.
//! - **Secrets**: redirects only within the upstream's origin
//!   ([`same_origin_redirects`](crate::secrets::same_origin_redirects)); the `upstream` span
//!   logs the URL without userinfo and query; `Debug` of the config and the backend shows
//!   neither the key nor header values.

/// Anthropic's API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header sent (a custom header of that name replaces it).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How much of an error reply is read to find Anthropic's error message (the message shown
/// when it is not found is cut to 512 bytes).
const ERROR_JSON_LIMIT: usize = 16 << 10;

/// Default `max_tokens` of a request whose params set none ([`AnthropicConfig::with_max_tokens`]).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

pub mod request;
mod translate;

#[cfg(test)]
mod tests_http;
#[cfg(test)]
mod tests_request;
#[cfg(test)]
mod tests_translate;

use std::time::Duration;

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use lmchatkit_protocol::Model;
use serde_json::Value;
use tracing::Instrument;

use super::openai::listing::{Api, Failed, Fault, ModelsCache};
use super::openai::transport::{
    LogSpan, add_headers, default_client, describe, error_stream, fetch, guard, read_prefix,
    snippet, stalled,
};
use super::openai::{DEFAULT_MODELS_TTL, DEFAULT_TOTAL_TIMEOUT};
use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};
use crate::secrets::{Redacted, redact_url, redacted_headers};

use crate::llm::openai::translate::read_logged;
pub use request::request_body;
use translate::Accumulator;
pub use translate::translate;

/// Where and how to reach Anthropic's Messages API.
///
/// ```
/// use lmchatkit::llm::anthropic::{AnthropicBackend, AnthropicConfig};
///
/// let cfg = AnthropicConfig::default().with_api_key("sk-ant-…");
/// assert_eq!(cfg.messages_url(), "https://api.anthropic.com/v1/messages");
/// let _backend = AnthropicBackend::new(cfg);
/// ```
///
/// `Debug` never shows the key, header values, or a URL's userinfo and query:
///
/// ```
/// use lmchatkit::llm::anthropic::{AnthropicBackend, AnthropicConfig};
///
/// let cfg = AnthropicConfig::new("https://user:url-pass@proxy.example/v1?key=url-key")
///     .with_api_key("sk-ant-secret")
///     .with_header("anthropic-beta", "header-secret");
/// let shown = format!("{cfg:?} {:?}", AnthropicBackend::new(cfg.clone()));
/// for secret in ["sk-ant-secret", "header-secret", "url-pass", "url-key"] {
///     assert!(!shown.contains(secret), "{secret} in {shown}");
/// }
/// assert!(shown.contains("https://proxy.example/v1") && shown.contains("anthropic-beta"));
/// ```
#[derive(Clone)]
pub struct AnthropicConfig {
    base_url: String,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    models: Option<Vec<Model>>,
    max_tokens: u64,
    client: Option<reqwest::Client>,
    idle_timeout: Duration,
    total_timeout: Duration,
    models_ttl: Duration,
}

impl Default for AnthropicConfig {
    /// Anthropic's own API ([`DEFAULT_BASE_URL`]).
    fn default() -> Self {
        Self::new(DEFAULT_BASE_URL)
    }
}

impl AnthropicConfig {
    /// From a base URL ending in `/v1` (e.g. a proxy's): messages go to `{base}/messages`,
    /// models come from `{base}/models`.
    pub fn new(base_url: impl AsRef<str>) -> Self {
        Self {
            base_url: base_url.as_ref().trim_end_matches('/').to_owned(),
            api_key: None,
            headers: Vec::new(),
            models: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            client: None,
            idle_timeout: Duration::from_secs(120),
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            models_ttl: DEFAULT_MODELS_TTL,
        }
    }

    /// The `max_tokens` of a request whose params set none (default [`DEFAULT_MAX_TOKENS`]).
    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    super::openai::transport::upstream_builders!(
        key: "Sends `x-api-key: {key}` (an empty key sends nothing).",
        header: "Adds a header to every upstream request (e.g. `anthropic-beta`); one named \
                 `anthropic-version` replaces the default. Invalid names or values are skipped \
                 with a warning when the request is made."
    );

    /// The URL requests are posted to: `{base}/messages`.
    pub fn messages_url(&self) -> String {
        format!("{}/messages", self.base_url)
    }

    /// The models URL: `{base}/models`.
    pub fn models_url(&self) -> String {
        format!("{}/models", self.base_url)
    }
}

impl std::fmt::Debug for AnthropicConfig {
    // Never prints the key, header values, or a URL's userinfo and query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| Redacted))
            .field("headers", &redacted_headers(&self.headers))
            .field("models", &self.models)
            .field("max_tokens", &self.max_tokens)
            .field("client", &self.client.as_ref().map(|_| "custom"))
            .field("idle_timeout", &self.idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("models_ttl", &self.models_ttl)
            .finish()
    }
}

/// A [`Host`] backed by Anthropic's Messages API (models and completions only; no tools). Its
/// `Debug` shows the configuration as [`AnthropicConfig`]'s does, never the key.
#[derive(Clone)]
pub struct AnthropicBackend {
    config: AnthropicConfig,
    client: reqwest::Client,
    /// The last list read from `/models`, and when.
    listed: ModelsCache,
}

impl AnthropicBackend {
    /// A backend for `config`.
    pub fn new(config: AnthropicConfig) -> Self {
        let client = config.client.clone().unwrap_or_else(default_client);
        Self {
            config,
            client,
            listed: ModelsCache::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let mut rb = self.client.request(method, url);
        if let Some(key) = &self.config.api_key {
            rb = rb.header("x-api-key", key);
        }
        let custom_version = self
            .config
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("anthropic-version"));
        if !custom_version {
            rb = rb.header("anthropic-version", ANTHROPIC_VERSION);
        }
        add_headers(rb, &self.config.headers)
    }

    /// Reads `{base}/models`, in the upstream's order (newest first).
    async fn fetch_models(&self) -> Result<Vec<Model>, Failed> {
        let url = format!("{}?limit=1000", self.config.models_url());
        let fail = |fault, what| Failed::new(Api::Anthropic, &url, fault, what);
        let request = self.request(reqwest::Method::GET, &url);
        let (status, body) = fetch(request, self.config.idle_timeout)
            .await
            .map_err(|(fault, what)| fail(fault, what))?;
        if !status.is_success() {
            return Err(fail(Fault::Status(status), status_message(status, &body)));
        }
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| fail(Fault::NotApi, format!("the reply is not JSON ({e})")))?;
        let Some(data) = json.get("data").and_then(Value::as_array) else {
            return Err(fail(Fault::NotApi, "the reply has no `data` array".into()));
        };
        Ok(data
            .iter()
            .filter_map(|m| {
                let mut model = Model::new(m.get("id")?.as_str()?);
                model.label = m
                    .get("display_name")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                model.provider = Some("anthropic".into());
                Some(model)
            })
            .collect())
    }
}

impl std::fmt::Debug for AnthropicBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicBackend")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// `upstream returned <status>: <type>: <message>` from Anthropic's error JSON, else with the
/// body's first bytes.
fn status_message(status: http::StatusCode, body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let field = |k: &str| {
        parsed
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(|e| e.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (field("type"), field("message"), snippet(body)) {
        (Some(t), Some(m), _) => format!("upstream returned {status}: {t}: {m}"),
        (None, Some(m), _) => format!("upstream returned {status}: {m}"),
        (_, None, text) if text.is_empty() => format!("upstream returned {status}"),
        (_, None, text) => format!("upstream returned {status}: {text}"),
    }
}

#[async_trait]
impl Host for AnthropicBackend {
    async fn models(&self, _cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        match &self.config.models {
            Some(models) => Ok(models.clone()),
            None => {
                self.listed
                    .get(self.config.models_ttl, self.fetch_models())
                    .await
            }
        }
    }

    fn setup_problems(&self) -> Vec<lmchatkit_protocol::SetupProblem> {
        self.listed.problem().into_iter().collect()
    }

    fn complete(&self, _cx: &RequestContext, req: CompleteRequest) -> EventStream {
        let body = request_body(&req, self.config.max_tokens);
        let idle = self.config.idle_timeout;
        let deadline = tokio::time::Instant::now() + self.config.total_timeout;
        let url = self.config.messages_url();
        let send = self
            .request(reqwest::Method::POST, &url)
            .header(http::header::ACCEPT, "text/event-stream")
            .json(&body)
            .send();
        let span = tracing::info_span!("upstream", url = %redact_url(&url), model = %req.model);
        // The setup runs in the span; the reply's warnings are logged in it (see `LogSpan`).
        let log = LogSpan::new(span.clone());
        let reply = async move {
            let wait = (tokio::time::Instant::now() + idle).min(deadline);
            let resp = match tokio::time::timeout_at(wait, send).await {
                Err(_) => return error_stream(stalled(idle)),
                Ok(Err(e)) => return error_stream(describe(&e)),
                Ok(Ok(resp)) => resp,
            };
            let status = resp.status();
            if !status.is_success() {
                let body = read_prefix(resp, ERROR_JSON_LIMIT, idle).await;
                return error_stream(status_message(status, &body));
            }
            let events: EventStream = Box::pin(read_logged::<Accumulator, _, _>(
                guard(resp.bytes_stream(), idle, deadline),
                log,
            ));
            events
        };
        Box::pin(stream::once(reply.instrument(span)).flatten())
    }
}
