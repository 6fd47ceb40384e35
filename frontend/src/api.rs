//! Typed client for the service's HTTP API: every JSON route through `gloo-net`, and the SSE
//! streams (`POST /api/chat`, `GET /api/runs/{id}/stream`, `GET /api/events`) through `fetch` +
//! `ReadableStream` with an
//! optional `AbortSignal`, parsed by [`crate::sse::SseParser`]. Error bodies `{"error"}` become
//! [`ApiError::Status`]; an aborted stream is [`ApiError::Aborted`], never shown as an error.

use std::fmt;

use gloo_net::http::{Request, RequestBuilder, Response};
use lmchatkit_protocol::{
    AppProxyRequest, AppResult, AppViewRequest, AppViewResponse, BranchSwitch, CallProgress,
    ChatRequest, ConfigResponse, ConflictResponse, ConversationPatch, ConversationSummary,
    ErrorBody, Model, Persona, Prompt, RUN_ID_HEADER, RUN_MESSAGE_HEADER, Resource,
    ResourceReadRequest, ResourceResult, RunInfo, SaveResponse, SearchResponse, SlashCommand,
    StoredConversation, ToolApprovals, ToolCallEvent, ToolCallRequest, ToolResult, UploadResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::sse::{SseFrame, SseParser};

/// What a `PUT /api/conversations/{id}` ended with.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveOutcome {
    /// Saved; the new revision.
    Saved(u64),
    /// 409: the stored copy moved on.
    Conflict(Box<ConflictResponse>),
}

/// The service's API, addressed through its public prefix (`/chat`, or `""` at the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api {
    prefix: String,
}

impl Api {
    /// A client for the service mounted at `prefix`; a trailing `/` is ignored.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The prefix without a trailing slash.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL of an API route, e.g. `url("models")` → `/chat/api/models`.
    pub fn url(&self, route: &str) -> String {
        format!("{}/api/{}", self.prefix, route.trim_start_matches('/'))
    }

    /// `GET {prefix}/api/config`.
    pub async fn config(&self) -> Result<ConfigResponse, ApiError> {
        self.get_json("config").await
    }

    /// `GET {prefix}/api/models`.
    pub async fn models(&self) -> Result<Vec<Model>, ApiError> {
        self.get_json("models").await
    }

    /// `GET {prefix}/api/personas`.
    pub async fn personas(&self) -> Result<Vec<Persona>, ApiError> {
        self.get_json("personas").await
    }

    /// `GET {prefix}/api/commands`.
    pub async fn commands(&self) -> Result<Vec<SlashCommand>, ApiError> {
        self.get_json("commands").await
    }

    /// `GET {prefix}/api/prompts`.
    pub async fn prompts(&self) -> Result<Vec<Prompt>, ApiError> {
        self.get_json("prompts").await
    }

    /// `GET {prefix}/api/resources`.
    pub async fn resources(&self) -> Result<Vec<Resource>, ApiError> {
        self.get_json("resources").await
    }

