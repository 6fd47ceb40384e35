use lmchatkit_protocol::{Approval, Message, Prompt, PromptArgument, Role, ToolCall};
use serde_json::json;

use super::{clean, context_message, merge_params, refs, slash, user_text};

fn params(v: serde_json::Value) -> lmchatkit_protocol::Params {
    v.as_object().cloned().unwrap()
}

#[test]
fn clean_drops_system_info_and_empty_assistant_and_strips_ui_fields() {
    let mut info = Message::assistant("card");
    info.info = Some(json!({"title": "x"}));
    let mut call = ToolCall::new("c1", "search", json!({}));
    call.approval = Some(Approval::Approved);
    let mut user = Message::user("hi").with_id("m1");
    user.created_at = Some(5);
    let msgs = vec![
        Message::system("client system prompt"),
        user,
        info,
        Message::assistant(""),
        Message::assistant("").with_tool_calls(vec![call]),
        Message::tool("c1", "search", "result"),
    ];
    let out = clean(msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].role, Role::User);
    assert_eq!((out[0].id.as_deref(), out[0].created_at), (None, None));
    assert_eq!(out[1].tool_calls[0].approval, None);
    assert_eq!(out[2].role, Role::Tool);
}

#[test]
fn clean_strips_what_an_ai_sdk_message_keeps_for_the_round_trip() {
    let ui: Vec<lmchatkit_protocol::ui_stream::UiMessage> = serde_json::from_value(json!([
        {"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "hi"}, {"type": "data-ctx", "data": {"secret": 1}}
        ]}
    ]))
    .unwrap();
    let msgs = lmchatkit_protocol::ui_stream::to_messages(&ui);
    assert!(msgs[0].aisdk.is_some());
    let out = clean(msgs);
    assert_eq!(out[0].aisdk, None);
    assert_eq!(
        serde_json::to_value(&out[0]).unwrap(),
        json!({"role": "user", "content": "hi"})
    );
}

#[test]
fn a_reply_that_was_cut_off_tells_the_model_so_and_a_whole_one_does_not() {
    let mut stopped = Message::assistant("Half an ans");
    stopped.stopped = true;
    let mut failed = Message::assistant("Part");
    failed.failed = Some("upstream returned 502".into());
    let whole = Message::assistant("A whole answer.");
    let mut user = Message::user("a user's text");
    user.stopped = true; // never on a user message; ignored if it were
    let out = clean(vec![user, stopped, failed, whole]);
    let text = |m: &Message| m.content.as_text().unwrap_or_default().to_owned();
    assert_eq!(text(&out[0]), "a user's text");
    assert_eq!(
        text(&out[1]),
        "Half an ans\n\n[This reply was cut off before its end: the user stopped it. It holds what was written until then.]"
    );
    assert!(
        text(&out[2]).ends_with("cut off before its end: it failed (upstream returned 502). It holds what was written until then.]"),
        "{}",
        text(&out[2])
    );
    assert_eq!(text(&out[3]), "A whole answer.");
    // The marks themselves are the UI's: the model gets none of the fields.
    for m in &out {
        let json = serde_json::to_value(m).unwrap();
        assert!(
            json.get("stopped").is_none() && json.get("failed").is_none(),
            "{json}"
        );
    }
}

#[test]
fn params_merge_persona_base_request_wins_and_unset_dropped() {
    let merged = merge_params(
        Some(params(
            json!({"reasoning_effort": "low", "temperature": 0.2, "top_k": 40}),
        )),
        Some(params(
            json!({"temperature": 0.9, "top_k": null, "max_tokens": "", "seed": 0, "x": false}),
        )),
    );
    assert_eq!(
        serde_json::Value::Object(merged),
        json!({"reasoning_effort": "low", "temperature": 0.9, "seed": 0, "x": false})
    );
}

#[test]
fn finds_resource_references_but_not_emails() {
    assert_eq!(
        refs::find("see @file:///a.txt, and (@skill://go/SKILL.md). mail me@x.com"),
        vec![
            "file:///a.txt".to_string(),
            "skill://go/SKILL.md".to_string()
        ]
    );
    assert!(refs::find("no refs @ here, nor @x://").is_empty());
}

#[test]
fn slash_split_handles_multiline() {
    assert_eq!(
        slash::split("/review\nline one\nline two"),
        Some(("review", "line one\nline two"))
    );
    assert_eq!(slash::split("/srv__name"), Some(("srv__name", "")));
    assert_eq!(slash::split("not /a command"), None);
}

fn prompt(args: &[(&str, bool)]) -> Prompt {
    Prompt {
        name: "p".into(),
        description: None,
        arguments: args
            .iter()
            .map(|(n, r)| PromptArgument {
                name: (*n).into(),
                description: None,
                required: *r,
            })
            .collect(),
        icon: false,
    }
}

#[test]
fn prompt_args_single_required_takes_whole_remainder() {
    let args = slash::parse_args(
        &prompt(&[("code", true), ("lang", false)]),
        "fn main() {}\n  more",
    );
    assert_eq!(
        args.get("code").map(String::as_str),
        Some("fn main() {}\n  more")
    );
    assert_eq!(args.len(), 1);
}

#[test]
fn prompt_args_quoted_key_values() {
    let args = slash::parse_args(
        &prompt(&[("topic", true), ("style", true)]),
        r#"topic="a b c" style=terse junk"#,
    );
    assert_eq!(args.get("topic").map(String::as_str), Some("a b c"));
    assert_eq!(args.get("style").map(String::as_str), Some("terse"));
    // One required argument, but the user used key=value explicitly.
    let args = slash::parse_args(&prompt(&[("topic", true)]), r#"topic="x y""#);
    assert_eq!(args.get("topic").map(String::as_str), Some("x y"));
}

#[test]
fn model_context_is_a_labelled_untrusted_user_message() {
    let m = context_message(Some("budget"), &json!({"selected": "row 3"}));
    assert_eq!(m.role, Role::User);
    let text = m.content.as_text().unwrap();
    assert!(
        text.starts_with("Context from the budget app (untrusted"),
        "{text}"
    );
    assert!(text.ends_with(":\n{\"selected\":\"row 3\"}"), "{text}");
    let anon = context_message(None, &json!("x"));
    assert!(
        anon.content
            .as_text()
            .unwrap()
            .starts_with("Context from an app (untrusted")
    );
}

#[test]
fn a_message_from_an_app_offers_no_text_to_expand() {
    let mut m = Message::user("/review @file:///x");
    assert_eq!(user_text(&m), Some("/review @file:///x"));
    m.from_app = Some("budget".into());
    assert_eq!(user_text(&m), None);
}
