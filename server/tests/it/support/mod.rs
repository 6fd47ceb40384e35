//! A scriptable in-process host and request helpers for the route tests.
#![allow(dead_code)]

pub mod quiet;
pub mod stream_body;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use lmchatkit::protocol::*;
use lmchatkit::{
    ChatService, CompleteRequest, Config, ConfigBuilder, EventStream, Host, HostError,
    RequestContext, Scope, ToolSource, async_trait,
};
use serde_json::Value;
use tower::ServiceExt;

/// A host whose answers are set by the test; it records every completion request.
#[derive(Default)]
pub struct FakeHost {
    pub models: Vec<Model>,
    pub events: Vec<Event>,
    /// When set, the n-th completion answers `steps[n]` (the last one repeats) instead of
    /// `events`: a scripted multi-step turn.
    pub steps: Vec<Vec<Event>>,
    pub tools: Vec<Tool>,
    /// tool name → owning server
    pub sources: HashMap<String, String>,
    pub unscoped: bool,
    pub prompts: Vec<Prompt>,
    /// prompt name → owning server (a view's scope lists only its server's prompts)
    pub prompt_sources: HashMap<String, String>,
    pub resources: Vec<Resource>,
    /// uri → (server, result)
    pub contents: HashMap<String, (String, ResourceResult)>,
    pub fail_tools_list: bool,
    pub seen: Arc<Mutex<Vec<CompleteRequest>>>,
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every `get_prompt` name and `read_resource` URI, in order.
    pub lookups: Arc<Mutex<Vec<String>>>,
    /// What `setup_problems` answers.
    pub problems: Vec<lmchatkit::protocol::SetupProblem>,
}

#[async_trait]
impl Host for FakeHost {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(self.models.clone())
    }
    fn setup_problems(&self) -> Vec<lmchatkit::protocol::SetupProblem> {
        self.problems.clone()
    }
    fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
        let mut seen = self.seen.lock().unwrap();
        let events = match self.steps.len() {
            0 => self.events.clone(),
            n => self.steps[seen.len().min(n - 1)].clone(),
        };
        seen.push(req);
        Box::pin(futures_util::stream::iter(events))
    }
    async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        if self.fail_tools_list {
            return Err(HostError::Upstream("tools unavailable".into()));
        }
        Ok(self
            .tools
            .iter()
            .filter(|t| self.in_scope(scope, self.sources.get(&t.name)))
            .cloned()
            .collect())
    }
    async fn call_tool(&self, _: &Scope, name: &str, args: Value) -> Result<ToolResult, HostError> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), args.clone()));
        match name {
            "broken" => Err(HostError::Upstream("server went away".into())),
            _ => Ok(ToolResult::text(format!("{name}:{args}"))),
        }
    }
    async fn list_prompts(&self, scope: &Scope) -> Result<Vec<Prompt>, HostError> {
        Ok(self
            .prompts
            .iter()
            .filter(|p| self.in_scope(scope, self.prompt_sources.get(&p.name)))
            .cloned()
            .collect())
    }
    async fn get_prompt(
        &self,
        _: &Scope,
        name: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        self.lookups.lock().unwrap().push(format!("prompt {name}"));
        if name == "failing" {
            return Err(HostError::Upstream("prompt server down".into()));
        }
        if !self.prompts.iter().any(|p| p.name == name) {
            return Err(HostError::NotFound(format!("unknown prompt {name:?}")));
        }
        Ok(PromptResult {
            description: None,
            messages: vec![
                PromptMessage {
                    role: Role::User,
                    content: format!("{name} {}", serde_json::to_string(&args).unwrap()),
                },
                PromptMessage {
                    role: Role::Assistant,
                    content: "ack".into(),
                },
            ],
        })
    }
    async fn list_resources(&self, scope: &Scope) -> Result<Vec<Resource>, HostError> {
        Ok(self
            .resources
            .iter()
            .filter(|r| self.in_scope(scope, self.contents.get(&r.uri).map(|(s, _)| s)))
            .cloned()
            .collect())
    }
    async fn read_resource(&self, scope: &Scope, uri: &str) -> Result<ResourceResult, HostError> {
        self.lookups.lock().unwrap().push(format!("read {uri}"));
        match self.contents.get(uri) {
            Some((s, r)) if self.in_scope(scope, Some(s)) => Ok(r.clone()),
            Some(_) => Err(HostError::NotFound(format!(
                "no resource {uri} on {}",
                scope.server().unwrap_or("every server")
            ))),
            None => Err(HostError::NotFound(format!("no resource {uri}"))),
        }
    }
    async fn tool_source(&self, _: &RequestContext, name: &str) -> ToolSource {
        if self.unscoped {
            return ToolSource::Unscoped;
        }
        self.sources
            .get(name)
            .map(|s| ToolSource::Scoped(s.clone()))
            .unwrap_or(ToolSource::Unknown)
    }
}

impl FakeHost {
    /// A thing of `server` (or of no known server) is in `scope` when the scope reaches every
    /// server, or that one; a thing of no known server is only in an unlimited scope.
    fn in_scope(&self, scope: &Scope, server: Option<&String>) -> bool {
        match (scope.server(), server) {
            (None, _) => true,
            (Some(want), Some(s)) => want == s,
            (Some(_), None) => false,
        }
    }
}

pub fn service(builder: ConfigBuilder) -> ChatService {
    ChatService::new(builder.build().unwrap())
}

pub fn config(host: FakeHost) -> ConfigBuilder {
    Config::builder(host)
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The JSON of every `data:` line of an SSE body.
    pub fn sse(&self) -> Vec<Value> {
        self.text()
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

pub async fn send(svc: &ChatService, req: Request<Full<Bytes>>) -> Reply {
    let res = svc.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}

pub fn get(uri: &str) -> Request<Full<Bytes>> {
    Request::get(uri).body(Full::default()).unwrap()
}

pub fn with_json(method: &str, uri: &str, body: impl Into<Bytes>) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Full::new(body.into()))
        .unwrap()
}

pub fn post(uri: &str, body: &Value) -> Request<Full<Bytes>> {
    with_json("POST", uri, serde_json::to_vec(body).unwrap())
}

pub fn put(uri: &str, body: &Value) -> Request<Full<Bytes>> {
    with_json("PUT", uri, serde_json::to_vec(body).unwrap())
}

pub fn tool(name: &str, vis: &[Visibility]) -> Tool {
    Tool::new(name).with_visibility(vis.to_vec())
}
