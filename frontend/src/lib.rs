//! The lmchatkit chat UI (Leptos, client-side rendered).
//!
//! This is still the placeholder the backbone ships (the real UI is a later issue), but it already
//! does what every later version must do:
//!
//! - **Mounting.** [`start`] mounts into the first element carrying `data-lmchatkit` (the page the
//!   service renders at `{prefix}`, or a host page embedding the UI), reading the service's public
//!   prefix from its `data-prefix` attribute (default [`DEFAULT_PREFIX`]; `""` means the root). With
//!   no such element it mounts into `<body>` (this is the `trunk serve` case).
//! - **Talking to the service** through [`api::Api`], addressed by that prefix.
//! - **Scoped styles.** Every class name starts with `lmck-` so the UI can live inside a host page.
//!
//! It shows "lmchatkit" and either the model list or, when the list is empty or cannot be loaded,
//! [`NO_MODEL_NOTICE`].

pub mod api;
pub mod markdown;

use leptos::prelude::*;
use lmchatkit_protocol::{ConfigResponse, HistoryMode, Model};
use wasm_bindgen::JsCast;

use crate::api::{Api, ApiError};

/// Prefix used when the mount element has no `data-prefix` (or there is no mount element).
pub const DEFAULT_PREFIX: &str = "/chat";

/// Selector of the element the UI mounts into.
pub const MOUNT_SELECTOR: &str = "[data-lmchatkit]";

/// Shown when no model can be offered.
pub const NO_MODEL_NOTICE: &str = "No model is configured. Start lmchatkit with OPENAI_BASE_URL \
     (and OPENAI_API_KEY) pointing at an OpenAI-compatible endpoint.";

/// Entry point (called by the binary's `main`, i.e. by wasm-bindgen's start function): mounts the
/// UI into `[data-lmchatkit]` if the page has one, else into `<body>`.
pub fn start() {
    console_error_panic_hook::set_once();
    let mount = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(MOUNT_SELECTOR).ok().flatten());
    match mount {
        Some(element) => {
            let prefix = element
                .get_attribute("data-prefix")
                .unwrap_or_else(|| DEFAULT_PREFIX.to_owned());
            match element.dyn_into::<web_sys::HtmlElement>() {
                Ok(element) => {
                    leptos::mount::mount_to(element, move || view! { <App prefix /> }).forget()
                }
                // e.g. an SVG element carrying the attribute: fall back to the body.
                Err(_) => leptos::mount::mount_to_body(move || view! { <App prefix /> }),
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

/// The whole UI, talking to the service mounted at `prefix`.
#[component]
pub fn App(#[prop(into)] prefix: String) -> impl IntoView {
    let api = Api::new(&prefix);
    let (models, set_models) = signal(None::<Result<Vec<Model>, ApiError>>);
    let (config, set_config) = signal(None::<Result<ConfigResponse, ApiError>>);
    {
        let api = api.clone();
        leptos::task::spawn_local(async move { set_config.set(Some(api.config().await)) });
    }
    leptos::task::spawn_local(async move { set_models.set(Some(api.models().await)) });

    view! {
        <div class="lmck-app">
            <h1 class="lmck-title">"lmchatkit"</h1>
            {move || models.with(|state| models_view(ModelsDisplay::from_state(state.as_ref())))}
            {move || config.with(|state| config_view(state.as_ref()))}
        </div>
    }
}

fn models_view(display: ModelsDisplay) -> AnyView {
    match display {
        ModelsDisplay::Loading => {
            view! { <p class="lmck-muted">"Loading models…"</p> }.into_any()
        }
        ModelsDisplay::List(models) => view! {
            <ul class="lmck-models">
                {models
                    .into_iter()
                    .map(|(id, label, provider)| {
                        view! {
                            <li class="lmck-model" data-model-id=id>
                                {label}
                                {provider
                                    .map(|p| view! { <span class="lmck-model-provider">{p}</span> })}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any(),
        ModelsDisplay::Notice(detail) => view! {
            <div class="lmck-notice" role="status">
                <p>{NO_MODEL_NOTICE}</p>
                {detail.map(|d| view! { <p class="lmck-muted">{d}</p> })}
            </div>
        }
        .into_any(),
    }
}

fn config_view(state: Option<&Result<ConfigResponse, ApiError>>) -> AnyView {
    match state {
        None => ().into_any(),
        Some(Ok(config)) => {
            let history = match config.history {
                HistoryMode::Server => "History: saved on the server",
                HistoryMode::Browser => "History: kept in this browser tab",
            };
            let demo = config.demo.then_some(" · demo mode");
            view! { <p class="lmck-muted">{history}{demo}</p> }.into_any()
        }
        Some(Err(e)) => view! {
            <p class="lmck-error" role="alert">
                {format!("Could not load the configuration ({e}).")}
            </p>
        }
        .into_any(),
    }
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
