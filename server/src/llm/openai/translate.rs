//! The stream translator: OpenAI-compatible chat-completion SSE chunks in, [`Event`]s out.
//!
//! SSE framing (CRLF, `:` keep-alives, `event:`/`id:` lines, chunk boundaries mid-line or
//! mid-UTF-8, the size cap) is [`crate::event_stream`]'s job; this module reads the JSON chunks.
//! `<think>` tags inside `content` are left alone: the UI splits them out.
//!
//! When a reply counts as finished — decided here, for every OpenAI-compatible upstream:
//!
//! - The upstream says it is finished with a `finish_reason` on the first choice or with
//!   `[DONE]`; either is enough (many servers omit `[DONE]`, a few never send a finish reason).
//!   The turn then ends in `Done`, whatever happens to the body afterwards: a reset or a stall
//!   after the finish reason is only logged, the text is complete.
//! - A body that ends before either — cleanly (a dropped close-delimited connection, a proxy
//!   that gave up) or with a transport error or stall — is a reply cut off. What was already
//!   streamed stays (the UI keeps it as the partial answer), then one `Error` saying "the reply
//!   was cut off" with the cause when there is one, and no `Done`: a truncated reply must never
//!   look complete.
//! - The tool calls of a cut-off reply are dropped, none emitted, even those whose arguments
//!   parse: without a finish reason nothing shows that the arguments, or the list of calls,
//!   were complete, and an approved call would run with whatever arrived. The error names them.
//!   Their arguments went out as `ToolCallDelta`s while they streamed (a call is only ever
//!   acted on as a complete `ToolCall`): a client drops a streamed call that no `ToolCall`
//!   completed when the reply ends.
//! - A body that ends before any chunk (an empty 200 reply) is an error too, worded as no reply
//!   rather than a cut one; a failure before any chunk keeps its own text (e.g. "upstream
//!   stalled: …").

use std::collections::VecDeque;
use std::fmt::Display;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use lmchatkit_protocol::{Event, FinishReason, ToolCall, Usage};
use std::borrow::Cow;

use serde_json::Value;

use super::plain_chunk::{self, PlainChoice};
use super::transport::{LogSpan, MAX_SSE_EVENT};
use crate::event_stream::SseParser;

/// Translates an OpenAI-compatible chat-completions SSE body into chat [`Event`]s.
///
/// - `delta.content` → `Delta`; a `refusal` → `Delta` too, so the user sees it; content given
///   as an array of `{type:"text", text}` parts is read as well.
/// - `delta.reasoning_content` and `delta.reasoning` → `Reasoning` (once when a chunk carries
///   both with the same text).
/// - `delta.tool_calls[]` are accumulated by `index` (`id`/`name` set when non-empty,
///   `arguments` appended); a fragment without an index continues the current call unless it
///   carries a different `id`; a legacy `delta.function_call` is read as a tool call. Each
///   fragment is passed on at once as a `ToolCallDelta` (the first one, possibly with an empty
///   `delta`, as soon as the call has a name; arguments that came before the name go with it).
///   At the end the calls are emitted in index order as `ToolCall`s, `arguments` normalised:
///   empty → `{}`, valid JSON → that value, invalid JSON → kept as a JSON string. A call
///   without an id gets a generated `call_…` id (the one its deltas carried); a call without a
///   name is dropped with a warning (nothing could run it; none of its deltas went out).
/// - `finish_reason` (last wins) maps `stop`, `length`, `content_filter`, `tool_calls` and legacy
///   `function_call`; anything else is `stop`, and `stop`/none becomes `tool_calls` when calls
///   were made.
/// - `usage` (any chunk, including a final one with empty `choices`; also Groq's
///   `x_groq.usage`) → `Done.usage`, the last one winning; `prompt_tokens_details.cached_tokens`
///   and `completion_tokens_details.reasoning_tokens` are kept as the cached and reasoning
///   shares.
/// - A `{"error": …}` chunk (or an `event: error` frame) → one `Error` event, ending the stream.
/// - A chunk that is not JSON is skipped with a warning.
/// - `[DONE]` → the tool calls, then `Done`. Nothing after `[DONE]` is read.
/// - The end of the body (a last event without its blank line is still read), or a transport
///   error (its `Display` text is the cause), after a finish reason → the tool calls, then
///   `Done`, as a missing `[DONE]` is common.
/// - The same before any finish reason → the reply was cut off: one `Error` ("the reply was cut
///   off: …" with the cause, naming the dropped tool calls), no tool calls and no `Done`; what was
///   already emitted stays valid. See the module docs.
///
/// Only the first choice (`index` 0 or absent) is read: the chat shows one answer.
pub fn translate<S, E>(bytes: S) -> impl Stream<Item = Event> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Display + Send,
{
    read_events(bytes, Accumulator::default())
}

