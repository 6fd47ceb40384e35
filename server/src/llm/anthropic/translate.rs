//! The stream translator: Anthropic Messages SSE events in, [`Event`]s out.
//!
//! SSE framing (CRLF, chunk boundaries mid-line or mid-UTF-8, the size cap) is the shared SSE
//! parser's job (`crate::event_stream`); this module is a pure state machine over the events'
//! JSON. The event kind is the JSON's `type`, falling back to the SSE `event:` name.
//!
//! When a reply counts as finished follows the OpenAI translator's rule: the stop reason
//! (`message_delta.delta.stop_reason`) or `message_stop` finishes it; a body that ends, cleanly
//! or not, before either is a reply cut off: what was streamed stays, then one `Error`, and the
//! tool calls are dropped (named in the error), never emitted. Tool calls are therefore
//! emitted once the stop reason has arrived, not at their `content_block_stop`: a finished
//! block proves its input complete, not that the list of calls is. Their input goes out
//! as it streams, as `ToolCallDelta`s (see [`translate`]), which nobody acts on.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt::Display;

use bytes::Bytes;
use futures_util::Stream;
use lmchatkit_protocol::{Event, FinishReason, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::llm::openai::translate::{
    Flow, Reader, arguments, cut_off, generated_id, queue_calls, read_events,
};
use crate::llm::openai::transport::LogSpan;

/// The most a tool call's accumulated input JSON may grow to
/// ([`crate::llm::MAX_TOOL_ARGUMENTS_BYTES`]).
pub(super) const MAX_ARGUMENTS_BYTES: usize = crate::llm::MAX_TOOL_ARGUMENTS_BYTES;

/// Translates an Anthropic Messages SSE body into chat [`Event`]s.
///
/// - `content_block_delta`: `text_delta` → `Delta`; `thinking_delta` → `Reasoning`;
///   `input_json_delta` appended to its tool-use block and passed on as a `ToolCallDelta`;
///   `signature_delta`, `citations_delta` and unknown deltas are ignored. A `text` block that
///   starts with text emits it.
/// - `content_block_start` of a `tool_use` opens a call (`id`, `name`; its `input` is used
///   when no JSON is streamed for it) and emits its first `ToolCallDelta`, empty (none for a
///   block without a name). `redacted_thinking` and other blocks are ignored.
/// - Calls are emitted in block order once the stop reason has come (see the module docs),
///   their input normalised (empty → `{}`, valid JSON → that value, invalid JSON → kept as a
///   JSON string); one without a name is dropped with a warning. `content_block_stop` is
///   ignored.
/// - `stop_reason`: `end_turn`, `stop_sequence`, `pause_turn` → `stop`; `max_tokens` and
///   `model_context_window_exceeded` → `length`; `tool_use` → `tool_calls`; `refusal` →
///   `content_filter`; anything else `stop` (`tool_calls` when calls were made).
/// - Usage: `message_start.message.usage` then `message_delta.usage` (whose counts are
///   cumulative and replace earlier ones). `prompt_tokens` = `input_tokens` +
///   `cache_creation_input_tokens` + `cache_read_input_tokens` (Anthropic counts cached prompt
///   tokens apart from `input_tokens`; all three are prompt), `completion_tokens` =
///   `output_tokens` (thinking included), `total_tokens` their sum.
/// - `error` → one `Error` (`upstream error: <type>: <message>`), ending the stream.
/// - `message_stop` → the tool calls, then `Done`; nothing after it is read. `ping` and unknown
///   events are ignored; data that is not JSON is skipped with a warning.
/// - The end of the body (or a transport error) after the stop reason → tool calls, then
///   `Done`; before it → the reply was cut off (see the module docs); before any event → an
///   error saying no reply came.
pub fn translate<S, E>(bytes: S) -> impl Stream<Item = Event> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Display + Send,
{
    read_events(bytes, Accumulator::default())
}

/// A tool-use block being assembled.
#[derive(Debug, Default)]
struct PendingCall {
    /// The content block's index.
    index: u64,
    id: String,
    name: String,
    /// The streamed input JSON.
    json: String,
    /// The block's `input` from `content_block_start`, used when no JSON is streamed.
    start_input: Option<Value>,
}

/// Token counts as Anthropic reports them.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    input: Option<u64>,
    cache_creation: Option<u64>,
    cache_read: Option<u64>,
    output: Option<u64>,
}

#[derive(Debug, Default)]
pub(in crate::llm) struct Accumulator {
    calls: Vec<PendingCall>,
    stop_reason: Option<String>,
    counts: Counts,
    /// A data event was read: an end of the body now cuts a reply off.
    started: bool,
    /// Where the warnings go.
    log: LogSpan,
}

