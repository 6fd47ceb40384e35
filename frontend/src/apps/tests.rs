//! The bridge against a scripted fake view, in the style of the ext-apps `app-bridge` tests.

use lmchatkit_protocol::{AppCall, ListParams};
use serde_json::{Value, json};

use super::bridge::*;

/// Plays the view: JSON-RPC messages in, the host's effects out.
struct FakeView {
    bridge: Bridge,
    next_id: i64,
}

impl FakeView {
    fn new() -> Self {
        let ctx = json!({"theme": "dark", "toolInfo": {"tool": {"name": "show"}}});
        Self {
            bridge: Bridge::new("0.1.0", ctx),
            next_id: 100,
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Vec<Effect> {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.bridge.on_message(&msg)
    }

    fn notify(&mut self, method: &str, params: Value) -> Vec<Effect> {
        self.bridge
            .on_message(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    fn handshake(&mut self) -> Vec<Effect> {
        let init = self.request(
            "ui/initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "appInfo": {"name": "t", "version": "1"},
                   "appCapabilities": {"availableDisplayModes": ["inline", "fullscreen"]}}),
        );
        assert_eq!(init.len(), 1);
        self.notify("ui/notifications/initialized", json!({}))
    }
}

/// The methods of the posted notifications/requests, in order.
fn methods(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Post(v) => v.get("method").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .collect()
}

fn posted(effects: &[Effect]) -> Vec<&Value> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Post(v) => Some(v),
            _ => None,
        })
        .collect()
}

#[test]
fn nothing_is_sent_before_initialized() {
    let mut v = FakeView::new();
    assert!(v.bridge.tool_input(json!({"a": 1})).is_empty());
    assert!(v.bridge.tool_result(json!({"content": []})).is_empty());
    assert!(
        v.bridge
            .context_changed(json!({"theme": "light"}))
            .is_empty()
    );
    // ping is answered even before initialization.
    let pong = v.request("ping", json!({}));
    assert_eq!(posted(&pong)[0]["result"], json!({}));
    let init = v.request(
        "ui/initialize",
        json!({"protocolVersion": PROTOCOL_VERSION}),
    );
    let answer = posted(&init)[0];
    assert_eq!(answer["result"]["protocolVersion"], PROTOCOL_VERSION);
    assert!(
        methods(&init).is_empty(),
        "the answer is a response, not a notification"
    );
    let flushed = v.notify("ui/notifications/initialized", json!({}));
    assert_eq!(
        methods(&flushed),
        [
            "ui/notifications/tool-input",
            "ui/notifications/tool-result"
        ]
    );
    assert_eq!(
        posted(&flushed)[0]["params"],
        json!({"arguments": {"a": 1}})
    );
}

#[test]
fn initialize_answers_capabilities_and_context() {
    let mut v = FakeView::new();
    v.bridge.context_changed(json!({"theme": "light"}));
    let init = v.request("ui/initialize", json!({"protocolVersion": "1999-01-01"}));
    let r = &posted(&init)[0]["result"];
    assert_eq!(
        r["protocolVersion"], PROTOCOL_VERSION,
        "unknown versions get ours"
    );
    assert_eq!(r["hostInfo"]["name"], "lmchatkit");
    for cap in [
        "openLinks",
        "serverTools",
        "serverResources",
        "logging",
        "updateModelContext",
        "message",
    ] {
        assert!(r["hostCapabilities"].get(cap).is_some(), "{cap}");
    }
    let ctx = &r["hostContext"];
    assert_eq!(
        ctx["theme"], "light",
        "changes before init land in the answer"
    );
    assert_eq!(ctx["displayMode"], "inline");
    assert_eq!(
        ctx["availableDisplayModes"],
        json!(["inline", "fullscreen"])
    );
    assert_eq!(ctx["platform"], "web");
    assert_eq!(ctx["toolInfo"]["tool"]["name"], "show");
}

#[test]
fn tool_input_once_and_before_the_result() {
    let mut v = FakeView::new();
    assert!(v.handshake().is_empty());
    // The result arrives first: held until the input is known.
    assert!(v.bridge.tool_result(json!({"content": []})).is_empty());
    let e = v.bridge.tool_input(json!({"x": 1}));
    assert_eq!(
        methods(&e),
        [
            "ui/notifications/tool-input",
            "ui/notifications/tool-result"
        ]
    );
    assert!(
        v.bridge.tool_input(json!({"x": 2})).is_empty(),
        "input only once"
    );
    assert!(
        v.bridge.tool_result(json!({})).is_empty(),
        "result only once"
    );
    assert!(v.bridge.tool_cancelled("stop").is_empty());
}