/// What a translator does with the SSE events of one reply; [`read_events`] drives it. Shared
/// with the Anthropic translator.
pub(in crate::llm) trait Reader: Send {
    /// Sends the reader's warnings to `log`'s span.
    fn log_to(&mut self, log: LogSpan);
    /// One SSE event (its `event:` name, `message` when absent, and its data); `Flow::End` ends the
    /// turn and drops the body.
    fn on_sse(&mut self, event: &str, data: &str, out: &mut VecDeque<Event>) -> Flow;
    /// The body ended before the reader ended the turn: cleanly when `cause` is `None`, else
    /// with that error.
    fn body_ended(&mut self, cause: Option<String>, out: &mut VecDeque<Event>);
}

/// A reply's events from `bytes`, read by a fresh `R` whose warnings go to `log`'s span: what
/// both backends' requests stream (their public `translate` is the same with no span).
pub(in crate::llm) fn read_logged<R, S, E>(
    bytes: S,
    log: LogSpan,
) -> impl Stream<Item = Event> + Send
where
    R: Reader + Default,
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Display + Send,
{
    let mut reader = R::default();
    reader.log_to(log);
    read_events(bytes, reader)
}

/// Splits an SSE body into events for `reader` ([`SseParser`], events up to
/// [`MAX_SSE_EVENT`] bytes) and yields the events it queues.
pub(in crate::llm) fn read_events<S, E, R>(bytes: S, reader: R) -> impl Stream<Item = Event> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Display + Send,
    R: Reader,
{
    let state = State {
        body: Body::Reading(Box::pin(bytes)),
        parser: SseParser::new(MAX_SSE_EVENT),
        acc: reader,
        queue: VecDeque::new(),
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.queue.pop_front() {
                return Some((ev, st));
            }
            if matches!(st.body, Body::Done) {
                return None;
            }
            // The events already received go first.
            match st.parser.next_event() {
                Some(Ok(sse)) => {
                    if st.acc.on_sse(sse.event, sse.data, &mut st.queue) == Flow::End {
                        st.body = Body::Done;
                    }
                    continue;
                }
                Some(Err(e)) => {
                    st.body = Body::Done;
                    st.acc.body_ended(Some(e.to_string()), &mut st.queue);
                    continue;
                }
                None => {}
            }
            let Body::Reading(body) = &mut st.body else {
                st.body = Body::Done;
                st.acc.body_ended(None, &mut st.queue);
                continue;
            };
            match body.next().await {
                Some(Ok(bytes)) => st.parser.push(&bytes),
                Some(Err(e)) => {
                    st.body = Body::Done;
                    st.acc.body_ended(Some(e.to_string()), &mut st.queue);
                }
                None => {
                    // A final event missing its blank line is still read.
                    st.parser.push(b"\n\n");
                    st.body = Body::Ended;
                }
            }
        }
    })
}

struct State<T, R> {
    body: Body<T>,
    parser: SseParser,
    acc: R,
    queue: VecDeque<Event>,
}

/// Where the body is.
enum Body<T> {
    /// Being read.
    Reading(std::pin::Pin<Box<T>>),
    /// Ended cleanly; the parser holds its last events.
    Ended,
    /// The turn is over (the body dropped, when it was not done).
    Done,
}

/// Whether a reply goes on after an event.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::llm) enum Flow {
    /// Read the next event.
    Continue,
    /// The turn is over: read no more.
    End,
}

