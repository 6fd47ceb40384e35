//! What a failed model listing tells the operator: [`problem`] turns the failure of
//! `GET <base_url>/models` into a [`SetupProblem`] with the likely fix, and [`ModelsCache`]
//! keeps the last one for [`Host::setup_problems`](crate::Host::setup_problems).
//!
//! Decisions:
//! - **The listing is the probe.** It is the first request a backend makes, costs nothing on
//!   the upstream's bill, and fails the way a turn would for a wrong URL or key; no other
//!   request is sent to find problems.
//! - **One fix per cause**: 404 names the base URL, and the missing `/v1` when its path has no
//!   `v1` segment (Anthropic's API and nearly every OpenAI-compatible one live under it); 401
//!   and 403 name the key; a refused connection or an unknown host names the host and port; a
//!   timeout names reachability; a reply that is not the API's JSON names a base URL that
//!   points at a web page. Any other status names the upstream itself.
//! - **Kept until a listing succeeds**: the problem stays while the upstream keeps failing
//!   (also while a stale list is served) and is cleared by the next good listing.
//! - **No secrets**: URLs are shown redacted ([`redact_url`](crate::secrets::redact_url)), and
//!   the upstream's reply is not quoted into the fix.
//! - The subject is `LLM upstream`; [`Providers`](crate::llm::Providers) names it
//!   `provider <name>`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lmchatkit_protocol::{Model, SetupProblem};

use crate::host::HostError;
use crate::llm::UPSTREAM_SUBJECT;
use crate::secrets::origin;

/// Which API a backend speaks (the fixes differ in their example URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::llm) enum Api {
    OpenAi,
    /// Only with the `anthropic` feature (and in this module's tests).
    #[cfg(any(feature = "anthropic", test))]
    Anthropic,
}

/// Why a listing failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::llm) enum Fault {
    /// The upstream answered with this non-success status.
    Status(http::StatusCode),
    /// No connection (refused, unknown host, TLS).
    Connect,
    /// No answer in time.
    Timeout,
    /// The request failed otherwise.
    Transport,
    /// The reply is not the API's JSON (no `data` array).
    NotApi,
}

/// A listing that failed: the error the caller gets, and the operator's problem.
#[derive(Debug)]
pub(in crate::llm) struct Failed {
    pub error: HostError,
    pub problem: SetupProblem,
}

impl Failed {
    /// `what` went wrong listing at `url` (shown redacted) for `api`.
    pub(in crate::llm) fn new(api: Api, url: &str, fault: Fault, what: String) -> Self {
        let shown = crate::secrets::redact_url(url);
        let problem = problem(api, &shown, &fault, &crate::secrets::redact_urls(&what));
        Self {
            error: HostError::Upstream(format!("cannot list models: {what}")),
            problem,
        }
    }
}

/// The operator's view of a failed listing at `shown` (a redacted URL).
pub(in crate::llm) fn problem(api: Api, shown: &str, fault: &Fault, what: &str) -> SetupProblem {
    let base = shown
        .split(['?', '#'])
        .next()
        .unwrap_or(shown)
        .trim_end_matches('/')
        .trim_end_matches("/models");
    let example = match api {
        Api::OpenAi => "http://localhost:11434/v1",
        #[cfg(any(feature = "anthropic", test))]
        Api::Anthropic => "https://api.anthropic.com/v1",
    };
    let fix = match fault {
        Fault::Status(s) if *s == http::StatusCode::NOT_FOUND => match missing_v1(base) {
            true => format!(
                "set `base_url` to {base}/v1: the models list is read from <base_url>/models, \
                 and this API lives under /v1 (for example {example})"
            ),
            false => format!(
                "check `base_url` ({base}): the models list is read from <base_url>/models and \
                 that answered 404 (for example {example})"
            ),
        },
        Fault::Status(s)
            if *s == http::StatusCode::UNAUTHORIZED || *s == http::StatusCode::FORBIDDEN =>
        {
            "the upstream refused the key: check the provider's `api_key` (or the environment \
             variable it names) is set, current, and meant for this endpoint"
                .to_owned()
        }
        Fault::Status(s) => format!(
            "the upstream answered {s}: check that {base} is the API's base URL and that the \
             service is healthy; the list is asked for again on the next model menu"
        ),
        Fault::Connect => format!(
            "nothing answered at {}: check that the server runs and that `base_url`'s host and \
             port are right",
            origin(base)
        ),
        Fault::Timeout => format!(
            "{} did not answer in time: check that it is reachable from this machine",
            origin(base)
        ),
        Fault::Transport => format!(
            "the request to {} failed before an answer: check `base_url` and the network",
            origin(base)
        ),
        Fault::NotApi => format!(
            "{shown} did not answer with the API's model list: `base_url` may point at a web \
             page; it usually ends in /v1 (for example {example})"
        ),
    };
    SetupProblem::new(
        UPSTREAM_SUBJECT,
        format!("listing models at {shown} failed: {what}"),
        fix,
    )
}

/// The base URL's path has no `v1` segment.
fn missing_v1(base: &str) -> bool {
    let path = base
        .split_once("://")
        .map_or(base, |(_, rest)| rest)
        .split_once('/')
        .map_or("", |(_, path)| path);
    !path.split('/').any(|seg| seg == "v1")
}

/// A model list read from an upstream's `/models`, and when.
type Listed = (std::time::Instant, Vec<Model>);

/// A model list read from an upstream's `/models`, kept for a while (shared by the OpenAI and
/// Anthropic backends): fresh for `ttl`, and served stale while the upstream fails. Keeps the
/// last failure's [`SetupProblem`] until a listing succeeds.
#[derive(Clone, Default)]
pub(in crate::llm) struct ModelsCache {
    listed: Arc<Mutex<Option<Listed>>>,
    problem: Arc<Mutex<Option<SetupProblem>>>,
}