/// One SSE event's JSON, every event kind's fields flattened (borrowed where unescaped).
#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
struct UsageIn {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl Reader for Accumulator {
    fn log_to(&mut self, log: LogSpan) {
        self.log = log;
    }

    fn on_sse(&mut self, event: &str, data: &str, out: &mut VecDeque<Event>) -> Flow {
        let data = data.trim();
        if data.is_empty() {
            return Flow::Continue;
        }
        self.started = true;
        let parsed = match serde_json::from_str::<Data<'_>>(data) {
            Ok(parsed) => parsed,
            Err(_) if event == "error" => {
                out.push_back(Event::error(format!("upstream error: {data}")));
                return Flow::End;
            }
            Err(_) => {
                self.log.log(|| tracing::warn!(event = %event, "skipping an upstream event that is not a JSON object"));
                return Flow::Continue;
            }
        };
        let kind = parsed.kind.as_deref().unwrap_or(event);
        match kind {
            "message_start" => {
                if let Some(u) = parsed.message.and_then(|m| m.usage) {
                    self.add_usage(&u);
                }
            }
            "content_block_start" => self.on_block_start(parsed.index, parsed.content_block, out),
            "content_block_delta" => {
                if let Some(d) = parsed.delta {
                    return self.on_delta(parsed.index, d, out);
                }
            }
            "message_delta" => {
                let reason = parsed.delta.and_then(|d| d.stop_reason);
                if let Some(reason) = reason.filter(|r| !r.is_empty()) {
                    self.stop_reason = Some(reason.into_owned());
                }
                if let Some(u) = parsed.usage {
                    self.add_usage(&u);
                }
            }
            "message_stop" => {
                self.finish(out);
                return Flow::End;
            }
            "error" => {
                out.push_back(Event::error(error_message(parsed.error.as_ref(), data)));
                return Flow::End;
            }
            _ => {} // `ping`, and event kinds added later.
        }
        Flow::Continue
    }

    /// The body ended without `message_stop`: cleanly when `cause` is `None`, else with that
    /// error. After the stop reason the reply is complete; before it, it was cut off.
    fn body_ended(&mut self, cause: Option<String>, out: &mut VecDeque<Event>) {
        if self.stop_reason.is_some() {
            if let Some(cause) = &cause {
                self.log.log(|| tracing::warn!(error = %cause, "upstream stream failed after the stop reason; the reply is complete"));
            }
            self.finish(out);
            return;
        }
        let names: Vec<String> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|c| c.name)
            .filter(|n| !n.is_empty())
            .collect();
        out.push_back(cut_off(self.started, cause, &names, &self.log));
    }
}

