//! The host most end-to-end tests use: the OpenAI backend (pointed at the mock upstream) plus a
//! local `get_weather` tool, two MCP-style prompts (`greet`, `pair`) and a `docs://readme`
//! resource — how a host composes an LLM with its own tools.

use std::collections::BTreeMap;

use lmchatkit::llm::openai::OpenAiBackend;
use lmchatkit::protocol::{
    Model, Prompt, PromptMessage, PromptResult, Resource, ResourceResult, Role, Tool, ToolResult,
};
use lmchatkit::{
    CompleteRequest, EventStream, Host, HostError, RequestContext, Scope, ToolSource, async_trait,
};
use serde_json::{Value, json};

/// The test host: the OpenAI backend plus a tool, two prompts and a resource.
pub struct TestHost(pub OpenAiBackend);

#[async_trait]
impl Host for TestHost {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.0.models(cx).await
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
    async fn list_tools(&self, _: &Scope) -> Result<Vec<Tool>, HostError> {
        Ok(vec![
            Tool::new("get_weather")
                .with_description("Weather for a city")
                .with_input_schema(json!({"type": "object", "properties": {
                "city": {"type": "string", "description": "The city to look up, e.g. <b>Oslo</b>"},
                "units": {"type": "string", "title": "Celsius or Fahrenheit"}
            }, "required": ["city"]})),
        ])
    }
    async fn call_tool(&self, _: &Scope, name: &str, args: Value) -> Result<ToolResult, HostError> {
        match (name, args["city"].as_str()) {
            ("get_weather", Some(city)) => Ok(ToolResult::text(format!("{city}: sunny, 21 °C"))),
            _ => Err(HostError::InvalidInput("city is required".into())),
        }
    }
    async fn tool_source(&self, _: &RequestContext, _: &str) -> ToolSource {
        ToolSource::Unscoped
    }
    async fn list_prompts(&self, _: &Scope) -> Result<Vec<Prompt>, HostError> {
        let greet = json!({"name": "greet", "description": "Greets someone",
            "arguments": [{"name": "who", "required": true}]});
        let pair = json!({"name": "pair", "description": "Two arguments",
            "arguments": [{"name": "first", "required": true}, {"name": "second"}]});
        Ok(vec![
            serde_json::from_value(greet).unwrap(),
            serde_json::from_value(pair).unwrap(),
        ])
    }
    async fn get_prompt(
        &self,
        _: &Scope,
        _: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        let content = match args.get("who") {
            Some(who) => format!("mirror-back greeting for {who}"),
            None => format!("mirror-back pair {args:?}"),
        };
        Ok(PromptResult {
            description: None,
            messages: vec![PromptMessage {
                role: Role::User,
                content,
            }],
        })
    }
    async fn list_resources(&self, _: &Scope) -> Result<Vec<Resource>, HostError> {
        let mut r = Resource::new("docs://readme");
        r.name = Some("Readme".into());
        Ok(vec![r])
    }
    async fn read_resource(&self, _: &Scope, uri: &str) -> Result<ResourceResult, HostError> {
        Ok(
            serde_json::from_value(json!({"uri": uri, "text": "The readme says: pineapple."}))
                .unwrap(),
        )
    }
}
