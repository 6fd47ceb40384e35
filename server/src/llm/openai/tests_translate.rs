//! Translator tests: every fixture in `server/tests/fixtures/openai/`, fed whole and split into
//! random-size byte chunks (deterministic seeds, so boundaries fall mid-line and mid-UTF-8),
//! plus edge cases written inline.

use std::convert::Infallible;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use lmchatkit_protocol::{Event, FinishReason, Usage};
use serde_json::json;

use super::translate;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openai")
}

/// Splits `body` into chunks of 1..=24 bytes chosen by a xorshift generator seeded with `seed`.
pub(in crate::llm) fn split(body: &[u8], seed: u64) -> Vec<Bytes> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (1 + (x % 24) as usize).min(rest.len());
        chunks.push(Bytes::copy_from_slice(&rest[..n]));
        rest = &rest[n..];
    }
    chunks
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

/// Replays `{dir}/{name}.sse` through `run` whole and split with 40 seeds, each time expecting
/// the events of `{name}.expected.json`; the fixture must say it is hand-made.
pub(in crate::llm) async fn check_fixture_in<F, Fut>(dir: &std::path::Path, name: &str, run: F)
where
    F: Fn(Vec<Bytes>) -> Fut,
    Fut: std::future::Future<Output = Vec<Event>>,
{
    let body = std::fs::read(dir.join(format!("{name}.sse"))).expect("fixture");
    assert!(
        body.starts_with(b": hand-made from "),
        "{name}.sse must say it is hand-made"
    );
    let expected = std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap();
    let expected: Vec<Event> = serde_json::from_str(&expected).expect("expected events");
    assert_eq!(
        run(vec![Bytes::from(body.clone())]).await,
        expected,
        "{name}: whole body"
    );
    for seed in 1..=40 {
        let got = run(split(&body, seed)).await;
        assert_eq!(got, expected, "{name}: split with seed {seed}");
    }
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
        openai_text,
        openai_parallel_tools,
        ollama,
        llamacpp,
        vllm,
        lmstudio,
        openrouter,
        deepseek,
        gemini_tools,
        gemini_error,
        no_args_tool,
        invalid_args,
        no_index_tools,
        crlf,
        keepalive,
        missing_done,
        content_filter,
        refusal,
        cut_off,
    );
}

#[test]
fn crlf_fixture_really_uses_crlf() {
    let body = std::fs::read(fixture_dir().join("crlf.sse")).unwrap();
    let text = String::from_utf8(body).unwrap();
    assert!(text.contains("\r\n\r\n"));
    assert!(!text.replace("\r\n", "").contains('\n'));
}

fn chunk(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

#[tokio::test]
async fn nothing_after_done_is_read() {
    let body = format!("{}data: [DONE]\n\n", chunk(json!({"content": "a"})));
    let after = stream::iter([Ok(Bytes::from(body))])
        .chain(stream::once(async { Err::<Bytes, _>("must not be read") }));
    let got: Vec<Event> = translate(after).collect().await;
    assert_eq!(
        got,
        [Event::delta("a"), Event::done(FinishReason::Stop, None)]
    );
}

/// What the translator says when the body ends before the reply is finished.
const CUT_OFF: &str =
    "the reply was cut off: the upstream ended the stream before the reply was finished";

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

#[tokio::test]
async fn a_transport_error_mid_reply_keeps_what_was_emitted_and_says_the_reply_was_cut_off() {
    let first = Bytes::from(chunk(json!({"content": "partial"})));
    let body = stream::iter([Ok(first), Err("connection reset by peer")]);
    let got: Vec<Event> = translate(body).collect().await;
    assert_eq!(
        got,
        [
            Event::delta("partial"),
            Event::error("the reply was cut off: connection reset by peer")
        ]
    );
}

#[tokio::test]
async fn a_transport_error_before_any_chunk_is_the_error_alone() {
    let body = stream::iter([Err::<Bytes, _>("upstream stalled: no data for 5 s")]);
    let got: Vec<Event> = translate(body).collect().await;
    assert_eq!(got, [Event::error("upstream stalled: no data for 5 s")]);
}

#[tokio::test]
async fn two_deltas_then_the_end_of_the_body_is_a_cut_off_reply_not_done() {
    let body = [
        chunk(json!({"content": "Hel"})),
        chunk(json!({"content": "lo"})),
    ]
    .concat();
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("Hel"),
            Event::delta("lo"),
            Event::error(CUT_OFF)
        ]
    );
}

#[tokio::test]
async fn reasoning_then_the_end_of_the_body_is_a_cut_off_reply() {
    let body = chunk(json!({"reasoning_content": "hmm"}));
    assert_eq!(
        run_str(&body).await,
        [Event::reasoning("hmm"), Event::error(CUT_OFF)]
    );
}

