//! The `UIMessage` <-> `Message` conversion: what the model sees, and a property test that
//! the round trip (also through the stored JSON of the messages) gives back the same list.

use lmchatkit_protocol::ui_stream::*;
use lmchatkit_protocol::{Approval, Content, ContentPart, Message, Role, ToolCall, Usage};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn ui(v: Value) -> Vec<UiMessage> {
    serde_json::from_value(v).unwrap()
}

fn tool(part: &UiPart) -> &UiToolPart {
    match part {
        UiPart::Tool(t) => t,
        other => panic!("tool part expected, got {other:?}"),
    }
}

#[test]
fn a_user_text_message_becomes_plain_text_and_files_become_content_parts() {
    let msgs = to_messages(&ui(json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"id": "u2", "role": "user", "parts": [
            {"type": "text", "text": "look"},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="},
            {"type": "file", "mediaType": "application/pdf", "filename": "a.pdf", "url": "data:application/pdf;base64,BB=="}
        ]}
    ])));
    assert_eq!(msgs.len(), 2);
    assert_eq!(
        (msgs[0].role, msgs[0].id.as_deref()),
        (Role::User, Some("u1"))
    );
    assert_eq!(msgs[0].content, Content::Text("hi".into()));
    let Content::Parts(parts) = &msgs[1].content else {
        panic!("parts expected")
    };
    assert_eq!(parts[0], ContentPart::text("look"));
    assert_eq!(
        parts[1],
        ContentPart::image_url("data:image/png;base64,AA==")
    );
    let ContentPart::File { file } = &parts[2] else {
        panic!("file expected")
    };
    assert_eq!(file.filename.as_deref(), Some("a.pdf"));
    assert_eq!(
        file.file_data.as_deref(),
        Some("data:application/pdf;base64,BB==")
    );
}

fn weather_turn() -> Vec<UiMessage> {
    ui(json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
        {"id": "a1", "role": "assistant",
         "metadata": {"model": "m", "usage": {"inputTokens": 40, "outputTokens": 7}, "createdAt": 9},
         "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "need tools", "state": "done"},
            {"type": "text", "text": "Checking.", "state": "done"},
            {"type": "dynamic-tool", "toolName": "w__now", "toolCallId": "c1", "state": "output-available",
             "input": {"city": "Oslo"}, "output": {"temp": 3}},
            {"type": "tool-w_rm", "toolCallId": "c2", "state": "output-denied", "input": {"all": true},
             "approval": {"id": "ap2", "approved": false, "reason": "too risky"}},
            {"type": "dynamic-tool", "toolName": "w__fail", "toolCallId": "c3", "state": "output-error",
             "input": {}, "errorText": "timeout"},
            {"type": "step-start"},
            {"type": "text", "text": "It is 3°C."}
         ]}
    ]))
}

