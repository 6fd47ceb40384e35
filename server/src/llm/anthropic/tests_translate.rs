//! Translator tests: every fixture in `server/tests/fixtures/anthropic/`, fed whole and split
//! into random-size byte chunks (the OpenAI tests' deterministic splitter, so boundaries fall
//! mid-line and mid-UTF-8), plus edge cases written inline.

use std::convert::Infallible;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use lmchatkit_protocol::{Event, FinishReason, Usage};
use serde_json::{Value, json};

use super::translate;
use crate::llm::openai::tests_translate::check_fixture_in;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/anthropic")
}

async fn run(chunks: Vec<Bytes>) -> Vec<Event> {
    translate(stream::iter(chunks.into_iter().map(Ok::<_, Infallible>)))
        .collect()
        .await
}

async fn run_str(body: &str) -> Vec<Event> {
    run(vec![Bytes::copy_from_slice(body.as_bytes())]).await
}

async fn check_fixture(name: &str) {
    check_fixture_in(&fixture_dir(), name, run).await;
}

macro_rules! fixture_tests {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            check_fixture(stringify!($name)).await;
        }
    )*};
}

mod fixtures {
    use super::check_fixture;
    fixture_tests!(
        text,
        thinking,
        tool_use,
        parallel_tools,
        error_mid_stream,
        overloaded,
        cache_usage,
        cut_off,
    );
}

/// One SSE event as Anthropic frames it: `event:` named after the JSON's `type`.
pub(super) fn ev(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

pub(super) fn text(t: &str) -> String {
    ev(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
    )
}

fn stop_reason(reason: &str) -> String {
    ev(
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 3}}),
    )
}

fn message_stop() -> String {
    ev(json!({"type": "message_stop"}))
}

const CUT_OFF: &str =
    "the reply was cut off: the upstream ended the stream before the reply was finished";

fn usage(prompt: Option<u64>, completion: u64) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: Some(completion),
        total_tokens: Some(prompt.unwrap_or(0) + completion),
        ..Default::default()
    })
}

#[tokio::test]
async fn stop_reasons_map_to_finish_reasons() {
    let cases = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("pause_turn", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("refusal", FinishReason::ContentFilter),
        ("something_new", FinishReason::Stop),
    ];
    for (reason, finish) in cases {
        let body = [text("x"), stop_reason(reason), message_stop()].concat();
        assert_eq!(
            run_str(&body).await,
            [Event::delta("x"), Event::done(finish, usage(None, 3))],
            "{reason}"
        );
    }
}

#[tokio::test]
async fn a_stop_reason_then_the_end_of_the_body_is_done() {
    let body = [text("Hi"), stop_reason("end_turn")].concat();
    let cut = stream::iter([Ok(Bytes::from(body)), Err("connection reset by peer")]);
    let got: Vec<Event> = translate(cut).collect().await;
    assert_eq!(
        got,
        [
            Event::delta("Hi"),
            Event::done(FinishReason::Stop, usage(None, 3))
        ]
    );
}

#[tokio::test]
async fn text_then_the_end_of_the_body_is_a_cut_off_reply_not_done() {
    assert_eq!(
        run_str(&text("Hel")).await,
        [Event::delta("Hel"), Event::error(CUT_OFF)]
    );
    let reset = stream::iter([
        Ok(Bytes::from(text("Hel"))),
        Err("connection reset by peer"),
    ]);
    let got: Vec<Event> = translate(reset).collect().await;
    assert_eq!(
        got,
        [
            Event::delta("Hel"),
            Event::error("the reply was cut off: connection reset by peer")
        ]
    );
}

#[tokio::test]
async fn a_closed_tool_use_block_without_a_stop_reason_is_still_dropped() {
    let body = [
        ev(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}})),
        ev(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{}"}})),
        ev(json!({"type": "content_block_stop", "index": 0})),
    ]
    .concat();
    assert_eq!(
        run_str(&body).await,
        [
            // What streamed went out; the call never does.
            Event::tool_call_delta("t1", "lookup", ""),
            Event::tool_call_delta("t1", "lookup", "{}"),
            Event::error(format!(
                "{CUT_OFF}; its unfinished tool call lookup was dropped"
            ))
        ]
    );
}