#[tokio::test]
async fn a_finish_reason_then_the_end_of_the_body_is_done() {
    let body = [chunk(json!({"content": "Hi"})), finish("stop")].concat();
    assert_eq!(
        run_str(&body).await,
        [Event::delta("Hi"), Event::done(FinishReason::Stop, None)]
    );
}

#[tokio::test]
async fn a_transport_error_after_the_finish_reason_still_ends_in_done() {
    let body = [chunk(json!({"content": "Hi"})), finish("length")].concat();
    let body = stream::iter([Ok(Bytes::from(body)), Err("connection reset by peer")]);
    let got: Vec<Event> = translate(body).collect().await;
    assert_eq!(
        got,
        [Event::delta("Hi"), Event::done(FinishReason::Length, None)]
    );
}

#[tokio::test]
async fn done_without_a_finish_reason_is_done() {
    let body = format!("{}data: [DONE]\n\n", chunk(json!({"content": "Hi"})));
    assert_eq!(
        run_str(&body).await,
        [Event::delta("Hi"), Event::done(FinishReason::Stop, None)]
    );
}

#[tokio::test]
async fn a_cut_inside_tool_call_arguments_is_an_error_and_emits_no_tool_call() {
    let call = json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "lookup", "arguments": "{\"q\": \"ru"}}]});
    let body = [chunk(json!({"content": "Looking"})), chunk(call)].concat();
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("Looking"),
            // What streamed went out; the call never does.
            Event::tool_call_delta("c1", "lookup", "{\"q\": \"ru"),
            Event::error(format!(
                "{CUT_OFF}; its unfinished tool call lookup was dropped"
            ))
        ]
    );
}

#[tokio::test]
async fn a_cut_after_whole_looking_tool_calls_still_emits_none_of_them() {
    // Valid JSON arguments do not prove the model was done: more calls, or more of the last
    // one's arguments, may have been on the way.
    let call = |i: u64, id: &str, name: &str| json!({"tool_calls": [{"index": i, "id": id, "function": {"name": name, "arguments": "{}"}}]});
    let nameless =
        json!({"tool_calls": [{"index": 2, "id": "c3", "function": {"arguments": "{}"}}]});
    let body = [
        chunk(call(0, "c1", "one")),
        chunk(call(1, "c2", "two")),
        chunk(nameless),
    ]
    .concat();
    let cut = stream::iter([Ok(Bytes::from(body)), Err("connection reset by peer")]);
    let got: Vec<Event> = translate(cut).collect().await;
    assert_eq!(
        got,
        [
            Event::tool_call_delta("c1", "one", "{}"),
            Event::tool_call_delta("c2", "two", "{}"),
            Event::error(
                "the reply was cut off: connection reset by peer; its unfinished tool calls one, two were dropped"
            )
        ]
    );
}

#[tokio::test]
async fn a_cut_inside_the_finish_reason_chunk_is_a_cut() {
    let last = finish("stop");
    let body = format!(
        "{}{}",
        chunk(json!({"content": "Hi"})),
        &last[..last.len() - 20]
    );
    assert_eq!(
        run_str(&body).await,
        [Event::delta("Hi"), Event::error(CUT_OFF)]
    );
}

#[tokio::test]
async fn different_reasoning_fields_are_both_emitted() {
    let body = [
        chunk(json!({"reasoning_content": "a", "reasoning": "b"})),
        finish("stop"),
    ]
    .concat();
    let got = run_str(&body).await;
    assert_eq!(
        got,
        [
            Event::reasoning("a"),
            Event::reasoning("b"),
            Event::done(FinishReason::Stop, None)
        ]
    );
}

#[tokio::test]
async fn error_forms() {
    let cases = [
        (
            "data: {\"error\":\"model overloaded\"}\n\n",
            "provider error: model overloaded",
        ),
        (
            "data: [{\"error\":{\"message\":\"bad key\",\"code\":\"invalid_api_key\"}}]\n\n",
            "provider error: bad key (code invalid_api_key)",
        ),
        (
            "event: error\ndata: upstream went away\n\n",
            "provider error: upstream went away",
        ),
        (
            "data: {\"error\":{\"type\":\"x\"}}\n\n",
            "provider error: {\"type\":\"x\"}",
        ),
    ];
    for (body, msg) in cases {
        let body = format!(
            "{}{body}{}",
            chunk(json!({"content": "x"})),
            chunk(json!({"content": "y"}))
        );
        assert_eq!(
            run_str(&body).await,
            [Event::delta("x"), Event::error(msg)],
            "{body}"
        );
    }
}