#[test]
fn an_assistant_message_splits_into_one_message_per_step_followed_by_its_tool_results() {
    let msgs = to_messages(&weather_turn());
    let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let step1 = &msgs[1];
    assert_eq!(step1.id.as_deref(), Some("a1"));
    assert_eq!(step1.content, Content::Text("Checking.".into()));
    assert_eq!(step1.thinking.as_deref(), Some("need tools"));
    let calls: Vec<(&str, &str)> = step1
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("c1", "w__now"), ("c2", "w_rm"), ("c3", "w__fail")]);
    assert_eq!(step1.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(step1.tool_calls[1].approval, Some(Approval::Denied));

    assert_eq!(msgs[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(msgs[2].content, Content::Text(r#"{"temp":3}"#.into()));
    assert!(!msgs[2].is_error);
    assert_eq!(
        (msgs[4].content.as_text(), msgs[4].is_error),
        (Some("timeout"), true)
    );
    assert_eq!(msgs[5].content, Content::Text("It is 3°C.".into()));

    let ids: Vec<&str> = msgs.iter().filter_map(|m| m.id.as_deref()).collect();
    assert_eq!(ids, ["u1", "a1", "a1~1", "a1~2", "a1~3", "a1~4"]);
    assert_eq!(
        msgs[5].usage,
        Some(Usage {
            prompt_tokens: Some(40),
            completion_tokens: Some(7),
            total_tokens: Some(47),
            ..Default::default()
        }),
        "the message's usage lands on its last step"
    );
    assert_eq!(msgs[1].created_at, Some(9));
}

#[test]
fn a_denied_call_tells_the_model_the_user_declined_with_the_reason() {
    let msgs = to_messages(&weather_turn());
    let denied = &msgs[3];
    assert_eq!(denied.role, Role::Tool);
    assert_eq!(denied.tool_call_id.as_deref(), Some("c2"));
    assert!(denied.is_error);
    let text = denied.content.as_text().unwrap();
    assert!(text.contains("declined"), "{text}");
    assert!(text.contains("too risky"), "{text}");
    assert_eq!(text, denied_text("w_rm", Some("too risky")));
    assert!(!denied_text("w_rm", None).contains("reason"));
}

#[test]
fn a_string_output_reaches_the_model_as_is() {
    let msgs = to_messages(&ui(json!([{"id": "a", "role": "assistant", "parts": [
        {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c", "state": "output-available",
         "input": {}, "output": "plain \"text\""}
    ]}])));
    assert_eq!(msgs[1].content, Content::Text("plain \"text\"".into()));
}

#[test]
fn approval_states_map_onto_the_tool_call_approval() {
    let msgs = to_messages(&ui(json!([{"id": "a", "role": "assistant", "parts": [
        {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c1", "state": "approval-requested",
         "input": {}, "approval": {"id": "ap1"}},
        {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c2", "state": "approval-responded",
         "input": {}, "approval": {"id": "ap2", "approved": true}},
        {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c3", "state": "approval-responded",
         "input": {}, "approval": {"id": "ap3", "approved": false, "reason": "no"}},
        {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c4", "state": "input-available", "input": {}}
    ]}])));
    assert_eq!(msgs.len(), 1, "no outcome yet: no tool messages");
    let approvals: Vec<Option<Approval>> = msgs[0].tool_calls.iter().map(|c| c.approval).collect();
    assert_eq!(
        approvals,
        [
            Some(Approval::Pending),
            Some(Approval::Approved),
            Some(Approval::Denied),
            None
        ]
    );
}

#[test]
fn messages_written_by_our_ui_group_into_one_assistant_message_per_reply() {
    let mut call = ToolCall::new("c1", "srv__search", json!({"q": "x"}));
    call.approval = Some(Approval::Approved);
    let mut denied = ToolCall::new("c2", "srv__rm", json!({}));
    denied.approval = Some(Approval::Denied);
    let mut a1 = Message::assistant("Let me look.")
        .with_id("m2")
        .with_tool_calls(vec![call, denied]);
    a1.thinking = Some("hmm".into());
    let mut failed = Message::tool("c1", "srv__search", "[error] down").with_id("m3");
    failed.is_error = true;
    let msgs = vec![
        Message::user("find x").with_id("m1"),
        a1,
        failed,
        Message::tool("c2", "srv__rm", "The user denied this tool call.").with_id("m4"),
        Message::assistant("Sorry.").with_id("m5"),
        Message::user("ok").with_id("m6"),
    ];
    let back = to_ui_messages(&msgs);
    assert_eq!(back.len(), 3);
    assert_eq!((back[0].id.as_str(), back[0].role), ("m1", UiRole::User));
    assert_eq!(back[0].parts, vec![UiPart::text("find x")]);
    let a = &back[1];
    assert_eq!((a.id.as_str(), a.role), ("m2", UiRole::Assistant));
    assert_eq!(a.parts[0], UiPart::step_start());
    assert_eq!(a.parts[1], UiPart::reasoning("hmm"));
    assert_eq!(a.parts[2], UiPart::text("Let me look."));
    let search = tool(&a.parts[3]);
    assert!(search.dynamic);
    assert_eq!(search.state, UiToolState::OutputError);
    assert_eq!(search.error_text.as_deref(), Some("[error] down"));
    assert_eq!(search.input, Some(json!({"q": "x"})));
    let rm = tool(&a.parts[4]);
    assert_eq!(rm.state, UiToolState::OutputDenied);
    assert_eq!(rm.approval.as_ref().and_then(|x| x.approved), Some(false));
    assert_eq!(a.parts[5], UiPart::step_start());
    assert_eq!(a.parts[6], UiPart::text("Sorry."));
    assert_eq!(back[2].id, "m6");
}

#[test]
fn a_plain_pending_call_asks_for_approval_and_an_answered_one_has_its_output() {
    let mut pending = ToolCall::new("c1", "t", json!({}));
    pending.approval = Some(Approval::Pending);
    let done = ToolCall::new("c2", "t", json!({}));
    let msgs = vec![
        Message::assistant("")
            .with_id("a")
            .with_tool_calls(vec![pending, done]),
        Message::tool("c2", "t", "42").with_id("t"),
    ];
    let back = to_ui_messages(&msgs);
    let p = tool(&back[0].parts[1]);
    assert_eq!(p.state, UiToolState::ApprovalRequested);
    assert_eq!(p.approval.as_ref().map(|a| a.id.as_str()), Some("c1"));
    let d = tool(&back[0].parts[2]);
    assert_eq!(d.state, UiToolState::OutputAvailable);
    assert_eq!(d.output, Some(json!("42")));
}

#[test]
fn a_plain_call_that_ran_reads_as_approved_whatever_its_stored_approval() {
    // validateUIMessages accepts an approval on an output part only with `approved: true`.
    let mut pending = ToolCall::new("c1", "t", json!({}));
    pending.approval = Some(Approval::Pending);
    let msgs = vec![
        Message::assistant("")
            .with_id("a")
            .with_tool_calls(vec![pending]),
        Message::tool("c1", "t", "ran anyway").with_id("t"),
    ];
    let back = to_ui_messages(&msgs);
    let part = tool(&back[0].parts[1]);
    assert_eq!(part.state, UiToolState::OutputAvailable);
    assert_eq!(part.approval.as_ref().and_then(|a| a.approved), Some(true));
}

#[test]
fn an_ai_sdk_thread_continued_in_our_ui_converts_back_with_the_new_messages() {
    let mut msgs = to_messages(&weather_turn());
    msgs.push(Message::user("thanks").with_id("m9"));
    msgs.push(Message::assistant("You're welcome.").with_id("m10"));
    let back = to_ui_messages(&msgs);
    assert_eq!(&back[..2], &weather_turn()[..]);
    assert_eq!(back[2].parts, vec![UiPart::text("thanks")]);
    assert_eq!(
        back[3].parts,
        vec![UiPart::step_start(), UiPart::text("You're welcome.")]
    );
}

#[test]
fn edited_content_wins_over_the_stored_layout() {
    let mut msgs = to_messages(&ui(json!([
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "old"}, {"type": "data-x", "data": 1}]},
        {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "ab"}, {"type": "text", "text": "cd"}]}
    ])));
    msgs[0].content = Content::Text("new text".into());
    msgs[1].content = Content::Text("rewritten".into());
    let back = to_ui_messages(&msgs);
    assert_eq!(back[0].parts[0], UiPart::text("new text"));
    assert!(matches!(&back[0].parts[1], UiPart::Data(d) if d.name == "x"));
    assert_eq!(back[1].parts, vec![UiPart::text("rewritten")]);
}

