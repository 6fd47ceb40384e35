//! Golden JSON shapes of the AI SDK side (`lmchatkit_protocol::ui_stream`): every chunk with
//! exactly the keys `ai@6.0.0` accepts, the request body, `UIMessage` parts, usage, threads and
//! the model menu. A failing test here is a protocol change.

use lmchatkit_protocol::ui_stream::*;
use lmchatkit_protocol::{ConversationTotals, Message, StoredConversation, Usage};
use serde_json::{Value, json};

fn to(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

/// Serializes to `expected` exactly and reads back to the same chunk.
fn chunk(c: UiChunk, expected: Value) {
    assert_eq!(to(&c), expected);
    let back: UiChunk = serde_json::from_value(expected).unwrap();
    assert_eq!(back, c);
}

#[test]
fn message_chunks_have_exactly_the_documented_keys() {
    chunk(
        UiChunk::start("m1"),
        json!({"type": "start", "messageId": "m1"}),
    );
    chunk(
        UiChunk::Start {
            message_id: None,
            message_metadata: Some(json!({"a": 1})),
        },
        json!({"type": "start", "messageMetadata": {"a": 1}}),
    );
    chunk(UiChunk::start_step(), json!({"type": "start-step"}));
    chunk(UiChunk::finish_step(), json!({"type": "finish-step"}));
    chunk(
        UiChunk::message_metadata(json!({"model": "x"})),
        json!({"type": "message-metadata", "messageMetadata": {"model": "x"}}),
    );
    chunk(
        UiChunk::finish(UiFinishReason::ToolCalls),
        json!({"type": "finish", "finishReason": "tool-calls"}),
    );
    chunk(
        UiChunk::Finish {
            finish_reason: None,
            message_metadata: Some(json!({"k": true})),
        },
        json!({"type": "finish", "messageMetadata": {"k": true}}),
    );
    chunk(UiChunk::abort(), json!({"type": "abort"}));
    chunk(
        UiChunk::error("boom"),
        json!({"type": "error", "errorText": "boom"}),
    );
    for (r, s) in [
        (UiFinishReason::Stop, "stop"),
        (UiFinishReason::Length, "length"),
        (UiFinishReason::ContentFilter, "content-filter"),
        (UiFinishReason::ToolCalls, "tool-calls"),
        (UiFinishReason::Error, "error"),
        (UiFinishReason::Other, "other"),
    ] {
        assert_eq!(to(&r), json!(s));
    }
}

#[test]
fn text_and_reasoning_chunks_carry_id_delta_and_optional_provider_metadata() {
    chunk(
        UiChunk::text_start("t"),
        json!({"type": "text-start", "id": "t"}),
    );
    chunk(
        UiChunk::text_delta("t", "Hi ü"),
        json!({"type": "text-delta", "id": "t", "delta": "Hi ü"}),
    );
    chunk(
        UiChunk::text_end("t"),
        json!({"type": "text-end", "id": "t"}),
    );
    chunk(
        UiChunk::reasoning_start("r"),
        json!({"type": "reasoning-start", "id": "r"}),
    );
    chunk(
        UiChunk::reasoning_delta("r", "hm"),
        json!({"type": "reasoning-delta", "id": "r", "delta": "hm"}),
    );
    chunk(
        UiChunk::reasoning_end("r"),
        json!({"type": "reasoning-end", "id": "r"}),
    );
    let pm = json!({"openai": {"itemId": "x"}});
    chunk(
        UiChunk::TextDelta {
            id: "t".into(),
            delta: "a".into(),
            provider_metadata: Some(pm.clone()),
        },
        json!({"type": "text-delta", "id": "t", "delta": "a", "providerMetadata": pm}),
    );
    chunk(
        UiChunk::ReasoningEnd {
            id: "r".into(),
            provider_metadata: Some(pm.clone()),
        },
        json!({"type": "reasoning-end", "id": "r", "providerMetadata": pm}),
    );
}

#[test]
fn tool_chunks_have_exactly_the_documented_keys() {
    chunk(
        UiChunk::tool_input_start("c1", "srv__f"),
        json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "srv__f", "dynamic": true}),
    );
    chunk(
        UiChunk::ToolInputStart {
            tool_call_id: "c1".into(),
            tool_name: "f".into(),
            provider_executed: Some(false),
            dynamic: None,
            title: Some("F".into()),
        },
        json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "f",
               "providerExecuted": false, "title": "F"}),
    );
    chunk(
        UiChunk::tool_input_delta("c1", "{\"q\":"),
        json!({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{\"q\":"}),
    );
    chunk(
        UiChunk::tool_input_available("c1", "srv__f", json!({"q": 1})),
        json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "srv__f",
               "input": {"q": 1}, "dynamic": true}),
    );
    chunk(
        UiChunk::ToolInputAvailable {
            tool_call_id: "c1".into(),
            tool_name: "f".into(),
            input: json!(null),
            provider_executed: Some(true),
            provider_metadata: Some(json!({"p": {}})),
            dynamic: Some(false),
            title: Some("T".into()),
        },
        json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": null,
               "providerExecuted": true, "providerMetadata": {"p": {}}, "dynamic": false, "title": "T"}),
    );
    chunk(
        UiChunk::ToolInputError {
            tool_call_id: "c1".into(),
            tool_name: "f".into(),
            input: json!("{bad"),
            error_text: "invalid JSON".into(),
            provider_executed: None,
            provider_metadata: None,
            dynamic: Some(true),
            title: None,
        },
        json!({"type": "tool-input-error", "toolCallId": "c1", "toolName": "f", "input": "{bad",
               "errorText": "invalid JSON", "dynamic": true}),
    );
    chunk(
        UiChunk::tool_approval_request("a1", "c1"),
        json!({"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}),
    );
    chunk(
        UiChunk::tool_output_available("c1", json!({"temp": 3})),
        json!({"type": "tool-output-available", "toolCallId": "c1", "output": {"temp": 3}, "dynamic": true}),
    );
    chunk(
        UiChunk::ToolOutputAvailable {
            tool_call_id: "c1".into(),
            output: json!("partial"),
            provider_executed: Some(false),
            dynamic: None,
            preliminary: Some(true),
        },
        json!({"type": "tool-output-available", "toolCallId": "c1", "output": "partial",
               "providerExecuted": false, "preliminary": true}),
    );
    chunk(
        UiChunk::tool_output_error("c1", "nope"),
        json!({"type": "tool-output-error", "toolCallId": "c1", "errorText": "nope", "dynamic": true}),
    );
    chunk(
        UiChunk::tool_output_denied("c1"),
        json!({"type": "tool-output-denied", "toolCallId": "c1"}),
    );
}

#[test]
fn source_file_and_data_chunks_have_exactly_the_documented_keys() {
    chunk(
        UiChunk::SourceUrl {
            source_id: "s1".into(),
            url: "https://example.org".into(),
            title: None,
            provider_metadata: None,
        },
        json!({"type": "source-url", "sourceId": "s1", "url": "https://example.org"}),
    );
    chunk(
        UiChunk::SourceUrl {
            source_id: "s1".into(),
            url: "https://example.org".into(),
            title: Some("Ex".into()),
            provider_metadata: Some(json!({})),
        },
        json!({"type": "source-url", "sourceId": "s1", "url": "https://example.org",
               "title": "Ex", "providerMetadata": {}}),
    );
    chunk(
        UiChunk::SourceDocument {
            source_id: "s2".into(),
            media_type: "application/pdf".into(),
            title: "Doc".into(),
            filename: Some("d.pdf".into()),
            provider_metadata: None,
        },
        json!({"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf",
               "title": "Doc", "filename": "d.pdf"}),
    );
    chunk(
        UiChunk::file("data:image/png;base64,AA==", "image/png"),
        json!({"type": "file", "url": "data:image/png;base64,AA==", "mediaType": "image/png"}),
    );
    chunk(
        UiChunk::data("weather", json!({"t": 1})),
        json!({"type": "data-weather", "data": {"t": 1}}),
    );
    chunk(
        UiChunk::Data(UiDataChunk {
            name: "progress".into(),
            id: Some("p".into()),
            data: json!(50),
            transient: Some(true),
        }),
        json!({"type": "data-progress", "id": "p", "data": 50, "transient": true}),
    );
}

#[test]
fn a_reader_keeps_unknown_chunk_types_ignores_unknown_keys_and_rejects_malformed_known_ones() {
    let future = json!({"type": "reasoning-file", "url": "x", "mediaType": "image/png"});
    assert_eq!(
        serde_json::from_value::<UiChunk>(future.clone()).unwrap(),
        UiChunk::Unknown(future.clone())
    );
    assert_eq!(to(&UiChunk::Unknown(future.clone())), future);
    let loose = json!({"type": "abort", "reason": "user"});
    assert_eq!(
        serde_json::from_value::<UiChunk>(loose).unwrap(),
        UiChunk::abort()
    );
    let newer = json!({"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c",
        "signature": "s1"});
    assert_eq!(
        serde_json::from_value::<UiChunk>(newer).unwrap(),
        UiChunk::tool_approval_request("a", "c")
    );
    assert!(serde_json::from_value::<UiChunk>(json!({"type": "text-delta", "id": "t"})).is_err());
    assert!(serde_json::from_value::<UiChunk>(json!({"delta": "x"})).is_err());
    assert!(
        serde_json::from_value::<UiChunk>(json!({"type": "finish", "finishReason": "interrupted"}))
            .is_err()
    );
}

#[test]
fn frames_and_header_follow_the_sse_format() {
    assert_eq!(
        UI_MESSAGE_STREAM_HEADER,
        ("x-vercel-ai-ui-message-stream", "v1")
    );
    assert_eq!(DONE_FRAME, "data: [DONE]\n\n");
    assert_eq!(KEEP_ALIVE_FRAME, ": keep-alive\n\n");
    assert_eq!(
        sse_frame(&UiChunk::error("a\nb")),
        "data: {\"type\":\"error\",\"errorText\":\"a\\nb\"}\n\n"
    );
}

/// Reads an SSE body the way a client does: `data:` lines up to `[DONE]`, comments skipped.
fn read_stream(body: &str) -> Vec<UiChunk> {
    let mut out = Vec::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        out.push(serde_json::from_str(data).unwrap());
    }
    out
}