#[tokio::test]
async fn legacy_function_call_becomes_a_tool_call() {
    let body = format!(
        "{}{}data: {}\n\n",
        chunk(json!({"function_call": {"name": "lookup", "arguments": "{\"q\":"}})),
        chunk(json!({"function_call": {"arguments": "1}"}})),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "function_call"}]}),
    );
    let got = run_str(&body).await;
    let Event::ToolCall { tool_call, .. } = &got[2] else {
        panic!("{got:?}")
    };
    // Its pieces streamed under the id it got.
    assert_eq!(
        got[..2],
        [
            Event::tool_call_delta(&tool_call.id, "lookup", "{\"q\":"),
            Event::tool_call_delta(&tool_call.id, "lookup", "1}"),
        ]
    );
    assert_eq!(tool_call.name, "lookup");
    assert_eq!(tool_call.arguments, json!({"q": 1}));
    assert!(
        tool_call.id.starts_with("call_"),
        "generated id {}",
        tool_call.id
    );
    assert_eq!(got[3], Event::done(FinishReason::ToolCalls, None));
}

#[tokio::test]
async fn same_index_with_a_new_id_is_a_new_call_and_nameless_calls_are_dropped() {
    let call = |id: &str, name: &str, args: &str| json!({"tool_calls": [{"index": 0, "id": id, "function": {"name": name, "arguments": args}}]});
    let body = [
        chunk(call("c1", "one", "{}")),
        chunk(call("c2", "two", "")),
        chunk(json!({"tool_calls": [{"index": 5, "id": "c3", "function": {"arguments": "{}"}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "id": "c4", "function": {"name": "obj", "arguments": {"k": true}}}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let got = run_str(&body).await;
    let calls: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { tool_call, .. } => Some((
                tool_call.id.as_str(),
                tool_call.name.as_str(),
                tool_call.arguments.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("c1", "one", json!({})),
            ("c2", "two", json!({})),
            ("c4", "obj", json!({"k": true}))
        ]
    );
    assert_eq!(
        got.last(),
        Some(&Event::done(FinishReason::ToolCalls, None))
    );
}

#[tokio::test]
async fn other_choices_and_odd_finish_reasons() {
    let body = format!(
        "data: {}\n\ndata: {}\n\n",
        json!({"choices": [{"index": 1, "delta": {"content": "second choice"}}, {"index": 0, "delta": {"content": "first"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "eos_token"}], "x_groq": {"usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}}),
    );
    let usage = Usage {
        prompt_tokens: Some(1),
        completion_tokens: Some(2),
        total_tokens: Some(3),
        ..Default::default()
    };
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("first"),
            Event::done(FinishReason::Stop, Some(usage))
        ]
    );
}

#[tokio::test]
async fn content_parts_and_non_streamed_message() {
    let body = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole reply"}, "finish_reason": "length"}]})
    );
    assert_eq!(
        run_str(&body).await,
        [
            Event::delta("whole reply"),
            Event::done(FinishReason::Length, None)
        ]
    );
    let parts = chunk(
        json!({"content": [{"type": "text", "text": "p1"}, {"type": "image_url"}, {"type": "text", "text": "p2"}]}),
    ) + &finish("stop");
    assert_eq!(
        run_str(&parts).await,
        [
            Event::delta("p1"),
            Event::delta("p2"),
            Event::done(FinishReason::Stop, None)
        ]
    );
}

#[tokio::test]
async fn an_empty_body_is_an_error_not_an_empty_reply() {
    assert_eq!(
        run(Vec::new()).await,
        [Event::error(
            "the upstream ended the stream without sending a reply"
        )]
    );
    assert_eq!(
        run_str(": keep-alive\n\n").await,
        [Event::error(
            "the upstream ended the stream without sending a reply"
        )]
    );
}

#[tokio::test]
async fn arguments_stream_as_deltas_of_the_call_that_completes_them() {
    // The id comes first, the name later with more arguments, the rest after.
    let frag = |f: serde_json::Value| chunk(json!({"tool_calls": [f]}));
    let body = [
        frag(json!({"index": 0, "id": "c1", "function": {"arguments": "{\"q\""}})),
        frag(json!({"index": 0, "function": {"name": "lookup", "arguments": ": \"ru"}})),
        frag(json!({"index": 0, "function": {"arguments": "st\"}"}})),
        finish("tool_calls"),
    ]
    .concat();
    let got = run_str(&body).await;
    assert_eq!(
        got,
        [
            Event::tool_call_delta("c1", "lookup", "{\"q\": \"ru"),
            Event::tool_call_delta("c1", "lookup", "st\"}"),
            Event::tool_call(lmchatkit_protocol::ToolCall::new(
                "c1",
                "lookup",
                json!({"q": "rust"})
            )),
            Event::done(FinishReason::ToolCalls, None),
        ]
    );
}

#[tokio::test]
async fn a_call_without_an_id_streams_under_the_id_it_completes_with() {
    let body = [
        chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "now", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
        finish("tool_calls"),
    ]
    .concat();
    let got = run_str(&body).await;
    let ids: Vec<&str> = got
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallDelta { id, .. } => Some(id.as_str()),
            Event::ToolCall { tool_call, .. } => Some(tool_call.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 3, "{got:?}");
    assert!(
        ids[0].starts_with("call_") && ids.iter().all(|i| *i == ids[0]),
        "{ids:?}"
    );
}