/// The error ending a reply that stopped before it was finished: "the reply was cut off: …"
/// once an event was read (`started`), with `cause` (else the upstream ended the stream), and
/// the `dropped` tool calls named; logged as a warning in `log`.
pub(in crate::llm) fn cut_off(
    started: bool,
    cause: Option<String>,
    dropped: &[String],
    log: &LogSpan,
) -> Event {
    let mut msg = match (started, cause) {
        (true, Some(cause)) => format!("the reply was cut off: {cause}"),
        (true, None) => "the reply was cut off: the upstream ended the stream before the \
                         reply was finished"
            .to_owned(),
        (false, Some(cause)) => cause,
        (false, None) => "the upstream ended the stream without sending a reply".to_owned(),
    };
    match dropped {
        [] => {}
        [one] => msg.push_str(&format!("; its unfinished tool call {one} was dropped")),
        many => msg.push_str(&format!(
            "; its unfinished tool calls {} were dropped",
            many.join(", ")
        )),
    }
    log.log(|| tracing::warn!(error = %msg, "upstream reply ended early"));
    Event::error(msg)
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct PendingCall {
    index: u64,
    /// The upstream's id (empty until it sends one).
    id: String,
    name: String,
    arguments: String,
    /// The id its `ToolCallDelta`s carried, once one went out (the upstream's, else a
    /// generated one): the complete call keeps it.
    streamed_id: Option<String>,
    /// How much of `arguments` went out as deltas.
    streamed: usize,
}

impl PendingCall {
    /// The arguments that arrived since the last delta, as a `ToolCallDelta` (the first one
    /// even when empty); nothing before the call has a name.
    fn delta(&mut self, prefix: &str) -> Option<Event> {
        if self.name.is_empty()
            || self.streamed_id.is_some() && self.streamed == self.arguments.len()
        {
            return None;
        }
        let id = self
            .streamed_id
            .get_or_insert_with(|| match self.id.as_str() {
                "" => generated_id(prefix),
                id => id.to_owned(),
            });
        let delta = self.arguments.get(self.streamed..).unwrap_or_default();
        self.streamed = self.arguments.len();
        Some(Event::tool_call_delta(id.clone(), self.name.clone(), delta))
    }
}

/// A call id for a call the upstream sent without one: `{prefix}_<random hex>`.
pub(in crate::llm) fn generated_id(prefix: &str) -> String {
    format!("{prefix}_{:016x}", rand::random::<u64>())
}

#[derive(Debug, Default)]
pub(in crate::llm) struct Accumulator {
    calls: Vec<PendingCall>,
    /// Position in `calls` of the call the last fragment went to.
    current: Option<usize>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// A data event was read: an end of the body now cuts a reply off.
    started: bool,
    /// A tool call's arguments grew past [`MAX_ARGUMENTS_BYTES`]: the turn ends in an error.
    oversized: Option<String>,
    /// Where the warnings go.
    log: LogSpan,
}

/// The most a tool call's accumulated arguments may grow to
/// ([`crate::llm::MAX_TOOL_ARGUMENTS_BYTES`]).
pub(super) const MAX_ARGUMENTS_BYTES: usize = crate::llm::MAX_TOOL_ARGUMENTS_BYTES;

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
        if data == "[DONE]" {
            self.finish(out);
            return Flow::End;
        }
        if event != "error" && self.on_plain_chunk(data, out) {
            return Flow::Continue;
        }
        let flow = self.on_general_chunk(event, data, out);
        if let Some(why) = self.oversized.take() {
            out.push_back(Event::error(why));
            return Flow::End;
        }
        flow
    }

    /// The body ended without `[DONE]`: cleanly when `cause` is `None`, else with that error.
    /// After a finish reason the reply is complete (tool calls, then `Done`); before one it was
    /// cut off (one `Error`, the tool calls dropped).
    fn body_ended(&mut self, cause: Option<String>, out: &mut VecDeque<Event>) {
        if self.finish_reason.is_some() {
            if let Some(cause) = &cause {
                self.log.log(|| tracing::warn!(error = %cause, "upstream stream failed after the finish reason; the reply is complete"));
            }
            self.finish(out);
            return;
        }
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|c| c.index);
        let names: Vec<String> = calls
            .into_iter()
            .map(|c| c.name)
            .filter(|n| !n.is_empty())
            .collect();
        out.push_back(cut_off(self.started, cause, &names, &self.log));
    }
}

