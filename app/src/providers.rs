//! The file's `[[providers]]`: named upstreams, each `openai` (any OpenAI-compatible endpoint)
//! or `anthropic` (the native Messages API), served together by one
//! [`Providers`](lmchatkit::llm::Providers) host with model ids `name/<model>`.
//!
//! Decisions:
//! - **Keys**: `api_key_env = "VAR"` reads the variable at start; `api_key` is a literal that
//!   may use `${VAR}` (expanded here rather than with the rest of the file, so an unset
//!   variable makes the provider not configured instead of refusing the file). An empty value
//!   counts as missing. A provider whose key is missing while `key_required` (default true) is
//!   *not configured*: it is registered in the catalog with the reason (`"ANTHROPIC_API_KEY is
//!   not set"`), its known models stay on the menu disabled, and it gets no backend, so no
//!   request ever goes to it. `key_required = false` (local servers) makes it configured
//!   without a key.
//! - **`base_url`**: defaults to Anthropic's API for `kind = "anthropic"`; required for
//!   `kind = "openai"`, as an OpenAI-compatible endpoint can be anywhere and guessing
//!   OpenAI's would send a key meant for another server to OpenAI. It must be an `http` or
//!   `https` URL.
//! - **Models**: `models = [...]` is a fixed list used instead of asking `/models` (for a
//!   provider not configured, those models are what the menu shows disabled). A provider of
//!   kind `anthropic` also gets the built-in table's Claude facts under its own name (the same
//!   models wherever the key is used); an `openai` kind gets the built-in OpenAI facts only
//!   when it is named `openai`, since other compatible servers serve other models.
//! - **Refused at start** (a clear message naming the entry): a bad or repeated name (names
//!   are [`Providers::check_name`](lmchatkit::llm::Providers::check_name)'s: non-empty, no `/`,
//!   no whitespace), an unknown kind or field, both `api_key` and `api_key_env`, neither with
//!   `key_required` left true, a missing or malformed `base_url`, a bad header, an empty
//!   `models` list.
//! - **With the `OPENAI_BASE_URL` shorthand** (flag, environment or `[upstream]`): the shorthand
//!   joins as provider `openai` (configured, its key optional as today), unless a
//!   `[[providers]]` entry is named `openai`, which then wins and the shorthand is ignored with
//!   a warning.
//! - `Debug` never shows a key or header values.

use std::collections::BTreeMap;
use std::sync::Arc;

use lmchatkit::Host;
use lmchatkit::llm::anthropic::{AnthropicBackend, AnthropicConfig};
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::llm::{Providers, ProvidersError};
use lmchatkit::mcp::{McpConfigError, expand_env};
use lmchatkit::models::{Catalog, ModelEntry, builtin};
use lmchatkit::protocol::Model;
use lmchatkit::secrets::{Redacted, redact_url, redacted_headers};
use serde::Deserialize;

use crate::cli::check_header;

/// The provider name the `OPENAI_BASE_URL` shorthand takes beside `[[providers]]`.
pub const SHORTHAND_NAME: &str = "openai";

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible `/chat/completions` endpoint.
    OpenAi,
    /// Anthropic's native Messages API.
    Anthropic,
}

/// One `[[providers]]` entry as written (no `Debug`: it may hold a key).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProvider {
    name: String,
    kind: ProviderKind,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key: Option<String>,
    key_required: Option<bool>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    models: Option<Vec<String>>,
}

/// A provider, resolved and checked. `Debug` shows neither the key nor header values.
#[derive(Clone, PartialEq)]
pub struct ProviderSettings {
    pub name: String,
    pub kind: ProviderKind,
    /// The base URL (`…/v1`).
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// A fixed model list (`None`: ask `/models`).
    pub models: Option<Vec<String>>,
    /// Why it is not configured; `None` when it is.
    pub unavailable: Option<String>,
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| Redacted))
            .field("headers", &redacted_headers(&self.headers))
            .field("models", &self.models)
            .field("unavailable", &self.unavailable)
            .finish()
    }
}