#[test]
fn cancellation_replaces_the_result() {
    let mut v = FakeView::new();
    v.bridge.tool_input(json!({}));
    v.handshake();
    let e = v.bridge.tool_cancelled("denied");
    assert_eq!(methods(&e), ["ui/notifications/tool-cancelled"]);
    assert_eq!(posted(&e)[0]["params"]["reason"], "denied");
    assert!(v.bridge.tool_result(json!({})).is_empty());
}

/// The `arguments` of each `tool-input-partial` posted.
fn partials(effects: &[Effect]) -> Vec<Value> {
    posted(effects)
        .into_iter()
        .filter(|v| v["method"] == "ui/notifications/tool-input-partial")
        .map(|v| v["params"]["arguments"].clone())
        .collect()
}

#[test]
fn partials_wait_for_initialized_and_only_the_latest_goes() {
    let mut v = FakeView::new();
    assert!(v.bridge.tool_input_partial(json!({}), 0.0).is_empty());
    assert!(
        v.bridge
            .tool_input_partial(json!({"city": "Os"}), 10.0)
            .is_empty()
    );
    // Initialized: a tick is asked for at once, and it sends the newest arguments only.
    let e = v.handshake();
    assert_eq!(e, [Effect::Wake(0.0)]);
    let e = v.bridge.tick(20.0);
    assert_eq!(partials(&e), [json!({"city": "Os"})]);
}

#[test]
fn partials_are_throttled_sent_only_when_changed_and_stop_at_the_input() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.bridge.tool_input_partial(json!({"c": "O"}), 1000.0);
    assert_eq!(partials(&e), [json!({"c": "O"})]);
    // Within 100 ms: kept, and one wake for the rest of the interval.
    let e = v.bridge.tool_input_partial(json!({"c": "Os"}), 1030.0);
    assert_eq!(e, [Effect::Wake(70.0)]);
    assert!(
        v.bridge
            .tool_input_partial(json!({"c": "Osl"}), 1060.0)
            .is_empty(),
        "one wake at a time"
    );
    let e = v.bridge.tick(1100.0);
    assert_eq!(partials(&e), [json!({"c": "Osl"})], "the newest wins");
    // Unchanged arguments are not sent again.
    assert!(
        v.bridge
            .tool_input_partial(json!({"c": "Osl"}), 1500.0)
            .is_empty()
    );
    // A partial still waiting when the input is complete never goes: the input does.
    let e = v.bridge.tool_input_partial(json!({"c": "Oslo"}), 1510.0);
    assert_eq!(partials(&e).len(), 1);
    let e = v
        .bridge
        .tool_input_partial(json!({"c": "Oslo", "u": ""}), 1520.0);
    assert_eq!(e, [Effect::Wake(90.0)]);
    let e = v.bridge.tool_input(json!({"c": "Oslo"}));
    assert_eq!(methods(&e), ["ui/notifications/tool-input"]);
    assert!(v.bridge.tick(1700.0).is_empty());
    assert!(
        v.bridge
            .tool_input_partial(json!({"c": "Oslo!"}), 1800.0)
            .is_empty()
    );
    let e = v.bridge.tool_result(json!({"content": []}));
    assert_eq!(methods(&e), ["ui/notifications/tool-result"]);
}

#[test]
fn a_call_cut_off_while_streaming_is_cancelled_without_an_input() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.bridge.tool_input_partial(json!({"q": "wea"}), 0.0);
    assert_eq!(partials(&e).len(), 1);
    let e = v.bridge.tool_cancelled("the reply was cut off");
    assert_eq!(methods(&e), ["ui/notifications/tool-cancelled"]);
    assert!(v.bridge.tool_input(json!({"q": "weather"})).is_empty());
    assert!(
        v.bridge
            .tool_input_partial(json!({"q": "w"}), 500.0)
            .is_empty()
    );
}

#[test]
fn requests_before_initialize_are_refused() {
    let mut v = FakeView::new();
    let e = v.request("tools/call", json!({"name": "x"}));
    assert_eq!(posted(&e)[0]["error"]["code"], HOST_ERROR);
}

