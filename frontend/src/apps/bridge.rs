//! The host side of the MCP Apps protocol (SEP-1865, 2026-01-26) as a pure state machine: it
//! takes the view's JSON-RPC messages and the host's events (tool input, result, cancel, context
//! changes, teardown) and answers with [`Effect`]s for the frame to carry out. No DOM here, so
//! the ordering rules are unit-tested natively:
//!
//! - nothing goes to the view before `ui/notifications/initialized` (a `ping` is answered);
//! - while the model streams the call's arguments, `tool-input-partial` carries them as they
//!   are so far ([`Bridge::tool_input_partial`]: the healed object, [`super::partial`]),
//!   **throttled**: at most one every [`PARTIAL_EVERY_MS`] (100 ms, about what the eye follows
//!   in a view that redraws; the model writes pieces every few ms), only when the arguments
//!   changed since the last one sent, and the latest one wins: partials that arrive before
//!   `initialized` or within the interval are coalesced, the one left waiting goes when the
//!   interval is over ([`Effect::Wake`], then [`Bridge::tick`]). Partials stop for good once
//!   the complete input is known, so the last partial is always followed by `tool-input`; a
//!   call cut off before its input was complete gets `tool-cancelled` instead;
//! - `tool-input` is sent once, before `tool-result` (or `tool-cancelled`, which alone may come
//!   without it, for a call whose input never completed), each once;
//! - `ui/resource-teardown` is a request whose answer ([`Effect::TornDown`]) lets the frame go.

use lmchatkit_protocol::AppCall;
use serde_json::{Map, Value, json};

/// The protocol version this host speaks.
pub const PROTOCOL_VERSION: &str = "2026-01-26";

/// Display modes this host offers.
pub const HOST_MODES: [&str; 2] = ["inline", "fullscreen"];

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// The implementation-defined error the spec's examples use.
pub const HOST_ERROR: i64 = -32000;

/// Methods a view may send to its MCP server, proxied through `/api/app-proxy` (the shared
/// [`AppCall::METHODS`]).
pub const PROXIED: [&str; 5] = AppCall::METHODS;

/// What the frame must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Post this JSON-RPC message to the view.
    Post(Value),
    /// Send an MCP request through `/api/app-proxy`, then [`Bridge::reply`] with `id`.
    Proxy {
        /// The view's request id.
        id: Value,
        /// The call, its params already checked.
        call: AppCall,
    },
    /// Ask the user, open `url` (http/https) in a new tab, then [`Bridge::reply`] with `id`.
    OpenLink {
        /// The view's request id.
        id: Value,
        /// The link.
        url: String,
    },
    /// Append a user message with these content blocks and start a turn, then
    /// [`Bridge::reply`] with `id` (an error when a reply is streaming).
    Message {
        /// The view's request id.
        id: Value,
        /// The content blocks (text, image, …).
        blocks: Vec<Value>,
    },
    /// The model context for the next turns (`Null` clears it; already answered).
    ModelContext(Value),
    /// Set the frame's height (CSS px).
    Resize(f64),
    /// Switch the frame to this display mode (already answered).
    DisplayMode(String),
    /// The view logged this (`notifications/message`).
    Log(Value),
    /// The view asked to be closed (`ui/notifications/request-teardown`).
    RequestTeardown,
    /// The view answered `ui/resource-teardown` (or never initialized): remove it now.
    TornDown,
    /// Call [`Bridge::tick`] in this many milliseconds (a throttled `tool-input-partial` waits).
    Wake(f64),
}

/// The least time between two `ui/notifications/tool-input-partial` (see the module docs).
pub const PARTIAL_EVERY_MS: f64 = 100.0;

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Result(Value),
    Cancelled(String),
}

/// One view's bridge.
#[derive(Debug, Clone)]
pub struct Bridge {
    host_version: String,
    context: Map<String, Value>,
    initialized: bool,
    init_answered: bool,
    input: Option<Value>,
    input_sent: bool,
    /// The newest partial arguments not sent yet.
    partial: Option<Value>,
    /// The last partial arguments sent, and when (ms).
    partial_sent: Option<(Value, f64)>,
    /// An [`Effect::Wake`] is due.
    waking: bool,
    outcome: Option<Outcome>,
    outcome_sent: bool,
    app_modes: Vec<String>,
    mode: String,
    next_id: i64,
    teardown_id: Option<i64>,
    closed: bool,
}

