//! One MCP App view in the transcript. Once it scrolls into view it asks the service for a view
//! URL (`POST /api/apps/view`), frames it — default mode: the token URL in an opaque-origin
//! iframe (`allow-scripts allow-forms`); proxy mode: the sandbox proxy on the sandbox origin,
//! then the HTML in `sandbox-resource-ready` — and runs a [`Bridge`] over `postMessage`,
//! accepting only messages whose source is its own iframe (and, in proxy mode, whose origin is
//! the sandbox's). A failed view falls back to the text result, which the tool card shows.
//!
//! Full screen (the view's `ui/request-display-mode`) covers the chat's column below its header,
//! not the whole window: the header's controls (theme, menu) and the view's own exit button stay
//! in reach, and Esc leaves it.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{AppProxyRequest, AppResult, AppViewRequest, AppViewResponse};
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;

use super::bridge::{Bridge, Effect as Do};
use super::context::{MAX_INLINE_HEIGHT, host_context, resolved_theme};
use super::from_app::{self, MessageConsent, Pending};
use super::{ViewHandle, register, unregister};
use crate::api::ApiError;
use crate::state::store;
use crate::state::{Chat, Store, now_ms};

/// What a view needs from its tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewCall {
    /// The tool call id.
    pub call_id: String,
    /// The tool's name (scopes every request of the view to its server).
    pub tool: String,
    /// The view's `ui://` resource.
    pub uri: String,
    /// The call's arguments (`tool-input`).
    pub arguments: Value,
    /// The `CallToolResult` (`tool-result`).
    pub result: Value,
}

/// What a view opened while its call streams is fed as the call goes on (see
/// `components::tool_card::EarlyView`): the healed arguments so far, the complete input once
/// the call came, and the outcome (the `CallToolResult`, or why the call was cancelled).
#[derive(Clone, Copy)]
pub struct ViewFeed {
    /// The arguments so far (an object), while they stream.
    pub partial: Signal<Option<Value>>,
    /// The complete arguments.
    pub input: Signal<Option<Value>>,
    /// The tool's result, or the reason the call was cancelled.
    pub outcome: Signal<Option<Result<Value, String>>>,
}

impl ViewFeed {
    /// Gives `bridge` what is known now (untracked).
    fn feed(&self, bridge: &mut Bridge) -> Vec<Do> {
        let mut out = Vec::new();
        if let Some(p) = self.partial.get_untracked() {
            out.extend(bridge.tool_input_partial(p, js_sys::Date::now()));
        }
        if let Some(i) = self.input.get_untracked() {
            out.extend(bridge.tool_input(i));
        }
        match self.outcome.get_untracked() {
            Some(Ok(r)) => out.extend(bridge.tool_result(r)),
            Some(Err(why)) => out.extend(bridge.tool_cancelled(&why)),
            None => {}
        }
        out
    }
}

/// The `CallToolResult` of a tool message.
pub fn call_tool_result(text: &str, is_error: bool, structured: Option<&Value>) -> Value {
    let mut r = json!({"content": [{"type": "text", "text": text}]});
    if is_error {
        r["isError"] = json!(true);
    }
    if let Some(sc) = structured {
        r["structuredContent"] = sc.clone();
    }
    r
}

/// The JSON-RPC result a view receives for a proxied call's answer.
fn rpc_result(out: Result<AppResult, ApiError>) -> Result<Value, String> {
    let result = out.map_err(|e| e.to_string())?;
    serde_json::to_value(&result).map_err(|e| e.to_string())
}

/// The origin of an absolute URL (`None` for a path).
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{host}"))
}

/// One mounted view's live parts (not `Send`: kept in a local `StoredValue`).
struct Live {
    bridge: RefCell<Bridge>,
    frame: NodeRef<html::Iframe>,
    /// `*` for the opaque-origin frame (default mode), else the sandbox origin.
    target: String,
    proxy_origin: Option<String>,
    view: AppViewResponse,
    call: ViewCall,
    store: Store,
    chat: Chat,
    height: RwSignal<f64>,
    fullscreen: RwSignal<bool>,
    closed: RwSignal<bool>,
    resolve_teardown: RefCell<Option<js_sys::Function>>,
    /// How the user and the model are told who the app is (its server, else the tool).
    app: String,
    /// A `ui/message` waiting for the user's Send or Discard.
    pending: RwSignal<Option<Pending>>,
}

impl Live {
    fn post(&self, msg: &Value) {
        let Some(win) = self.frame.get_untracked().and_then(|f| f.content_window()) else {
            return;
        };
        if let Ok(js) = js_sys::JSON::parse(&msg.to_string()) {
            let _ = win.post_message(&js, &self.target);
        }
    }