impl Accumulator {
    /// Any chunk, parsed into a `Value`.
    fn on_general_chunk(&mut self, event: &str, data: &str, out: &mut VecDeque<Event>) -> Flow {
        let chunk: Value = match serde_json::from_str(data) {
            Ok(v @ Value::Object(_)) => v,
            // Gemini may wrap an error object in an array.
            Ok(Value::Array(mut items))
                if items.first().is_some_and(|i| i.get("error").is_some()) =>
            {
                items.swap_remove(0)
            }
            Ok(_) | Err(_) if event == "error" => {
                out.push_back(Event::error(format!("provider error: {data}")));
                return Flow::End;
            }
            Ok(_) | Err(_) => {
                self.log.log(|| tracing::warn!(chunk = %truncate(data, 200), "skipping an upstream chunk that is not a JSON object"));
                return Flow::Continue;
            }
        };
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            out.push_back(Event::error(format!(
                "provider error: {}",
                error_message(err)
            )));
            return Flow::End;
        }
        if event == "error" {
            out.push_back(Event::error(format!("provider error: {data}")));
            return Flow::End;
        }
        for usage in [chunk.get("usage"), chunk.pointer("/x_groq/usage")] {
            if let Some(u) = usage.and_then(parse_usage) {
                self.usage = Some(u);
            }
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0 {
                self.on_choice(choice, out);
            }
        }
        Flow::Continue
    }

    /// The fast path for the common chunk — text or reasoning deltas, a finish reason — read
    /// into borrowed typed fields ([`plain_chunk::read`]) instead of a `Value` tree (which
    /// costs about 3.5× as much per event). Anything else (tool calls, usage, errors, part
    /// arrays) returns false and takes the general path, with identical results.
    fn on_plain_chunk(&mut self, data: &str, out: &mut VecDeque<Event>) -> bool {
        // serde would also read a struct from an array; those are never plain chunks.
        if !data.starts_with('{') {
            return false;
        }
        let Some(chunk) = plain_chunk::read(data) else {
            return false;
        };
        if chunk.error.is_some() || chunk.usage.is_some() || chunk.x_groq.is_some() {
            return false;
        }
        let plain = |c: &PlainChoice<'_>| {
            c.message.is_none()
                && c.delta
                    .as_ref()
                    .is_none_or(|d| d.tool_calls.is_none() && d.function_call.is_none())
        };
        if !chunk.choices.iter().all(plain) {
            return false;
        }
        for choice in chunk.choices.iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(d) = &choice.delta {
                let some = |v: &Option<Cow<'_, str>>| {
                    v.as_deref().filter(|s| !s.is_empty()).map(str::to_owned)
                };
                let rc = some(&d.reasoning_content);
                if let Some(rc) = &rc {
                    out.push_back(Event::reasoning(rc.clone()));
                }
                if let Some(r) = some(&d.reasoning).filter(|r| Some(r) != rc.as_ref()) {
                    out.push_back(Event::reasoning(r));
                }
                for t in [some(&d.content), some(&d.refusal)].into_iter().flatten() {
                    out.push_back(Event::delta(t));
                }
            }
            if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        true
    }

    fn on_choice(&mut self, choice: &Value, out: &mut VecDeque<Event>) {
        // `message` stands in for `delta` in a non-streamed reply.
        if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
            let rc = text(delta.get("reasoning_content"));
            let r = text(delta.get("reasoning"));
            if let Some(rc) = rc {
                out.push_back(Event::reasoning(rc));
            }
            if let Some(r) = r.filter(|r| Some(*r) != rc) {
                out.push_back(Event::reasoning(r));
            }
            match delta.get("content") {
                Some(Value::Array(parts)) => {
                    for part in parts {
                        if let Some(t) = text(part.get("text")) {
                            out.push_back(Event::delta(t));
                        }
                    }
                }
                content => {
                    if let Some(t) = text(content) {
                        out.push_back(Event::delta(t));
                    }
                }
            }
            if let Some(t) = text(delta.get("refusal")) {
                out.push_back(Event::delta(t));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                if self.oversized.is_some() {
                    break;
                }
                let index = call.get("index").and_then(Value::as_u64);
                self.fragment(index, call.get("id"), call.get("function"), out);
            }
            if let Some(fc) = delta.get("function_call").filter(|f| f.is_object()) {
                self.fragment(None, None, Some(fc), out);
            }
        }
        if let Some(reason) = text(choice.get("finish_reason")) {
            self.finish_reason = Some(reason.to_owned());
        }
    }

    /// Adds one tool-call fragment, and passes what it added on as a `ToolCallDelta`.
    fn fragment(
        &mut self,
        index: Option<u64>,
        id: Option<&Value>,
        function: Option<&Value>,
        out: &mut VecDeque<Event>,
    ) {
        let id = text(id).unwrap_or("");
        let clash = |call: &PendingCall| !call.id.is_empty() && !id.is_empty() && call.id != id;
        let found = match index {
            Some(i) => self.calls.iter().rposition(|c| c.index == i),
            None => self.current,
        };
        let pos = match found {
            Some(p) if !clash(&self.calls[p]) => p,
            _ => {
                let index = index
                    .unwrap_or_else(|| self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0));
                self.calls.push(PendingCall {
                    index,
                    ..PendingCall::default()
                });
                self.calls.len() - 1
            }
        };
        self.current = Some(pos);
        let call = &mut self.calls[pos];
        if !id.is_empty() {
            call.id = id.to_owned();
        }
        let Some(function) = function else { return };
        if let Some(name) = text(function.get("name")) {
            call.name = name.to_owned();
        }
        match function.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            None | Some(Value::Null) => {}
            // Some servers send the arguments as an object rather than a string.
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
        if call.arguments.len() > MAX_ARGUMENTS_BYTES {
            self.oversized = Some(format!(
                "the model's arguments for tool {:?} exceed {MAX_ARGUMENTS_BYTES} bytes; the \
                 call was dropped",
                call.name
            ));
            call.arguments = String::new();
            return;
        }
        out.extend(call.delta("call"));
    }

    /// Emits the gathered tool calls, then `Done`.
    fn finish(&mut self, out: &mut VecDeque<Event>) {
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|c| c.index);
        let calls = calls.into_iter().map(|c| {
            let id = c.streamed_id.unwrap_or(c.id);
            (id, c.name, arguments(&c.arguments))
        });
        let emitted = queue_calls(calls, "call", out, &self.log);
        let reason = match self.finish_reason.as_deref().map(str::to_ascii_lowercase) {
            Some(r) if r == "length" => FinishReason::Length,
            Some(r) if r == "content_filter" => FinishReason::ContentFilter,
            Some(r) if r == "tool_calls" || r == "function_call" => FinishReason::ToolCalls,
            _ if emitted > 0 => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        out.push_back(Event::done(reason, self.usage));
    }
}