fn rpc(mut v: Value) -> Value {
    v["jsonrpc"] = json!("2.0");
    v
}

fn notification(method: &str, params: Value) -> Effect {
    Effect::Post(rpc(json!({"method": method, "params": params})))
}

/// A JSON-RPC error answer to `id`.
pub fn error(id: &Value, code: i64, message: &str) -> Effect {
    Effect::Post(rpc(
        json!({"id": id, "error": {"code": code, "message": message}}),
    ))
}

/// A JSON-RPC result answer to `id`.
pub fn result(id: &Value, result: Value) -> Effect {
    Effect::Post(rpc(json!({"id": id, "result": result})))
}

/// A proxied call, or an invalid-params answer when the params do not fit the method.
fn proxy(id: &Value, method: &str, params: Value) -> Effect {
    match AppCall::parse(method, params) {
        Ok(call) => Effect::Proxy {
            id: id.clone(),
            call,
        },
        Err(e) => error(id, INVALID_PARAMS, &e.to_string()),
    }
}

impl Bridge {
    /// A bridge whose `ui/initialize` answer carries `host_context` (an object: toolInfo, theme,
    /// styles, locale, …; `displayMode`, `availableDisplayModes` and `platform` are filled in).
    pub fn new(host_version: &str, host_context: Value) -> Self {
        let mut context = match host_context {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        context.insert("displayMode".into(), json!("inline"));
        context.insert("availableDisplayModes".into(), json!(HOST_MODES));
        context.entry("platform").or_insert_with(|| json!("web"));
        Self {
            host_version: host_version.to_owned(),
            context,
            initialized: false,
            init_answered: false,
            input: None,
            input_sent: false,
            partial: None,
            partial_sent: None,
            waking: false,
            outcome: None,
            outcome_sent: false,
            app_modes: Vec::new(),
            mode: "inline".into(),
            next_id: 1,
            teardown_id: None,
            closed: false,
        }
    }

    /// The view sent `ui/notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.initialized
    }

    /// The current display mode.
    pub fn mode(&self) -> &str {
        &self.mode
    }

    /// The tool's complete arguments (sent once, after initialization); no partial goes after
    /// them.
    pub fn tool_input(&mut self, arguments: Value) -> Vec<Effect> {
        if self.input.is_none() && !self.outcome_sent {
            self.input = Some(arguments);
        }
        self.partial = None;
        self.flush()
    }

    /// The arguments so far while the model streams them (an object), at `now_ms`: sent as
    /// `tool-input-partial` when due (see the module docs), else kept for later, replacing an
    /// older one. Ignored once the complete input or the outcome is known.
    pub fn tool_input_partial(&mut self, arguments: Value, now_ms: f64) -> Vec<Effect> {
        if self.input.is_some() || self.outcome.is_some() || self.closed {
            return Vec::new();
        }
        self.partial = Some(arguments);
        self.send_partial(now_ms)
    }

    /// The time an [`Effect::Wake`] asked for came: sends the partial that waited.
    pub fn tick(&mut self, now_ms: f64) -> Vec<Effect> {
        self.waking = false;
        self.send_partial(now_ms)
    }

    fn send_partial(&mut self, now_ms: f64) -> Vec<Effect> {
        if !self.initialized || self.closed || self.input.is_some() || self.outcome.is_some() {
            return Vec::new();
        }
        let Some(args) = self.partial.take() else {
            return Vec::new();
        };
        match &self.partial_sent {
            Some((sent, _)) if *sent == args => Vec::new(),
            Some((_, at)) if now_ms - at < PARTIAL_EVERY_MS => {
                let wait = at + PARTIAL_EVERY_MS - now_ms;
                self.partial = Some(args);
                if std::mem::replace(&mut self.waking, true) {
                    return Vec::new();
                }
                vec![Effect::Wake(wait)]
            }
            _ => {
                let n = notification(
                    "ui/notifications/tool-input-partial",
                    json!({"arguments": &args}),
                );
                self.partial_sent = Some((args, now_ms));
                vec![n]
            }
        }
    }

    /// The tool's `CallToolResult` (`content`, `structuredContent?`, `isError?`).
    pub fn tool_result(&mut self, call_tool_result: Value) -> Vec<Effect> {
        if self.outcome.is_none() {
            self.outcome = Some(Outcome::Result(call_tool_result));
        }
        self.flush()
    }