    /// `POST {prefix}/api/resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ResourceResult, ApiError> {
        let body = ResourceReadRequest {
            uri: uri.to_owned(),
            via: None,
        };
        self.send_json(Request::post(&self.url("resources/read")), &body)
            .await
    }

    /// `POST {prefix}/api/tools/call`.
    pub async fn call_tool(&self, req: &ToolCallRequest) -> Result<ToolResult, ApiError> {
        self.send_json(Request::post(&self.url("tools/call")), req)
            .await
    }

    /// `POST {prefix}/api/tools/call` as events: `on_progress` for each progress report the
    /// call's server sends, then its result (or the error that ended it).
    pub async fn call_tool_streaming(
        &self,
        req: &ToolCallRequest,
        mut on_progress: impl FnMut(CallProgress),
    ) -> Result<ToolResult, ApiError> {
        let body = serde_json::to_string(req).map_err(|e| ApiError::Decode(e.to_string()))?;
        let mut last: Option<Result<ToolResult, ApiError>> = None;
        stream(
            &self.url("tools/call"),
            Some(&body),
            None,
            None,
            |_| {},
            |frame| match serde_json::from_str::<ToolCallEvent>(&frame.data) {
                Ok(ToolCallEvent::Progress(p)) if last.is_none() => on_progress(p),
                Ok(ToolCallEvent::Result { result }) => last = Some(Ok(result)),
                Ok(ToolCallEvent::Error { error }) => last = Some(Err(ApiError::Reported(error))),
                _ => {}
            },
        )
        .await?;
        last.unwrap_or_else(|| Err(ApiError::Network("the call ended without a result".into())))
    }

    /// `GET {prefix}/api/tools/approvals`: the tools this user always allows.
    pub async fn tool_approvals(&self) -> Result<ToolApprovals, ApiError> {
        self.get_json("tools/approvals").await
    }

    /// `PUT {prefix}/api/tools/approvals`: replaces the list; answers it as stored.
    pub async fn set_tool_approvals(
        &self,
        list: &ToolApprovals,
    ) -> Result<ToolApprovals, ApiError> {
        self.send_json(Request::put(&self.url("tools/approvals")), list)
            .await
    }

    /// `GET {prefix}/api/conversations`.
    pub async fn conversations(&self) -> Result<Vec<ConversationSummary>, ApiError> {
        self.get_json("conversations").await
    }

    /// `GET {prefix}/api/search?q=…`: the caller's messages that match `q`.
    pub async fn search(&self, q: &str) -> Result<SearchResponse, ApiError> {
        self.get_json(&format!("search?q={}", encode(q))).await
    }

    /// `GET {prefix}/api/conversations/{id}`, decoded by [`crate::stored`] (the transcript's
    /// chunk).
    pub async fn conversation(&self, id: &str) -> Result<StoredConversation, ApiError> {
        let text = self
            .get_text(&format!("conversations/{}", encode(id)))
            .await?;
        Ok(crate::stored::conversation(&text).await?)
    }

    /// `GET {prefix}/api/conversations/{id}?tree=1`: with every branch (`tree`). Decoded by
    /// [`crate::stored`].
    pub async fn conversation_tree(&self, id: &str) -> Result<StoredConversation, ApiError> {
        let text = self
            .get_text(&format!("conversations/{}?tree=1", encode(id)))
            .await?;
        Ok(crate::stored::conversation(&text).await?)
    }

    /// `GET {prefix}/api/conversations/{id}`, with the run writing it now when the service names
    /// one (`lmchatkit-run-id`). Decoded by [`crate::stored`].
    pub async fn conversation_with_run(
        &self,
        id: &str,
    ) -> Result<(StoredConversation, Option<String>), ApiError> {
        let url = self.url(&format!("conversations/{}", encode(id)));
        let res = Request::get(&url)
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| ApiError::Network(e.to_string()))?;
        let run = res.headers().get(RUN_ID_HEADER).filter(|r| !r.is_empty());
        let conv = crate::stored::conversation(&ok_body(read_text(res).await?)?).await?;
        Ok((conv, run))
    }

    /// `PUT {prefix}/api/conversations/{id}` with the base revision in `conv.revision`. The
    /// stored copy of a `409` is decoded by [`crate::stored`].
    pub async fn save(&self, conv: &StoredConversation) -> Result<SaveOutcome, ApiError> {
        let url = self.url(&format!("conversations/{}", encode(&conv.id)));
        let reply = fetch_text(Request::put(&url), Some(to_json(conv)?)).await?;
        if reply.status == 409 {
            let c = crate::stored::conflict(&reply.text).await?;
            return Ok(SaveOutcome::Conflict(Box::new(c)));
        }
        let r: SaveResponse = from_json(&ok_body(reply)?)?;
        Ok(SaveOutcome::Saved(r.revision))
    }

    /// `POST {prefix}/api/conversations/{id}/branch`: the branch through `node` becomes the
    /// active one; the new revision.
    pub async fn switch_branch(&self, id: &str, node: u64) -> Result<u64, ApiError> {
        let url = self.url(&format!("conversations/{}/branch", encode(id)));
        let r: SaveResponse = self
            .send_json(Request::post(&url), &BranchSwitch { node })
            .await?;
        Ok(r.revision)
    }

    /// `PATCH {prefix}/api/conversations/{id}`.
    pub async fn patch(&self, id: &str, patch: &ConversationPatch) -> Result<(), ApiError> {
        let url = self.url(&format!("conversations/{}", encode(id)));
        let _: serde_json::Value = self.send_json(Request::patch(&url), patch).await?;
        Ok(())
    }

    /// `DELETE {prefix}/api/conversations/{id}`.
    pub async fn delete(&self, id: &str) -> Result<(), ApiError> {
        let url = self.url(&format!("conversations/{}", encode(id)));
        ok_body(fetch_text(Request::delete(&url), None).await?).map(drop)
    }

    /// `POST {prefix}/api/apps/view`: a URL for an MCP App view.
    pub async fn app_view(&self, req: &AppViewRequest) -> Result<AppViewResponse, ApiError> {
        self.send_json(Request::post(&self.url("apps/view")), req)
            .await
    }

    /// `POST {prefix}/api/app-proxy`: a view's MCP request, scoped to its tool's server; the
    /// answer is read as the call's result type.
    pub async fn app_proxy(&self, req: &AppProxyRequest) -> Result<AppResult, ApiError> {
        let builder = Request::post(&self.url("app-proxy"));
        let text = ok_body(fetch_text(builder, Some(to_json(req)?)).await?)?;
        req.call
            .read_result(&text)
            .map_err(|e| ApiError::Decode(e.to_string()))
    }

    /// `POST {prefix}/api/upload` with the files as multipart `file` fields.
    pub async fn upload(&self, form: web_sys::FormData) -> Result<UploadResponse, ApiError> {
        let req = Request::post(&self.url("upload"))
            .body(form)
            .map_err(|e| ApiError::Decode(e.to_string()))?;
        let res = req
            .send()
            .await
            .map_err(|e| ApiError::Network(e.to_string()))?;
        from_json(&ok_body(read_text(res).await?)?)
    }

    /// `POST {prefix}/api/chat`: calls `on_run` with the id of the run the turn started (when
    /// the service names one), then `on_frame` for each SSE frame until the stream ends.
    pub async fn chat_stream(
        &self,
        req: &ChatRequest,
        signal: Option<&web_sys::AbortSignal>,
        on_run: impl FnOnce(String),
        on_frame: impl FnMut(SseFrame),
    ) -> Result<(), ApiError> {
        let body = serde_json::to_string(req).map_err(|e| ApiError::Decode(e.to_string()))?;
        let on_open = |res: &web_sys::Response| {
            if let Ok(Some(id)) = res.headers().get(RUN_ID_HEADER) {
                on_run(id);
            }
        };
        stream(
            &self.url("chat"),
            Some(&body),
            None,
            signal,
            on_open,
            on_frame,
        )
        .await
    }

    /// `GET {prefix}/api/runs/{id}/stream` after event `after` (sent as `Last-Event-ID`, none
    /// for 0): calls `on_open` with the id of the message the run writes (when the service
    /// names it), then `on_frame` for each SSE frame until the run's log ends.
    pub async fn run_stream(
        &self,
        id: &str,
        after: u64,
        signal: Option<&web_sys::AbortSignal>,
        on_open: impl FnOnce(Option<String>),
        on_frame: impl FnMut(SseFrame),
    ) -> Result<(), ApiError> {
        let url = self.url(&format!("runs/{}/stream", encode(id)));
        let last = (after > 0).then(|| after.to_string());
        let on_open = |res: &web_sys::Response| {
            let message = res.headers().get(RUN_MESSAGE_HEADER).ok().flatten();
            on_open(message.filter(|m| !m.is_empty()));
        };
        stream(&url, None, last.as_deref(), signal, on_open, on_frame).await
    }

    /// `POST {prefix}/api/runs/{id}/stop`: stops a run; answers it once it has ended.
    pub async fn stop_run(&self, id: &str) -> Result<RunInfo, ApiError> {
        let route = format!("runs/{}/stop", encode(id));
        self.send_for_json(Request::post(&self.url(&route))).await
    }

    /// `GET {prefix}/api/events` (with `Last-Event-ID` when given) until it ends.
    pub async fn events_stream(
        &self,
        last_event_id: Option<&str>,
        signal: Option<&web_sys::AbortSignal>,
        on_frame: impl FnMut(SseFrame),
    ) -> Result<(), ApiError> {
        stream(
            &self.url("events"),
            None,
            last_event_id,
            signal,
            |_| {},
            on_frame,
        )
        .await
    }

    pub(crate) async fn get_json<T: DeserializeOwned>(&self, route: &str) -> Result<T, ApiError> {
        from_json(&self.get_text(route).await?)
    }

    /// The body of a successful `GET` of `route` (JSON, not decoded).
    async fn get_text(&self, route: &str) -> Result<String, ApiError> {
        let builder = Request::get(&self.url(route)).header("Accept", "application/json");
        ok_body(fetch_text(builder, None).await?)
    }

    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        builder: RequestBuilder,
        body: &impl Serialize,
    ) -> Result<T, ApiError> {
        from_json(&ok_body(fetch_text(builder, Some(to_json(body)?)).await?)?)
    }

    /// Sends a request without a body and reads its JSON answer.
    pub(crate) async fn send_for_json<T: DeserializeOwned>(
        &self,
        builder: RequestBuilder,
    ) -> Result<T, ApiError> {
        from_json(&ok_body(fetch_text(builder, None).await?)?)
    }

    /// Sends a request without a body; any 2xx answer (e.g. a 204) is success.
    pub(crate) async fn send_empty(&self, builder: RequestBuilder) -> Result<(), ApiError> {
        ok_body(fetch_text(builder, None).await?).map(drop)
    }
}

