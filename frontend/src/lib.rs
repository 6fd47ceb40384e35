//! The lmchatkit chat UI (Leptos, client-side rendered).
//!
//! - **Mounting.** [`start`] mounts into the first element carrying `data-lmchatkit` (the page the
//!   service renders at `{prefix}`, or a host page embedding the UI), reading the service's public
//!   prefix from its `data-prefix` attribute (default [`DEFAULT_PREFIX`]; `""` means the root). With
//!   no such element it mounts into `<body>` (this is the `trunk serve` case).
//! - **State** lives in [`state::Store`] (context); [`turn`] runs chat turns and the tool loop,
//!   [`history`] saves and loads conversations (server or sessionStorage mode, from
//!   `/api/config`), [`sync`] follows `/api/events` for cross-tab sync, [`follow`] re-attaches
//!   to a reply still running on the server (after a reload, or in a second tab).
//! - **Components** are in [`components`], one per file. The dialogs, MCP App views, the
//!   Markdown parser, the turn's code and the transcript (with reading and saving whole
//!   conversations, [`stored`] and [`history::save`]), which a new chat's first paint does not
//!   need, are separate wasm chunks, fetched when first needed ([`lazy`]).
//! - **Scoped, themable styles.** Every class name starts with `lmck-`; colours are CSS custom
//!   properties on `.lmck-app` (see `style.css`), light/dark following `prefers-color-scheme`
//!   unless the theme toggle forces one.
//! - **Model output** is inserted as HTML only through [`markdown`], which escapes raw HTML and
//!   allowlists URL schemes.

pub mod actions;
pub mod api;
pub mod approvals;
pub mod apps;
pub mod bench;
pub mod commands;
pub mod components;
pub mod conversation;
pub mod follow;
pub mod history;
pub mod input_history;
pub mod lazy;
pub mod markdown;
pub mod params;
pub mod queue;
pub mod reply;
pub mod results;
pub mod servers;
pub mod spend;
pub mod sse;
pub mod state;
pub mod storage;
pub mod stored;
pub mod sync;
pub mod text;
pub mod think;
pub mod timer;
pub mod transfer;
pub mod turn;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{HistoryMode, Model};
use wasm_bindgen::JsCast;

use crate::api::ApiError;
use crate::components::composer::Composer;
use crate::components::picker::{Picker, choose_persona};
use crate::components::servers::servers_dialog;
use crate::components::settings::ThemeToggle;
use crate::components::sidebar::Sidebar;
use crate::components::spend_bar::SpendBar;
use crate::components::transcript::ChatArea;
use crate::lazy::{Shell, lazily};
use crate::state::{Store, Theme};

/// Prefix used when the mount element has no `data-prefix` (or there is no mount element).
pub const DEFAULT_PREFIX: &str = "/chat";

/// Selector of the element the UI mounts into.
pub const MOUNT_SELECTOR: &str = "[data-lmchatkit]";

/// Shown while the app runs its built-in demo model.
pub const DEMO_NOTICE: &str = "You are chatting with the built-in demo model. To use a real LLM, \
     start lmchatkit with OPENAI_BASE_URL (and OPENAI_API_KEY) pointing at an OpenAI-compatible endpoint.";

/// Shown when no model can be offered.
pub const NO_MODEL_NOTICE: &str = "No model is configured. Start lmchatkit with OPENAI_BASE_URL \
     (and OPENAI_API_KEY) pointing at an OpenAI-compatible endpoint.";