    /// The call was cancelled (denied, stopped or failed in transport).
    pub fn tool_cancelled(&mut self, reason: &str) -> Vec<Effect> {
        if self.outcome.is_none() {
            self.outcome = Some(Outcome::Cancelled(reason.to_owned()));
        }
        self.flush()
    }

    /// Host context fields changed (e.g. `{"theme": "dark"}`).
    pub fn context_changed(&mut self, patch: Value) -> Vec<Effect> {
        let Value::Object(patch) = patch else {
            return Vec::new();
        };
        let changed: Map<String, Value> = patch
            .into_iter()
            .filter(|(k, v)| self.context.get(k) != Some(v))
            .collect();
        if changed.is_empty() {
            return Vec::new();
        }
        self.context.extend(changed.clone());
        if !self.initialized || self.closed {
            return Vec::new(); // the initialize answer will carry it
        }
        vec![notification(
            "ui/notifications/host-context-changed",
            Value::Object(changed),
        )]
    }

    /// The host switched the mode itself (e.g. the user left fullscreen).
    pub fn set_mode(&mut self, mode: &str) -> Vec<Effect> {
        if !HOST_MODES.contains(&mode) || mode == self.mode {
            return Vec::new();
        }
        self.mode = mode.to_owned();
        self.context_changed(json!({"displayMode": mode}))
    }