#[test]
fn a_rust_reader_parses_a_recorded_stream_including_an_unknown_chunk() {
    let chunks = read_stream(include_str!("../fixtures/ui_stream_turn.sse"));
    assert_eq!(chunks.len(), 19);
    assert_eq!(chunks[0], UiChunk::start("msg_1"));
    let text: String = chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me check Oslo 🌧.");
    assert_eq!(
        chunks[12],
        UiChunk::tool_input_available("call_1", "weather__forecast", json!({"city": "Oslo"}))
    );
    assert!(matches!(&chunks[13], UiChunk::Unknown(v) if v["type"] == "x-future-chunk"));
    assert_eq!(
        chunks[14],
        UiChunk::tool_approval_request("appr_1", "call_1")
    );
    assert!(
        matches!(&chunks[15], UiChunk::Data(d) if d.name == "progress" && d.transient == Some(true))
    );
    let UiChunk::MessageMetadata { message_metadata } = &chunks[16] else {
        panic!("metadata expected, got {:?}", chunks[16]);
    };
    let meta: UiMessageMetadata = serde_json::from_value(message_metadata.clone()).unwrap();
    assert_eq!(meta.usage.input_tokens, 120);
    assert_eq!(chunks[18], UiChunk::finish(UiFinishReason::ToolCalls));
}

