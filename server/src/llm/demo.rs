//! The built-in demo model: a clearly labelled stand-in that needs no upstream, so a first run
//! with nothing configured shows every part of the UI. It streams a Markdown reply (heading,
//! table, code block) word by word after a short reasoning phase, and when asked to use a tool
//! it calls one, then summarises the tool's result.
//!
//! Which tool (matching is case-insensitive; nothing is called when no tool is offered):
//! - a request naming an **app word** ([`APP_WORDS`]: "clock", "dashboard", "app", "view",
//!   "widget", as whole words — "show me the clock", "use the demo app") calls an offered MCP
//!   App tool (one with `_meta.ui.resourceUri`): the one the request names, else the first, so
//!   the view can be tried;
//! - else a request containing a **tool word** ([`TOOL_WORDS`]: "tool", "time", "weather",
//!   "call", "roll", "dice") calls the tool it names (else the first tool);
//! - anything else ("hello") gets the Markdown reply.
//!
//! A request **names** a tool when the tool's full name (without its `server__` prefix) appears
//! in it; failing that, the tool sharing the most words (of more than three letters) of its name
//! with the request, the first on a tie. So "get-cohort-data" picks `get-cohort-data`, not
//! `get-budget-data`, although both contain "data".
//!
//! **Every call has an id of its own** (`demo_call_{n}_{random}`): a chat holds many calls, and
//! a UI that saw the same id twice could take one call's result for another's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use lmchatkit_protocol::{Event, FinishReason, Message, Model, Role, Tool, ToolCall, Usage};
use serde_json::{Value, json};

use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};

/// The demo model's id (bare: the demo model is the only model when it runs).
pub const DEMO_MODEL_ID: &str = "lmchatkit-demo";

/// The demo model's provider name, under which the catalog describes it
/// ([`DemoModel::catalog_entry`]).
pub const DEMO_PROVIDER: &str = "demo";

/// Whole words that make the demo model call an MCP App tool (see the module docs).
pub const APP_WORDS: &[&str] = &["clock", "dashboard", "app", "view", "widget"];

/// Substrings that make the demo model call a tool (see the module docs).
pub const TOOL_WORDS: &[&str] = &["tool", "time", "weather", "call", "roll", "dice"];

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

    /// The demo model as the catalog describes it: provider [`DEMO_PROVIDER`], price 0 (it runs
    /// in-process, so its replies show a $0 cost). Its bare id [`DEMO_MODEL_ID`] resolves to
    /// this entry in a catalog where no other provider has a model of that name.
    ///
    /// ```
    /// use lmchatkit::llm::DemoModel;
    /// use lmchatkit::llm::demo::{DEMO_MODEL_ID, DEMO_PROVIDER};
    /// use lmchatkit::models::{Catalog, Price};
    ///
    /// let catalog = Catalog::builtin()
    ///     .with_provider(DEMO_PROVIDER, true, None)
    ///     .with_entry(DemoModel::catalog_entry());
    /// assert_eq!(catalog.price(DEMO_MODEL_ID), Some(Price::new(0.0, 0.0)));
    /// ```
    pub fn catalog_entry() -> crate::models::ModelEntry {
        crate::models::ModelEntry::new(DEMO_PROVIDER, DEMO_MODEL_ID)
            .with_label("Demo model (built in)")
            .with_price(crate::models::Price::new(0.0, 0.0))
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
            provider: Some(DEMO_PROVIDER.into()),
            ..Model::default()
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
    if let Some(tool) = app_tool(req, &asked).or_else(|| pick_tool(req, &asked)) {
        let (id, args) = (call_id(), arguments(tool));
        out.extend(argument_pieces(&id, &tool.name, &args));
        out.push(Event::tool_call(ToolCall::new(id, tool.name.clone(), args)));
        return finish(out, FinishReason::ToolCalls);
    }
    let has_app = req.tools.iter().any(is_app);
    out.extend(words(&reply(&asked, req.tools.is_empty(), has_app)));
    finish(out, FinishReason::Stop)
}

/// A call id never issued before by this process (the counter), nor, most likely, by an earlier
/// one whose calls are in a stored chat (the random part).
fn call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("demo_call_{n}_{:08x}", rand::random::<u32>())
}

fn finish(mut out: Vec<Event>, reason: FinishReason) -> Vec<Event> {
    let completion = out.len() as u64;
    out.push(Event::done(
        reason,
        Some(Usage {
            prompt_tokens: Some(42),
            completion_tokens: Some(completion),
            total_tokens: Some(42 + completion),
            ..Default::default()
        }),
    ));
    out
}

/// The arguments of call `id` as a model streams them: the JSON text in pieces of at most
/// [`ARGUMENT_PIECE`] characters, the first one empty (the call is known before its
/// arguments).
fn argument_pieces(id: &str, name: &str, args: &Value) -> Vec<Event> {
    let text: Vec<char> = args.to_string().chars().collect();
    std::iter::once(Event::tool_call_delta(id, name, ""))
        .chain(
            text.chunks(ARGUMENT_PIECE)
                .map(|c| Event::tool_call_delta(id, name, c.iter().collect::<String>())),
        )
        .collect()
}