/// `id` as one path segment.
pub(crate) fn encode(id: &str) -> String {
    String::from(js_sys::encode_uri_component(id))
}

// Only (de)serialising is generic: the fetch and its error handling below are compiled once,
// not once per response type (that kept ~15 copies of the same future in the wasm bundle).

fn to_json(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|e| ApiError::Decode(e.to_string()))
}

fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    serde_json::from_str(text).map_err(|e| ApiError::Decode(e.to_string()))
}

/// A finished response.
struct Reply {
    status: u16,
    /// The status text (kept for errors whose body is not the service's `{"error"}`).
    status_text: String,
    text: String,
}

/// Sends the request (with a JSON body when given) and reads the reply.
async fn fetch_text(builder: RequestBuilder, json: Option<String>) -> Result<Reply, ApiError> {
    let res = match json {
        Some(body) => {
            builder
                .header("Content-Type", "application/json")
                .body(body)
                .map_err(|e| ApiError::Decode(e.to_string()))?
                .send()
                .await
        }
        None => builder.send().await,
    }
    .map_err(|e| ApiError::Network(e.to_string()))?;
    read_text(res).await
}

async fn read_text(res: Response) -> Result<Reply, ApiError> {
    let text = match res.text().await {
        Ok(text) => text,
        Err(e) if res.ok() => return Err(ApiError::Network(e.to_string())),
        Err(_) => String::new(),
    };
    Ok(Reply {
        status: res.status(),
        status_text: res.status_text(),
        text,
    })
}

