//! A native turn, `POST {prefix}/api/chat`, from the body to the run: [`plan`] checks the
//! request and prepares the turn ([`super::prepare`]); [`run`] starts it on the path both
//! protocols share ([`super::run`]) with the native loop driver (the host's one model call)
//! and the native encoder ([`Native`]: the protocol's [`Event`]s as they come).
//!
//! Decisions:
//! - **Checks before anything runs**: the model must be a configured one of the caller's menu,
//!   the reasoning effort `low|medium|high`, the conversation id a valid one; a 400 otherwise.
//! - **One model call per run.** The native protocol runs tools in the browser, so a run ends
//!   with the model's `done` or `error`; the tab posts the next turn as a new run. A stream that
//!   ends without `done` or `error` gets a `done`, so clients always see the end of a turn.
//! - **Each `tool_call` carries the approval policy's decision** for the caller (computed per
//!   call, in the model's scope), so the UI skips the prompt for `allow` and never runs a
//!   `deny`. `done` carries `cost_usd`, the model's list price applied to the reported usage,
//!   when both are known; the UI stores it on the reply.
//! - **The reply is saved when the run ends** (done, error or stopped), before the log ends,
//!   and the log's last event is `saved` with the conversation's revision: the tab's own save
//!   after the stream takes it as its base and is no conflict. The service puts only the reply
//!   in its place ([`Snapshot::Reply`]); the rest of the conversation is the tab's to save. A
//!   reply with nothing in it (no text, reasoning or call) is not saved.
//! - **Tool calls are saved with the policy's approval** ([`Approval::initial`], nothing
//!   allowed in the chat yet): a tab that reloads asks for the pending ones.
//! - **Stop** ends the log with `done` whose finish reason is `stopped`, and saves the reply
//!   marked [`Message::stopped`]; a run that ends in `error` saves it marked
//!   [`Message::failed`] with the error. Either way the model is told, next turn, that the
//!   reply was cut off ([`super::clean`]).
//! - **With a shared engine** (several instances) the reply so far is also saved at most once
//!   a second while events arrive, so an instance killed mid-reply loses at most about a
//!   second of it (the run is then marked failed by another instance, see `runs::shared`).
//! - `<think>` tags inline in the text are saved as streamed: the UI splits them when it shows
//!   (and saves) the reply.
//! - **A call's arguments stream as `tool_call_delta`s** (when the host's stream has them: the
//!   built-in upstreams and the demo model do) before its complete `tool_call`, which stays the
//!   one event a client acts on. The deltas are in the run's log (a reload replays them) but
//!   **never saved**: the saved reply holds the complete call only, and a call cut off before
//!   its `tool_call` is not in it at all. The first delta of a call to a tool with an MCP App
//!   view carries the tool's `ui` (its `resourceUri` only; see [`with_views`]), so the UI opens
//!   the view while the arguments stream. A host's own `ui` on a delta is replaced: only the
//!   service says which view a tool has.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use lmchatkit_protocol::{
    Approval, ArgumentHint, ChatRequest, Event, FinishReason, Message, ToolDecision,
};
use tracing::Instrument;

use super::Services;
use super::run::{self, Encoder, NewRun, Step};
use crate::access::Scope;
use crate::access::approval::{self, Approvals};
use crate::error::Failure;
use crate::host::RequestContext;
use crate::live::runs::saver::{Snapshot, Target};
use crate::live::runs::{Run, RunWriter};
use crate::models::{Price, TokenUsage};
use crate::store::validate_id;

/// A checked native request, ready to run.
pub(crate) struct Plan {
    cx: RequestContext,
    request: crate::host::CompleteRequest,
    conversation: Option<String>,
    reply_id: String,
    price: Option<Price>,
    save: Option<Target>,
    /// The messages the turn was asked with (what a reply's save finds its place in).
    asked: Arc<Vec<Message>>,
    span: tracing::Span,
}