/// Expands `${VAR}` in every field of each entry but `api_key` (see the module docs).
pub fn expand_entries(
    value: &mut toml::Value,
    expand: impl Fn(&mut toml::Value) -> Result<(), String>,
) -> Result<(), String> {
    let toml::Value::Array(entries) = value else {
        return expand(value); // not a list: the type error comes from the parse
    };
    for entry in entries {
        match entry {
            toml::Value::Table(t) => {
                for (key, v) in t.iter_mut().filter(|(k, _)| *k != "api_key") {
                    expand(v).map_err(|e| format!("{key}: {e}"))?;
                }
            }
            other => expand(other)?,
        }
    }
    Ok(())
}

/// Checks the entries and reads their keys from the environment.
pub fn resolve(entries: Vec<FileProvider>) -> Result<Vec<ProviderSettings>, String> {
    let mut out: Vec<ProviderSettings> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let at = |e: String| format!("providers[{i}] ({:?}): {e}", entry.name);
        let resolved = resolve_one(&entry).map_err(at)?;
        if out.iter().any(|p| p.name == resolved.name) {
            return Err(at("the name is used twice".into()));
        }
        out.push(resolved);
    }
    Ok(out)
}

fn resolve_one(e: &FileProvider) -> Result<ProviderSettings, String> {
    Providers::check_name(&e.name).map_err(|err| err.to_string())?;
    let base_url = match (&e.base_url, e.kind) {
        (Some(url), _) => url.trim().trim_end_matches('/').to_owned(),
        (None, ProviderKind::Anthropic) => lmchatkit::llm::anthropic::DEFAULT_BASE_URL.to_owned(),
        (None, ProviderKind::OpenAi) => {
            return Err("base_url is required for kind = \"openai\" (for example \
                 \"https://api.openai.com/v1\" or \"http://127.0.0.1:11434/v1\")"
                .into());
        }
    };
    match reqwest::Url::parse(&base_url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
        _ => {
            return Err(format!(
                "base_url {:?} is not an http(s) URL",
                redact_url(&base_url)
            ));
        }
    }
    let key_required = e.key_required.unwrap_or(true);
    let key = match (&e.api_key_env, &e.api_key) {
        (Some(_), Some(_)) => {
            return Err("give api_key_env or api_key, not both".into());
        }
        (Some(var), None) => {
            let var = var.trim();
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err(format!("api_key_env {var:?} is not a variable name"));
            }
            match std::env::var(var) {
                Ok(key) if !key.is_empty() => Ok(key),
                _ => Err(format!("{var} is not set")),
            }
        }
        (None, Some(raw)) => match expand_env(raw) {
            Ok(key) if !key.is_empty() => Ok(key),
            Ok(_) => Err("its api_key is empty".to_owned()),
            Err(McpConfigError::MissingEnv(var)) => Err(format!("{var} is not set")),
            Err(other) => return Err(format!("api_key: {other}")),
        },
        (None, None) if key_required => {
            return Err(
                "give api_key_env or api_key, or key_required = false for a server that needs \
                 no key"
                    .into(),
            );
        }
        (None, None) => Err(String::new()),
    };
    let (api_key, unavailable) = match key {
        Ok(key) => (Some(key), None),
        Err(_) if !key_required => (None, None),
        Err(reason) => (None, Some(reason)),
    };
    let mut headers = Vec::with_capacity(e.headers.len());
    for (name, value) in &e.headers {
        headers.push(check_header(name, value).map_err(|err| format!("headers: {err}"))?);
    }
    let models = match &e.models {
        None => None,
        Some(list) => {
            let list: Vec<String> = list
                .iter()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect();
            if list.is_empty() {
                return Err("models is empty (leave it out to ask the provider's /models)".into());
            }
            Some(list)
        }
    };
    Ok(ProviderSettings {
        name: e.name.clone(),
        kind: e.kind,
        base_url,
        api_key,
        headers,
        models,
        unavailable,
    })
}