/// The body of a 2xx reply, else the error: the service answers errors as `{"error": "..."}`;
/// anything else keeps the status text.
fn ok_body(reply: Reply) -> Result<String, ApiError> {
    if (200..300).contains(&reply.status) {
        return Ok(reply.text);
    }
    let message = match serde_json::from_str::<ErrorBody>(&reply.text) {
        Ok(body) => body.error,
        Err(_) => reply.status_text,
    };
    Err(ApiError::Status {
        status: reply.status,
        message,
    })
}

fn js_err(e: JsValue) -> ApiError {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        if err.name() == "AbortError" {
            return ApiError::Aborted;
        }
        return ApiError::Network(String::from(err.message()));
    }
    if let Some(ex) = e.dyn_ref::<web_sys::DomException>()
        && ex.name() == "AbortError"
    {
        return ApiError::Aborted;
    }
    ApiError::Network(format!("{e:?}"))
}

async fn stream(
    url: &str,
    body: Option<&str>,
    last_event_id: Option<&str>,
    signal: Option<&web_sys::AbortSignal>,
    on_open: impl FnOnce(&web_sys::Response),
    mut on_frame: impl FnMut(SseFrame),
) -> Result<(), ApiError> {
    let window = web_sys::window().ok_or_else(|| ApiError::Network("no window".into()))?;
    let init = web_sys::RequestInit::new();
    let headers = web_sys::Headers::new().map_err(js_err)?;
    headers.set("Accept", "text/event-stream").map_err(js_err)?;
    if let Some(id) = last_event_id {
        headers.set("Last-Event-ID", id).map_err(js_err)?;
    }
    match body {
        Some(b) => {
            init.set_method("POST");
            headers
                .set("Content-Type", "application/json")
                .map_err(js_err)?;
            init.set_body(&JsValue::from_str(b));
        }
        None => init.set_method("GET"),
    }
    init.set_headers(&headers);
    init.set_signal(signal);
    let res = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(js_err)?;
    let res: web_sys::Response = res.dyn_into().map_err(js_err)?;
    if !res.ok() {
        let status = res.status();
        let text = match res.text() {
            Ok(p) => JsFuture::from(p)
                .await
                .ok()
                .and_then(|t| t.as_string())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error)
            .unwrap_or_else(|_| res.status_text());
        return Err(ApiError::Status { status, message });
    }
    on_open(&res);
    let Some(body) = res.body() else {
        return Ok(());
    };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut parser = SseParser::new();
    // Buffered frames are handled in slices, with a turn for the browser between them
    // (`crate::timer::Slice` says why).
    let mut slice = crate::timer::Slice::begin();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(js_err)?;
        let done = js_sys::Reflect::get(&chunk, &JsValue::from_str("done")).map_err(js_err)?;
        if done.as_bool().unwrap_or(true) {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &JsValue::from_str("value")).map_err(js_err)?;
        let bytes = js_sys::Uint8Array::new(&value).to_vec();
        for frame in parser.push(&bytes) {
            on_frame(frame);
            if slice.spent() {
                crate::timer::yield_now().await;
            }
        }
    }
    Ok(())
}