/// Checks `body` and prepares its turn.
pub(crate) async fn plan(
    services: &Services<'_>,
    cx: &RequestContext,
    body: ChatRequest,
) -> Result<Plan, Failure> {
    if body.model.trim().is_empty() {
        return Err(Failure::Invalid("model is required".into()));
    }
    if body.messages.is_empty() {
        return Err(Failure::Invalid("messages is required".into()));
    }
    super::check_effort(body.params.as_ref())?;
    let conversation = body.conversation_id.clone().filter(|c| !c.is_empty());
    if let Some(c) = &conversation {
        validate_id(c).map_err(|_| Failure::Invalid(format!("invalid conversation id {c:?}")))?;
    }
    let model = super::menu::resolve(&services.inputs, cx, Some(&body.model)).await?;
    let price = services.inputs.catalog.price(&model.id);
    let reply_id = body
        .reply_id
        .clone()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("m-{:016x}", rand::random::<u64>()));
    let save = match (services.history, &conversation) {
        (Some(store), Some(thread)) => Some(Target {
            store: store.clone(),
            events: services.events.cloned(),
            principal: cx.principal(),
            thread: thread.clone(),
            model: model.id.clone(),
            persona_id: body.persona_id.clone(),
            params: body.params.clone().unwrap_or_default(),
        }),
        _ => None,
    };
    let asked = Arc::new(match save {
        Some(_) => body.messages.clone(),
        None => Vec::new(),
    });
    let span = tracing::info_span!("chat", model = %model.id, messages = body.messages.len());
    let request = super::prepare(&services.inputs, cx, body, &model)
        .instrument(span.clone())
        .await;
    Ok(Plan {
        cx: cx.clone(),
        request,
        conversation,
        reply_id,
        price,
        save,
        asked,
        span,
    })
}

/// Starts `plan` as a run (a 409 while another one writes the conversation) that holds `hold`
/// until it ends.
pub(crate) async fn run(
    services: &Services<'_>,
    plan: Plan,
    hold: impl Send + 'static,
) -> Result<Run, Failure> {
    let Plan {
        cx,
        request,
        conversation,
        reply_id,
        price,
        save,
        asked,
        span,
    } = plan;
    let schemas = request
        .tools
        .iter()
        .filter_map(|t| Some((t.name.clone(), t.input_schema.clone()?)))
        .collect();
    let views = request
        .tools
        .iter()
        .filter_map(|t| {
            let uri = t.ui.as_ref()?.resource_uri.clone()?;
            Some((t.name.clone(), uri))
        })
        .collect();
    let driver = with_decisions(
        with_views(services.inputs.host.complete(&cx, request), views),
        services.approvals.clone(),
        Scope::model(cx.clone()),
        schemas,
    );
    let driver = with_terminal(driver).map(move |ev| with_cost(ev, price));
    let encoder = Native::new(&reply_id, save.is_some().then_some(asked));
    let lost = [serde_json::to_string(&Event::error(run::LOST)).unwrap_or_default()];
    let owner = cx.principal();
    let new = NewRun {
        owner: &owner,
        conversation: conversation.as_deref(),
        message_id: &reply_id,
        resume_base: None,
        lost: &lost,
        save,
    };
    run::start(services.runs, new, driver, encoder, hold)
        .instrument(span)
        .await
}

/// The native encoder: each event as it comes, and, when the reply is saved, the reply it adds
/// up to.
pub(crate) struct Native {
    reply: Message,
    /// The messages the turn was asked with, when the reply is saved (else it is not
    /// collected).
    asked: Option<Arc<Vec<Message>>>,
}

impl Native {
    /// An encoder for reply `reply_id`, collecting it when `asked` (the request's messages) is
    /// given.
    pub(crate) fn new(reply_id: &str, asked: Option<Arc<Vec<Message>>>) -> Self {
        let mut reply = Message::assistant("");
        reply.id = Some(reply_id.to_owned());
        reply.created_at = Some(crate::store::now_ms());
        Self { reply, asked }
    }
}

impl Encoder for Native {
    type Event = Event;

    fn start(&mut self, _run_id: &str, _log: &RunWriter) {}

    fn push(&mut self, ev: Event, log: &RunWriter) -> Step {
        if matches!(ev, Event::Saved { .. }) {
            return Step::default(); // the service's own event
        }
        if self.asked.is_some() {
            apply(&mut self.reply, &ev);
        }
        log.append_json(&ev);
        Step {
            // The first event is the time to first token (see `runs::launch`).
            output: true,
            settle: false,
            end: matches!(ev, Event::Done { .. } | Event::Error { .. }),
        }
    }

