//! The prompt and resource side of [`McpHub`]: namespaced prompts routed back to their server,
//! resources and templates with their URIs kept, reads from the owning server (or, for a URI
//! no server lists, such as an expanded template, from each server in turn), and the
//! source-scoped variants MCP App views use.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use lmchatkit_protocol::{Prompt, PromptResult, Resource, ResourceResult};

use super::convert;
use super::hub::McpHub;
use super::server::{CallError, Server};
use crate::host::HostError;

impl McpHub {
    /// Every prompt of every reachable server (namespaced like tools).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, HostError> {
        let lists = join_all(self.inner.servers.iter().map(|s| self.prompts_of(s))).await;
        Ok(lists.into_iter().flatten().collect())
    }

    async fn prompts_of(&self, s: &Server) -> Vec<Prompt> {
        match s.prompts(self.inner.call_timeout).await {
            Ok(ps) => ps
                .iter()
                .map(|p| convert::prompt(p, &self.exposed(s, &p.name)))
                .collect(),
            Err(e) => {
                tracing::warn!(server = %s.name(), "skipping MCP server's prompts: {e}");
                Vec::new()
            }
        }
    }

    /// Prompts of one server only.
    pub async fn list_prompts_from(&self, source: &str) -> Result<Vec<Prompt>, HostError> {
        let s = self.named(source)?;
        Ok(self.prompts_of(s).await)
    }

    fn named(&self, source: &str) -> Result<&Server, HostError> {
        self.server(source)
            .ok_or_else(|| HostError::NotFound(format!("unknown MCP server {source:?}")))
    }

    /// Expands a prompt (every message; non-text content summarised).
    pub async fn get_prompt(
        &self,
        name: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        for s in &self.inner.servers {
            let original = if s.cfg.namespaced {
                match name.strip_prefix(&format!("{}{}", s.name(), self.inner.separator)) {
                    Some(rest) => rest.to_owned(),
                    None => continue,
                }
            } else {
                name.to_owned()
            };
            let Ok(prompts) = s.prompts(self.inner.call_timeout).await else {
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

    /// Resources and templates of every reachable server, URIs unchanged.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, HostError> {
        let lists = join_all(self.inner.servers.iter().map(|s| self.resources_of(s))).await;
        Ok(lists.into_iter().flatten().collect())
    }

    async fn resources_of(&self, s: &Server) -> Vec<Resource> {
        match s.resources(self.inner.call_timeout).await {
            Ok(l) => l
                .resources
                .iter()
                .map(convert::resource)
                .chain(l.templates.iter().map(convert::template))
                .collect(),
            Err(e) => {
                tracing::warn!(server = %s.name(), "skipping MCP server's resources: {e}");
                Vec::new()
            }
        }
    }

    /// Resources of one server only.
    pub async fn list_resources_from(&self, source: &str) -> Result<Vec<Resource>, HostError> {
        let s = self.named(source)?;
        Ok(self.resources_of(s).await)
    }

    /// Reads a resource from the server that lists it; a URI no server lists (e.g. an
    /// expanded template) is tried on each server with resources, in order.
    pub async fn read_resource(&self, uri: &str) -> Result<ResourceResult, HostError> {
        let mut owners = Vec::new();
        let mut others = Vec::new();
        for s in &self.inner.servers {
            match s.resources(self.inner.call_timeout).await {
                Ok(l) if l.resources.iter().any(|r| r.uri == uri) => owners.push(s),
                Ok(_) => others.push(s),
                Err(_) => {}
            }
        }
        let mut last = None;
        for s in owners.into_iter().chain(others) {
            match self.read_from(s, uri).await {
                Ok(r) => return Ok(r),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| HostError::NotFound(format!("unknown resource {uri:?}"))))
    }

    /// Reads a resource from one server only (for MCP App views).
    pub async fn read_resource_from(
        &self,
        source: &str,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        let s = self.named(source)?;
        self.read_from(s, uri).await
    }

    async fn read_from(&self, s: &Server, uri: &str) -> Result<ResourceResult, HostError> {
        let r = s
            .read_resource(uri, self.inner.call_timeout)
            .await
            .map_err(|e| match e {
                CallError::Mcp(m) => HostError::NotFound(format!("{uri}: {m}")),
                other => HostError::Upstream(other.to_string()),
            })?;
        let listing_ui = s
            .resources(self.inner.call_timeout)
            .await
            .ok()
            .and_then(|l| {
                let r = l.resources.iter().find(|r| r.uri == uri)?;
                super::ui_meta::ui_resource_meta(convert::wire(r).get("_meta"))
            });
        convert::read_result(uri, &r, listing_ui)
            .ok_or_else(|| HostError::NotFound(format!("resource {uri:?} has no contents")))
    }
}