/// Queues a `ToolCall` for each `(id, name, arguments)`: a call without a name is dropped with a
/// warning in `log` (nothing could run it), a missing id becomes `{prefix}_<random hex>`.
/// Returns how many were queued.
pub(in crate::llm) fn queue_calls(
    calls: impl IntoIterator<Item = (String, String, Value)>,
    prefix: &str,
    out: &mut VecDeque<Event>,
    log: &LogSpan,
) -> usize {
    let mut queued = 0;
    for (id, name, arguments) in calls {
        if name.is_empty() {
            log.log(|| tracing::warn!(id = %id, "dropping an upstream tool call without a name"));
            continue;
        }
        let id = if id.is_empty() {
            generated_id(prefix)
        } else {
            id
        };
        out.push_back(Event::tool_call(ToolCall::new(id, name, arguments)));
        queued += 1;
    }
    queued
}

/// A non-empty string value.
fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Normalises accumulated arguments: empty → `{}`, JSON → the value, otherwise the raw string.
pub(in crate::llm) fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str(raw) {
        Ok(Value::Null) => Value::Object(Default::default()),
        Ok(v) => v,
        Err(_) => Value::String(raw.to_owned()),
    }
}

fn parse_usage(v: &Value) -> Option<Usage> {
    let field = |k: &str| v.get(k).and_then(Value::as_u64);
    let detail = |p: &str| v.pointer(p).and_then(Value::as_u64);
    let mut u = Usage {
        prompt_tokens: field("prompt_tokens"),
        completion_tokens: field("completion_tokens"),
        total_tokens: field("total_tokens"),
        cached_prompt_tokens: detail("/prompt_tokens_details/cached_tokens"),
        reasoning_tokens: detail("/completion_tokens_details/reasoning_tokens"),
        context_tokens: None,
    };
    if u == Usage::default() {
        return None;
    }
    if u.total_tokens.is_none() {
        u.total_tokens = u.prompt_tokens.zip(u.completion_tokens).map(|(p, c)| p + c);
    }
    Some(u)
}

