//! The OpenAI-compatible backend: [`OpenAiBackend`] is a [`Host`] that lists models from and
//! streams completions out of any `/chat/completions` endpoint (OpenAI, Ollama, llama.cpp,
//! vLLM, LM Studio, OpenRouter, DeepSeek, Gemini's OpenAI compatibility, …).
//!
//! The request body is built by [`request_body`] and the SSE reply read by [`translate`].
//!
//! Decisions (and fixes over the Go version):
//! - **URL**: the base URL is taken as OpenAI's SDKs take `OPENAI_BASE_URL` (normally ending in
//!   `/v1`); `/chat/completions` and `/models` are appended. A full completions URL
//!   ([`OpenAiConfig::completions_url`]) overrides; then models must be configured.
//! - **Params** never override `model`, `messages` or `stream` (Go let them); `null` and `""`
//!   params are skipped, `0` and `false` kept.
//! - **Usage** is requested (`stream_options.include_usage`) and reported in `Done`.
//! - **Provider errors** inside the stream (`{"error": …}`) become an `Error` event instead of a
//!   silent `done: stop`; `content_filter` and `refusal` are surfaced.
//! - **Tool-call arguments** are normalised (empty → `{}`, invalid JSON kept as a string), so a
//!   call is never lost.
//! - **Failures are events**: a non-2xx reply is `Error("upstream returned <status>: <body>")`
//!   (first 512 bytes), an unreachable upstream, a reset connection or a stall (no bytes for
//!   [`OpenAiConfig::with_idle_timeout`], default 120 s) an `Error` with the reason.
//! - **Limits**: one turn may take [`OpenAiConfig::with_total_timeout`] in all (default 15
//!   min); an SSE event larger than 2 MiB or a tool call whose arguments grow past 1 MiB ends the
//!   turn in an `Error`, so a misbehaving upstream cannot grow the service's memory.
//! - **Truncated replies are not complete**: a body that ends (cleanly or not) before a finish
//!   reason or `[DONE]` ends in `Error("the reply was cut off: …")` after the partial text, with
//!   its tool calls dropped, never in `Done` (see [`translate`]).
//! - **Cancellation**: the returned stream owns the request and the response; no task is
//!   spawned, so dropping the stream closes the upstream connection.
//! - A server that ignores `stream: true` and answers with one JSON completion is read too
//!   (decided by the body's first byte, not its content type, which servers get wrong).
//! - Over Go: an empty `tool` message keeps `content: ""` (OpenAI requires it); `/models` is
//!   sorted by id, `owned_by` becoming the provider; only the first choice of a chunk is read.
//! - **The model list is cached** for [`OpenAiConfig::with_models_ttl`] (60 s): a turn that
//!   checks its model against the menu (the AI SDK route) costs no upstream round trip, and
//!   while `/models` fails the last list is served.
//! - **Secrets** (see [`crate::secrets`]): redirects are followed only within the upstream's
//!   origin, so the key and custom headers never reach another host; the `upstream` span logs
//!   the URL without userinfo and query; `Debug` of the config and the backend shows neither
//!   the key nor header values.

/// Default lifetime of a model list read from the upstream ([`OpenAiConfig::with_models_ttl`]).
pub const DEFAULT_MODELS_TTL: Duration = Duration::from_secs(60);

/// Default total time of one upstream turn ([`OpenAiConfig::with_total_timeout`]).
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// A failed model listing as the operator's problem, and the cache of lists; shared with the
/// Anthropic backend.
pub(in crate::llm) mod listing;
/// The common chunk read by a scan of its own (the translator's fast path).
mod plain_chunk;
mod request;
/// The upstream's SSE split into events, shared with the Anthropic backend.
/// The stream translator; its SSE driver is shared with the Anthropic backend.
pub(in crate::llm) mod translate;
/// The HTTP plumbing, shared with the Anthropic backend.
pub(in crate::llm) mod transport;

#[cfg(test)]
pub(in crate::llm) mod tests_http;
#[cfg(test)]
mod tests_request;
#[cfg(test)]
pub(in crate::llm) mod tests_translate;

use std::time::Duration;

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use lmchatkit_protocol::Model;
use serde_json::Value;
use tracing::Instrument;

use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};
use crate::secrets::{Redacted, redact_url, redacted_headers};