    fn stop(&mut self, log: &RunWriter) {
        self.reply.stopped = true;
        log.append_json(&Event::Done {
            finish_reason: Some(FinishReason::Stopped),
            usage: None,
            cost_usd: None,
        });
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let asked = self.asked.as_ref()?;
        has_content(&self.reply).then(|| Snapshot::Reply {
            request: asked.clone(),
            reply: Box::new(self.reply.clone()),
        })
    }

    fn end(&mut self, revision: Option<u64>, log: &RunWriter) {
        if let Some(revision) = revision
            && has_content(&self.reply)
        {
            log.append_json(&Event::Saved { revision });
        }
    }
}

/// Annotates each tool call with the approval policy's decision in `scope`, and a call the user
/// may be asked about (`ask`) with the hints of its tool's input schema (`schemas`: tool name →
/// schema, the turn's tools) for the approval card.
fn with_decisions(
    events: impl Stream<Item = Event> + Send + 'static,
    approvals: Arc<Approvals>,
    scope: Scope,
    schemas: std::collections::HashMap<String, serde_json::Value>,
) -> impl Stream<Item = Event> + Send + 'static {
    use futures_util::future::{Either, ready};
    let schemas = Arc::new(schemas);
    // Only tool calls wait on the decision (the store); deltas pass without a clone.
    events.then(move |ev| match ev {
        Event::ToolCall { mut tool_call, .. } => {
            let (approvals, scope, schemas) = (approvals.clone(), scope.clone(), schemas.clone());
            Either::Left(async move {
                let (name, input) = (&tool_call.name, &tool_call.arguments);
                let decision = approval::decide(&approvals, &scope, name, input).await;
                tool_call.hints = match (decision, schemas.get(name)) {
                    (ToolDecision::Ask, Some(schema)) => ArgumentHint::from_schema(schema),
                    _ => Vec::new(),
                };
                Event::ToolCall {
                    tool_call,
                    decision: Some(decision),
                }
            })
        }
        other => Either::Right(ready(other)),
    })
}

/// Sets the tool's view (`views`: tool name → its `ui://` resource, the turn's tools) on the
/// first `tool_call_delta` of each call to a tool that has one, and no view on any other.
fn with_views(
    events: impl Stream<Item = Event> + Send + 'static,
    views: std::collections::HashMap<String, String>,
) -> impl Stream<Item = Event> + Send + 'static {
    let mut seen = std::collections::HashSet::new();
    events.map(move |ev| match ev {
        Event::ToolCallDelta {
            id,
            name,
            arguments_delta,
            ui: _,
        } => {
            let first = seen.insert(id.clone());
            let ui = views
                .get(&name)
                .filter(|_| first)
                .map(|uri| lmchatkit_protocol::UiToolMeta {
                    resource_uri: Some(uri.clone()),
                    visibility: Vec::new(),
                });
            Event::ToolCallDelta {
                id,
                name,
                arguments_delta,
                ui,
            }
        }
        other => other,
    })
}

/// `done` with what its usage cost at `price` (absent when either is unknown).
fn with_cost(ev: Event, price: Option<Price>) -> Event {
    match ev {
        Event::Done {
            finish_reason,
            usage: Some(usage),
            cost_usd: None,
        } => Event::Done {
            finish_reason,
            usage: Some(usage),
            cost_usd: price.map(|p| p.cost(&TokenUsage::from(&usage))),
        },
        other => other,
    }
}

/// Passes events through and appends `done` when the host ended without `done` or `error`.
fn with_terminal(
    events: impl Stream<Item = Event> + Send + 'static,
) -> impl Stream<Item = Event> + Send + 'static {
    let mut ended = false;
    events
        .map(Some)
        .chain(futures_util::stream::once(async { None }))
        .filter_map(move |ev| {
            let out = match ev {
                Some(ev) => {
                    ended |= matches!(ev, Event::Done { .. } | Event::Error { .. });
                    Some(ev)
                }
                None if !ended => Some(Event::Done {
                    finish_reason: None,
                    usage: None,
                    cost_usd: None,
                }),
                None => None,
            };
            std::future::ready(out)
        })
}