/// The most characters of a call's arguments the demo model streams at once.
const ARGUMENT_PIECE: usize = 6;

/// Streams `text` a word (with its trailing whitespace) at a time.
fn words(text: &str) -> impl Iterator<Item = Event> + '_ {
    text.split_inclusive([' ', '\n']).map(Event::delta)
}

fn text_of(m: &Message) -> String {
    m.content.joined_text(" ")
}

/// An MCP App tool, when the request names an app word: the one the request names, else the
/// first.
fn app_tool<'a>(req: &'a CompleteRequest, asked: &str) -> Option<&'a Tool> {
    let asked = asked.to_lowercase();
    let mut words = asked.split(|c: char| !c.is_alphanumeric());
    if !words.any(|w| APP_WORDS.contains(&w)) {
        return None;
    }
    let apps = || req.tools.iter().filter(|t| is_app(t));
    named(apps(), &asked).or_else(|| apps().next())
}

/// An MCP App tool: its result is shown in a view.
fn is_app(tool: &Tool) -> bool {
    tool.ui.as_ref().is_some_and(|ui| ui.resource_uri.is_some())
}

/// A tool matching the request by name (else the first), when it contains a tool word.
fn pick_tool<'a>(req: &'a CompleteRequest, asked: &str) -> Option<&'a Tool> {
    let asked = asked.to_lowercase();
    if !TOOL_WORDS.iter().any(|w| asked.contains(w)) {
        return None;
    }
    named(req.tools.iter(), &asked).or_else(|| req.tools.first())
}

/// The tool `asked` (lower-cased) names: the first whose short name is in it, else the one
/// sharing the most words longer than three letters with it (the first on a tie).
fn named<'a>(tools: impl Iterator<Item = &'a Tool>, asked: &str) -> Option<&'a Tool> {
    let mut best: Option<(&Tool, usize)> = None;
    for t in tools {
        let short = t.name.rsplit("__").next().unwrap_or(&t.name).to_lowercase();
        if asked.contains(&short) {
            return Some(t);
        }
        let shared = short
            .split(['_', '-'])
            .filter(|w| w.len() > 3 && asked.contains(w))
            .count();
        if shared > 0 && best.is_none_or(|(_, n)| shared > n) {
            best = Some((t, shared));
        }
    }
    best.map(|(t, _)| t)
}