/// Entry point (called by the binary's `main`, i.e. by wasm-bindgen's start function): mounts the
/// UI into `[data-lmchatkit]` if the page has one, else into `<body>`.
pub fn start() {
    console_error_panic_hook::set_once();
    apps::install_unload_teardown();
    let mount = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(MOUNT_SELECTOR).ok().flatten());
    match mount {
        Some(element) => {
            // Full-page mode (the service's page: the mount element sits directly in <body>):
            // the UI fills the viewport, so drop the browser's default body margin.
            let floating = element.get_attribute("data-mode").as_deref() == Some("floating");
            if let Some(body) = element
                .parent_element()
                .filter(|p| p.tag_name() == "BODY" && !floating)
            {
                let _ = body
                    .unchecked_ref::<web_sys::HtmlElement>()
                    .style()
                    .set_property("margin", "0");
            }
            let prefix = element
                .get_attribute("data-prefix")
                .unwrap_or_else(|| DEFAULT_PREFIX.to_owned());
            match element.dyn_into::<web_sys::HtmlElement>() {
                Ok(element) => {
                    leptos::mount::mount_to(element, move || view! { <App prefix floating /> })
                        .forget()
                }
                // e.g. an SVG element carrying the attribute: fall back to the body.
                Err(_) => leptos::mount::mount_to_body(move || view! { <App prefix floating /> }),
            }
        }
        None => leptos::mount::mount_to_body(|| view! { <App prefix=DEFAULT_PREFIX /> }),
    }
}

/// What the model area shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelsDisplay {
    /// The list is still loading.
    Loading,
    /// `(id, label, provider)` of each model.
    List(Vec<(String, String, Option<String>)>),
    /// [`NO_MODEL_NOTICE`], with the load error if there was one.
    Notice(Option<String>),
}

impl ModelsDisplay {
    /// Decides what to show for the state of the `/api/models` request.
    pub fn from_state(state: Option<&Result<Vec<Model>, ApiError>>) -> Self {
        match state {
            None => Self::Loading,
            Some(Ok(models)) if !models.is_empty() => Self::List(
                models
                    .iter()
                    .map(|m| {
                        let label = m.label.clone().unwrap_or_else(|| m.id.clone());
                        (m.id.clone(), label, m.provider.clone())
                    })
                    .collect(),
            ),
            Some(Ok(_)) => Self::Notice(None),
            Some(Err(e)) => Self::Notice(Some(format!("Could not load the model list ({e})."))),
        }
    }
}

/// Picks the initial setup: the last one of this tab when its persona (and model) still exist,
/// else the default persona with its default model, else the first model; only ever a model a
/// turn can run on (configured).
fn apply_initial_setup(store: Store) {
    let models = store.model_list();
    let personas = store.personas.get_untracked();
    let last: Option<serde_json::Value> =
        storage::session_get("lmchatkit:lastSetup").and_then(|s| serde_json::from_str(&s).ok());
    let last_persona = last
        .as_ref()
        .and_then(|v| v["personaId"].as_str())
        .map(str::to_owned);
    let persona = last_persona
        .filter(|id| personas.iter().any(|p| &p.id == id))
        .or_else(|| {
            personas
                .iter()
                .find(|p| p.id == "default")
                .or(personas.first())
                .map(|p| p.id.clone())
        });
    if let Some(id) = persona {
        choose_persona(store, &id);
    }
    let last_model = last
        .as_ref()
        .and_then(|v| v["model"].as_str())
        .map(str::to_owned);
    let last_effort = last
        .as_ref()
        .and_then(|v| v["effort"].as_str())
        .and_then(lmchatkit_protocol::ReasoningEffort::parse);
    store.setup.update(|s| {
        if let Some(m) = last_model.filter(|m| spend::usable(&models, m)) {
            s.model = m;
            s.effort = last_effort.or(s.effort);
        } else if s.model.is_empty()
            && let Some(m) = spend::first_usable(&models)
        {
            s.model = m.id.clone();
        }
    });
}