    fn run(self: &Rc<Self>, effects: Vec<Do>) {
        for e in effects {
            match e {
                Do::Post(msg) => self.post(&msg),
                Do::Proxy { id, call } => {
                    let this = self.clone();
                    spawn_local(async move {
                        let req = AppProxyRequest::new(this.call.tool.clone(), call);
                        let out = this.store.api().app_proxy(&req).await;
                        let e = this.bridge.borrow_mut().reply(&id, rpc_result(out));
                        this.run(e);
                    });
                }
                Do::OpenLink { id, url } => {
                    let out = open_link(&url);
                    let e = self.bridge.borrow_mut().reply(&id, out);
                    self.run(e);
                }
                Do::Message { id, blocks } => {
                    let waiting = self.pending.get_untracked().is_some();
                    match from_app::message_text(&blocks) {
                        Ok(_) if waiting => {
                            let out = Err("a message of this app is waiting for the user".into());
                            let e = self.bridge.borrow_mut().reply(&id, out);
                            self.run(e);
                        }
                        // Answered when the user decides.
                        Ok(text) => self.pending.set(Some(Pending {
                            app: self.app.clone(),
                            id,
                            text,
                        })),
                        Err(out) => {
                            let e = self.bridge.borrow_mut().reply(&id, Err(out));
                            self.run(e);
                        }
                    }
                }
                Do::ModelContext(v) => self.chat.model_context.set(from_app::context_updated(
                    &self.call.call_id,
                    &self.app,
                    v,
                )),
                Do::Resize(h) => self.height.set(h.clamp(40.0, MAX_INLINE_HEIGHT)),
                Do::DisplayMode(m) => self.fullscreen.set(m == "fullscreen"),
                Do::Log(p) => {
                    web_sys::console::log_1(&format!("[MCP App {}] {p}", self.call.tool).into())
                }
                Do::RequestTeardown => {
                    let this = self.clone();
                    let done = self.teardown("the view asked to close");
                    spawn_local(async move {
                        let _ =
                            wasm_bindgen_futures::JsFuture::from(super::with_timeout(done)).await;
                        unregister(&this.call.call_id);
                        this.closed.set(true);
                    });
                }
                Do::TornDown => {
                    if let Some(f) = self.resolve_teardown.borrow_mut().take() {
                        let _ = f.call0(&wasm_bindgen::JsValue::NULL);
                    }
                }
                Do::Wake(ms) => {
                    let this = self.clone();
                    spawn_local(async move {
                        crate::timer::sleep(ms.ceil() as u32).await;
                        let e = this.bridge.borrow_mut().tick(js_sys::Date::now());
                        this.run(e);
                    });
                }
            }
        }
    }

    /// The user pressed Send (`true`) or Discard on the pending `ui/message`.
    fn decide(self: &Rc<Self>, send: bool) {
        let Some(p) = self.pending.get_untracked() else {
            return;
        };
        let out = if send {
            if self.store.busy.get_untracked() {
                return; // Send is disabled while a reply streams; it stays pending
            }
            from_app::send(self.store, self.chat.clone(), &p.app, p.text)
        } else {
            Err("the user discarded the message".into())
        };
        self.pending.set(None);
        let e = self
            .bridge
            .borrow_mut()
            .reply(&p.id, out.map(|()| json!({})));
        self.run(e);
    }

    /// Sends the teardown request; the promise resolves when the view answers. The view's model
    /// context and any message waiting for the user go with it.
    fn teardown(self: &Rc<Self>, reason: &str) -> js_sys::Promise {
        let id = self.call.call_id.clone();
        self.chat
            .model_context
            .update(|c| *c = from_app::context_after_teardown(c.take(), &id));
        let _ = self.pending.try_set(None);
        let this = self.clone();
        let p = js_sys::Promise::new(&mut |resolve, _| {
            *this.resolve_teardown.borrow_mut() = Some(resolve);
        });
        let e = self.bridge.borrow_mut().teardown(reason);
        self.run(e);
        p
    }