/// Adds one event to the reply.
fn apply(reply: &mut Message, ev: &Event) {
    match ev {
        Event::Delta { delta } => {
            if let lmchatkit_protocol::Content::Text(t) = &mut reply.content {
                t.push_str(delta);
            }
        }
        Event::Reasoning { reasoning } => {
            reply.thinking.get_or_insert_default().push_str(reasoning);
        }
        Event::ToolCall {
            tool_call,
            decision,
        } => {
            let mut call = tool_call.clone();
            call.approval = Some(Approval::initial(*decision, false));
            reply.tool_calls.push(call);
        }
        Event::Done {
            usage, cost_usd, ..
        } => {
            reply.usage = *usage;
            reply.cost_usd = *cost_usd;
        }
        // Kept with the reply: it was cut off by this error.
        Event::Error { error } => reply.failed = Some(error.clone()),
        // Never saved: the complete `tool_call` is (see the module docs).
        Event::ToolCallDelta { .. } | Event::Saved { .. } => {}
    }
}

/// Whether the reply holds anything worth keeping.
fn has_content(reply: &Message) -> bool {
    !reply.content.joined_text("").is_empty()
        || reply.thinking.as_ref().is_some_and(|t| !t.is_empty())
        || !reply.tool_calls.is_empty()
}

#[cfg(test)]
mod tests {
    use lmchatkit_protocol::{ToolCall, ToolDecision, Usage};
    use serde_json::json;

    use super::*;
    use crate::host::Principal;
    use crate::live::runs::Runs;