/// The whole UI, talking to the service mounted at `prefix`.
#[component]
pub fn App(
    #[prop(into)] prefix: String,
    /// Floating-window mode (`data-mode="floating"` on the mount element): a launcher button in
    /// the corner opens the chat in a window over the host page.
    #[prop(optional)]
    floating: bool,
) -> impl IntoView {
    let window_open = RwSignal::new(!floating);
    let store = Store::new(&prefix);
    store.theme.set(crate::components::settings::load_theme());
    provide_context(store);
    components::code_hooks::rerender_when_loaded(store);
    components::code_hooks::wire_code_copy();
    let ready = RwSignal::new(false);
    spawn_local(async move {
        // A reload fetches the chat it had open together with the config (see
        // `history::prefetch_remembered`) and the Markdown parser; the list loads while it shows.
        let ((config, models, personas), prefetched, ()) = futures_join(
            futures_join(
                store.api().config(),
                store.api().models(),
                store.api().personas(),
            ),
            history::prefetch_remembered(store),
            // The chat a reload restores shows rendered, so its transcript and renderer load
            // alongside.
            async {
                if history::remembered_current().is_some() {
                    components::transcript::prefetch();
                    markdown::engine::ready().await;
                }
            },
        )
        .await;
        let config_ok = config.as_ref().ok().cloned();
        store.config.set(Some(config));
        store.models.set(Some(models));
        if let Ok(p) = personas {
            store.personas.set(p);
        }
        apply_initial_setup(store);
        if let Some(cfg) = config_ok {
            history::remember_mode(cfg.history);
            if cfg.history == HistoryMode::Server && cfg.events {
                sync::start(store);
            }
            let restore = async move {
                match (history::remembered_current(), prefetched) {
                    (Some(id), Some((fetched_id, fetched)))
                        if cfg.history == HistoryMode::Server && fetched_id == id =>
                    {
                        conversation::show(store, id, Some(fetched)).await
                    }
                    (Some(id), _) => conversation::open(store, id).await,
                    (None, _) => {}
                }
            };
            futures_join(
                history::refresh_list(store),
                restore,
                std::future::ready(()),
            )
            .await;
        }
        ready.set(true);
    });
    // The personas come with the config above.
    sync::load_menu_lists(store);
    approvals::load(store);
    // Skip the picker when there is exactly one persona, one model and no conversation yet.
    Effect::new(move |done: Option<bool>| {
        if done == Some(true) || !ready.get() {
            return done.unwrap_or(false);
        }
        if store.personas.with(Vec::len) <= 1
            && store.model_list().len() == 1
            && store.conversations.with(Vec::is_empty)
            && store.chat.with_untracked(Option::is_none)
        {
            actions::start_chat(store);
        }
        true
    });
    // The transcript follows the open chat once its MCP App views are torn down (their answers
    // awaited, at most a second), so each view hears `ui/resource-teardown` while still mounted.
    let shown = RwSignal::new(store.chat.get_untracked());
    let generation = StoredValue::new(0u64);
    Effect::new(move |prev: Option<()>| {
        let next = store.chat.get();
        if prev.is_none() {
            return;
        }
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        spawn_local(async move {
            apps::teardown_all("the conversation was closed").await;
            if generation.get_value() == mine {
                shown.set(next);
            }
        });
    });
    let title = move || {
        store
            .chat
            .with(|c| c.as_ref().map(|c| c.title.get()))
            .unwrap_or_else(|| "lmchatkit".into())
    };
    let config_error = move || {
        store.config.with(|c| match c {
            Some(Err(e)) => Some(format!("Could not load the configuration ({e}).")),
            _ => None,
        })
    };
    let demo = move || store.config.with(|c| matches!(c, Some(Ok(c)) if c.demo));
    // Set-up problems reach only the operator (or everyone, without one): the subject, what
    // happened and the fix, as text (a problem may quote an upstream's error body).
    let problems = move || {
        store.config.with(|c| match c {
            Some(Ok(c)) => c.problems.clone(),
            _ => Vec::new(),
        })
    };
    view! {
        {floating.then(|| view! {
            <button class="lmck-launcher" aria-label="Open the chat" aria-expanded=move || window_open.get().to_string()
                on:click=move |_| window_open.update(|o| *o = !*o)>{move || if window_open.get() { "✕" } else { "Chat" }}</button>
        })}
        <div class="lmck-app" class:lmck-floating=floating class:lmck-closed=move || !window_open.get()
            class:lmck-dark=move || store.theme.get() == Theme::Dark
            class:lmck-light=move || store.theme.get() == Theme::Light>
            <Sidebar />
            <Show when=move || store.sidebar_open.get()>
                <div class="lmck-scrim" on:click=move |_| store.sidebar_open.set(false)></div>
            </Show>
            <main class="lmck-main">
                <header class="lmck-header">
                    <button class="lmck-icon-btn lmck-menu-btn" aria-label="Conversations"
                        aria-expanded=move || store.sidebar_open.get().to_string()
                        on:click=move |_| store.sidebar_open.update(|o| *o = !*o)>"☰"</button>
                    <h1 class="lmck-title">{title}</h1>
                    <SpendBar />
                    <ThemeToggle />
                </header>
                {move || config_error().map(|e| view! { <p class="lmck-error" role="alert">{e}</p> })}
                <Show when=demo>
                    <p class="lmck-demo-banner" role="note">{DEMO_NOTICE}</p>
                </Show>
                {move || {
                    let problems = problems();
                    (!problems.is_empty()).then(|| {
                        let summary = match problems.len() {
                            1 => "1 set-up problem to fix".to_owned(),
                            n => format!("{n} set-up problems to fix"),
                        };
                        view! {
                            <details class="lmck-setup-problems" role="note" open>
                                <summary>{summary}</summary>
                                <ul>{problems.into_iter().map(|p| view! {
                                    <li><strong>{p.subject}</strong>": "{p.problem}
                                        <br/>"Fix: "{p.fix}</li>
                                }).collect_view()}</ul>
                            </details>
                        }
                    })
                }}
                {move || store.notice.get().map(|n| view! {
                    <div class="lmck-notice" role="status">{n}
                        <button class="lmck-icon-btn" aria-label="Dismiss" on:click=move |_| store.notice.set(None)>"✕"</button></div>
                })}
                {move || match shown.get() {
                    Some(chat) => view! { <ChatArea chat /> }.into_any(),
                    None => view! { <div class="lmck-start"><Picker /></div> }.into_any(),
                }}
                <Composer />
            </main>
            {move || store.servers_screen.get().map(|s| {
                let close = Callback::new(move |()| store.servers_screen.set(None));
                lazily(Shell::Dialog(close), move || servers_dialog(s.focus.clone()))
            })}
        </div>
    }
}