#[test]
fn the_request_body_reads_with_and_without_optional_fields() {
    let min: AiSdkChatRequest = serde_json::from_value(json!({
        "id": "chat1", "messages": [], "trigger": "submit-message"
    }))
    .unwrap();
    assert_eq!(min.trigger, UiTrigger::SubmitMessage);
    assert_eq!(min.thread_id(), "chat1");
    assert_eq!(
        to(&min),
        json!({"id": "chat1", "messages": [], "trigger": "submit-message"})
    );
    let no_trigger: AiSdkChatRequest =
        serde_json::from_value(json!({"id": "c", "messages": []})).unwrap();
    assert_eq!(no_trigger.trigger, UiTrigger::SubmitMessage);

    let full = json!({
        "id": "chat1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        "trigger": "regenerate-message",
        "messageId": "a1",
        "model": "openai/gpt-5",
        "reasoningEffort": "high",
        "threadId": "th1",
        "persona_id": "coder"
    });
    let req: AiSdkChatRequest = serde_json::from_value(full.clone()).unwrap();
    assert_eq!(req.trigger, UiTrigger::RegenerateMessage);
    assert_eq!(req.reasoning_effort, Some(ReasoningEffort::High));
    assert_eq!(req.thread_id(), "th1");
    assert_eq!(req.persona_id.as_deref(), Some("coder"));
    assert_eq!(to(&req), full);

    let mut extra = full.clone();
    extra["appField"] = json!({"x": 1});
    assert_eq!(
        serde_json::from_value::<AiSdkChatRequest>(extra).unwrap(),
        req
    );
}