    #[test]
    fn what_the_model_stream_logs_carries_the_turns_span() {
        let out = crate::presets::capture_logs(tracing::Level::INFO, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                // The model's stream logs while it is polled, after the run's task was spawned
                // (it waited once after its first token).
                let mut step = 0;
                let events = futures_util::stream::poll_fn(move |cx| {
                    step += 1;
                    std::task::Poll::Ready(match step {
                        1 => Some(Event::delta("Hi")),
                        2 => {
                            cx.waker().wake_by_ref();
                            return std::task::Poll::Pending;
                        }
                        3 => {
                            tracing::warn!("the upstream hiccupped");
                            Some(Event::Done {
                                finish_reason: None,
                                usage: None,
                                cost_usd: None,
                            })
                        }
                        _ => None,
                    })
                });
                let span = tracing::info_span!("chat", model = "m-test");
                let runs = Runs::default();
                let owner = Principal::new("alice");
                let new = NewRun {
                    owner: &owner,
                    conversation: None,
                    message_id: "r1",
                    resume_base: None,
                    lost: &[],
                    save: None,
                };
                let run = run::start(&runs, new, events, Native::new("r1", None), ())
                    .instrument(span)
                    .await
                    .unwrap();
                let frames: Vec<_> = run.follow_holding(0, ()).collect().await;
                assert!(!frames.is_empty());
            });
        });
        let line = out
            .lines()
            .find(|l| l.contains("the upstream hiccupped"))
            .unwrap_or_else(|| panic!("not logged: {out}"));
        assert!(
            line.contains("chat{model=\"m-test\"}") || line.contains("chat{model=m-test}"),
            "{line}"
        );
    }

    #[tokio::test]
    async fn a_call_the_user_is_asked_about_carries_its_schemas_hints_and_no_other_does() {
        use crate::access::approval::ApprovalPolicy;
        use crate::host::RequestContext;
        let policy = ApprovalPolicy::new(ToolDecision::Allow)
            .ask("fs__rm")
            .ask("fs__bare");
        let approvals = Arc::new(Approvals::new(policy, None));
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The file to delete."}},
            "required": ["path"]
        });
        let schemas = [("fs__rm", &schema), ("fs__ls", &schema)]
            .into_iter()
            .map(|(n, s)| (n.to_owned(), s.clone()))
            .collect();
        let calls = ["fs__rm", "fs__ls", "fs__bare"].map(|name| Event::ToolCall {
            tool_call: ToolCall::new(format!("c-{name}"), name, json!({"path": "/x"})),
            decision: None,
        });
        let scope = Scope::model(RequestContext::default());
        let out: Vec<Event> =
            with_decisions(futures_util::stream::iter(calls), approvals, scope, schemas)
                .collect()
                .await;
        let got: Vec<_> = out
            .iter()
            .map(|ev| match ev {
                Event::ToolCall {
                    tool_call,
                    decision,
                } => (tool_call.name.as_str(), *decision, tool_call.hints.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        let path = lmchatkit_protocol::ArgumentHint {
            name: "path".into(),
            description: Some("The file to delete.".into()),
            required: true,
        };
        assert_eq!(
            got,
            [
                ("fs__rm", Some(ToolDecision::Ask), vec![path]),
                // Allowed: no card, no hints.
                ("fs__ls", Some(ToolDecision::Allow), vec![]),
                // Asked, but its tool has no schema.
                ("fs__bare", Some(ToolDecision::Ask), vec![]),
            ]
        );
        // What the reply saves keeps them (a reload shows the same card) ...
        let mut reply = Message::assistant("");
        out.iter().for_each(|ev| apply(&mut reply, ev));
        assert_eq!(reply.tool_calls[0].hints.len(), 1);
        // ... and the model never sees them.
        let cleaned = crate::turn::clean(vec![reply]);
        assert!(cleaned[0].tool_calls.iter().all(|c| c.hints.is_empty()));
    }

    #[tokio::test]
    async fn the_first_piece_of_a_call_to_a_tool_with_a_view_names_it_and_no_piece_is_saved() {
        let host_ui = lmchatkit_protocol::UiToolMeta {
            resource_uri: Some("ui://forged".into()),
            visibility: Vec::new(),
        };
        let forged = Event::ToolCallDelta {
            id: "c2".into(),
            name: "plain".into(),
            arguments_delta: "{".into(),
            ui: Some(host_ui),
        };
        let events = vec![
            Event::tool_call_delta("c1", "srv__clock", ""),
            Event::tool_call_delta("c1", "srv__clock", "{\"tz\":"),
            forged,
            Event::tool_call_delta("c1", "srv__clock", "\"UTC\"}"),
            Event::tool_call(ToolCall::new("c1", "srv__clock", json!({"tz": "UTC"}))),
        ];
        let views = [("srv__clock".to_owned(), "ui://clock/view".to_owned())].into();
        let out: Vec<Event> = with_views(futures_util::stream::iter(events), views)
            .collect()
            .await;
        let uis: Vec<Option<String>> = out
            .iter()
            .filter_map(|ev| match ev {
                Event::ToolCallDelta { ui, .. } => {
                    Some(ui.as_ref().and_then(|u| u.resource_uri.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(uis, [Some("ui://clock/view".into()), None, None, None]);
        let mut reply = Message::assistant("");
        out.iter().for_each(|ev| apply(&mut reply, ev));
        assert_eq!(reply.tool_calls.len(), 1, "the complete call only");
        assert_eq!(reply.tool_calls[0].arguments, json!({"tz": "UTC"}));
        // Pieces of a call that never completed leave nothing to save.
        let mut cut = Message::assistant("");
        apply(&mut cut, &Event::tool_call_delta("c9", "rm", "{\"path\":"));
        assert!(!has_content(&cut));
    }

    #[test]
    fn the_reply_collects_text_reasoning_calls_with_their_approval_and_usage() {
        let mut r = Message::assistant("");
        let usage = Usage {
            prompt_tokens: Some(3),
            ..Default::default()
        };
        for ev in [
            Event::reasoning("hm"),
            Event::delta("Hel"),
            Event::delta("lo"),
            Event::ToolCall {
                tool_call: ToolCall::new("c1", "rm", json!({})),
                decision: Some(ToolDecision::Deny),
            },
            Event::ToolCall {
                tool_call: ToolCall::new("c2", "ls", json!({})),
                decision: Some(ToolDecision::Ask),
            },
            Event::Done {
                finish_reason: None,
                usage: Some(usage),
                cost_usd: Some(0.5),
            },
        ] {
            apply(&mut r, &ev);
        }
        assert_eq!(r.content.joined_text(""), "Hello");
        assert_eq!(r.thinking.as_deref(), Some("hm"));
        let approvals: Vec<_> = r.tool_calls.iter().map(|c| c.approval).collect();
        assert_eq!(approvals, [Some(Approval::Error), Some(Approval::Pending)]);
        assert_eq!(r.failed, None, "no error, not failed");
        apply(&mut r, &Event::error("the upstream went away"));
        assert_eq!(r.failed.as_deref(), Some("the upstream went away"));
        assert_eq!(r.usage, Some(usage));
        assert_eq!(r.cost_usd, Some(0.5));
        assert!(has_content(&r));
        assert!(!has_content(&Message::assistant("")));
    }
}