#[test]
fn a_plain_message_never_converts_to_an_empty_part_list() {
    let back = to_ui_messages(&[Message::user(Content::Parts(vec![])).with_id("u")]);
    assert_eq!(back[0].parts, vec![UiPart::text("")]);
}

#[test]
fn info_cards_are_not_sent_to_ai_sdk_apps() {
    let mut info = Message::assistant("card").with_id("i");
    info.info = Some(json!({"kind": "compact"}));
    let back = to_ui_messages(&[Message::user("hi").with_id("u"), info]);
    assert_eq!(back.len(), 1);
}

// ---- property test -------------------------------------------------------------------------

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Floats with few significant digits: serde_json's default parser is exact for them.
        (-1_000_000i32..1_000_000, 0u32..6)
            .prop_map(|(m, e)| json!(f64::from(m) / 10f64.powi(e as i32))),
        any::<String>().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((any::<String>(), json_leaf()), 0..3)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(s)
}

fn text_state() -> impl Strategy<Value = Option<UiTextState>> {
    opt(prop_oneof![
        Just(UiTextState::Streaming),
        Just(UiTextState::Done)
    ])
}

fn tool_part(call_id: String) -> impl Strategy<Value = UiPart> {
    let states = prop_oneof![
        Just(UiToolState::InputStreaming),
        Just(UiToolState::InputAvailable),
        Just(UiToolState::ApprovalRequested),
        Just(UiToolState::ApprovalResponded),
        Just(UiToolState::OutputAvailable),
        Just(UiToolState::OutputError),
        Just(UiToolState::OutputDenied),
    ];
    (
        (any::<String>(), any::<bool>(), states, opt(any::<String>())),
        (opt(json_value()), json_value(), any::<String>()),
        (
            any::<String>(),
            any::<bool>(),
            opt(any::<String>()),
            any::<bool>(),
        ),
        (opt(any::<bool>()), opt(json_object()), opt(any::<bool>())),
        (
            opt(any::<bool>()),
            prop::collection::vec(("x-[a-z]{1,6}", json_value()), 0..2),
        ),
    )
        .prop_map(
            move |(
                (name, dynamic, state, title),
                (input, output, error),
                (approval_id, approved, reason, with_approval),
                (provider_executed, call_provider_metadata, preliminary),
                (auto, unknown),
            )| {
                use UiToolState::*;
                let mut t = UiToolPart::dynamic(name, call_id.clone(), state);
                t.dynamic = dynamic;
                t.title = title;
                t.provider_executed = provider_executed;
                t.call_provider_metadata = call_provider_metadata;
                t.unknown = unknown.into_iter().collect();
                t.input = match state {
                    InputStreaming | OutputError => input,
                    _ => Some(input.unwrap_or(Value::Null)),
                };
                let approval = |approved: Option<bool>, reason: Option<String>| UiApproval {
                    approved,
                    reason,
                    unknown: if auto.is_some() {
                        Map::from_iter([("isAutomatic".to_owned(), json!(auto))])
                    } else {
                        Map::new()
                    },
                    ..UiApproval::new(&approval_id)
                };
                match state {
                    InputStreaming | InputAvailable => {}
                    ApprovalRequested => t.approval = Some(approval(None, None)),
                    ApprovalResponded => t.approval = Some(approval(Some(approved), reason)),
                    OutputAvailable => {
                        t.output = Some(output);
                        t.preliminary = preliminary;
                        t.approval = with_approval.then(|| approval(Some(true), reason));
                    }
                    OutputError => {
                        t.error_text = Some(error);
                        t.approval = with_approval.then(|| approval(Some(true), reason));
                    }
                    OutputDenied => t.approval = Some(approval(Some(false), reason)),
                }
                UiPart::Tool(Box::new(t))
            },
        )
}