impl ModelsCache {
    /// The cached list when younger than `ttl`; else `fetch`'s, which is kept when it succeeds.
    /// When `fetch` fails, the last list (logged), or the error when there is none.
    pub(in crate::llm) async fn get<F>(
        &self,
        ttl: Duration,
        fetch: F,
    ) -> Result<Vec<Model>, HostError>
    where
        F: std::future::Future<Output = Result<Vec<Model>, Failed>>,
    {
        let listed = |fresh: bool| {
            let cache = self.listed.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .as_ref()
                .filter(|(at, _)| !fresh || at.elapsed() < ttl)
                .map(|(_, m)| m.clone())
        };
        if let Some(models) = listed(true) {
            return Ok(models);
        }
        let keep = |problem: Option<SetupProblem>| {
            *self.problem.lock().unwrap_or_else(|p| p.into_inner()) = problem;
        };
        match fetch.await {
            Ok(models) => {
                keep(None);
                let mut cache = self.listed.lock().unwrap_or_else(|p| p.into_inner());
                *cache = Some((std::time::Instant::now(), models.clone()));
                Ok(models)
            }
            Err(Failed { error, problem }) => {
                keep(Some(problem));
                match listed(false) {
                    Some(stale) => {
                        tracing::warn!(%error, "listing models failed; the last list is served");
                        Ok(stale)
                    }
                    None => Err(error),
                }
            }
        }
    }

    /// The last listing's failure, until one succeeds.
    pub(in crate::llm) fn problem(&self) -> Option<SetupProblem> {
        self.problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(api: Api, url: &str, fault: Fault) -> String {
        problem(api, url, &fault, "x").fix
    }

    #[test]
    fn a_404_from_a_base_url_without_v1_asks_for_v1() {
        let f = fix(
            Api::Anthropic,
            "https://api.anthropic.com/models?limit=1000",
            Fault::Status(http::StatusCode::NOT_FOUND),
        );
        assert!(
            f.starts_with("set `base_url` to https://api.anthropic.com/v1:"),
            "{f}"
        );
        let f = fix(
            Api::OpenAi,
            "http://127.0.0.1:8080/models",
            Fault::Status(http::StatusCode::NOT_FOUND),
        );
        assert!(f.contains("http://127.0.0.1:8080/v1"), "{f}");
    }

    #[test]
    fn a_404_from_a_base_url_with_v1_names_the_base_url_without_adding_another() {
        for url in [
            "http://h:1/v1/models",
            "https://openrouter.ai/api/v1/models",
        ] {
            let f = fix(Api::OpenAi, url, Fault::Status(http::StatusCode::NOT_FOUND));
            assert!(f.starts_with("check `base_url`"), "{f}");
            assert!(!f.contains("v1/v1"), "{f}");
        }
    }

    #[test]
    fn a_refused_key_names_the_key_and_a_refused_connection_the_host_and_port() {
        for status in [http::StatusCode::UNAUTHORIZED, http::StatusCode::FORBIDDEN] {
            let f = fix(Api::OpenAi, "http://h:1/v1/models", Fault::Status(status));
            assert!(
                f.contains("refused the key") && f.contains("`api_key`"),
                "{f}"
            );
        }
        let f = fix(Api::OpenAi, "http://127.0.0.1:9/v1/models", Fault::Connect);
        assert!(
            f.contains("http://127.0.0.1:9") && f.contains("host and"),
            "{f}"
        );
        let f = fix(Api::OpenAi, "http://127.0.0.1:9/v1/models", Fault::Timeout);
        assert!(f.contains("did not answer in time"), "{f}");
        let f = fix(Api::OpenAi, "http://h:1/models", Fault::NotApi);
        assert!(f.contains("web page"), "{f}");
        let f = fix(
            Api::OpenAi,
            "http://h:1/v1/models",
            Fault::Status(http::StatusCode::BAD_GATEWAY),
        );
        assert!(
            f.contains("502 Bad Gateway") && f.contains("http://h:1/v1"),
            "{f}"
        );
    }

    #[test]
    fn the_problem_names_the_url_redacted_and_what_happened() {
        let failed = Failed::new(
            Api::OpenAi,
            "http://user:secret@h:1/v1/models?key=secret",
            Fault::Status(http::StatusCode::UNAUTHORIZED),
            "upstream returned 401 Unauthorized".into(),
        );
        let p = failed.problem;
        assert_eq!(p.subject, UPSTREAM_SUBJECT);
        assert!(p.problem.contains("401 Unauthorized"), "{}", p.problem);
        assert!(!format!("{p}").contains("secret"), "{p}");
        assert_eq!(
            failed.error.to_string(),
            "cannot list models: upstream returned 401 Unauthorized"
        );
    }

    #[tokio::test]
    async fn the_cache_keeps_a_failure_until_a_listing_succeeds() {
        let cache = ModelsCache::default();
        let fail = || async {
            Err(Failed::new(
                Api::OpenAi,
                "http://h:1/models",
                Fault::Connect,
                "cannot connect".into(),
            ))
        };
        assert!(cache.get(Duration::ZERO, fail()).await.is_err());
        assert!(
            cache
                .problem()
                .is_some_and(|p| p.fix.contains("nothing answered"))
        );
        let ok = cache
            .get(Duration::from_secs(60), async { Ok(vec![Model::new("m")]) })
            .await;
        assert_eq!(ok.map(|m| m.len()).ok(), Some(1));
        assert_eq!(cache.problem(), None);
    }
}
