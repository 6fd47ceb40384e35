//! The prompt and resource side of [`McpHub`]: namespaced prompts routed back to their server,
//! resources and templates with their URIs kept, and reads from the server that lists the URI
//! (as a resource or a matching template) — never from each server in turn. Everything is
//! limited to the servers the [`Scope`] reaches (one server for an MCP App view).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::join_all;
use lmchatkit_protocol::{Prompt, PromptResult, Resource, ResourceResult};

use super::client::{CallError, Server};
use super::convert;
use super::hub::McpHub;
use super::listing::Wait;
use crate::access::{Scope, matches_template};
use crate::host::{HostError, Principal};

impl McpHub {
    /// Every prompt of every reachable server in `scope` (namespaced like tools).
    pub async fn list_prompts(&self, scope: &Scope) -> Result<Vec<Prompt>, HostError> {
        let who = &scope.principal();
        let lists = join_all(self.servers_in(scope).map(|s| self.prompts_of(s, who))).await;
        Ok(lists.into_iter().flatten().collect())
    }

    async fn prompts_of(&self, s: &Arc<Server>, who: &Principal) -> Vec<Prompt> {
        // A server with no listing yet is left out; its refresh logged why.
        let Some(prompts) = s.prompts(who, self.briefly()).await else {
            return Vec::new();
        };
        let server_icon = super::icons::has_icon(s.server_icons().as_deref());
        prompts
            .iter()
            .map(|p| convert::prompt(p, &self.exposed(s, &p.name), server_icon))
            .collect()
    }

    /// Expands a prompt (every message; non-text content summarised).
    pub async fn get_prompt(
        &self,
        scope: &Scope,
        name: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        let who = scope.principal();
        for s in self.servers_in(scope) {
            let original = if s.cfg.namespaced {
                match name.strip_prefix(&format!("{}{}", s.name(), self.inner.separator)) {
                    Some(rest) => rest.to_owned(),
                    None => continue,
                }
            } else {
                name.to_owned()
            };
            let Some(prompts) = s.prompts(&who, Wait::ForCall).await else {
                continue;
            };
            if !prompts.iter().any(|p| p.name == original) {
                continue;
            }
            let r = s
                .get_prompt(
                    &original,
                    convert::string_args(args),
                    self.inner.call_timeout,
                )
                .await
                .map_err(|e| match e {
                    CallError::Mcp(m) => HostError::InvalidInput(m),
                    other => HostError::Upstream(other.to_string()),
                })?;
            let (description, messages) = convert::prompt_messages(&r);
            return Ok(PromptResult {
                description,
                messages,
            });
        }
        Err(HostError::NotFound(format!("unknown prompt {name:?}")))
    }

    /// The server and icons of the prompt exposed as `name` in `scope`.
    pub(super) async fn prompt_icons<'a>(
        &'a self,
        scope: &'a Scope,
        name: &str,
    ) -> Option<(&'a Arc<Server>, Vec<rmcp::model::Icon>)> {
        let who = scope.principal();
        for s in self.servers_in(scope) {
            let original = if s.cfg.namespaced {
                match name.strip_prefix(&format!("{}{}", s.name(), self.inner.separator)) {
                    Some(rest) => rest,
                    None => continue,
                }
            } else {
                name
            };
            let Some(prompts) = s.prompts(&who, Wait::ForCall).await else {
                continue;
            };
            if let Some(p) = prompts.iter().find(|p| p.name == original) {
                return Some((s, p.icons.clone().unwrap_or_default()));
            }
        }
        None
    }

    /// Resources and templates of every reachable server in `scope`, URIs unchanged.
    pub async fn list_resources(&self, scope: &Scope) -> Result<Vec<Resource>, HostError> {
        let who = &scope.principal();
        let lists = join_all(self.servers_in(scope).map(|s| self.resources_of(s, who))).await;
        Ok(lists.into_iter().flatten().collect())
    }

    async fn resources_of(&self, s: &Arc<Server>, who: &Principal) -> Vec<Resource> {
        s.resources(who, self.briefly())
            .await
            .map(|l| {
                l.resources
                    .iter()
                    .map(convert::resource)
                    .chain(l.templates.iter().map(convert::template))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Reads a resource from the first server in `scope` that lists it, as a resource or as
    /// a match of one of its templates. A URI no server in `scope` lists is unknown: it is
    /// never sent to each server in turn.
    pub async fn read_resource(
        &self,
        scope: &Scope,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        let who = scope.principal();
        for s in self.servers_in(scope) {
            let Some(l) = s.resources(&who, Wait::ForCall).await else {
                continue;
            };
            let listed = l.resources.iter().any(|r| r.uri == uri)
                || l.templates
                    .iter()
                    .any(|r| matches_template(&r.uri_template, uri));
            if listed {
                return self.read_from(s, &who, uri).await;
            }
        }
        // A view may read what its own server serves without listing it.
        if let Some(s) = scope
            .server()
            .and_then(|n| self.servers_in(scope).find(|s| s.name() == n))
        {
            return self.read_from(s, &who, uri).await;
        }
        Err(HostError::NotFound(format!(
            "no server offers the resource {uri:?}"
        )))
    }

    async fn read_from(
        &self,
        s: &Arc<Server>,
        who: &Principal,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        let r = s
            .read_resource(uri, self.inner.call_timeout)
            .await
            .map_err(|e| match e {
                CallError::Mcp(m) => HostError::NotFound(format!("{uri}: {m}")),
                other => HostError::Upstream(other.to_string()),
            })?;
        let listing_ui = s.resources(who, Wait::ForCall).await.and_then(|l| {
            let r = l.resources.iter().find(|r| r.uri == uri)?;
            super::ui_meta::ui_resource_meta(convert::wire(r).get("_meta"))
        });
        convert::read_result(uri, &r, listing_ui)
            .ok_or_else(|| HostError::NotFound(format!("resource {uri:?} has no contents")))
    }
}