    /// Starts a teardown: a `ui/resource-teardown` request, or [`Effect::TornDown`] at once for a
    /// view that never initialized (nothing may be sent to it).
    pub fn teardown(&mut self, reason: &str) -> Vec<Effect> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        if !self.initialized {
            return vec![Effect::TornDown];
        }
        let id = self.next_id;
        self.next_id += 1;
        self.teardown_id = Some(id);
        vec![Effect::Post(rpc(json!({
            "id": id, "method": "ui/resource-teardown", "params": {"reason": reason}
        })))]
    }

    /// Answers a request the frame carried out ([`Effect::Proxy`], [`Effect::OpenLink`]).
    pub fn reply(&mut self, id: &Value, outcome: Result<Value, String>) -> Vec<Effect> {
        if self.closed {
            return Vec::new();
        }
        vec![match outcome {
            Ok(v) => result(id, v),
            Err(e) => error(id, HOST_ERROR, &e),
        }]
    }

    /// Handles one message from the view. Anything that is not JSON-RPC 2.0 is ignored.
    pub fn on_message(&mut self, msg: &Value) -> Vec<Effect> {
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Vec::new();
        }
        let method = msg.get("method").and_then(Value::as_str);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match (method, msg.get("id")) {
            (Some(m), Some(id)) => self.on_request(m, id, params),
            (Some(m), None) => self.on_notification(m, params),
            (None, Some(id)) => {
                if self.teardown_id.is_some() && id.as_i64() == self.teardown_id {
                    self.teardown_id = None;
                    vec![Effect::TornDown]
                } else {
                    Vec::new()
                }
            }
            (None, None) => Vec::new(),
        }
    }

    fn on_request(&mut self, method: &str, id: &Value, params: Value) -> Vec<Effect> {
        if self.closed {
            return Vec::new();
        }
        if method == "ping" {
            return vec![result(id, json!({}))];
        }
        if method == "ui/initialize" {
            return vec![self.initialize(id, &params)];
        }
        if !self.init_answered {
            return vec![error(id, HOST_ERROR, "call ui/initialize first")];
        }
        match method {
            m if PROXIED.contains(&m) => vec![proxy(id, m, params)],
            "ui/open-link" => match params.get("url").and_then(Value::as_str) {
                Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                    vec![Effect::OpenLink {
                        id: id.clone(),
                        url: url.to_owned(),
                    }]
                }
                _ => vec![error(id, INVALID_PARAMS, "only http and https links open")],
            },
            "ui/message" => self.message(id, &params),
            "ui/update-model-context" => {
                let empty = |k: &str| match params.get(k) {
                    None | Some(Value::Null) => true,
                    Some(Value::Array(a)) => a.is_empty(),
                    Some(Value::Object(o)) => o.is_empty(),
                    _ => false,
                };
                let context = if empty("content") && empty("structuredContent") {
                    Value::Null
                } else {
                    params
                };
                vec![Effect::ModelContext(context), result(id, json!({}))]
            }
            "ui/request-display-mode" => self.display_mode(id, &params),
            _ => vec![error(
                id,
                METHOD_NOT_FOUND,
                &format!("method {method:?} is not supported"),
            )],
        }
    }

    fn initialize(&mut self, id: &Value, params: &Value) -> Effect {
        self.app_modes = params
            .pointer("/appCapabilities/availableDisplayModes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let version = match params.get("protocolVersion").and_then(Value::as_str) {
            Some(v) if v == PROTOCOL_VERSION => v,
            _ => PROTOCOL_VERSION,
        };
        self.init_answered = true;
        result(
            id,
            json!({
                "protocolVersion": version,
                "hostInfo": {"name": "lmchatkit", "version": self.host_version},
                "hostCapabilities": {
                    "openLinks": {},
                    "serverTools": {},
                    "serverResources": {},
                    "logging": {},
                    "updateModelContext": {"text": {}, "structuredContent": {}},
                    "message": {"text": {}},
                },
                "hostContext": Value::Object(self.context.clone()),
            }),
        )
    }

    fn on_notification(&mut self, method: &str, params: Value) -> Vec<Effect> {
        match method {
            "ui/notifications/initialized" if self.init_answered && !self.initialized => {
                self.initialized = true;
                self.flush()
            }
            "ui/notifications/size-changed" => params
                .get("height")
                .and_then(Value::as_f64)
                .filter(|h| h.is_finite() && *h >= 0.0)
                .map(|h| vec![Effect::Resize(h)])
                .unwrap_or_default(),
            "notifications/message" | "ui/log" => vec![Effect::Log(params)],
            "ui/notifications/request-teardown" if !self.closed => vec![Effect::RequestTeardown],
            _ => Vec::new(),
        }
    }

    /// `ui/message`: the SDK sends `content: ContentBlock[]`, the stable spec one block.
    fn message(&mut self, id: &Value, params: &Value) -> Vec<Effect> {
        if params
            .get("role")
            .and_then(Value::as_str)
            .is_some_and(|r| r != "user")
        {
            return vec![error(id, INVALID_PARAMS, "only user messages are accepted")];
        }
        let blocks: Vec<Value> = match params.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(b @ Value::Object(_)) => vec![b.clone()],
            _ => Vec::new(),
        };
        if blocks.is_empty() {
            return vec![error(id, INVALID_PARAMS, "content is required")];
        }
        vec![Effect::Message {
            id: id.clone(),
            blocks,
        }]
    }

    fn display_mode(&mut self, id: &Value, params: &Value) -> Vec<Effect> {
        let asked = params.get("mode").and_then(Value::as_str).unwrap_or("");
        // Never a mode the host lacks or the view did not declare (when it declared any).
        let ok = HOST_MODES.contains(&asked)
            && (self.app_modes.is_empty() || self.app_modes.iter().any(|m| m == asked));
        if !ok || asked == self.mode {
            return vec![result(id, json!({"mode": self.mode}))];
        }
        self.mode = asked.to_owned();
        self.context.insert("displayMode".into(), json!(asked));
        vec![
            Effect::DisplayMode(asked.to_owned()),
            result(id, json!({"mode": asked})),
        ]
    }

    /// Sends what is due, in order: tool-input, then the outcome; or, while the input is not
    /// complete, asks for a tick to send the partial that waited for `initialized`.
    fn flush(&mut self) -> Vec<Effect> {
        let mut out = Vec::new();
        if !self.initialized || self.closed {
            return out;
        }
        if self.input.is_none()
            && self.outcome.is_none()
            && self.partial.is_some()
            && !std::mem::replace(&mut self.waking, true)
        {
            out.push(Effect::Wake(0.0));
        }
        if !self.input_sent
            && let Some(args) = &self.input
        {
            out.push(notification(
                "ui/notifications/tool-input",
                json!({"arguments": args}),
            ));
            self.input_sent = true;
        }
        // A call cancelled before its input was complete is told so without one.
        let cancelled = matches!(self.outcome, Some(Outcome::Cancelled(_)));
        if (self.input_sent || cancelled && self.input.is_none())
            && !self.outcome_sent
            && let Some(outcome) = &self.outcome
        {
            out.push(match outcome {
                Outcome::Result(r) => notification("ui/notifications/tool-result", r.clone()),
                Outcome::Cancelled(reason) => {
                    notification("ui/notifications/tool-cancelled", json!({"reason": reason}))
                }
            });
            self.outcome_sent = true;
        }
        out
    }
}