/// Arguments for `tool`: its required arguments filled with something sensible.
fn arguments(tool: &Tool) -> Value {
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
    Value::Object(args)
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

fn reply(asked: &str, no_tools: bool, has_app: bool) -> String {
    let quoted: String = asked.chars().take(80).collect();
    let tools_hint = if no_tools {
        "No tools are configured, so I cannot demonstrate a tool call."
    } else if has_app {
        "Ask me to **use a tool**, or to **show the clock** (an MCP App view), and I will call it after you approve."
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

    /// The streamed reply text.
    fn text_deltas(ev: &[Event]) -> String {
        ev.iter()
            .filter_map(|e| match e {
                Event::Delta { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
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
        let text = text_deltas(&ev);
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
                usage: Some(_),
                ..
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
                Event::ToolCall { tool_call, .. } => Some(tool_call.clone()),
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
        let text = text_deltas(&run(CompleteRequest {
            messages: msgs,
            tools,
            ..Default::default()
        }));
        assert!(
            text.contains("**demo__get_time** answered") && text.contains("12:00"),
            "{text}"
        );
    }

    #[test]
    fn a_calls_arguments_stream_in_pieces_that_add_up_to_the_call() {
        let tools = vec![
            Tool::new("demo__get_time")
                .with_input_schema(json!({"type": "object", "required": ["zone", "format"]})),
        ];
        let ev = run(CompleteRequest {
            messages: vec![Message::user("use a tool")],
            tools,
            ..Default::default()
        });
        let pieces: Vec<(&str, &str, &str)> = ev
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallDelta {
                    id,
                    name,
                    arguments_delta,
                    ..
                } => Some((id.as_str(), name.as_str(), arguments_delta.as_str())),
                _ => None,
            })
            .collect();
        let call = call_of(&ev);
        assert!(pieces.len() > 3, "{pieces:?}");
        assert_eq!(pieces[0].2, "", "the call is known before its arguments");
        assert!(pieces.iter().all(|p| p.0 == call.id && p.1 == call.name));
        let text: String = pieces.iter().map(|p| p.2).collect();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            call.arguments
        );
        // The complete call comes after its last piece.
        let last_piece = ev
            .iter()
            .rposition(|e| matches!(e, Event::ToolCallDelta { .. }));
        let the_call = ev.iter().position(|e| matches!(e, Event::ToolCall { .. }));
        assert!(last_piece < the_call);
    }

    #[test]
    fn without_tools_it_says_so_instead_of_calling() {
        let ev = run(CompleteRequest {
            messages: vec![Message::user("use a tool")],
            ..Default::default()
        });
        assert!(!ev.iter().any(|e| matches!(e, Event::ToolCall { .. })));
    }

    fn demo_tools() -> Vec<Tool> {
        let mut app = Tool::new("demo__show_clock");
        app.ui = Some(lmchatkit_protocol::UiToolMeta {
            resource_uri: Some("ui://lmchatkit-demo/clock.html".into()),
            ..Default::default()
        });
        vec![
            Tool::new("demo__roll_dice"),
            Tool::new("demo__current_time"),
            app,
        ]
    }

    fn called(ev: &[Event]) -> Option<String> {
        ev.iter().find_map(|e| match e {
            Event::ToolCall { tool_call, .. } => Some(tool_call.name.clone()),
            _ => None,
        })
    }

    fn ask(text: &str) -> Vec<Event> {
        run(CompleteRequest {
            messages: vec![Message::user(text)],
            tools: demo_tools(),
            ..Default::default()
        })
    }

    #[test]
    fn app_words_call_the_mcp_app_tool() {
        for asked in [
            "Show me the clock",
            "use the demo app, please",
            "open the dashboard",
            "what time is it? show it in a view",
        ] {
            assert_eq!(
                called(&ask(asked)).as_deref(),
                Some("demo__show_clock"),
                "{asked}"
            );
        }
    }

    #[test]
    fn tool_words_pick_by_name_and_app_words_need_whole_words() {
        assert_eq!(
            called(&ask("what time is it?")).as_deref(),
            Some("demo__current_time")
        );
        assert_eq!(
            called(&ask("roll a die")).as_deref(),
            Some("demo__roll_dice")
        );
        // "happy" and "application" contain "app" but are not the word.
        assert_eq!(called(&ask("happy application")), None);
    }

    #[test]
    fn hello_gets_markdown_that_mentions_the_clock() {
        let ev = ask("hello");
        assert_eq!(called(&ev), None);
        let text = text_deltas(&ev);
        assert!(
            text.starts_with("## This is the built-in demo model")
                && text.contains("**show the clock**"),
            "{text}"
        );
    }

    #[test]
    fn among_app_tools_the_named_one_wins() {
        let mut tools = demo_tools();
        let mut other = tools[2].clone();
        other.name = "test__legacy_app".into();
        tools.insert(0, other);
        let call = |text: &str| {
            called(&run(CompleteRequest {
                messages: vec![Message::user(text)],
                tools: tools.clone(),
                ..Default::default()
            }))
        };
        assert_eq!(call("use the app").as_deref(), Some("test__legacy_app"));
        assert_eq!(
            call("show the clock app").as_deref(),
            Some("demo__show_clock")
        );
    }

    fn call_of(ev: &[Event]) -> ToolCall {
        ev.iter()
            .find_map(|e| match e {
                Event::ToolCall { tool_call, .. } => Some(tool_call.clone()),
                _ => None,
            })
            .expect("a tool call")
    }

    #[test]
    fn every_call_gets_an_id_of_its_own() {
        let ids: Vec<String> = (0..3)
            .map(|_| call_of(&ask("what time is it?")).id)
            .collect();
        assert!(ids.iter().all(|id| id.starts_with("demo_call_")), "{ids:?}");
        assert_ne!(ids[0], ids[1]);
        assert_ne!(ids[1], ids[2]);
        assert_ne!(ids[0], ids[2]);
    }

    #[test]
    fn a_tool_named_in_full_wins_over_one_that_shares_a_word() {
        let tools = vec![
            Tool::new("budget__get-budget-data"),
            Tool::new("cohort__get-cohort-data"),
            Tool::new("monitor__get-system-stats"),
        ];
        let call = |text: &str| {
            called(&run(CompleteRequest {
                messages: vec![Message::user(text)],
                tools: tools.clone(),
                ..Default::default()
            }))
        };
        assert_eq!(
            call("use the tool get-cohort-data").as_deref(),
            Some("cohort__get-cohort-data")
        );
        assert_eq!(
            call("call get-budget-data please").as_deref(),
            Some("budget__get-budget-data")
        );
        // Without a full name, the tool sharing the most words wins.
        assert_eq!(
            call("use a tool for the cohort data").as_deref(),
            Some("cohort__get-cohort-data")
        );
    }

    #[test]
    fn app_words_without_an_app_tool_get_the_reply() {
        let ev = run(CompleteRequest {
            messages: vec![Message::user("show me the clock")],
            tools: vec![Tool::new("demo__roll_dice")],
            ..Default::default()
        });
        assert_eq!(called(&ev), None);
    }
}