fn other_part() -> impl Strategy<Value = UiPart> {
    let pm = || opt(json_object());
    prop_oneof![
        (any::<String>(), text_state(), pm()).prop_map(|(text, state, provider_metadata)| {
            UiPart::Text {
                text,
                state,
                provider_metadata,
            }
        }),
        (any::<String>(), text_state(), pm()).prop_map(|(text, state, provider_metadata)| {
            UiPart::Reasoning {
                text,
                state,
                provider_metadata,
            }
        }),
        (
            prop_oneof![
                Just("image/png"),
                Just("application/pdf"),
                Just("text/plain")
            ],
            opt(any::<String>()),
            any::<String>(),
            pm()
        )
            .prop_map(|(mt, filename, url, provider_metadata)| UiPart::File {
                media_type: mt.into(),
                filename,
                url,
                provider_metadata,
            }),
        Just(UiPart::step_start()),
        Just(UiPart::step_start()),
        (any::<String>(), any::<String>(), opt(any::<String>()), pm()).prop_map(
            |(source_id, url, title, provider_metadata)| UiPart::SourceUrl {
                source_id,
                url,
                title,
                provider_metadata
            }
        ),
        (
            any::<String>(),
            any::<String>(),
            any::<String>(),
            opt(any::<String>()),
            pm()
        )
            .prop_map(
                |(source_id, media_type, title, filename, provider_metadata)| {
                    UiPart::SourceDocument {
                        source_id,
                        media_type,
                        title,
                        filename,
                        provider_metadata,
                    }
                }
            ),
        (any::<String>(), opt(any::<String>()), json_value())
            .prop_map(|(name, id, data)| UiPart::Data(UiDataPart { name, id, data })),
        (
            prop_oneof![Just("reasoning-file"), Just("x-custom")],
            json_object()
        )
            .prop_map(|(ty, mut v)| {
                v["type"] = json!(ty);
                UiPart::Other(v)
            }),
    ]
}

/// A part: a tool part (with a call id unique in its message) or any other kind.
fn part(index: usize) -> impl Strategy<Value = UiPart> {
    prop_oneof![
        2 => tool_part(format!("call_{index}")),
        5 => other_part(),
    ]
}

