use std::collections::BTreeMap;
use std::time::Duration;

use lmchatkit_protocol::{
    InputAction, InputAnswer, InputAnswers, InputKind, InputQuestion, InputRequired, ToolResult,
};
use serde_json::{Value, json};

use super::*;
use crate::host::{Principal, RequestContext, Scope};

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

fn cx(who: &str) -> RequestContext {
    RequestContext::new(Principal::new(who))
}

fn asking(state: Option<&str>, questions: Vec<InputQuestion>) -> ToolResult {
    ToolResult {
        content: "waits".into(),
        input_required: Some(Box::new(InputRequired {
            questions,
            request_state: state.map(str::to_owned),
            ..InputRequired::default()
        })),
        ..ToolResult::default()
    }
}

fn form(key: &str) -> InputQuestion {
    InputQuestion {
        key: key.into(),
        message: "Your name?".into(),
        kind: InputKind::Form {
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        },
    }
}

fn url(key: &str, url: &str) -> InputQuestion {
    InputQuestion {
        key: key.into(),
        message: "Sign in".into(),
        kind: InputKind::Url {
            url: url.into(),
            host: String::new(),
        },
    }
}

fn subject<'a>(principal: &'a str, input: &'a Value) -> Subject<'a> {
    Subject {
        principal,
        thread: "t1",
        call_id: "call_1",
        tool: "srv__book",
        input,
    }
}

/// Issues a ticket for `alice`'s call and returns it.
fn ticket(t: &InputTickets, input: &Value, questions: Vec<InputQuestion>) -> InputRequired {
    let scope = Scope::model(cx("alice"));
    let r = t.issue(
        &scope,
        &subject("alice", input),
        asking(Some("s-1"), questions),
    );
    *r.input_required.expect("a request for input")
}

fn answers(ticket: &InputRequired, pairs: &[(&str, InputAnswer)]) -> InputAnswers {
    InputAnswers {
        ticket: ticket.ticket.clone().unwrap_or_default(),
        answers: pairs
            .iter()
            .map(|(k, a)| ((*k).to_owned(), a.clone()))
            .collect::<BTreeMap<_, _>>(),
    }
}

fn name(n: &str) -> InputAnswer {
    let mut m = serde_json::Map::new();
    m.insert("name".into(), json!(n));
    InputAnswer::accept(m)
}

#[test]
fn a_ticket_opens_for_its_own_call_with_the_servers_state_and_every_key_answered() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({"day": "monday", "seats": 2});
    let req = ticket(&t, &input, vec![form("who"), form("why")]);
    assert!(req.ticket.as_deref().is_some_and(|s| s.starts_with("it_")));
    assert!(req.expires_at_ms.is_some());
    assert_eq!(
        req.request_state, None,
        "the server's state travels only in the ticket"
    );

    // The same input with its keys in another order is the same call.
    let reordered = json!({"seats": 2, "day": "monday"});
    let opened = t
        .open(
            &Scope::user(cx("alice")),
            &subject("alice", &reordered),
            &answers(&req, &[("who", name("Ada"))]),
        )
        .expect("the call's own ticket opens");
    assert_eq!(opened.request_state.as_deref(), Some("s-1"));
    assert!(!opened.expired);
    assert_eq!(opened.answers["who"], name("Ada"));
    assert_eq!(
        opened.answers["why"],
        InputAnswer::new(InputAction::Cancel),
        "a question left unanswered is cancelled"
    );
}

#[test]
fn a_ticket_is_refused_for_another_user_conversation_call_tool_or_input() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({"day": "monday"});
    let req = ticket(&t, &input, vec![form("who")]);
    let a = answers(&req, &[("who", name("Ada"))]);
    let user = Scope::user(cx("alice"));
    let other_input = json!({"day": "tuesday"});
    let cases = [
        ("another principal", subject("mallory", &input)),
        (
            "another conversation",
            Subject {
                thread: "t2",
                ..subject("alice", &input)
            },
        ),
        (
            "another call",
            Subject {
                call_id: "call_2",
                ..subject("alice", &input)
            },
        ),
        (
            "another tool",
            Subject {
                tool: "srv__delete",
                ..subject("alice", &input)
            },
        ),
        ("another input", subject("alice", &other_input)),
    ];
    for (what, s) in cases {
        let err = t.open(&user, &s, &a).expect_err(what);
        assert!(matches!(err, Failure::Denied(_)), "{what}: {err:?}");
    }
}

