//! The built-in demo model: a clearly labelled stand-in that needs no upstream, so a first run
//! with nothing configured shows every part of the UI. It streams a Markdown reply (heading,
//! table, code block) word by word after a short reasoning phase, and when asked to use a tool
//! it calls the first tool it was offered whose name or description matches the request (else
//! the first tool), then summarises the tool's result.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use lmchatkit_protocol::{Event, FinishReason, Message, Model, Role, ToolCall, Usage};
use serde_json::{Value, json};

use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};

/// The demo model's id.
pub const DEMO_MODEL_ID: &str = "lmchatkit-demo";

/// A model that runs in-process and needs no configuration.
///
/// ```
/// use futures_util::StreamExt;
/// use lmchatkit::{CompleteRequest, Host, RequestContext, llm::DemoModel};
/// use lmchatkit::protocol::{Event, Message};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let demo = DemoModel::new().with_delay(std::time::Duration::ZERO);
/// let req = CompleteRequest { messages: vec![Message::user("hello")], ..Default::default() };
/// let events: Vec<Event> = demo.complete(&RequestContext::default(), req).collect().await;
/// assert!(matches!(events.last(), Some(Event::Done { .. })));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct DemoModel {
    delay: Duration,
}

impl Default for DemoModel {
    fn default() -> Self {
        Self::new()
    }
}

impl DemoModel {
    /// A demo model streaming a word every 12 ms.
    pub fn new() -> Self {
        Self {
            delay: Duration::from_millis(12),
        }
    }

    /// Sets the pause between streamed pieces (zero for tests).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[async_trait]
impl Host for DemoModel {
    async fn models(&self, _cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model {
            id: DEMO_MODEL_ID.into(),
            label: Some("Demo model (built in)".into()),
            provider: Some("lmchatkit".into()),
        }])
    }

    fn complete(&self, _cx: &RequestContext, req: CompleteRequest) -> EventStream {
        let events = script(&req);
        let delay = self.delay;
        Box::pin(
            futures_util::stream::iter(events).then(move |ev| async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                ev
            }),
        )
    }
}

/// The whole reply for a request, as events.
fn script(req: &CompleteRequest) -> Vec<Event> {
    let last = req.messages.last();
    let mut out = Vec::new();
    if let Some(result) = last.filter(|m| m.role == Role::Tool) {
        out.extend(words(&tool_summary(result)));
        return finish(out, FinishReason::Stop);
    }
    let asked = last.map(text_of).unwrap_or_default();
    out.extend(
        words("The user wants a demonstration. I will answer in Markdown.").map(|d| match d {
            Event::Delta { delta } => Event::reasoning(delta),
            other => other,
        }),
    );
    let wants_tool = ["tool", "time", "weather", "call"]
        .iter()
        .any(|w| asked.to_lowercase().contains(w));
    if wants_tool && let Some(tool) = pick_tool(req, &asked) {
        out.push(Event::ToolCall {
            tool_call: ToolCall::new("demo_call_1", tool.0, tool.1),
        });
        return finish(out, FinishReason::ToolCalls);
    }
    out.extend(words(&reply(&asked, req.tools.is_empty())));
    finish(out, FinishReason::Stop)
}

fn finish(mut out: Vec<Event>, reason: FinishReason) -> Vec<Event> {
    let completion = out.len() as u64;
    out.push(Event::done(
        reason,
        Some(Usage {
            prompt_tokens: Some(42),
            completion_tokens: Some(completion),
            total_tokens: Some(42 + completion),
        }),
    ));
    out
}

/// Streams `text` a word (with its trailing whitespace) at a time.
fn words(text: &str) -> impl Iterator<Item = Event> + '_ {
    text.split_inclusive([' ', '\n']).map(Event::delta)
}

fn text_of(m: &Message) -> String {
    m.content.joined_text(" ")
}

fn pick_tool(req: &CompleteRequest, asked: &str) -> Option<(String, Value)> {
    let asked = asked.to_lowercase();
    let tool = req
        .tools
        .iter()
        .find(|t| {
            let short = t.name.rsplit("__").next().unwrap_or(&t.name).to_lowercase();
            asked.contains(&short)
                || short
                    .split(['_', '-'])
                    .any(|w| w.len() > 3 && asked.contains(w))
        })
        .or_else(|| req.tools.first())?;
    // Fill required string arguments with something sensible.
    let mut args = serde_json::Map::new();
    if let Some(required) = tool
        .input_schema
        .as_ref()
        .and_then(|s| s["required"].as_array())
    {
        for name in required.iter().filter_map(Value::as_str) {
            args.insert(name.to_owned(), json!("demo"));
        }
    }
    Some((tool.name.clone(), Value::Object(args)))
}

