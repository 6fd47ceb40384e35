//! Several named LLM upstreams behind one [`Host`]: [`Providers`] routes a turn on model
//! `provider/model` to the backend registered as `provider`, with `model` as its model id.
//!
//! Decisions:
//! - **Ids**: a model id is `provider/model`, split at its *first* `/`, so the model part may
//!   keep its own slashes (OpenRouter's `meta-llama/llama-3`); this is the catalog's form
//!   ([`crate::models`]).
//! - **Names** are checked when a backend is added ([`ProvidersError`]): non-empty, without `/`
//!   (the separator) or whitespace, and unique. Backends keep the order they were added in,
//!   which is the menu's order.
//! - **Menu**: every backend is asked concurrently; each model becomes `name/<model>` with
//!   provider `name` (the backend's own provider, e.g. `owned_by`, is replaced: the operator's
//!   name is what the catalog knows). A backend that fails to list is logged and skipped, so
//!   one provider down does not take the others' models off the menu; only when every backend
//!   fails is the listing an error (naming each failure).
//! - **Routing**: a model id whose provider is not registered, or with no provider at all,
//!   streams one [`Event::Error`] naming the providers; nothing is sent upstream. The backend
//!   receives the request unchanged apart from `model`, so each one translates the params
//!   (`reasoning_effort` is a top-level field for OpenAI-compatible upstreams and a thinking
//!   budget for Anthropic's).
//! - **Only an LLM**: tools, prompts and resources are the default "none"; wrap the result in
//!   [`StandardHost`](crate::StandardHost) for MCP.
//! - **Set-up problems**: each backend's [`Host::setup_problems`], with the subject
//!   `provider <name>` (a backend alone says [`UPSTREAM_SUBJECT`](super::UPSTREAM_SUBJECT)); a
//!   failed listing's warning carries the fix too.
//! - **Secrets**: `Debug` lists the provider names only, never a backend (so never a key).
//!
//! ```
//! use std::sync::Arc;
//! use futures_util::StreamExt;
//! use lmchatkit::llm::{DemoModel, Providers};
//! use lmchatkit::protocol::{Event, Message};
//! use lmchatkit::{CompleteRequest, Host, RequestContext};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let demo = DemoModel::new().with_delay(std::time::Duration::ZERO);
//! let host = Providers::new().with_backend("demo", demo)?;
//! let cx = RequestContext::default();
//! let ids: Vec<String> = host.models(&cx).await?.into_iter().map(|m| m.id).collect();
//! assert_eq!(ids, ["demo/lmchatkit-demo"]);
//!
//! let req = CompleteRequest {
//!     model: "demo/lmchatkit-demo".into(),
//!     messages: vec![Message::user("hello")],
//!     ..Default::default()
//! };
//! let events: Vec<Event> = host.complete(&cx, req).collect().await;
//! assert!(matches!(events.last(), Some(Event::Done { .. })));
//!
//! let req = CompleteRequest { model: "nowhere/x".into(), ..Default::default() };
//! let events: Vec<Event> = host.complete(&cx, req).collect().await;
//! assert!(matches!(&events[..], [Event::Error { error }] if error.contains("demo")));
//!
//! assert!(Providers::new().with_backend("a/b", DemoModel::new()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use lmchatkit_protocol::{Event, Model, SetupProblem};

use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};

/// Why a backend could not be added to [`Providers`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProvidersError {
    /// The name is empty.
    #[error("a provider name must not be empty")]
    EmptyName,
    /// The name contains `/` or whitespace.
    #[error(
        "provider name {0:?} must not contain '/' or whitespace (model ids are provider/model)"
    )]
    BadName(String),
    /// Another backend already has the name.
    #[error("provider name {0:?} is used twice")]
    Duplicate(String),
}

/// A [`Host`] over named backends, routing `provider/model` ids (see the module docs).
#[derive(Clone, Default)]
pub struct Providers {
    backends: Vec<(String, Arc<dyn Host>)>,
}

impl Providers {
    /// No backends yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `backend` under `name` (see [`with_backend_arc`](Self::with_backend_arc)).
    pub fn with_backend(
        self,
        name: impl Into<String>,
        backend: impl Host,
    ) -> Result<Self, ProvidersError> {
        self.with_backend_arc(name, Arc::new(backend))
    }

    /// Adds a shared `backend` under `name`: its models become `name/<model>`. The name must
    /// be non-empty, without `/` or whitespace, and not taken.
    pub fn with_backend_arc(
        mut self,
        name: impl Into<String>,
        backend: Arc<dyn Host>,
    ) -> Result<Self, ProvidersError> {
        let name = name.into();
        Self::check_name(&name)?;
        if self.backends.iter().any(|(n, _)| *n == name) {
            return Err(ProvidersError::Duplicate(name));
        }
        self.backends.push((name, backend));
        Ok(self)
    }