#[test]
fn an_altered_or_foreign_ticket_is_refused() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let req = ticket(&t, &input, vec![form("who")]);
    let good = req.ticket.clone().unwrap_or_default();
    let (payload, tag) = good.split_once('.').expect("payload.tag");
    // A payload of the attacker's own (another server state, a later expiry) under the old tag.
    let forged_payload = URL_SAFE_NO_PAD.encode(br#"{"s":"evil","k":["who"],"e":99999999999999}"#);
    let forged = format!("it_{forged_payload}.{tag}");
    let other_key = InputTickets::random(DEFAULT_INPUT_TTL);
    let user = Scope::user(cx("alice"));
    for (what, ticket) in [
        ("a forged payload", forged),
        ("no prefix", good.trim_start_matches("it_").to_owned()),
        ("a cut tag", format!("{payload}.{}", &tag[..10])),
        ("garbage", "it_x.y".to_owned()),
    ] {
        let a = InputAnswers {
            ticket,
            answers: BTreeMap::new(),
        };
        assert!(
            t.open(&user, &subject("alice", &input), &a).is_err(),
            "{what}"
        );
    }
    let a = answers(&req, &[]);
    assert!(
        other_key
            .open(&user, &subject("alice", &input), &a)
            .is_err(),
        "another key (another process without a shared secret) refuses it"
    );
}

#[test]
fn instances_given_the_same_secret_take_each_others_tickets() {
    let a = InputTickets::derive(SECRET, DEFAULT_INPUT_TTL);
    let b = InputTickets::derive(SECRET, DEFAULT_INPUT_TTL);
    let input = json!({"q": 1});
    let req = ticket(&a, &input, vec![form("who")]);
    let opened = b
        .open(
            &Scope::user(cx("alice")),
            &subject("alice", &input),
            &answers(&req, &[("who", name("Ada"))]),
        )
        .expect("the other instance opens it");
    assert_eq!(opened.answers["who"], name("Ada"));
}

#[test]
fn an_answer_to_a_question_not_asked_or_with_nested_values_is_refused() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let req = ticket(&t, &input, vec![form("who")]);
    let user = Scope::user(cx("alice"));
    let err = t
        .open(
            &user,
            &subject("alice", &input),
            &answers(&req, &[("whom", name("Ada"))]),
        )
        .expect_err("an unknown key");
    assert!(matches!(err, Failure::Invalid(_)), "{err:?}");
    let mut nested = serde_json::Map::new();
    nested.insert("name".into(), json!({"first": "Ada"}));
    let err = t
        .open(
            &user,
            &subject("alice", &input),
            &answers(&req, &[("who", InputAnswer::accept(nested))]),
        )
        .expect_err("a nested value");
    assert!(matches!(err, Failure::Invalid(_)), "{err:?}");
}

#[test]
fn answers_after_the_expiry_are_all_cancel() {
    let t = InputTickets::random(Duration::ZERO);
    let input = json!({});
    let req = ticket(&t, &input, vec![form("who")]);
    std::thread::sleep(Duration::from_millis(5));
    let opened = t
        .open(
            &Scope::user(cx("alice")),
            &subject("alice", &input),
            &answers(&req, &[("who", name("Ada"))]),
        )
        .expect("an expired ticket still opens, as a cancel");
    assert!(opened.expired);
    assert_eq!(opened.answers["who"], InputAnswer::new(InputAction::Cancel));
}