fn tool_summary(result: &Message) -> String {
    let name = result.tool_name.as_deref().unwrap_or("the tool");
    let text = text_of(result);
    let shown: String = text.chars().take(400).collect();
    if result.is_error {
        format!("The tool **{name}** reported an error:\n\n```\n{shown}\n```\n")
    } else {
        format!(
            "The tool **{name}** answered:\n\n```\n{shown}\n```\n\nThat is how tool calls work here: you approve each call, and the result goes back to the model."
        )
    }
}

fn reply(asked: &str, no_tools: bool) -> String {
    let quoted: String = asked.chars().take(80).collect();
    let tools_hint = if no_tools {
        "No tools are configured, so I cannot demonstrate a tool call."
    } else {
        "Ask me to **use a tool** and I will call one, after you approve it."
    };
    format!(
        "## This is the built-in demo model\n\n\
         You said: *{quoted}*\n\n\
         I am not a real LLM. Point lmchatkit at one with `OPENAI_BASE_URL` \
         (and `OPENAI_API_KEY`) to chat for real.\n\n\
         | What | Where |\n|---|---|\n\
         | Streaming replies | this message |\n\
         | Reasoning | the *Thinking* block above |\n\
         | Tool calls | {tools_hint} |\n\n\
         ```rust\nfn main() {{\n    println!(\"hello from lmchatkit\");\n}}\n```\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lmchatkit_protocol::Tool;

    fn run(req: CompleteRequest) -> Vec<Event> {
        script(&req)
    }

    #[test]
    fn streams_reasoning_then_markdown_then_done_with_usage() {
        let ev = run(CompleteRequest {
            messages: vec![Message::user("hello")],
            ..Default::default()
        });
        let reasoning: String = ev
            .iter()
            .filter_map(|e| match e {
                Event::Reasoning { reasoning } => Some(reasoning.as_str()),
                _ => None,
            })
            .collect();
        let text: String = ev
            .iter()
            .filter_map(|e| match e {
                Event::Delta { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert!(reasoning.starts_with("The user wants"));
        assert!(
            text.starts_with("## This is the built-in demo model")
                && text.contains("| What | Where |")
                && text.contains("```rust")
        );
        assert!(matches!(
            ev.last(),
            Some(Event::Done {
                finish_reason: Some(FinishReason::Stop),
                usage: Some(_)
            })
        ));
    }

    #[test]
    fn calls_a_matching_tool_and_summarises_its_result() {
        let tools = vec![
            Tool::new("demo__echo"),
            Tool::new("demo__get_time")
                .with_input_schema(json!({"type": "object", "required": ["zone"]})),
        ];
        let ev = run(CompleteRequest {
            messages: vec![Message::user("what time is it? use a tool")],
            tools: tools.clone(),
            ..Default::default()
        });
        let call = ev
            .iter()
            .find_map(|e| match e {
                Event::ToolCall { tool_call } => Some(tool_call.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.clone()),
            ("demo__get_time", json!({"zone": "demo"}))
        );
        assert!(matches!(
            ev.last(),
            Some(Event::Done {
                finish_reason: Some(FinishReason::ToolCalls),
                ..
            })
        ));
        let msgs = vec![
            Message::user("use a tool"),
            Message::tool("demo_call_1", "demo__get_time", "12:00"),
        ];
        let text: String = run(CompleteRequest {
            messages: msgs,
            tools,
            ..Default::default()
        })
        .iter()
        .filter_map(|e| match e {
            Event::Delta { delta } => Some(delta.clone()),
            _ => None,
        })
        .collect();
        assert!(
            text.contains("**demo__get_time** answered") && text.contains("12:00"),
            "{text}"
        );
    }

    #[test]
    fn without_tools_it_says_so_instead_of_calling() {
        let ev = run(CompleteRequest {
            messages: vec![Message::user("use a tool")],
            ..Default::default()
        });
        assert!(!ev.iter().any(|e| matches!(e, Event::ToolCall { .. })));
    }
}