    fn on_message(self: &Rc<Self>, ev: &web_sys::MessageEvent) {
        let Some(win) = self.frame.get_untracked().and_then(|f| f.content_window()) else {
            return;
        };
        let from_frame = ev
            .source()
            .is_some_and(|s| js_sys::Object::is(s.as_ref(), win.as_ref()));
        if !from_frame {
            return;
        }
        if let Some(origin) = &self.proxy_origin
            && &ev.origin() != origin
        {
            return;
        }
        let Some(msg) = js_sys::JSON::stringify(&ev.data())
            .ok()
            .and_then(|s| s.as_string())
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        else {
            return;
        };
        if self.proxy_origin.is_some() && msg["method"] == "ui/notifications/sandbox-proxy-ready" {
            let mut params = json!({"html": self.view.html.clone().unwrap_or_default()});
            if let Some(p) = &self.view.permissions {
                params["permissions"] = json!(p);
            }
            self.post(&json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-resource-ready", "params": params}));
            return;
        }
        let e = self.bridge.borrow_mut().on_message(&msg);
        self.run(e);
    }
}

/// Asks the user, then opens `url` in a new tab without an opener.
fn open_link(url: &str) -> Result<Value, String> {
    let w = web_sys::window().ok_or("no window")?;
    let ok = w
        .confirm_with_message(&format!(
            "The app wants to open a link in a new tab:\n\n{url}"
        ))
        .unwrap_or(false);
    if !ok {
        return Err("the user declined to open the link".into());
    }
    w.open_with_url_and_target_and_features(url, "_blank", "noopener,noreferrer")
        .map_err(|_| "the browser blocked the new tab".to_owned())?;
    Ok(json!({}))
}

crate::lazy::split_point! {
    /// [`AppFrame`], from the `views` chunk (see [`crate::lazy`]).
    views: fn app_view(call: ViewCall, chat: Chat) {
        view! { <AppFrame call chat /> }.into_any()
    }
}

crate::lazy::split_point! {
    /// [`AppFrame`] of a call still streaming, fed by `feed`, from the `views` chunk.
    views: fn early_app_view(call: ViewCall, feed: ViewFeed, chat: Chat) {
        view! { <AppFrame call chat feed /> }.into_any()
    }
}

/// One view of a tool call: given its arguments and result (`call`), or, for a view opened
/// while the call streams, fed them as they come (`feed`; `call`'s are then unused).
#[component]
pub fn AppFrame(
    call: ViewCall,
    chat: Chat,
    #[prop(optional)] feed: Option<ViewFeed>,
) -> impl IntoView {
    let store = store();
    let wanted = RwSignal::new(false);
    let closed = RwSignal::new(false);
    let view = RwSignal::new(None::<Result<AppViewResponse, String>>);
    let height = RwSignal::new(160.0);
    let fullscreen = RwSignal::new(false);
    let pending = RwSignal::new(None::<Pending>);
    let container = NodeRef::<html::Div>::new();
    let frame = NodeRef::<html::Iframe>::new();
    let live = StoredValue::new_local(None::<Rc<Live>>);
    let listener = StoredValue::new_local(None::<Closure<dyn Fn(web_sys::MessageEvent)>>);
    let observer = StoredValue::new_local(
        None::<(
            web_sys::IntersectionObserver,
            Closure<dyn Fn(js_sys::Array)>,
        )>,
    );
    let visible = StoredValue::new_local(Rc::new(std::cell::Cell::new(false)));
    let last_seen = StoredValue::new_local(Rc::new(std::cell::Cell::new(0.0)));
    let key = call.call_id.clone();

    // Mount once on screen; an off-screen view may be torn down by the registry's cap.
    Effect::new(move |_| {
        let Some(el) = container.get() else { return };
        if observer.with_value(Option::is_some) {
            return;
        }
        let (vis, seen) = (visible.get_value(), last_seen.get_value());
        let cb = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
            for e in entries.iter() {
                let e: web_sys::IntersectionObserverEntry = e.unchecked_into();
                vis.set(e.is_intersecting());
                if e.is_intersecting() {
                    seen.set(now_ms() as f64);
                    if !closed.get_untracked() {
                        wanted.set(true);
                    }
                }
            }
        });
        match web_sys::IntersectionObserver::new(cb.as_ref().unchecked_ref()) {
            Ok(obs) => {
                obs.observe(&el);
                observer.set_value(Some((obs, cb)));
            }
            Err(_) => wanted.set(true),
        }
    });

    // Ask for a fresh view URL whenever it is (re)mounted.
    {
        let call = call.clone();
        Effect::new(move |_| {
            if !wanted.get() || view.get_untracked().is_some() {
                return;
            }
            let req = AppViewRequest {
                via: call.tool.clone(),
                uri: call.uri.clone(),
            };
            spawn_local(async move {
                let r = store.api().app_view(&req).await.map_err(|e| e.to_string());
                if wanted.get_untracked() {
                    view.set(Some(r));
                }
            });
        });
    }

    // After a teardown by the registry's cap: back to a placeholder until seen again. A view
    // scrolled back on screen while its teardown was pending mounts again at once: its
    // intersection observer does not fire again while it stays on screen.
    let unmount = move || {
        let _ = live.try_set_value(None);
        view.try_set(None);
        let on_screen = visible.try_with_value(|v| v.get()).unwrap_or(false);
        wanted.try_set(false);
        if on_screen && closed.try_get_untracked() == Some(false) {
            wanted.try_set(true);
        }
    };

    // Start the bridge when the iframe exists; the message listener follows its window.
    {
        let (call, chat, key) = (call.clone(), chat.clone(), key.clone());
        Effect::new(move |_| {
            let Some(Ok(resp)) = view.get() else { return };
            if frame.get().is_none() || live.with_value(Option::is_some) {
                return;
            }
            let root = container
                .get_untracked()
                .and_then(|c| c.closest(".lmck-app").ok().flatten());
            let ctx = host_context(
                store.theme.get_untracked(),
                root.as_ref(),
                &call.tool,
                &call.call_id,
            );
            let mut bridge = Bridge::new(env!("CARGO_PKG_VERSION"), ctx);
            let first = match feed {
                // Nothing can go out before the view's `initialized`: queued in the bridge.
                Some(feed) => feed.feed(&mut bridge),
                None => {
                    bridge.tool_input(call.arguments.clone());
                    bridge.tool_result(call.result.clone())
                }
            };
            debug_assert!(first.is_empty());
            let proxy_origin = resp.proxy.then(|| origin_of(&resp.url)).flatten();
            let l = Rc::new(Live {
                bridge: RefCell::new(bridge),
                frame,
                target: proxy_origin.clone().unwrap_or_else(|| "*".into()),
                proxy_origin,
                view: resp.clone(),
                call: call.clone(),
                store,
                chat: chat.clone(),
                height,
                fullscreen,
                closed,
                resolve_teardown: RefCell::new(None),
                app: resp.server.clone().unwrap_or_else(|| call.tool.clone()),
                pending,
            });
            if listener.with_value(Option::is_none) {
                let cb = Closure::<dyn Fn(web_sys::MessageEvent)>::new(
                    move |ev: web_sys::MessageEvent| {
                        if let Some(l) = live.get_value() {
                            l.on_message(&ev);
                        }
                    },
                );
                if let Some(w) = web_sys::window() {
                    let _ =
                        w.add_event_listener_with_callback("message", cb.as_ref().unchecked_ref());
                }
                listener.set_value(Some(cb));
            }
            live.set_value(Some(l.clone()));
            let (vis, seen) = (visible.get_value(), last_seen.get_value());
            let handle = ViewHandle {
                key: key.clone(),
                visible: vis,
                last_seen: seen,
                teardown: Box::new({
                    let l = l.clone();
                    move |reason| l.teardown(reason)
                }),
                unmount: Box::new(unmount),
            };
            register(Rc::new(handle));
        });
    }

    // A view opened while its call streams follows the call.
    if let Some(feed) = feed {
        Effect::new(move |_| {
            let p = feed.partial.get();
            if let (Some(p), Some(l)) = (p, live.get_value()) {
                let e = l
                    .bridge
                    .borrow_mut()
                    .tool_input_partial(p, js_sys::Date::now());
                l.run(e);
            }
        });
        Effect::new(move |_| {
            let i = feed.input.get();
            if let (Some(i), Some(l)) = (i, live.get_value()) {
                let e = l.bridge.borrow_mut().tool_input(i);
                l.run(e);
            }
        });
        Effect::new(move |_| {
            let o = feed.outcome.get();
            if let (Some(o), Some(l)) = (o, live.get_value()) {
                let e = match o {
                    Ok(r) => l.bridge.borrow_mut().tool_result(r),
                    Err(why) => l.bridge.borrow_mut().tool_cancelled(&why),
                };
                l.run(e);
            }
        });
    }

    // Theme changes reach the view.
    Effect::new(move |_| {
        let theme = resolved_theme(store.theme.get());
        if let Some(l) = live.get_value() {
            let e = l
                .bridge
                .borrow_mut()
                .context_changed(json!({"theme": theme}));
            l.run(e);
        }
    });

    // Full screen covers the chat's column below its header (measured when it starts and at
    // each resize), so the header's controls (the theme, the menu) stay in reach.
    let place = move || {
        let Some(el) = container.get_untracked() else {
            return;
        };
        let style = web_sys::HtmlElement::style(&el);
        const SIDES: [&str; 4] = [
            "--lmck-fs-top",
            "--lmck-fs-right",
            "--lmck-fs-bottom",
            "--lmck-fs-left",
        ];
        if !fullscreen.get_untracked() {
            for side in SIDES {
                let _ = style.remove_property(side);
            }
            return;
        }
        let main = el.closest(".lmck-main").ok().flatten();
        let Some(main) = main else { return };
        let win = window();
        let num = |v: Result<wasm_bindgen::JsValue, _>| v.ok().and_then(|v| v.as_f64());
        let (w, h) = (num(win.inner_width()), num(win.inner_height()));
        let (Some(w), Some(h)) = (w, h) else { return };
        let r = main.get_bounding_client_rect();
        let top = main
            .query_selector(".lmck-header")
            .ok()
            .flatten()
            .map_or(r.top(), |hd| hd.get_bounding_client_rect().bottom());
        let at = [top, w - r.right(), h - r.bottom(), r.left()];
        for (side, px) in SIDES.into_iter().zip(at) {
            let _ = style.set_property(side, &format!("{}px", px.max(0.0)));
        }
    };
    Effect::new(move |_| {
        fullscreen.track();
        place();
    });
    let resize = window_event_listener(leptos::ev::resize, move |_| {
        if fullscreen.get_untracked() {
            place();
        }
    });
    on_cleanup(move || resize.remove());

    // Esc leaves fullscreen.
    let exit_fullscreen = move || {
        fullscreen.set(false);
        if let Some(l) = live.get_value() {
            let e = l.bridge.borrow_mut().set_mode("inline");
            l.run(e);
        }
    };

    on_cleanup({
        let key = key.clone();
        move || {
            unregister(&key);
            if let Some(Some(l)) = live.try_get_value() {
                let _ = l.teardown("removed"); // best effort: the frame is going away
            }
            listener.try_with_value(|cb| {
                if let (Some(cb), Some(w)) = (cb, web_sys::window()) {
                    let _ = w.remove_event_listener_with_callback(
                        "message",
                        cb.as_ref().unchecked_ref(),
                    );
                }
            });
            observer.try_with_value(|o| {
                if let Some((obs, _)) = o {
                    obs.disconnect();
                }
            });
        }
    });

    let reopen = move |_| {
        let _ = live.try_set_value(None);
        view.set(None);
        closed.set(false);
        wanted.set(true);
    };
    let frame_view = move || {
        match view.get() {
        _ if closed.get() => view! {
            <div class="lmck-app-placeholder">"The app closed. "
                <button class="lmck-btn lmck-app-reopen" on:click=reopen>"Reopen"</button></div>
        }.into_any(),
        None => {
            let text = if wanted.get() { "Loading the app…" } else { "The app loads when it scrolls into view." };
            view! { <div class="lmck-app-placeholder lmck-muted">{text}</div> }.into_any()
        }
        Some(Err(e)) => view! {
            <div class="lmck-app-placeholder lmck-muted" role="note">{format!("The app view is unavailable ({e}); the text result is shown above.")}</div>
        }.into_any(),
        Some(Ok(resp)) => {
            let sandbox = if resp.proxy { "allow-scripts allow-same-origin allow-forms" } else { "allow-scripts allow-forms" };
            let warn = (!resp.external_domains.is_empty()).then(|| view! {
                <div class="lmck-app-domains lmck-muted">{format!("This app may connect to: {}", resp.external_domains.join(", "))}</div>
            });
            view! {
                {warn}
                <iframe class="lmck-app-iframe" node_ref=frame src=resp.url.clone() sandbox=sandbox
                    allow=resp.allow.clone() title="MCP App view" referrerpolicy="no-referrer"
                    style:height=move || if fullscreen.get() { "100%".to_owned() } else { format!("{}px", height.get()) }></iframe>
            }.into_any()
        }
    }
    };
    let border = move || {
        !matches!(
            view.get(),
            Some(Ok(AppViewResponse {
                prefers_border: Some(false),
                ..
            }))
        )
    };
    view! {
        <div class="lmck-app-view" node_ref=container data-call-id=key.clone()
            class:lmck-app-border=border
            class:lmck-app-fullscreen=move || fullscreen.get()
            class:lmck-app-closed=move || closed.get()
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" && fullscreen.get_untracked() { exit_fullscreen() }>
            <Show when=move || fullscreen.get()>
                <button class="lmck-btn lmck-app-exit" on:click=move |_| exit_fullscreen()>"Exit full screen"</button>
            </Show>
            {frame_view}
            <MessageConsent pending decide=Callback::new(move |send: bool| {
                if let Some(Some(l)) = live.try_get_value() {
                    l.decide(send);
                }
            }) />
        </div>
    }
}