fn ui_message() -> impl Strategy<Value = UiMessage> {
    let role = prop_oneof![
        1 => Just(UiRole::System),
        3 => Just(UiRole::User),
        4 => Just(UiRole::Assistant),
    ];
    let parts = (0usize..8).prop_flat_map(|n| (0..n).map(part).collect::<Vec<_>>());
    (any::<String>(), role, opt(json_value()), parts).prop_map(|(id, role, metadata, parts)| {
        UiMessage {
            id,
            role,
            metadata,
            parts,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ui_messages_survive_the_round_trip_through_messages_and_their_json(
        list in prop::collection::vec(ui_message(), 0..5)
    ) {
        let messages = to_messages(&list);
        prop_assert_eq!(&to_ui_messages(&messages), &list);
        let stored = serde_json::to_string(&messages).unwrap();
        let read: Vec<Message> = serde_json::from_str(&stored).unwrap();
        prop_assert_eq!(&read, &messages);
        prop_assert_eq!(&to_ui_messages(&read), &list);
        let wire = serde_json::to_value(&list).unwrap();
        let reread: Vec<UiMessage> = serde_json::from_value(wire).unwrap();
        prop_assert_eq!(&reread, &list);
    }

    #[test]
    fn continuation_messages_get_distinct_ids(list in prop::collection::vec(ui_message(), 1..4)) {
        for m in &list {
            let ids: Vec<String> = to_messages(std::slice::from_ref(m))
                .into_iter()
                .map(|x| x.id.unwrap())
                .collect();
            prop_assert_eq!(&ids[0], &m.id);
            let mut unique = ids.clone();
            unique.sort();
            unique.dedup();
            prop_assert_eq!(unique.len(), ids.len());
        }
    }
}

// ---- our UI's messages convert to what validateUIMessages (ai@6.0.0) accepts ----------------

/// The rules of `ai@6.0.0` `validateUIMessages` that a conversion can break: at least one part
/// per message, and per tool state which of `input`, `output`, `errorText`, `approval` (and
/// `approval.approved`) must or must not be there.
fn valid_for_ai_sdk_6_0_0(m: &UiMessage) -> Result<(), String> {
    use UiToolState::*;
    if m.parts.is_empty() {
        return Err(format!("{}: no parts", m.id));
    }
    for p in &m.parts {
        let UiPart::Tool(t) = p else { continue };
        let approved = t.approval.as_ref().map(|a| a.approved);
        let ok = match t.state {
            InputStreaming => t.output.is_none() && t.error_text.is_none() && t.approval.is_none(),
            InputAvailable => {
                t.input.is_some()
                    && t.output.is_none()
                    && t.error_text.is_none()
                    && t.approval.is_none()
            }
            ApprovalRequested => t.input.is_some() && approved == Some(None),
            ApprovalResponded => t.input.is_some() && matches!(approved, Some(Some(_))),
            OutputAvailable => {
                t.input.is_some()
                    && t.output.is_some()
                    && t.error_text.is_none()
                    && matches!(approved, None | Some(Some(true)))
            }
            OutputError => {
                t.input.is_some()
                    && t.output.is_none()
                    && t.error_text.is_some()
                    && matches!(approved, None | Some(Some(true)))
            }
            OutputDenied => {
                t.input.is_some()
                    && t.output.is_none()
                    && t.error_text.is_none()
                    && approved == Some(Some(false))
            }
        };
        if !ok {
            return Err(format!("{}: invalid tool part {t:?}", m.id));
        }
    }
    Ok(())
}

fn our_ui_message() -> impl Strategy<Value = Message> {
    let approval = opt(prop_oneof![
        Just(Approval::Pending),
        Just(Approval::Approved),
        Just(Approval::Denied),
        Just(Approval::Error),
    ]);
    let call = ("c[0-3]", "[a-z_]{1,8}", approval).prop_map(|(id, name, approval)| ToolCall {
        approval,
        ..ToolCall::new(id, name, json!({"q": 1}))
    });
    let content = prop_oneof![
        any::<String>().prop_map(Content::Text),
        prop::collection::vec(
            prop_oneof![
                any::<String>().prop_map(ContentPart::text),
                Just(ContentPart::image_url("data:image/png;base64,AA==")),
            ],
            0..3
        )
        .prop_map(Content::Parts),
    ];
    prop_oneof![
        (content.clone(), opt("[a-z0-9]{1,4}")).prop_map(|(c, id)| Message {
            id,
            ..Message::user(c)
        }),
        (
            any::<String>(),
            opt(any::<String>()),
            prop::collection::vec(call, 0..3)
        )
            .prop_map(|(text, thinking, calls)| Message {
                thinking,
                ..Message::assistant(text).with_tool_calls(calls)
            }),
        ("c[0-3]", any::<String>(), any::<bool>()).prop_map(|(id, text, is_error)| Message {
            is_error,
            ..Message::tool(id, "t", text)
        }),
    ]
}

proptest! {
    #[test]
    fn our_ui_messages_convert_to_what_the_ai_sdk_validates(
        msgs in prop::collection::vec(our_ui_message(), 0..8)
    ) {
        for m in to_ui_messages(&msgs) {
            prop_assert!(valid_for_ai_sdk_6_0_0(&m).is_ok(), "{:?}", valid_for_ai_sdk_6_0_0(&m));
        }
    }
}