/// Why an API call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The request did not complete (network error, CORS, server down).
    Network(String),
    /// The service answered with a non-2xx status.
    Status {
        /// HTTP status code.
        status: u16,
        /// The `error` field of the body, or the status text.
        message: String,
    },
    /// The body was not the expected JSON.
    Decode(String),
    /// The service answered, then reported that what was asked failed (a stream's `error`
    /// event, e.g. a tool call's: an unknown tool, a server that failed). Its words, as they
    /// are: not a network error, which the request did not meet.
    Reported(String),
    /// The request was aborted (Stop, or leaving the chat); not an error to show.
    Aborted,
}

impl From<crate::stored::Unreadable> for ApiError {
    /// A stored conversation that could not be read: its decoder not loaded reads as a network
    /// error would, JSON that does not parse as a decode error.
    fn from(e: crate::stored::Unreadable) -> Self {
        match e {
            crate::stored::Unreadable::NotLoaded => {
                Self::Network(crate::stored::NOT_LOADED.to_owned())
            }
            crate::stored::Unreadable::Decode(message) => Self::Decode(message),
        }
    }
}

impl ApiError {
    /// Whether the service answered 404: what was asked for does not exist (any other error may
    /// pass: the network, a stale page, an aborted request).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Status { status: 404, .. })
    }

    /// Whether the service answered 409: what was sent no longer matches what it has (e.g. a
    /// review that another refresh replaced).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Status { status: 409, .. })
    }

    /// What to show the user: the service's own message for a 4xx/5xx it explained, else the
    /// whole error.
    pub fn message(&self) -> String {
        match self {
            Self::Status { message, .. } if !message.is_empty() => message.clone(),
            e => e.to_string(),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Network(e) => write!(f, "network error: {e}"),
            Self::Status { status, message } if message.is_empty() => write!(f, "HTTP {status}"),
            Self::Status { status, message } => write!(f, "HTTP {status}: {message}"),
            Self::Decode(e) => write!(f, "unexpected response: {e}"),
            Self::Reported(e) => f.write_str(e),
            Self::Aborted => write!(f, "aborted"),
        }
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_prefix() {
        assert_eq!(Api::new("/chat").url("models"), "/chat/api/models");
        assert_eq!(Api::new("/chat/").url("/config"), "/chat/api/config");
        assert_eq!(Api::new("").url("models"), "/api/models");
        assert_eq!(Api::new("/").prefix(), "");
    }

    #[test]
    fn only_a_404_means_not_found() {
        let status = |status| ApiError::Status {
            status,
            message: String::new(),
        };
        assert!(status(404).is_not_found());
        assert!(!status(500).is_not_found());
        assert!(!status(403).is_not_found());
        assert!(!ApiError::Network("reset".into()).is_not_found());
        assert!(!ApiError::Aborted.is_not_found());
        assert!(status(409).is_conflict() && !status(404).is_conflict());
    }

    #[test]
    fn a_message_is_the_services_own_words_when_it_gave_some() {
        let e = ApiError::Status {
            status: 400,
            message: "invalid slug".into(),
        };
        assert_eq!(e.message(), "invalid slug");
        let e = ApiError::Status {
            status: 502,
            message: String::new(),
        };
        assert_eq!(e.message(), "HTTP 502");
    }

    #[test]
    fn errors_read_well() {
        let e = ApiError::Status {
            status: 500,
            message: "upstream down".into(),
        };
        assert_eq!(e.to_string(), "HTTP 500: upstream down");
        let e = ApiError::Status {
            status: 404,
            message: String::new(),
        };
        assert_eq!(e.to_string(), "HTTP 404");
        // A call's failure the service reported reads as its words, not as the network's.
        let e = ApiError::Reported("tool \"basic__get-time\" is not recognized".into());
        assert_eq!(e.to_string(), "tool \"basic__get-time\" is not recognized");
        assert_eq!(
            ApiError::Network("Failed to fetch".into()).to_string(),
            "network error: Failed to fetch"
        );
    }
}
