use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use lmchatkit_protocol::{
    Event, FinishReason, Message, Model, Role, Tool, ToolCall, ToolResult, Usage,
};
use serde_json::{Value, json};
use tokio::sync::{Barrier, mpsc};

use super::{Agent, AgentEvent, Answer, Decide, Decision, Finish, Turn};
use crate::access::Scope;
use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};

/// A host that answers each model call with the next scripted step (the last one repeats) and
/// runs tools by name.
#[derive(Default)]
struct Scripted {
    steps: Vec<Vec<Event>>,
    seen: Mutex<Vec<CompleteRequest>>,
    calls: Mutex<Vec<String>>,
    /// Tools that wait on this barrier before answering (for the concurrency test).
    barrier: Option<Arc<Barrier>>,
    /// Tools that never answer; set when the pending call was dropped.
    hang: bool,
    dropped: Arc<AtomicBool>,
}

#[async_trait]
impl Host for Scripted {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![])
    }
    fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
        let mut seen = self.seen.lock().unwrap();
        let n = seen.len().min(self.steps.len() - 1);
        seen.push(req);
        Box::pin(futures_util::stream::iter(self.steps[n].clone()))
    }
    async fn list_tools(&self, _: &Scope) -> Result<Vec<Tool>, HostError> {
        Ok(["a", "b", "c", "rm"].map(Tool::new).to_vec())
    }
    async fn call_tool(&self, _: &Scope, name: &str, args: Value) -> Result<ToolResult, HostError> {
        self.calls.lock().unwrap().push(name.to_owned());
        if let Some(b) = &self.barrier {
            b.wait().await;
        }
        if self.hang {
            struct Flag(Arc<AtomicBool>);
            impl Drop for Flag {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let _flag = Flag(self.dropped.clone());
            std::future::pending::<()>().await;
        }
        Ok(ToolResult::text(format!("{name} said {args}")))
    }
}

/// Decides by tool name; anything unlisted is allowed.
struct ByName(HashMap<&'static str, Decision>);

#[async_trait]
impl Decide for ByName {
    async fn decide(&self, _: &Scope, call: &ToolCall) -> Decision {
        self.0
            .get(call.name.as_str())
            .copied()
            .unwrap_or(Decision::Allow)
    }
}

fn call(id: &str, name: &str) -> Event {
    Event::ToolCall {
        tool_call: ToolCall::new(id, name, json!({"x": id})),
        decision: None,
    }
}

fn usage(p: u64, c: u64) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: Some(p),
        completion_tokens: Some(c),
        total_tokens: None,
        ..Default::default()
    })
}

fn tools_then_text(calls: Vec<Event>) -> Vec<Vec<Event>> {
    let mut first = calls;
    first.push(Event::done(FinishReason::ToolCalls, usage(10, 2)));
    vec![
        first,
        vec![
            Event::delta("all done"),
            Event::done(FinishReason::Stop, usage(20, 3)),
        ],
    ]
}

fn agent(
    host: Scripted,
    rules: &[(&'static str, Decision)],
    max_steps: usize,
) -> (Agent, Arc<Scripted>) {
    let host = Arc::new(host);
    let agent = Agent {
        host: host.clone(),
        decide: Arc::new(ByName(rules.iter().copied().collect())),
        max_steps,
        tickets: crate::access::input::InputTickets::random(crate::DEFAULT_INPUT_TTL),
    };
    (agent, host)
}

fn turn(answers: Vec<Answer>) -> Turn {
    let mut messages = vec![Message::system("sys"), Message::user("go")];
    for a in &answers {
        messages.push(Message::assistant("").with_tool_calls(vec![a.call.clone()]));
    }
    Turn {
        cx: RequestContext::default(),
        request: CompleteRequest {
            model: "m".into(),
            messages,
            ..CompleteRequest::default()
        },
        answers,
        inputs: Vec::new(),
        thread: "t1".into(),
    }
}

async fn run(agent: &Agent, turn: Turn) -> Vec<AgentEvent> {
    let mut events = agent.clone().events(turn);
    let mut out = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the loop answers within 5 s")
    {
        out.push(ev);
    }
    out
}

/// The loop's events read in a task of their own, forwarded to the receiver (a test that
/// leaves mid-turn aborts the task, which drops the loop).
fn spawn_run(
    agent: &Agent,
    turn: Turn,
) -> (tokio::task::JoinHandle<()>, mpsc::Receiver<AgentEvent>) {
    let (tx, rx) = mpsc::channel(64);
    let mut events = agent.clone().events(turn);
    let task = tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            if tx.send(ev).await.is_err() {
                break;
            }
        }
    });
    (task, rx)
}