pub use request::request_body;
pub use translate::translate;

use listing::{Api, Failed, Fault, ModelsCache};
use transport::{
    ERROR_BODY_LIMIT, LogSpan, add_headers, default_client, describe, error_stream, fetch,
    read_prefix, reply_events, snippet, stalled,
};

/// Where and how to reach an OpenAI-compatible endpoint.
///
/// ```
/// use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
///
/// let cfg = OpenAiConfig::new("http://localhost:11434/v1")
///     .with_api_key("sk-…")
///     .with_header("OpenAI-Organization", "org-1");
/// assert_eq!(cfg.chat_url(), "http://localhost:11434/v1/chat/completions");
/// assert_eq!(cfg.models_url(), Some("http://localhost:11434/v1/models"));
/// let _backend = OpenAiBackend::new(cfg);
/// ```
///
/// `Debug` never shows the key, header values, or a URL's userinfo and query:
///
/// ```
/// use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
///
/// let cfg = OpenAiConfig::completions_url("https://user:url-pass@llm.example/v1/chat/completions?key=url-key")
///     .with_api_key("sk-secret")
///     .with_header("api-key", "header-secret");
/// let shown = format!("{cfg:?} {:?}", OpenAiBackend::new(cfg.clone()));
/// for secret in ["sk-secret", "header-secret", "url-pass", "url-key"] {
///     assert!(!shown.contains(secret), "{secret} in {shown}");
/// }
/// assert!(shown.contains("https://llm.example/v1/chat/completions") && shown.contains("api-key"));
/// assert!(shown.contains("<redacted>"));
/// ```
#[derive(Clone)]
pub struct OpenAiConfig {
    chat_url: String,
    models_url: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    models: Option<Vec<Model>>,
    client: Option<reqwest::Client>,
    idle_timeout: Duration,
    total_timeout: Duration,
    models_ttl: Duration,
}

impl OpenAiConfig {
    /// From a base URL as OpenAI's SDKs take `OPENAI_BASE_URL` (e.g. `https://api.openai.com/v1`):
    /// completions go to `{base}/chat/completions`, models come from `{base}/models`.
    pub fn new(base_url: impl AsRef<str>) -> Self {
        let base = base_url.as_ref().trim_end_matches('/');
        Self::with_urls(
            format!("{base}/chat/completions"),
            Some(format!("{base}/models")),
        )
    }

    /// From a full chat-completions URL (e.g. Gemini's
    /// `…/v1beta/openai/chat/completions`). There is no models URL: configure the models with
    /// [`with_models`](Self::with_models).
    pub fn completions_url(url: impl Into<String>) -> Self {
        Self::with_urls(url.into(), None)
    }

    fn with_urls(chat_url: String, models_url: Option<String>) -> Self {
        Self {
            chat_url,
            models_url,
            api_key: None,
            headers: Vec::new(),
            models: None,
            client: None,
            idle_timeout: Duration::from_secs(120),
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            models_ttl: DEFAULT_MODELS_TTL,
        }
    }

    transport::upstream_builders!(
        key: "Sends `Authorization: Bearer {key}` (an empty key sends nothing).",
        header: "Adds a header to every upstream request (invalid names or values are skipped \
                 with a warning when the request is made)."
    );

    /// The chat-completions URL requests are posted to.
    pub fn chat_url(&self) -> &str {
        &self.chat_url
    }

    /// The models URL, when the config was made from a base URL.
    pub fn models_url(&self) -> Option<&str> {
        self.models_url.as_deref()
    }
}

impl std::fmt::Debug for OpenAiConfig {
    // Never prints the key, header values, or a URL's userinfo and query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("chat_url", &redact_url(&self.chat_url))
            .field("models_url", &self.models_url.as_deref().map(redact_url))
            .field("api_key", &self.api_key.as_ref().map(|_| Redacted))
            .field("headers", &redacted_headers(&self.headers))
            .field("models", &self.models)
            .field("client", &self.client.as_ref().map(|_| "custom"))
            .field("idle_timeout", &self.idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .finish()
    }
}