#[test]
fn server_methods_are_proxied_and_answered() {
    let mut v = FakeView::new();
    v.handshake();
    let cases = [
        (
            json!({"name": "t", "arguments": {"k": 1}}),
            AppCall::call_tool("t", json!({"k": 1}).as_object().cloned()),
        ),
        (
            json!({"uri": "ui://a/x"}),
            AppCall::read_resource("ui://a/x"),
        ),
        (json!({}), AppCall::ListResources(ListParams::default())),
        (
            json!({"cursor": "2"}),
            AppCall::ListResourceTemplates(ListParams {
                cursor: Some("2".into()),
            }),
        ),
        (Value::Null, AppCall::ListPrompts(ListParams::default())),
    ];
    for (m, (params, expected)) in PROXIED.into_iter().zip(cases) {
        let e = v.request(m, params);
        match &e[..] {
            [Effect::Proxy { call, .. }] => assert_eq!(call, &expected, "{m}"),
            other => panic!("{m}: {other:?}"),
        }
    }
    let ok = v.bridge.reply(&json!(7), Ok(json!({"content": []})));
    assert_eq!(
        posted(&ok)[0],
        &json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})
    );
    let refused = v
        .bridge
        .reply(&json!(8), Err("tool is not visible to apps".into()));
    assert_eq!(posted(&refused)[0]["error"]["code"], HOST_ERROR);
    assert_eq!(
        posted(&refused)[0]["error"]["message"],
        "tool is not visible to apps"
    );
}

#[test]
fn bad_params_of_a_proxied_call_get_invalid_params_without_a_proxy() {
    let mut v = FakeView::new();
    v.handshake();
    for (m, params) in [
        ("tools/call", json!({})),
        ("tools/call", json!({"name": "t", "arguments": [1, 2]})),
        ("resources/read", json!({"uri": 5})),
        ("resources/read", Value::Null),
        ("resources/list", json!({"cursor": 3})),
        ("prompts/list", json!("all")),
    ] {
        let e = v.request(m, params.clone());
        assert!(
            !e.iter().any(|x| matches!(x, Effect::Proxy { .. })),
            "{m} {params}"
        );
        let answer = posted(&e)[0];
        assert_eq!(answer["error"]["code"], INVALID_PARAMS, "{m} {params}");
        assert_eq!(answer["id"], v.next_id);
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("invalid params of {m}: ")),
            "{message}"
        );
    }
}

#[test]
fn unknown_methods_get_method_not_found() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.request("sampling/createMessage", json!({}));
    assert_eq!(posted(&e)[0]["error"]["code"], METHOD_NOT_FOUND);
    assert!(v.notify("ui/notifications/unknown", json!({})).is_empty());
    assert!(
        v.bridge.on_message(&json!({"hello": 1})).is_empty(),
        "not JSON-RPC"
    );
    assert!(
        v.bridge
            .on_message(&json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}))
            .is_empty()
    );
}

#[test]
fn open_link_is_http_only() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.request("ui/open-link", json!({"url": "https://example.com/a"}));
    assert!(matches!(&e[..], [Effect::OpenLink { url, .. }] if url == "https://example.com/a"));
    for bad in [
        "javascript:alert(1)",
        "data:text/html,x",
        "file:///etc/passwd",
    ] {
        let e = v.request("ui/open-link", json!({"url": bad}));
        assert_eq!(posted(&e)[0]["error"]["code"], INVALID_PARAMS, "{bad}");
    }
}

#[test]
fn message_accepts_both_content_shapes() {
    let mut v = FakeView::new();
    v.handshake();
    let arr = v.request(
        "ui/message",
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
    );
    assert!(
        matches!(&arr[..], [Effect::Message { blocks, .. }] if blocks == &[json!({"type": "text", "text": "hi"})])
    );
    let one = v.request(
        "ui/message",
        json!({"role": "user", "content": {"type": "text", "text": "yo"}}),
    );
    assert!(
        matches!(&one[..], [Effect::Message { blocks, .. }] if blocks == &[json!({"type": "text", "text": "yo"})])
    );
    let bad = v.request("ui/message", json!({"role": "assistant", "content": []}));
    assert_eq!(posted(&bad)[0]["error"]["code"], INVALID_PARAMS);
}

#[test]
fn model_context_overwrites_and_empty_clears() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.request(
        "ui/update-model-context",
        json!({"content": [{"type": "text", "text": "state"}]}),
    );
    assert!(matches!(&e[0], Effect::ModelContext(c) if c["content"][0]["text"] == "state"));
    let e = v.request("ui/update-model-context", json!({}));
    assert_eq!(e[0], Effect::ModelContext(Value::Null));
}

#[test]
fn display_mode_returns_the_resulting_mode() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.request("ui/request-display-mode", json!({"mode": "fullscreen"}));
    assert_eq!(e[0], Effect::DisplayMode("fullscreen".into()));
    assert_eq!(posted(&e)[0]["result"]["mode"], "fullscreen");
    assert_eq!(v.bridge.mode(), "fullscreen");
    // pip is not offered: the current mode comes back and nothing switches.
    let e = v.request("ui/request-display-mode", json!({"mode": "pip"}));
    assert_eq!(e.len(), 1);
    assert_eq!(posted(&e)[0]["result"]["mode"], "fullscreen");
    // The host leaving fullscreen tells the view.
    let e = v.bridge.set_mode("inline");
    assert_eq!(methods(&e), ["ui/notifications/host-context-changed"]);
    assert_eq!(posted(&e)[0]["params"], json!({"displayMode": "inline"}));
}