/// Awaits three futures concurrently (`std::future::ready(())` fills a place not needed).
async fn futures_join<A, B, C>(
    a: impl std::future::Future<Output = A>,
    b: impl std::future::Future<Output = B>,
    c: impl std::future::Future<Output = C>,
) -> (A, B, C) {
    use std::pin::pin;
    use std::task::Poll;
    let (mut a, mut b, mut c) = (pin!(a), pin!(b), pin!(c));
    let (mut ra, mut rb, mut rc) = (None, None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        if rc.is_none()
            && let Poll::Ready(v) = c.as_mut().poll(cx)
        {
            rc = Some(v);
        }
        if ra.is_some() && rb.is_some() && rc.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (ra.unwrap(), rb.unwrap(), rc.unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_display_follows_the_request_state() {
        assert_eq!(ModelsDisplay::from_state(None), ModelsDisplay::Loading);
        assert_eq!(
            ModelsDisplay::from_state(Some(&Ok(vec![]))),
            ModelsDisplay::Notice(None)
        );
        let err = Err(ApiError::Network("refused".into()));
        assert!(matches!(
            ModelsDisplay::from_state(Some(&err)),
            ModelsDisplay::Notice(Some(d)) if d.contains("refused")
        ));
        let mut labelled = Model::new("gpt-x");
        labelled.label = Some("GPT X".into());
        labelled.provider = Some("acme".into());
        assert_eq!(
            ModelsDisplay::from_state(Some(&Ok(vec![Model::new("m1"), labelled]))),
            ModelsDisplay::List(vec![
                ("m1".into(), "m1".into(), None),
                ("gpt-x".into(), "GPT X".into(), Some("acme".into())),
            ])
        );
    }
}