impl Accumulator {
    fn on_block_start(
        &mut self,
        index: Option<u64>,
        block: Option<Value>,
        out: &mut VecDeque<Event>,
    ) {
        let Some(block) = block else { return };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push_back(Event::delta(t));
                }
            }
            Some("tool_use") => {
                let field = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let (id, name) = (field("id"), field("name"));
                // The call's id from its first delta on (generated when the block has none).
                let id = match id.is_empty() {
                    true => generated_id("toolu"),
                    false => id,
                };
                if !name.is_empty() {
                    out.push_back(Event::tool_call_delta(&id, &name, ""));
                }
                self.calls.push(PendingCall {
                    index: index.unwrap_or(self.calls.len() as u64),
                    id,
                    name,
                    start_input: block.get("input").cloned(),
                    ..PendingCall::default()
                });
            }
            _ => {} // thinking (its text comes as deltas), redacted_thinking, server tools…
        }
    }

    fn on_delta(&mut self, index: Option<u64>, d: Delta<'_>, out: &mut VecDeque<Event>) -> Flow {
        let some = |v: Option<Cow<'_, str>>| v.filter(|s| !s.is_empty()).map(Cow::into_owned);
        match d.kind.as_deref() {
            Some("text_delta") => {
                if let Some(t) = some(d.text) {
                    out.push_back(Event::delta(t));
                }
            }
            Some("thinking_delta") => {
                if let Some(t) = some(d.thinking) {
                    out.push_back(Event::reasoning(t));
                }
            }
            Some("input_json_delta") => {
                let Some(piece) = d.partial_json else {
                    return Flow::Continue;
                };
                let Some(call) = self.calls.iter_mut().rev().find(|c| Some(c.index) == index)
                else {
                    self.log.log(|| {
                        tracing::warn!(?index, "skipping tool input for a block that never started")
                    });
                    return Flow::Continue;
                };
                call.json.push_str(&piece);
                if call.json.len() > MAX_ARGUMENTS_BYTES {
                    out.push_back(Event::error(format!(
                        "the model's arguments for tool {:?} exceed {MAX_ARGUMENTS_BYTES} bytes; \
                         the call was dropped",
                        call.name
                    )));
                    return Flow::End;
                }
                if !call.name.is_empty() && !piece.is_empty() {
                    out.push_back(Event::tool_call_delta(&call.id, &call.name, piece));
                }
            }
            _ => {} // signature_delta, citations_delta, and delta kinds added later.
        }
        Flow::Continue
    }

    /// Later counts replace earlier ones (`message_delta`'s are cumulative).
    fn add_usage(&mut self, u: &UsageIn) {
        let c = &mut self.counts;
        c.input = u.input_tokens.or(c.input);
        c.cache_creation = u.cache_creation_input_tokens.or(c.cache_creation);
        c.cache_read = u.cache_read_input_tokens.or(c.cache_read);
        c.output = u.output_tokens.or(c.output);
    }

    fn usage(&self) -> Option<Usage> {
        let c = self.counts;
        let prompt = match (c.input, c.cache_creation, c.cache_read) {
            (None, None, None) => None,
            (i, w, r) => Some(i.unwrap_or(0) + w.unwrap_or(0) + r.unwrap_or(0)),
        };
        if prompt.is_none() && c.output.is_none() {
            return None;
        }
        Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: c.output,
            total_tokens: Some(prompt.unwrap_or(0) + c.output.unwrap_or(0)),
            // Reads from the cache are the cheap share of the prompt; writes cost more than
            // input, which `Usage` does not tell apart (they stay in `prompt_tokens`).
            cached_prompt_tokens: c.cache_read,
            reasoning_tokens: None,
            context_tokens: None,
        })
    }

    /// Emits the gathered tool calls, then `Done`.
    fn finish(&mut self, out: &mut VecDeque<Event>) {
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|c| c.index);
        let calls = calls
            .into_iter()
            .map(|c| (c.id, c.name, input(&c.json, c.start_input)));
        let emitted = queue_calls(calls, "toolu", out, &self.log);
        let reason = match self.stop_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
            Some("refusal") => FinishReason::ContentFilter,
            Some("tool_use") => FinishReason::ToolCalls,
            _ if emitted > 0 => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        out.push_back(Event::done(reason, self.usage()));
    }
}

/// A call's input: the streamed JSON as the OpenAI translator normalises arguments, or, when
/// none was streamed, the block's own `input` (`{}` when absent).
fn input(json: &str, start: Option<Value>) -> Value {
    match start.filter(|v| !v.is_null()) {
        Some(given) if json.trim().is_empty() => given,
        _ => arguments(json),
    }
}

/// `upstream error: <type>: <message>` from `{"type": "error", "error": {type, message}}`.
fn error_message(err: Option<&Value>, data: &str) -> String {
    let field = |k: &str| {
        err.and_then(|e| e.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (field("type"), field("message")) {
        (Some(t), Some(m)) => format!("upstream error: {t}: {m}"),
        (None, Some(m)) => format!("upstream error: {m}"),
        (Some(t), None) => format!("upstream error: {t}"),
        (None, None) => format!("upstream error: {data}"),
    }
}

#[cfg(test)]
mod caps_tests {
    use super::*;
    use futures_util::{StreamExt, stream};

    #[tokio::test]
    async fn tool_input_past_the_cap_ends_the_turn_in_an_error() {
        let piece = "x".repeat(64 << 10);
        let mut body = String::from(
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
             \"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"big\",\"input\":{}}}\n\n",
        );
        for _ in 0..(MAX_ARGUMENTS_BYTES / piece.len() + 2) {
            let d = serde_json::json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece}});
            body.push_str(&format!("data: {d}\n\n"));
        }
        body.push_str("data: {\"type\":\"message_stop\"}\n\n");
        let bytes = stream::iter([Ok::<_, std::io::Error>(Bytes::from(body))]);
        let events: Vec<Event> = translate(bytes).collect().await;
        assert!(
            !events.iter().any(|e| matches!(e, Event::ToolCall { .. })),
            "no call"
        );
        // The pieces before the cap went out; none after it.
        let pieces = events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallDelta { .. }))
            .count();
        assert!(pieces < MAX_ARGUMENTS_BYTES / piece.len() + 2, "{pieces}");
        let Some(Event::Error { error }) = events.last() else {
            panic!("ends in an error")
        };
        assert!(error.contains("big") && error.contains("exceed"), "{error}");
    }
}