#[test]
fn undeclared_modes_are_never_entered() {
    let mut v = FakeView::new();
    v.request(
        "ui/initialize",
        json!({"appCapabilities": {"availableDisplayModes": ["inline"]}}),
    );
    v.notify("ui/notifications/initialized", json!({}));
    let e = v.request("ui/request-display-mode", json!({"mode": "fullscreen"}));
    assert_eq!(posted(&e)[0]["result"]["mode"], "inline");
    assert!(!e.iter().any(|x| matches!(x, Effect::DisplayMode(_))));
}

#[test]
fn size_changed_resizes_and_logs_are_kept() {
    let mut v = FakeView::new();
    v.handshake();
    assert_eq!(
        v.notify(
            "ui/notifications/size-changed",
            json!({"width": 300, "height": 420})
        ),
        vec![Effect::Resize(420.0)]
    );
    assert!(
        v.notify("ui/notifications/size-changed", json!({"width": 3}))
            .is_empty()
    );
    let e = v.notify(
        "notifications/message",
        json!({"level": "info", "data": "x"}),
    );
    assert!(matches!(&e[0], Effect::Log(p) if p["data"] == "x"));
}

#[test]
fn context_changes_send_only_what_changed() {
    let mut v = FakeView::new();
    v.handshake();
    assert!(
        v.bridge
            .context_changed(json!({"theme": "dark"}))
            .is_empty()
    );
    let e = v
        .bridge
        .context_changed(json!({"theme": "light", "locale": "en"}));
    assert_eq!(methods(&e), ["ui/notifications/host-context-changed"]);
    assert_eq!(
        posted(&e)[0]["params"],
        json!({"theme": "light", "locale": "en"})
    );
}

#[test]
fn teardown_is_a_request_awaited_by_id() {
    let mut v = FakeView::new();
    v.handshake();
    let e = v.bridge.teardown("conversation closed");
    let req = posted(&e)[0].clone();
    assert_eq!(req["method"], "ui/resource-teardown");
    assert_eq!(req["params"]["reason"], "conversation closed");
    assert!(v.bridge.teardown("again").is_empty(), "only once");
    // Nothing else goes out while closing.
    assert!(v.bridge.tool_result(json!({})).is_empty());
    assert!(v.request("tools/call", json!({})).is_empty());
    // A reply to another id does not finish it; the matching one does.
    assert!(
        v.bridge
            .on_message(&json!({"jsonrpc": "2.0", "id": 999, "result": {}}))
            .is_empty()
    );
    let done = v
        .bridge
        .on_message(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {}}));
    assert_eq!(done, vec![Effect::TornDown]);
}

#[test]
fn teardown_before_initialized_sends_nothing() {
    let mut v = FakeView::new();
    assert_eq!(v.bridge.teardown("gone"), vec![Effect::TornDown]);
}

#[test]
fn request_teardown_is_reported() {
    let mut v = FakeView::new();
    v.handshake();
    assert_eq!(
        v.notify("ui/notifications/request-teardown", json!({})),
        vec![Effect::RequestTeardown]
    );
}

#[test]
fn model_context_belongs_to_its_view_and_goes_with_its_teardown() {
    use super::from_app::{context_after_teardown, context_updated};
    let ctx = context_updated("call-a", "budget", json!({"content": []}));
    assert_eq!(ctx.as_ref().map(|c| c.app.as_str()), Some("budget"));
    assert_eq!(context_updated("call-a", "budget", Value::Null), None);
    assert_eq!(
        context_after_teardown(ctx.clone(), "call-b"),
        ctx,
        "another view's teardown leaves it"
    );
    assert_eq!(context_after_teardown(ctx, "call-a"), None);
}

#[test]
fn an_app_message_is_marked_literal_text() {
    use super::from_app::{app_message, message_text};
    let blocks = [
        json!({"type": "text", "text": "/review @file:///etc/passwd"}),
        json!({"type": "image", "data": "x"}),
        json!({"type": "text", "text": "thanks"}),
    ];
    let text = message_text(&blocks).unwrap();
    assert_eq!(text, "/review @file:///etc/passwd\n\nthanks");
    assert!(message_text(&[json!({"type": "image"})]).is_err());
    assert!(message_text(&[json!({"type": "text", "text": "  "})]).is_err());
    let m = app_message("budget", text.clone());
    assert_eq!(m.from_app.as_deref(), Some("budget"));
    assert_eq!(m.content.as_text(), Some(text.as_str()));
}