fn finish_of(events: &[AgentEvent]) -> (Finish, Option<Usage>) {
    match events.last() {
        Some(AgentEvent::Finish { reason, usage }) => (*reason, *usage),
        other => panic!("the turn ends with Finish, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_without_tools_is_one_step() {
    let (agent, host) = agent(
        Scripted {
            steps: vec![vec![
                Event::delta("hi"),
                Event::done(FinishReason::Stop, usage(3, 1)),
            ]],
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert_eq!(
        events,
        vec![
            AgentEvent::StepStart,
            AgentEvent::Text("hi".into()),
            AgentEvent::StepEnd { usage: usage(3, 1) },
            AgentEvent::Finish {
                reason: Finish::Model(Some(FinishReason::Stop)),
                usage: usage(3, 1)
            },
        ]
    );
    assert_eq!(host.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn allowed_calls_run_and_their_results_reach_the_next_model_call_in_call_order() {
    let (agent, host) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "a"), call("c2", "b")]),
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    // Summed over the two calls; the context is the last call's (20 + 3).
    let summed = usage(30, 5).map(|u| Usage {
        context_tokens: Some(23),
        ..u
    });
    assert_eq!(
        finish_of(&events),
        (Finish::Model(Some(FinishReason::Stop)), summed)
    );
    let outputs: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolOutput { .. }))
        .collect();
    assert_eq!(outputs.len(), 2);
    let seen = host.seen.lock().unwrap();
    let second = &seen[1].messages;
    let tail: Vec<_> = second[2..]
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone()))
        .collect();
    assert_eq!(
        tail,
        vec![
            (Role::Assistant, None),
            (Role::Tool, Some("c1".into())),
            (Role::Tool, Some("c2".into())),
        ]
    );
    assert_eq!(second[2].tool_calls.len(), 2);
    assert_eq!(second[3].content.as_text(), Some(r#"a said {"x":"c1"}"#));
}

#[tokio::test]
async fn the_loop_stops_after_max_steps_when_the_model_keeps_asking_for_tools() {
    let (agent, host) = agent(
        Scripted {
            steps: vec![vec![
                call("c1", "a"),
                Event::done(FinishReason::ToolCalls, None),
            ]],
            ..Scripted::default()
        },
        &[],
        3,
    );
    let events = run(&agent, turn(vec![])).await;
    assert_eq!(finish_of(&events).0, Finish::MaxSteps);
    assert_eq!(host.seen.lock().unwrap().len(), 3);
    assert_eq!(host.calls.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn parallel_calls_run_concurrently() {
    // Each call waits until both have started: run one after the other, they never finish.
    let (agent, _) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "a"), call("c2", "b")]),
            barrier: Some(Arc::new(Barrier::new(2))),
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert_eq!(
        finish_of(&events).0,
        Finish::Model(Some(FinishReason::Stop))
    );
}

#[tokio::test]
async fn ask_ends_the_turn_with_approval_requests_after_the_allowed_calls_ran() {
    let (agent, host) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "a"), call("c2", "b")]),
            ..Scripted::default()
        },
        &[("b", Decision::Ask)],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert_eq!(finish_of(&events).0, Finish::AwaitingApproval);
    assert_eq!(*host.calls.lock().unwrap(), vec!["a".to_owned()]);
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::ApprovalRequested(c) if c.id == "c2" && c.name == "b")
        )
    );
    assert_eq!(
        host.seen.lock().unwrap().len(),
        1,
        "no model call waits on the answer"
    );
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told_the_policy_blocks_it() {
    let (agent, host) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "rm")]),
            ..Scripted::default()
        },
        &[("rm", Decision::Deny)],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert!(host.calls.lock().unwrap().is_empty());
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::ToolOutput { call_id, result } if call_id == "c1" && result.is_error)));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolDenied { .. }))
    );
    let seen = host.seen.lock().unwrap();
    let told = seen[1].messages.last().unwrap();
    assert!(told.is_error);
    assert!(
        told.content
            .as_text()
            .unwrap()
            .contains("operator's policy blocks the tool 'rm'")
    );
}

#[tokio::test]
async fn answers_run_approved_calls_and_tell_the_model_about_declined_ones_with_the_reason() {
    let (agent, host) = agent(
        Scripted {
            steps: vec![vec![
                Event::delta("ok"),
                Event::done(FinishReason::Stop, None),
            ]],
            ..Scripted::default()
        },
        &[("a", Decision::Ask), ("b", Decision::Ask)],
        10,
    );
    let answers = vec![
        Answer {
            call: ToolCall::new("c1", "a", json!({})),
            approved: true,
            reason: None,
        },
        Answer {
            call: ToolCall::new("c2", "b", json!({})),
            approved: false,
            reason: Some("not today".into()),
        },
    ];
    let events = run(&agent, turn(answers)).await;
    assert_eq!(*host.calls.lock().unwrap(), vec!["a".to_owned()]);
    assert_eq!(
        events[0],
        AgentEvent::ToolDenied {
            call_id: "c2".into()
        }
    );
    let seen = host.seen.lock().unwrap();
    let declined = seen[0]
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c2"))
        .unwrap();
    assert_eq!(
        declined.content.as_text(),
        Some(lmchatkit_protocol::ui_stream::denied_text("b", Some("not today")).as_str())
    );
}