#[test]
fn an_unknown_reasoning_effort_or_trigger_is_rejected() {
    for bad in [
        json!({"id": "c", "messages": [], "reasoningEffort": "extreme"}),
        json!({"id": "c", "messages": [], "reasoningEffort": "HIGH"}),
        json!({"id": "c", "messages": [], "trigger": "resume-stream"}),
    ] {
        assert!(serde_json::from_value::<AiSdkChatRequest>(bad).is_err());
    }
    for (e, s) in [
        (ReasoningEffort::Low, "low"),
        (ReasoningEffort::Medium, "medium"),
        (ReasoningEffort::High, "high"),
    ] {
        assert_eq!(to(&e), json!(s));
        assert_eq!(e.as_str(), s);
    }
}

/// A `UIMessage` with every part kind and every optional key, as `ai@6` writes it.
fn every_part() -> Value {
    json!({
        "id": "a1",
        "role": "assistant",
        "metadata": {"model": "m", "usage": {"inputTokens": 1, "outputTokens": 2}, "createdAt": 5},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "think", "state": "done", "providerMetadata": {"o": {"id": 1}}},
            {"type": "text", "text": "hello", "state": "streaming"},
            {"type": "file", "mediaType": "image/png", "filename": "a.png", "url": "data:image/png;base64,AA==",
             "providerMetadata": {}},
            {"type": "source-url", "sourceId": "s1", "url": "https://e.org", "title": "E", "providerMetadata": {}},
            {"type": "source-document", "sourceId": "s2", "mediaType": "text/plain", "title": "T", "filename": "t.txt"},
            {"type": "data-weather", "id": "w1", "data": {"t": [1, 2]}},
            {"type": "data-plain", "data": null},
            {"type": "tool-get_weather", "toolCallId": "c1", "state": "output-available", "title": "Weather",
             "input": {"city": "Oslo"}, "output": {"t": 3}, "providerExecuted": false,
             "callProviderMetadata": {"x": 1}, "preliminary": true},
            {"type": "dynamic-tool", "toolName": "srv__rm", "toolCallId": "c2", "state": "output-denied",
             "input": {"path": "/"}, "approval": {"id": "ap1", "approved": false, "reason": "no"}},
            {"type": "dynamic-tool", "toolName": "srv__ls", "toolCallId": "c3", "state": "input-streaming",
             "input": null},
            {"type": "tool-x", "toolCallId": "c4", "state": "output-error", "input": {}, "errorText": "bad"},
            {"type": "tool-y", "toolCallId": "c5", "state": "approval-requested", "input": {}, "approval": {"id": "ap5"}},
            {"type": "reasoning-file", "url": "x", "mediaType": "image/png"}
        ]
    })
}

#[test]
fn a_ui_message_with_every_part_kind_round_trips_exactly() {
    let v = every_part();
    let m: UiMessage = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(to(&m), v);
    assert!(matches!(&m.parts[0], UiPart::StepStart {}));
    assert!(matches!(&m.parts[6], UiPart::Data(d) if d.name == "weather"));
    let UiPart::Tool(t) = &m.parts[8] else {
        panic!("tool part expected")
    };
    assert_eq!((t.tool_name.as_str(), t.dynamic), ("get_weather", false));
    assert_eq!(t.state, UiToolState::OutputAvailable);
    let UiPart::Tool(t) = &m.parts[9] else {
        panic!("tool part expected")
    };
    assert_eq!((t.tool_name.as_str(), t.dynamic), ("srv__rm", true));
    assert_eq!(t.approval.as_ref().unwrap().reason.as_deref(), Some("no"));
    let UiPart::Tool(t) = &m.parts[10] else {
        panic!("tool part expected")
    };
    assert_eq!(t.input, Some(Value::Null), "a present null input stays");
    assert!(matches!(&m.parts[13], UiPart::Other(_)));
}