#[test]
fn a_decline_or_cancel_carries_no_content() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let req = ticket(&t, &input, vec![form("who")]);
    let mut declined = name("Ada");
    declined.action = InputAction::Decline;
    let opened = t
        .open(
            &Scope::user(cx("alice")),
            &subject("alice", &input),
            &answers(&req, &[("who", declined)]),
        )
        .expect("opens");
    assert_eq!(
        opened.answers["who"],
        InputAnswer::new(InputAction::Decline)
    );
}

#[test]
fn a_view_gets_no_ticket_and_cannot_answer() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let view = Scope::view(cx("alice"), Some("srv".into()));
    let r = t.issue(
        &view,
        &subject("alice", &input),
        asking(Some("s"), vec![form("who")]),
    );
    assert!(
        r.is_error,
        "a view's call that needs input is an error for the view"
    );
    assert!(r.input_required.is_none());
    assert!(r.content.contains("only the chat"), "{}", r.content);

    let req = ticket(&t, &input, vec![form("who")]);
    let err = t
        .open(
            &view,
            &subject("alice", &input),
            &answers(&req, &[("who", name("Ada"))]),
        )
        .expect_err("a view answering");
    assert!(matches!(err, Failure::Denied(_)), "{err:?}");
}

#[test]
fn a_url_question_shows_its_host_and_a_url_that_is_not_http_is_never_shown() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let req = ticket(
        &t,
        &input,
        vec![url("signin", "https://auth.example.com/start?x=1")],
    );
    assert_eq!(
        req.questions[0].kind,
        InputKind::Url {
            url: "https://auth.example.com/start?x=1".into(),
            host: "auth.example.com".into()
        }
    );
    let scope = Scope::model(cx("alice"));
    for bad in [
        "javascript:alert(1)",
        "data:text/html,hi",
        "file:///etc/passwd",
        "/relative",
    ] {
        let r = t.issue(
            &scope,
            &subject("alice", &input),
            asking(None, vec![url("signin", bad)]),
        );
        assert!(r.is_error && r.input_required.is_none(), "{bad} was shown");
    }
}

#[test]
fn a_result_that_asks_nothing_passes_unchanged() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({});
    let r = ToolResult::text("done");
    assert_eq!(
        t.issue(
            &Scope::model(cx("alice")),
            &subject("alice", &input),
            r.clone()
        ),
        r
    );
}

fn running(id: &str) -> ToolResult {
    ToolResult {
        content: "runs".into(),
        task: Some(Box::new(lmchatkit_protocol::ToolTask {
            task_id: id.into(),
            ..Default::default()
        })),
        ..ToolResult::default()
    }
}

#[test]
fn a_tasks_ticket_polls_only_its_own_task_and_never_for_a_view_or_as_answers() {
    let t = InputTickets::random(DEFAULT_INPUT_TTL);
    let input = json!({"n": 1});
    let model = Scope::model(cx("alice"));
    let r = t.issue(&model, &subject("alice", &input), running("task-7"));
    let task = r.task.expect("the task stays");
    assert_eq!(task.task_id, "", "the task id travels only in the ticket");
    let ticket = task.ticket.expect("a ticket");
    assert_eq!(
        t.open_task(
            &Scope::user(cx("alice")),
            &subject("alice", &input),
            &ticket
        )
        .expect("its own call"),
        "task-7"
    );
    let other = t.open_task(&model, &subject("mallory", &input), &ticket);
    assert!(matches!(other, Err(Failure::Denied(_))), "{other:?}");
    let view = Scope::view(cx("alice"), Some("srv".into()));
    let err = t.open_task(&view, &subject("alice", &input), &ticket);
    assert!(
        matches!(err, Err(Failure::Denied(_))),
        "a view polling: {err:?}"
    );
    let as_answers = InputAnswers {
        ticket,
        answers: BTreeMap::new(),
    };
    let err = t.open(&model, &subject("alice", &input), &as_answers);
    assert!(matches!(err, Err(Failure::Invalid(_))), "{err:?}");
    let r = t.issue(&view, &subject("alice", &input), running("task-8"));
    assert!(r.is_error && r.task.is_none(), "a view gets no task ticket");
}
