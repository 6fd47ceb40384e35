//! A native turn (`POST {prefix}/api/chat`) as a run ([`crate::runs`]): the events the route
//! annotated go to the run's log, and, when the request names its conversation and
//! server-side history is on, the reply is saved into that conversation by the service.
//!
//! Decisions:
//! - **One model call per run.** The native protocol runs tools in the browser, so a run ends
//!   with the model's `done` or `error`; the tab posts the next turn as a new run.
//! - **The reply is saved when the run ends** (done, error or stopped), before the log ends,
//!   and the log's last event is `saved` with the conversation's revision: the tab's own save
//!   after the stream takes it as its base and is no conflict. The service puts only the reply
//!   in its place ([`Snapshot::Reply`]); the rest of the conversation is the tab's to save. A
//!   reply with nothing in it (no text, reasoning or call) is not saved.
//! - **Tool calls are saved with the policy's approval** ([`Approval::initial`], nothing
//!   allowed in the chat yet): a tab that reloads asks for the pending ones.
//! - **Stop** drops the host's stream (the upstream request with it), ends the log with `done`
//!   whose finish reason is `stopped`, and saves the reply marked [`Message::stopped`].
//! - **With a shared engine** (several instances) the reply so far is also saved at most once
//!   a second while events arrive, so an instance killed mid-reply loses at most about a
//!   second of it (the run is then marked failed by another instance, see `runs::shared`).
//! - `<think>` tags inline in the text are saved as streamed: the UI splits them when it shows
//!   (and saves) the reply.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use lmchatkit_protocol::{Approval, Event, FinishReason, Message};
use tracing::Instrument;

use crate::error::Failure;
use crate::host::Principal;
use crate::runs::saver::{Saver, Snapshot, Target};
use crate::runs::{self, Run, RunStatus, Runs};

/// Where and how a run's reply is saved.
pub(crate) struct ReplySave {
    pub(crate) target: Target,
    /// The messages the turn was asked with.
    pub(crate) request: Arc<Vec<Message>>,
}

/// Starts a run streaming `events` (ended by `done` or `error`) for `owner`, writing reply
/// `reply_id` of `conversation`, and runs it in a task that holds `hold` until it ends, in the
/// caller's span. The span is entered once per poll of the task, not per event: a poll relays
/// every event that has arrived, and each entry and exit of a span goes through the
/// subscriber (its span stack; with a span-tracking filter, a lock too, see `logs`). Entered
/// per event (as a stream adapter), a turn with history cost 1.4% more instructions
/// (callgrind, 1,000 turns: 1.036 M against 1.022 M a turn).
pub(crate) async fn start(
    runs: &Runs,
    owner: &Principal,
    conversation: Option<&str>,
    reply_id: &str,
    events: impl Stream<Item = Event> + Send + 'static,
    keep: Option<ReplySave>,
    hold: impl Send + 'static,
) -> Result<Run, Failure> {
    let lost = [serde_json::to_string(&Event::error(LOST)).unwrap_or_default()];
    let writer = runs
        .start(owner, conversation, reply_id, None, &lost)
        .await?;
    let run = writer.run();
    let checkpoint_every = runs.checkpoint_every();
    let mut reply = Message::assistant("");
    reply.id = Some(reply_id.to_owned());
    reply.created_at = Some(crate::history::now_ms());
    let task = async move {
        let _hold = hold;
        let saver = keep.as_ref().map(|k| Saver::start(k.target.clone()));
        let save = |reply: &Message| {
            if let (Some(saver), Some(keep)) = (&saver, &keep)
                && has_content(reply)
            {
                saver.save(Snapshot::Reply {
                    request: keep.request.clone(),
                    reply: Box::new(reply.clone()),
                });
            }
        };
        let mut events = std::pin::pin!(events);
        let relay = async {
            // With a shared engine, the reply so far is saved now and then (see `Runs`).
            let mut checkpoint = Checkpoint::new(checkpoint_every);
            let mut flushed = false;
            while let Some(ev) = events.next().await {
                if matches!(ev, Event::Saved { .. }) {
                    continue; // the service's own event
                }
                // Without a conversation to save into, the reply is not collected.
                if keep.is_some() {
                    apply(&mut reply, &ev);
                }
                writer.append_json(&ev);
                if !flushed {
                    // The first event is the time to first token (see `runs::launch`).
                    writer.flush_now();
                    flushed = true;
                }
                // The turn ends here, whether or not the host's stream does.
                if matches!(ev, Event::Done { .. } | Event::Error { .. }) {
                    break;
                }
                if checkpoint.due() {
                    save(&reply);
                }
            }
        };
        let status = tokio::select! {
            _ = relay => RunStatus::Finished,
            _ = writer.stopped() => RunStatus::Stopped,
        };
        if status == RunStatus::Stopped {
            reply.stopped = true;
            writer.append_json(&Event::Done {
                finish_reason: Some(FinishReason::Stopped),
                usage: None,
                cost_usd: None,
            });
        }
        save(&reply);
        if let Some(saver) = &saver
            && has_content(&reply)
            && let Some(revision) = saver.flush().await
        {
            writer.append_json(&Event::Saved { revision });
        }
        writer.finish(status).await;
    };
    runs::launch(&run, task.instrument(tracing::Span::current())).await;
    Ok(run)
}

/// The error that ends a run's log when the instance running it is lost.
pub(crate) const LOST: &str = "the server running this reply stopped; the reply so far is saved";

/// When a run saves its reply so far: at most once per interval, while new events arrive.
pub(crate) struct Checkpoint {
    every: Option<std::time::Duration>,
    last: tokio::time::Instant,
}

impl Checkpoint {
    pub(crate) fn new(every: Option<std::time::Duration>) -> Self {
        Self {
            every,
            last: tokio::time::Instant::now(),
        }
    }

    /// Whether a save is due now (then the next one is an interval away).
    pub(crate) fn due(&mut self) -> bool {
        match self.every {
            Some(every) if self.last.elapsed() >= every => {
                self.last = tokio::time::Instant::now();
                true
            }
            _ => false,
        }
    }
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
        Event::Error { .. } | Event::Saved { .. } => {}
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

    #[test]
    fn what_the_model_stream_logs_carries_the_turns_span() {
        let out = crate::catalog::capture_logs(tracing::Level::INFO, || {
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
                let run = start(&runs, &owner, None, "r1", events, None, ())
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
        assert_eq!(r.usage, Some(usage));
        assert_eq!(r.cost_usd, Some(0.5));
        assert!(has_content(&r));
        assert!(!has_content(&Message::assistant("")));
    }
}