/// The message of a provider error: `{"error": "…"}` or `{"error": {"message", "code"?}}`.
fn error_message(err: &Value) -> String {
    let message = match err {
        Value::String(s) => return s.clone(),
        Value::Object(o) => match text(o.get("message")) {
            Some(m) => m.to_owned(),
            None => return err.to_string(),
        },
        other => return other.to_string(),
    };
    match err.get("code").filter(|c| !c.is_null()) {
        Some(Value::String(c)) => format!("{message} (code {c})"),
        Some(c) => format!("{message} (code {c})"),
        None => message,
    }
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod fast_path_tests {
    use super::*;

    /// The fast path must agree with the general path, including OpenAI's `"usage": null` on
    /// every chunk, non-zero choice indexes and duplicated reasoning fields.
    #[test]
    fn plain_chunks_take_the_fast_path_with_identical_results() {
        let cases = [
            (
                true,
                r#"{"choices":[{"index":0,"delta":{"content":"a\"b","reasoning_content":"r"}}],"usage":null}"#,
            ),
            (
                true,
                r#"{"choices":[{"index":1,"delta":{"content":"skip"}},{"delta":{"reasoning":"x","reasoning_content":"x"}}]}"#,
            ),
            (
                true,
                r#"{"choices":[{"delta":{"content":null,"refusal":"no"},"finish_reason":"content_filter"}]}"#,
            ),
            (
                false,
                r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            ),
            (false, r#"{"error":{"message":"boom"},"choices":[]}"#),
            (
                false,
                r#"{"choices":[{"delta":{"content":[{"type":"text","text":"part"}]}}]}"#,
            ),
            (
                false,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            ),
            (false, r#"[]"#),
        ];
        for (expect_fast, data) in cases {
            let (mut fast, mut general) = (Accumulator::default(), Accumulator::default());
            let (mut out_fast, mut out_general) = (VecDeque::new(), VecDeque::new());
            assert_eq!(
                fast.on_plain_chunk(data, &mut out_fast),
                expect_fast,
                "{data}"
            );
            if !expect_fast {
                fast.on_general_chunk("", data, &mut out_fast);
            }
            general.on_general_chunk("", data, &mut out_general);
            fast.finish(&mut out_fast);
            general.finish(&mut out_general);
            assert_eq!(out_fast, out_general, "{data}");
        }
    }
}

#[cfg(test)]
mod caps_tests {
    use super::*;

    #[tokio::test]
    async fn tool_arguments_past_the_cap_end_the_turn_in_an_error() {
        let piece = "x".repeat(64 << 10);
        let mut body = String::new();
        let text = serde_json::json!({"choices":[{"delta":{"content":"partial "}}]});
        body.push_str(&format!("data: {text}\n\n"));
        for i in 0..(MAX_ARGUMENTS_BYTES / piece.len() + 2) {
            let args = match i {
                0 => format!("{{\"a\":\"{piece}"),
                _ => piece.clone(),
            };
            let chunk = serde_json::json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"c","function":{"name":"big","arguments":args}}]}}]});
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        let bytes = stream::iter([Ok::<_, std::io::Error>(Bytes::from(body))]);
        let events: Vec<Event> = translate(bytes).collect().await;
        assert!(matches!(&events[0], Event::Delta { .. }), "{events:?}");
        assert!(
            !events.iter().any(|e| matches!(e, Event::ToolCall { .. })),
            "no call is emitted"
        );
        match events.last() {
            Some(Event::Error { error }) => {
                assert!(error.contains("big") && error.contains("exceed"), "{error}")
            }
            other => panic!("ends in an error, not {other:?}"),
        }
    }
}