    /// Checks that `name` may name a provider: non-empty, without `/` or whitespace.
    ///
    /// ```
    /// use lmchatkit::llm::{Providers, ProvidersError};
    /// assert!(Providers::check_name("local").is_ok());
    /// assert_eq!(Providers::check_name("a/b"), Err(ProvidersError::BadName("a/b".into())));
    /// ```
    pub fn check_name(name: &str) -> Result<(), ProvidersError> {
        if name.is_empty() {
            return Err(ProvidersError::EmptyName);
        }
        if name.contains('/') || name.chars().any(char::is_whitespace) {
            return Err(ProvidersError::BadName(name.to_owned()));
        }
        Ok(())
    }

    /// The provider names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.backends.iter().map(|(n, _)| n.as_str())
    }

    /// True when no backend was added.
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    fn names_phrase(&self) -> String {
        if self.backends.is_empty() {
            "no provider is configured".to_owned()
        } else {
            format!(
                "the providers are: {}",
                self.names().collect::<Vec<_>>().join(", ")
            )
        }
    }
}

impl std::fmt::Debug for Providers {
    // The names only: a backend's own Debug may not be safe to print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("names", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

#[async_trait]
impl Host for Providers {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        let lists = futures_util::future::join_all(
            self.backends
                .iter()
                .map(|(name, backend)| async move { (name, backend.models(cx).await) }),
        )
        .await;
        let mut menu = Vec::new();
        let mut failures = Vec::new();
        for (name, listed) in lists {
            match listed {
                Ok(models) => menu.extend(models.into_iter().map(|mut m| {
                    m.id = format!("{name}/{}", m.id);
                    m.provider = Some(name.clone());
                    m
                })),
                Err(e) => {
                    let fix = backend_fix(&self.backends, name);
                    tracing::warn!(provider = %name, error = %e, fix = %fix, "listing a provider's models failed; its models are left off the menu");
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
        if !self.backends.is_empty() && failures.len() == self.backends.len() {
            return Err(HostError::Upstream(format!(
                "no provider could list its models ({})",
                failures.join("; ")
            )));
        }
        Ok(menu)
    }

    fn setup_problems(&self) -> Vec<SetupProblem> {
        let mut problems = Vec::new();
        for (name, backend) in &self.backends {
            problems.extend(backend.setup_problems().into_iter().map(|mut p| {
                p.subject = match p.subject.as_str() {
                    super::UPSTREAM_SUBJECT => format!("provider {name}"),
                    other => format!("provider {name}: {other}"),
                };
                p
            }));
        }
        problems
    }

    fn complete(&self, cx: &RequestContext, mut req: CompleteRequest) -> EventStream {
        let routed = req.model.split_once('/').and_then(|(provider, model)| {
            let backend = self.backends.iter().find(|(n, _)| n == provider)?;
            Some((backend.1.clone(), model.to_owned()))
        });
        match routed {
            Some((backend, model)) => {
                req.model = model;
                backend.complete(cx, req)
            }
            None => {
                let error = match req.model.split_once('/') {
                    Some((provider, _)) => format!(
                        "model {:?}: unknown provider {provider:?}; {}",
                        req.model,
                        self.names_phrase()
                    ),
                    None => format!(
                        "model {:?} names no provider (ids are provider/model); {}",
                        req.model,
                        self.names_phrase()
                    ),
                };
                tracing::warn!(%error, "a turn named no known provider");
                Box::pin(futures_util::stream::iter([Event::error(error)]))
            }
        }
    }
}

/// The fix a backend gives for its last failure (empty when it gives none).
fn backend_fix(backends: &[(String, Arc<dyn Host>)], name: &str) -> String {
    backends
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, b)| b.setup_problems().into_iter().next())
        .map(|p| p.fix)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures_util::StreamExt;
    use lmchatkit_protocol::FinishReason;

    use super::*;

    /// Lists `models` (or fails with `fail`) and answers every turn with the model it was
    /// asked for; records each request.
    #[derive(Default)]
    struct Fake {
        models: Vec<&'static str>,
        fail: Option<&'static str>,
        seen: Arc<Mutex<Vec<CompleteRequest>>>,
    }

    fn fake(models: &[&'static str]) -> Fake {
        Fake {
            models: models.to_vec(),
            ..Fake::default()
        }
    }

    #[async_trait]
    impl Host for Fake {
        async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
            if let Some(why) = self.fail {
                return Err(HostError::Upstream(why.into()));
            }
            Ok(self
                .models
                .iter()
                .map(|id| Model {
                    provider: Some("owned-by-upstream".into()),
                    label: Some(format!("Label {id}")),
                    ..Model::new(*id)
                })
                .collect())
        }
        fn setup_problems(&self) -> Vec<SetupProblem> {
            let problem = |why| SetupProblem::new(crate::llm::UPSTREAM_SUBJECT, why, "fix it");
            self.fail.map(problem).into_iter().collect()
        }
        fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
            let reply = Event::delta(format!("model {}", req.model));
            self.seen.lock().unwrap().push(req);
            Box::pin(futures_util::stream::iter([
                reply,
                Event::done(FinishReason::Stop, None),
            ]))
        }
    }

    async fn ids(host: &Providers) -> Result<Vec<String>, HostError> {
        let models = host.models(&RequestContext::default()).await?;
        Ok(models.into_iter().map(|m| m.id).collect())
    }