#[tokio::test]
async fn an_approved_answer_does_not_run_a_tool_the_policy_now_denies() {
    let (agent, host) = agent(
        Scripted {
            steps: vec![vec![Event::done(FinishReason::Stop, None)]],
            ..Scripted::default()
        },
        &[("rm", Decision::Deny)],
        10,
    );
    let answers = vec![Answer {
        call: ToolCall::new("c1", "rm", json!({})),
        approved: true,
        reason: None,
    }];
    let events = run(&agent, turn(answers)).await;
    assert!(host.calls.lock().unwrap().is_empty());
    assert!(
        matches!(&events[0], AgentEvent::ToolOutput { call_id, result } if call_id == "c1" && result.is_error),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_upstream_error_ends_the_turn_after_the_partial_text() {
    let (agent, _) = agent(
        Scripted {
            steps: vec![vec![Event::delta("par"), Event::error("upstream died")]],
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert_eq!(events[1], AgentEvent::Text("par".into()));
    assert!(events.contains(&AgentEvent::Error("upstream died".into())));
    assert_eq!(finish_of(&events).0, Finish::Error);
}

#[tokio::test]
async fn dropping_the_run_cancels_the_running_tool_call() {
    let (agent, host) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "a")]),
            hang: true,
            ..Scripted::default()
        },
        &[],
        10,
    );
    let (task, mut rx) = spawn_run(&agent, turn(vec![]));
    // Wait until the call runs, then leave.
    while let Some(ev) = rx.recv().await {
        if matches!(ev, AgentEvent::ToolInput(_)) {
            break;
        }
    }
    let started = AtomicUsize::new(0);
    while host.calls.lock().unwrap().is_empty() && started.fetch_add(1, Ordering::SeqCst) < 500 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(!host.dropped.load(Ordering::SeqCst));
    task.abort();
    let _ = task.await;
    assert!(
        host.dropped.load(Ordering::SeqCst),
        "the tool call was dropped"
    );
}

#[tokio::test]
async fn the_policys_own_decisions_are_reported_before_the_calls_outcome_and_asked_ones_are_not() {
    let (agent, _) = agent(
        Scripted {
            steps: tools_then_text(vec![call("c1", "a"), call("c2", "rm"), call("c3", "b")]),
            ..Scripted::default()
        },
        &[("rm", Decision::Deny), ("b", Decision::Ask)],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    let decided: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Decided { call, approved } => Some((call.id.as_str(), *approved)),
            _ => None,
        })
        .collect();
    assert_eq!(decided, [("c1", true), ("c2", false)]);
    let at = |pred: &dyn Fn(&AgentEvent) -> bool| events.iter().position(pred).unwrap();
    let decided_c1 = at(&|e| matches!(e, AgentEvent::Decided { call, .. } if call.id == "c1"));
    let output_c1 = at(&|e| matches!(e, AgentEvent::ToolOutput { call_id, .. } if call_id == "c1"));
    assert!(decided_c1 < output_c1, "{events:?}");
}

#[tokio::test]
async fn a_calls_streamed_pieces_come_before_it_and_only_the_complete_call_runs() {
    let piece = |d: &str| Event::tool_call_delta("c1", "a", d);
    let (agent, host) = agent(
        Scripted {
            steps: tools_then_text(vec![
                piece(""),
                piece("{\"x\":"),
                piece("\"c1\"}"),
                call("c1", "a"),
            ]),
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    let delta = |d: &str| AgentEvent::ToolInputDelta {
        id: "c1".into(),
        name: "a".into(),
        delta: d.into(),
    };
    assert_eq!(
        events[1..5],
        [
            delta(""),
            delta("{\"x\":"),
            delta("\"c1\"}"),
            AgentEvent::ToolInput(ToolCall::new("c1", "a", json!({"x": "c1"}))),
        ]
    );
    assert_eq!(*host.calls.lock().unwrap(), ["a"], "the call ran once");
    // The next model call sees the complete call, never its pieces.
    let seen = host.seen.lock().unwrap();
    let asked = &seen[1].messages;
    assert_eq!(asked[2].tool_calls[0].arguments, json!({"x": "c1"}));
}

#[tokio::test]
async fn a_call_cut_off_while_its_pieces_stream_never_runs() {
    let (agent, host) = agent(
        Scripted {
            steps: vec![vec![
                Event::tool_call_delta("c1", "rm", "{\"path\":"),
                Event::error("the reply was cut off"),
            ]],
            ..Scripted::default()
        },
        &[],
        10,
    );
    let events = run(&agent, turn(vec![])).await;
    assert!(matches!(events[1], AgentEvent::ToolInputDelta { .. }));
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolInput(_))));
    assert_eq!(finish_of(&events).0, Finish::Error);
    assert!(host.calls.lock().unwrap().is_empty());
}