/// Registers the providers (and the shorthand, when it joins) in `catalog`, with the built-in
/// facts their models get under their names (see the module docs). Runs before the file's
/// `[[models]]` are applied, so those override.
pub fn register(mut catalog: Catalog, providers: &[ProviderSettings], shorthand: bool) -> Catalog {
    for p in providers {
        catalog = catalog.with_provider(
            p.name.clone(),
            p.unavailable.is_none(),
            p.unavailable.clone(),
        );
        if p.kind == ProviderKind::Anthropic && p.name != "anthropic" {
            for known in builtin().filter(|e| e.provider == "anthropic") {
                let mut entry = ModelEntry::new(p.name.clone(), known.model())
                    .with_label(known.label.clone())
                    .with_reasoning(known.reasoning);
                entry.context_window = known.context_window;
                entry.price = known.price;
                catalog = catalog.with_entry(entry);
            }
        }
    }
    let joins = !providers.is_empty() && !providers.iter().any(|p| p.name == SHORTHAND_NAME);
    if shorthand && joins {
        catalog = catalog.with_provider(SHORTHAND_NAME, true, None);
    }
    catalog
}

/// Adds each provider's fixed model list to `catalog` (after `[[models]]`, so an entry there
/// keeps its facts), so a provider that is not configured shows them disabled.
pub fn list_fixed_models(catalog: &mut Catalog, providers: &[ProviderSettings]) {
    for p in providers {
        if let Some(models) = &p.models {
            catalog.add_listed(&p.name, models);
        }
    }
}

/// The host over the configured providers (those not configured get no backend), with the
/// shorthand's backend as provider `openai` unless an entry has that name.
pub fn host(
    providers: &[ProviderSettings],
    shorthand: Option<Arc<dyn Host>>,
) -> Result<Providers, ProvidersError> {
    let mut host = Providers::new();
    for p in providers {
        if let Some(reason) = &p.unavailable {
            tracing::warn!(provider = %p.name, %reason, "provider not configured: its models are shown disabled");
            continue;
        }
        let models = p
            .models
            .as_ref()
            .map(|list| list.iter().map(Model::new).collect::<Vec<_>>());
        let backend: Arc<dyn Host> = match p.kind {
            ProviderKind::OpenAi => {
                let mut cfg = OpenAiConfig::new(&p.base_url);
                if let Some(key) = &p.api_key {
                    cfg = cfg.with_api_key(key.clone());
                }
                for (name, value) in &p.headers {
                    cfg = cfg.with_header(name.clone(), value.clone());
                }
                if let Some(models) = models {
                    cfg = cfg.with_models(models);
                }
                Arc::new(OpenAiBackend::new(cfg))
            }
            ProviderKind::Anthropic => {
                let mut cfg = AnthropicConfig::new(&p.base_url);
                if let Some(key) = &p.api_key {
                    cfg = cfg.with_api_key(key.clone());
                }
                for (name, value) in &p.headers {
                    cfg = cfg.with_header(name.clone(), value.clone());
                }
                if let Some(models) = models {
                    cfg = cfg.with_models(models);
                }
                Arc::new(AnthropicBackend::new(cfg))
            }
        };
        tracing::info!(provider = %p.name, kind = ?p.kind, url = %redact_url(&p.base_url), "provider");
        host = host.with_backend_arc(p.name.clone(), backend)?;
    }
    if let Some(backend) = shorthand {
        if providers.iter().any(|p| p.name == SHORTHAND_NAME) {
            tracing::warn!(
                "OPENAI_BASE_URL (or --openai-base-url, --completions-url, [upstream]) is ignored: \
                 a [[providers]] entry is named {SHORTHAND_NAME:?}"
            );
        } else {
            host = host.with_backend_arc(SHORTHAND_NAME, backend)?;
        }
    }
    Ok(host)
}