#[test]
fn keys_of_later_releases_on_tool_parts_are_kept() {
    let v = json!({"type": "tool-f", "toolCallId": "c", "state": "output-available", "input": {},
        "output": 1, "toolMetadata": {"k": "v"}, "resultProviderMetadata": {"p": {}},
        "approval": {"id": "a", "approved": true, "isAutomatic": true}});
    let part: UiPart = serde_json::from_value(v.clone()).unwrap();
    let UiPart::Tool(t) = &part else {
        panic!("tool part expected")
    };
    assert_eq!(t.unknown.get("toolMetadata"), Some(&json!({"k": "v"})));
    assert!(!t.unknown.contains_key("type"));
    assert_eq!(to(&part), v);
}

#[test]
fn malformed_known_parts_are_rejected() {
    for bad in [
        json!({"type": "text"}),
        json!({"type": "dynamic-tool", "toolCallId": "c", "state": "input-available"}),
        json!({"type": "tool-x", "toolCallId": "c", "state": "running"}),
        json!({"type": "file", "url": "x"}),
    ] {
        assert!(
            serde_json::from_value::<UiPart>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    let states = [
        "input-streaming",
        "input-available",
        "approval-requested",
        "approval-responded",
        "output-available",
        "output-error",
        "output-denied",
    ];
    for s in states {
        let st: UiToolState = serde_json::from_value(json!(s)).unwrap();
        assert_eq!(to(&st), json!(s));
    }
    assert!(serde_json::from_value::<UiRole>(json!("tool")).is_err());
}

#[test]
fn usage_metadata_threads_and_models_have_the_seed_shapes() {
    let meta = UiMessageMetadata {
        model: "openai/gpt-5".into(),
        usage: UiUsage {
            input_tokens: 10,
            output_tokens: 4,
            reasoning_tokens: None,
            cached_input_tokens: None,
            context_tokens: None,
        },
        cost_usd: None,
        created_at: 1_764_590_000_000,
        run_id: None,
        stopped: false,
        failed: None,
    };
    assert_eq!(
        to(&meta),
        json!({"model": "openai/gpt-5", "usage": {"inputTokens": 10, "outputTokens": 4},
               "createdAt": 1_764_590_000_000_i64})
    );
    let full = UiMessageMetadata {
        usage: UiUsage {
            reasoning_tokens: Some(2),
            cached_input_tokens: Some(8),
            ..meta.usage
        },
        cost_usd: Some(0.0125),
        ..meta.clone()
    };
    assert_eq!(
        to(&full),
        json!({"model": "openai/gpt-5",
               "usage": {"inputTokens": 10, "outputTokens": 4, "reasoningTokens": 2, "cachedInputTokens": 8},
               "costUsd": 0.0125, "createdAt": 1_764_590_000_000_i64})
    );
    let stopped = UiMessageMetadata {
        run_id: Some("run-1".into()),
        stopped: true,
        ..meta.clone()
    };
    assert_eq!(
        to(&stopped),
        json!({"model": "openai/gpt-5", "usage": {"inputTokens": 10, "outputTokens": 4},
               "createdAt": 1_764_590_000_000_i64, "runId": "run-1", "stopped": true})
    );

    let summary = ThreadSummary {
        id: "t1".into(),
        title: "Weather".into(),
        created_at: 1,
        updated_at: 2,
        total_input_tokens: 30,
        total_output_tokens: 9,
        total_cost_usd: None,
        last_context_tokens: 20,
    };
    let expected = json!({"id": "t1", "title": "Weather", "createdAt": 1, "updatedAt": 2,
        "totalInputTokens": 30, "totalOutputTokens": 9, "lastContextTokens": 20});
    assert_eq!(to(&summary), expected, "no price known: no totalCostUsd");
    let priced = ThreadSummary {
        total_cost_usd: Some(0.5),
        ..summary.clone()
    };
    assert_eq!(to(&priced)["totalCostUsd"], json!(0.5));

    let thread = Thread {
        summary,
        messages: vec![],
    };
    let mut with_messages = expected.clone();
    with_messages["messages"] = json!([]);
    assert_eq!(to(&thread), with_messages);
    assert_eq!(
        serde_json::from_value::<Thread>(with_messages).unwrap(),
        thread
    );

    let model = AiSdkModelInfo {
        id: "openai/gpt-5".into(),
        provider: "openai".into(),
        label: "GPT-5".into(),
        reasoning: true,
        configured: false,
        context_window: 400_000,
    };
    assert_eq!(
        to(&model),
        json!({"id": "openai/gpt-5", "provider": "openai", "label": "GPT-5", "reasoning": true,
               "configured": false, "contextWindow": 400_000})
    );
}

#[test]
fn a_thread_summary_sums_assistant_usage_and_cost_and_takes_the_last_call_as_context() {
    let usage = |p, c| Usage {
        prompt_tokens: Some(p),
        completion_tokens: Some(c),
        total_tokens: Some(p + c),
        ..Default::default()
    };
    let mut a1 = Message::assistant("one");
    a1.usage = Some(usage(100, 10));
    a1.cost_usd = Some(0.25);
    let mut a2 = Message::assistant("two");
    a2.usage = Some(usage(150, 20));
    let mut u = Message::user("not counted");
    u.usage = Some(usage(999, 999));
    let conv = StoredConversation {
        id: "c1".into(),
        title: "T".into(),
        created_at: 7,
        updated_at: 9,
        messages: vec![
            u,
            a1,
            Message::user("again"),
            a2,
            Message::assistant("no usage"),
        ],
        ..StoredConversation::default()
    };
    let mut summary = conv.summary();
    summary.totals = ConversationTotals::of(&conv.messages);
    let s = ThreadSummary::from_summary(&summary);
    assert_eq!(
        (s.id.as_str(), s.title.as_str(), s.created_at, s.updated_at),
        ("c1", "T", 7, 9)
    );
    assert_eq!((s.total_input_tokens, s.total_output_tokens), (250, 30));
    assert_eq!(s.last_context_tokens, 170);
    assert_eq!(s.total_cost_usd, Some(0.25));
}

#[test]
fn a_message_without_ai_sdk_extra_keeps_its_json() {
    assert_eq!(
        to(&Message::user("hi")),
        json!({"role": "user", "content": "hi"})
    );
    let mut m = Message::assistant("x");
    let extra = AiSdkExtra {
        of: Some("a1".into()),
        metadata: None,
        parts: vec![AiSdkPart::Text {
            len: 1,
            state: None,
            provider_metadata: None,
        }],
    };
    m.aisdk = Some(extra.clone().into_value());
    assert_eq!(
        to(&m),
        json!({"role": "assistant", "content": "x",
               "aisdk": {"of": "a1", "parts": [{"kind": "text", "len": 1}]}})
    );
    assert_eq!(AiSdkExtra::of_message(&m), Some(extra));
}

#[test]
fn a_rust_client_builds_the_message_the_recorded_stream_describes() {
    let mut b = UiMessageBuilder::new("local", None);
    for c in read_stream(include_str!("../fixtures/ui_stream_turn.sse")) {
        b.apply(&c);
    }
    let m = serde_json::to_value(b.message()).unwrap();
    assert_eq!(m["id"], "msg_1", "start names the message");
    assert_eq!(
        m["parts"].as_array().unwrap()[..4],
        [
            json!({"type": "step-start"}),
            json!({"type": "reasoning", "text": "The user wants the weather.", "state": "done"}),
            json!({"type": "text", "text": "Let me check Oslo 🌧.", "state": "done"}),
            json!({"type": "dynamic-tool", "toolName": "weather__forecast", "toolCallId": "call_1",
                   "state": "approval-requested", "input": {"city": "Oslo"}, "approval": {"id": "appr_1"}}),
        ]
    );
    assert!(m["metadata"].is_object(), "{m}");
}

#[test]
fn the_policys_automatic_approval_is_two_v7_chunks_that_a_v6_client_never_reads() {
    let [request, response] = UiChunk::automatic_approval("ap1", "c1", false, Some("no".into()));
    chunk(
        request.clone(),
        json!({"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1",
               "isAutomatic": true}),
    );
    chunk(
        response.clone(),
        json!({"type": "tool-approval-response", "approvalId": "ap1", "approved": false,
               "reason": "no"}),
    );
    for c in [&request, &response] {
        assert!(c.is_v7_only(), "{c:?}");
        assert!(!v6_may_read(&c.to_json()), "{c:?}");
        // Read back as written.
        assert_eq!(&serde_json::from_str::<UiChunk>(&c.to_json()).unwrap(), c);
    }
    // What ai@6 reads stays readable, approvals included.
    let asked = UiChunk::tool_approval_request("ap2", "c2");
    assert!(!asked.is_v7_only() && v6_may_read(&asked.to_json()));
    assert!(v6_may_read("not json, tool-approval-response"));
    // The header says which major reads the stream.
    assert_eq!(AI_SDK_VERSION_HEADER, "x-lmchatkit-ai-sdk");
    assert!(wants_v7(Some("7")) && !wants_v7(Some("6")) && !wants_v7(None));
}

#[test]
fn a_message_builds_the_automatic_approval_as_the_v7_client_shows_it() {
    let mut b = UiMessageBuilder::new("m1", None);
    let mut chunks = vec![
        UiChunk::tool_input_start("c1", "get_weather"),
        UiChunk::tool_input_available("c1", "get_weather", json!({"city": "Oslo"})),
    ];
    chunks.extend(UiChunk::automatic_approval("ap1", "c1", true, None));
    chunks.push(UiChunk::tool_output_available("c1", json!("sunny")));
    for c in &chunks {
        b.apply(c);
    }
    let part = to(&b.message().parts[0]);
    assert_eq!(part["state"], "output-available", "{part}");
    assert_eq!(
        part["approval"],
        json!({"id": "ap1", "approved": true, "isAutomatic": true})
    );
    // An ai@6 reader gets the part as its stream built it: without the automatic approval.
    let v6 = to(&b.message().clone().for_v6());
    assert_eq!(v6["parts"][0].get("approval"), None, "{v6}");
    assert_eq!(v6["parts"][0]["state"], "output-available");
    // A user's answer stays, without keys ai@6 does not have.
    let answered: UiMessage = serde_json::from_value(json!({"id": "m2", "role": "assistant",
        "parts": [{"type": "dynamic-tool", "toolName": "t", "toolCallId": "c2",
                   "state": "approval-responded", "input": {},
                   "approval": {"id": "ap2", "approved": true, "signature": "s"}}]}))
    .unwrap();
    assert_eq!(
        to(&answered.for_v6())["parts"][0]["approval"],
        json!({"id": "ap2", "approved": true})
    );
}

#[test]
fn a_reply_cut_off_is_marked_in_its_metadata_and_on_the_message_it_converts_to() {
    let ui: Vec<UiMessage> = serde_json::from_value(json!([
        {"id": "a1", "role": "assistant", "metadata": {"model": "m", "usage": {"inputTokens": 1, "outputTokens": 2},
          "createdAt": 5, "failed": "upstream died"}, "parts": [{"type": "text", "text": "Par", "state": "done"}]},
        {"id": "a2", "role": "assistant", "metadata": {"model": "m", "usage": {"inputTokens": 1, "outputTokens": 2},
          "createdAt": 6, "stopped": true}, "parts": [{"type": "text", "text": "Hal", "state": "done"}]},
        {"id": "a3", "role": "assistant", "metadata": {"model": "m", "usage": {"inputTokens": 1, "outputTokens": 2},
          "createdAt": 7}, "parts": [{"type": "text", "text": "Whole.", "state": "done"}]}
    ]))
    .unwrap();
    let native = to_messages(&ui);
    let marks: Vec<_> = native
        .iter()
        .map(|m| (m.stopped, m.failed.clone()))
        .collect();
    assert_eq!(
        marks,
        [
            (false, Some("upstream died".to_owned())),
            (true, None),
            (false, None)
        ]
    );
    // Back to UIMessages: exactly what was stored.
    assert_eq!(to(&to_ui_messages(&native)), to(&ui));
    // The native wire: `failed` beside `stopped`, both omitted when unset.
    let json = to(&native[0]);
    assert_eq!(json["failed"], "upstream died");
    assert!(json.get("stopped").is_none());
    assert!(to(&native[2]).get("failed").is_none());
}