/// A [`Host`] backed by an OpenAI-compatible endpoint (models and completions only; no tools).
/// Its `Debug` shows the configuration as [`OpenAiConfig`]'s does, never the key.
#[derive(Clone)]
pub struct OpenAiBackend {
    config: OpenAiConfig,
    client: reqwest::Client,
    /// The chat URL parsed once (parsed per request, it and its redaction for the span cost
    /// about 9,000 instructions a turn, 0.9% of one with history); `None` when it does not
    /// parse, and then each request fails with reqwest's own error.
    chat_url: Option<reqwest::Url>,
    /// The chat URL as logs show it ([`redact_url`]), made once.
    shown_url: String,
    /// The last list read from `/models`, and when.
    listed: ModelsCache,
}

impl OpenAiBackend {
    /// A backend for `config`.
    pub fn new(config: OpenAiConfig) -> Self {
        let client = config.client.clone().unwrap_or_else(default_client);
        let chat_url = reqwest::Url::parse(&config.chat_url).ok();
        let shown_url = redact_url(&config.chat_url);
        Self {
            config,
            client,
            chat_url,
            shown_url,
            listed: ModelsCache::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn request(
        &self,
        method: reqwest::Method,
        url: impl reqwest::IntoUrl,
    ) -> reqwest::RequestBuilder {
        let mut rb = self.client.request(method, url);
        if let Some(key) = &self.config.api_key {
            rb = rb.bearer_auth(key);
        }
        add_headers(rb, &self.config.headers)
    }
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiBackend {
    /// Reads `{base}/models`, sorted by id.
    async fn fetch_models(&self) -> Result<Vec<Model>, Failed> {
        let Some(url) = self.config.models_url.as_deref() else {
            let what = "no models configured, and a full completions URL has no /models endpoint";
            return Err(Failed {
                error: HostError::Upstream(what.into()),
                problem: lmchatkit_protocol::SetupProblem::new(
                    super::UPSTREAM_SUBJECT,
                    what,
                    "list the models in the provider's `models`, or give a base URL instead of \
                     the full completions URL",
                ),
            });
        };
        let fail = |fault, what| Failed::new(Api::OpenAi, url, fault, what);
        let request = self.request(reqwest::Method::GET, url);
        let (status, body) = fetch(request, self.config.idle_timeout)
            .await
            .map_err(|(fault, what)| fail(fault, what))?;
        if !status.is_success() {
            return Err(fail(
                Fault::Status(status),
                format!("upstream returned {status}: {}", snippet(&body)),
            ));
        }
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| fail(Fault::NotApi, format!("the reply is not JSON ({e})")))?;
        let Some(data) = json.get("data").and_then(Value::as_array) else {
            return Err(fail(Fault::NotApi, "the reply has no `data` array".into()));
        };
        let mut models: Vec<Model> = data
            .iter()
            .filter_map(|m| {
                let id = m.get("id")?.as_str()?.to_owned();
                let mut model = Model::new(id);
                model.provider = m
                    .get("owned_by")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                Some(model)
            })
            .collect();
        models.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(models)
    }
}

#[async_trait]
impl Host for OpenAiBackend {
    async fn models(&self, _cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        if let Some(models) = &self.config.models {
            return Ok(models.clone());
        }
        self.listed
            .get(self.config.models_ttl, self.fetch_models())
            .await
    }

    fn setup_problems(&self) -> Vec<lmchatkit_protocol::SetupProblem> {
        self.listed.problem().into_iter().collect()
    }

    fn complete(&self, _cx: &RequestContext, req: CompleteRequest) -> EventStream {
        let body = request_body(&req);
        let idle = self.config.idle_timeout;
        let deadline = tokio::time::Instant::now() + self.config.total_timeout;
        let post = match &self.chat_url {
            Some(url) => self.request(reqwest::Method::POST, url.clone()),
            None => self.request(reqwest::Method::POST, &self.config.chat_url),
        };
        let send = post
            .header(http::header::ACCEPT, "text/event-stream")
            .json(&body)
            .send();
        let span = tracing::info_span!("upstream", url = %self.shown_url, model = %req.model);
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
                let body = read_prefix(resp, ERROR_BODY_LIMIT, idle).await;
                let body = snippet(&body);
                let msg = if body.is_empty() {
                    format!("upstream returned {status}")
                } else {
                    format!("upstream returned {status}: {body}")
                };
                return error_stream(msg);
            }
            reply_events(resp, idle, deadline, log).await
        };
        Box::pin(stream::once(reply.instrument(span)).flatten())
    }
}