    async fn turn(host: &Providers, model: &str) -> Vec<Event> {
        let req = CompleteRequest {
            model: model.into(),
            ..Default::default()
        };
        host.complete(&RequestContext::default(), req)
            .collect()
            .await
    }

    #[tokio::test]
    async fn the_menu_prefixes_each_backends_models_with_its_name_in_the_order_added() {
        let host = Providers::new()
            .with_backend("local", fake(&["llama3", "meta/llama-3"]))
            .unwrap()
            .with_backend("cloud", fake(&["gpt-4o"]))
            .unwrap();
        let models = host.models(&RequestContext::default()).await.unwrap();
        let got: Vec<(&str, Option<&str>, Option<&str>)> = models
            .iter()
            .map(|m| (m.id.as_str(), m.provider.as_deref(), m.label.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("local/llama3", Some("local"), Some("Label llama3")),
                (
                    "local/meta/llama-3",
                    Some("local"),
                    Some("Label meta/llama-3")
                ),
                ("cloud/gpt-4o", Some("cloud"), Some("Label gpt-4o")),
            ]
        );
    }

    #[tokio::test]
    async fn a_backend_that_fails_to_list_is_skipped_unless_every_backend_fails() {
        let down = Fake {
            fail: Some("connection refused"),
            ..Fake::default()
        };
        let host = Providers::new()
            .with_backend("down", down)
            .unwrap()
            .with_backend("up", fake(&["m"]))
            .unwrap();
        assert_eq!(ids(&host).await.unwrap(), ["up/m"]);

        let all_down = Providers::new()
            .with_backend(
                "a",
                Fake {
                    fail: Some("refused"),
                    ..Fake::default()
                },
            )
            .unwrap()
            .with_backend(
                "b",
                Fake {
                    fail: Some("401 unauthorized"),
                    ..Fake::default()
                },
            )
            .unwrap();
        let err = ids(&all_down).await.unwrap_err().to_string();
        assert!(
            err.contains("a: refused") && err.contains("b: 401 unauthorized"),
            "{err}"
        );
        assert_eq!(ids(&Providers::new()).await.unwrap(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_turn_goes_to_its_provider_with_the_prefix_stripped_at_the_first_slash() {
        let local = fake(&[]);
        let cloud = fake(&[]);
        let (local_seen, cloud_seen) = (local.seen.clone(), cloud.seen.clone());
        let host = Providers::new()
            .with_backend("local", local)
            .unwrap()
            .with_backend("cloud", cloud)
            .unwrap();
        let events = turn(&host, "cloud/meta-llama/llama-3").await;
        assert_eq!(events[0], Event::delta("model meta-llama/llama-3"));
        assert_eq!(cloud_seen.lock().unwrap().len(), 1);
        assert!(local_seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_turn_on_an_unknown_provider_is_an_error_naming_the_providers() {
        let a = fake(&[]);
        let seen = a.seen.clone();
        let host = Providers::new()
            .with_backend("alpha", a)
            .unwrap()
            .with_backend("beta", fake(&[]))
            .unwrap();
        for model in ["gamma/x", "bare-model", "/x"] {
            let events = turn(&host, model).await;
            let [Event::Error { error }] = &events[..] else {
                panic!("{model}: {events:?}");
            };
            assert!(
                error.contains(model) && error.contains("alpha, beta"),
                "{error}"
            );
        }
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn a_backends_setup_problem_is_named_after_its_provider() {
        let failing = Fake {
            fail: Some("answered 404"),
            ..fake(&[])
        };
        let host = Providers::new()
            .with_backend("ok", fake(&["m"]))
            .and_then(|p| p.with_backend("broken", failing))
            .unwrap();
        assert_eq!(
            host.setup_problems(),
            [SetupProblem::new(
                "provider broken",
                "answered 404",
                "fix it"
            )]
        );
        assert!(Providers::new().setup_problems().is_empty());
    }

    #[test]
    fn names_must_be_non_empty_slash_free_and_unique() {
        let add = |name: &str| Providers::new().with_backend(name, fake(&[]));
        assert_eq!(add("").unwrap_err(), ProvidersError::EmptyName);
        assert_eq!(
            add("a/b").unwrap_err(),
            ProvidersError::BadName("a/b".into())
        );
        assert_eq!(
            add("a b").unwrap_err(),
            ProvidersError::BadName("a b".into())
        );
        let twice = add("a").unwrap().with_backend("a", fake(&[])).unwrap_err();
        assert_eq!(twice, ProvidersError::Duplicate("a".into()));
        assert!(twice.to_string().contains("\"a\""), "{twice}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn debug_shows_the_names_and_no_backend() {
        let backend = crate::llm::openai::OpenAiBackend::new(
            crate::llm::openai::OpenAiConfig::new("http://127.0.0.1:9/v1")
                .with_api_key("sk-very-secret"),
        );
        let host = Providers::new().with_backend("local", backend).unwrap();
        let shown = format!("{host:?}");
        assert_eq!(shown, r#"Providers { names: ["local"] }"#);
    }
}