#[tokio::test]
async fn a_tool_use_blocks_input_streams_as_deltas_of_its_call() {
    let delta = |piece: &str| {
        ev(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": piece}}))
    };
    let body = [
        text("Looking."),
        ev(json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}})),
        delta(""),
        delta("{\"q\": \"ru"),
        delta("st\"}"),
        ev(json!({"type": "content_block_stop", "index": 1})),
        stop_reason("tool_use"),
        message_stop(),
    ]
    .concat();
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("Looking."),
            // The call is known at its block's start; empty pieces are not sent.
            Event::tool_call_delta("t1", "lookup", ""),
            Event::tool_call_delta("t1", "lookup", "{\"q\": \"ru"),
            Event::tool_call_delta("t1", "lookup", "st\"}"),
            Event::tool_call(lmchatkit_protocol::ToolCall::new(
                "t1",
                "lookup",
                json!({"q": "rust"})
            )),
            Event::done(FinishReason::ToolCalls, usage(None, 3)),
        ]
    );
}

#[tokio::test]
async fn nothing_after_message_stop_is_read() {
    let body = [text("a"), stop_reason("end_turn"), message_stop()].concat();
    let after = stream::iter([Ok(Bytes::from(body))])
        .chain(stream::once(async { Err::<Bytes, _>("must not be read") }));
    let got: Vec<Event> = translate(after).collect().await;
    assert_eq!(
        got,
        [
            Event::delta("a"),
            Event::done(FinishReason::Stop, usage(None, 3))
        ]
    );
}

#[tokio::test]
async fn invalid_input_json_is_kept_as_a_string_and_a_given_input_is_used_when_none_streams() {
    let start = |i: u64, id: &str, input: Value| {
        ev(json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": id, "name": "f", "input": input}}))
    };
    let body = [
        start(0, "t1", json!({})),
        ev(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{not json"}})),
        start(1, "t2", json!({"given": true})),
        ev(json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "t3", "input": {}}})),
        stop_reason("tool_use"),
        message_stop(),
    ]
    .concat();
    let got = run_str(&body).await;
    let calls: Vec<(String, Value)> = got
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { tool_call, .. } => {
                Some((tool_call.id.clone(), tool_call.arguments.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("t1".to_owned(), Value::String("{not json".into())),
            ("t2".to_owned(), json!({"given": true}))
        ],
        "the nameless call is dropped"
    );
    assert_eq!(
        got.last(),
        Some(&Event::done(FinishReason::ToolCalls, usage(None, 3)))
    );
}

#[tokio::test]
async fn pings_unknown_events_and_redacted_thinking_are_ignored() {
    let body = [
        "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned(),
        ev(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}})),
        ev(json!({"type": "something_new", "index": 0})),
        ev(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {}}})),
        "data: not json\n\n".to_owned(),
        text("ok"),
        message_stop(),
    ]
    .concat();
    assert_eq!(
        run_str(&body).await,
        [Event::delta("ok"), Event::done(FinishReason::Stop, None)]
    );
}

#[tokio::test]
async fn message_delta_counts_replace_message_start_counts() {
    let body = [
        ev(json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}})),
        text("x"),
        ev(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 12, "cache_read_input_tokens": 100, "output_tokens": 7}})),
        message_stop(),
    ]
    .concat();
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("x"),
            Event::done(
                FinishReason::Stop,
                usage(Some(112), 7).map(|u| Usage {
                    cached_prompt_tokens: Some(100),
                    ..u
                })
            )
        ]
    );
}

#[tokio::test]
async fn error_events_without_the_usual_shape_still_end_the_turn() {
    let cases = [
        (
            "event: error\ndata: upstream went away\n\n",
            "upstream error: upstream went away",
        ),
        (
            "data: {\"type\":\"error\",\"error\":{\"message\":\"no type\"}}\n\n",
            "upstream error: no type",
        ),
        (
            "event: error\ndata: {\"error\":{\"type\":\"rate_limit_error\"}}\n\n",
            "upstream error: rate_limit_error",
        ),
    ];
    for (body, msg) in cases {
        let body = format!("{}{body}{}", text("x"), text("y"));
        assert_eq!(
            run_str(&body).await,
            [Event::delta("x"), Event::error(msg)],
            "{body}"
        );
    }
}

#[tokio::test]
async fn an_empty_body_is_an_error_not_an_empty_reply() {
    assert_eq!(
        run(Vec::new()).await,
        [Event::error(
            "the upstream ended the stream without sending a reply"
        )]
    );
}
