//! Writing a run's events into the assistant bubble it streams into: text deltas (with
//! `<think>` split out) rendered as Markdown at most once per animation frame, reasoning, tool
//! calls with their approval (and, before each, its arguments as they stream, into
//! [`UiMessage::streamed`], which is not saved), usage and cost, the error, the `stopped` mark
//! and the `saved` revision. Both the tab that started a turn ([`crate::turn`]) and a tab that re-attached to a
//! running reply ([`crate::follow`]) write through one [`ReplyWriter`].
//!
//! Each frame of a run carries its sequence id (`id:`); a frame whose id is not above the last
//! one seen is dropped, so a reconnection that replays what was already shown (or a replay that
//! overlaps) never shows text twice.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use lmchatkit_protocol::{Approval, Content, Event, FinishReason, ToolCall};

use crate::bench;
use crate::markdown::Incremental;
use crate::sse::SseFrame;
use crate::state::{StreamedCall, UiMessage};
use crate::think::{Piece, ThinkSplitter};

/// What a reply's stream said by the time it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// The run's `error` event, when it failed.
    pub failed: Option<String>,
    /// The revision of the service's save of the reply (its `saved` event).
    pub saved: Option<u64>,
}

/// Writes the events of one reply into its bubble.
pub struct ReplyWriter {
    ui: UiMessage,
    /// Whether a tool of this name runs without asking in this chat.
    allowed: Box<dyn Fn(&str) -> bool>,
    splitter: ThinkSplitter,
    inc: Rc<RefCell<Incremental>>,
    scheduled: Rc<Cell<bool>>,
    last_id: u64,
    terminal: bool,
    ended: Ended,
}

/// Whether a frame with id `id` is new after `last` (frames without an id always are).
pub fn is_new(last: u64, id: Option<&str>) -> Option<u64> {
    match id.map(|s| s.trim().parse::<u64>()) {
        Some(Ok(n)) if n <= last => None,
        Some(Ok(n)) => Some(n),
        _ => Some(last),
    }
}

impl ReplyWriter {
    /// A writer into `ui` (now shown streaming); `allowed` tells the tools that run without
    /// asking here.
    pub fn new(ui: UiMessage, allowed: impl Fn(&str) -> bool + 'static) -> Self {
        ui.streaming.set(true);
        let inc = Incremental::new();
        Self {
            ui,
            allowed: Box::new(allowed),
            splitter: ThinkSplitter::new(),
            inc: Rc::new(RefCell::new(inc)),
            scheduled: Rc::new(Cell::new(false)),
            last_id: 0,
            terminal: false,
            ended: Ended::default(),
        }
    }

    /// The bubble.
    pub fn ui(&self) -> &UiMessage {
        &self.ui
    }

    /// The id of the last frame written (0 before any): where a reconnection resumes.
    pub fn last_id(&self) -> u64 {
        self.last_id
    }

    /// Whether the reply's end came: `saved`, or `done`/`error` (`saved` follows those when the
    /// service saves the reply).
    pub fn saw_end(&self) -> bool {
        self.terminal
    }

    /// Whether the service's `saved` came (the last event of a run that saves).
    pub fn saw_saved(&self) -> bool {
        self.ended.saved.is_some()
    }

    /// Writes one SSE frame (dropped when its id was seen already).
    pub fn frame(&mut self, frame: SseFrame) {
        let Some(id) = is_new(self.last_id, frame.id.as_deref()) else {
            return;
        };
        self.last_id = id;
        let t0 = bench::now();
        if let Ok(ev) = serde_json::from_str::<Event>(&frame.data) {
            self.event(ev);
        }
        bench::record("delta", bench::now() - t0);
    }

    /// Writes one event.
    pub fn event(&mut self, ev: Event) {
        let ui = &self.ui;
        match ev {
            Event::Delta { delta } => {
                let pieces = self.splitter.push(&delta);
                self.pieces(pieces);
            }
            Event::Reasoning { reasoning } => ui
                .data
                .update(|d| d.thinking.get_or_insert_default().push_str(&reasoning)),
            Event::ToolCallDelta {
                id,
                name,
                arguments_delta: delta,
                ui: view,
            } => ui
                .streamed
                .update(|calls| match calls.iter_mut().find(|c| c.id == id) {
                    Some(c) => c.text.push_str(&delta),
                    None => calls.push(StreamedCall {
                        id,
                        name,
                        text: delta,
                        view: view.and_then(|v| v.resource_uri),
                        cut: false,
                    }),
                }),
            Event::ToolCall {
                tool_call,
                decision,
            } => {
                let ToolCall {
                    id,
                    name,
                    arguments,
                    hints,
                    ..
                } = tool_call;
                let approval = Approval::initial(decision, (self.allowed)(&name));
                let mut call = ToolCall::new(id, name, arguments);
                call.approval = Some(approval);
                call.hints = hints;
                ui.data.update(|d| d.tool_calls.push(call));
            }
            // The cost is absent when the model's price is unknown: it stays unknown.
            Event::Done {
                finish_reason,
                usage,
                cost_usd,
            } => {
                self.terminal = true;
                ui.data.update(|d| {
                    d.usage = usage;
                    d.cost_usd = cost_usd;
                    d.stopped |= finish_reason == Some(FinishReason::Stopped);
                });
            }
            Event::Error { error } => {
                self.terminal = true;
                // Saved with the reply, so a reload still shows it was cut off.
                ui.data.update(|d| d.failed = Some(error.clone()));
                self.ended.failed = Some(error);
            }
            Event::Saved { revision } => {
                self.terminal = true;
                self.ended.saved = Some(revision);
            }
        }
    }

    fn pieces(&mut self, pieces: Vec<Piece>) {
        for p in pieces {
            match p {
                Piece::Text(t) => {
                    self.inc.borrow_mut().push(&t);
                    self.ui.data.update(|d| {
                        if let Content::Text(s) = &mut d.content {
                            s.push_str(&t);
                        }
                    });
                    if !self.scheduled.replace(true) {
                        let (inc, scheduled, ui) =
                            (self.inc.clone(), self.scheduled.clone(), self.ui.clone());
                        request_animation_frame(move || {
                            if scheduled.replace(false) {
                                let t0 = bench::now();
                                ui.show_blocks(&inc.borrow());
                                bench::record("frame", bench::now() - t0);
                            }
                        });
                    }
                }
                Piece::Think(t) => self
                    .ui
                    .data
                    .update(|d| d.thinking.get_or_insert_default().push_str(&t)),
            }
        }
    }

    /// Ends the bubble's streaming (the last held-back text shown) and answers what came. A
    /// streamed call that no complete call followed is marked cut: it never runs.
    pub fn finish(mut self) -> Ended {
        let done: Vec<String> = self
            .ui
            .data
            .with_untracked(|d| d.tool_calls.iter().map(|c| c.id.clone()).collect());
        let open = |c: &StreamedCall| !c.cut && !done.contains(&c.id);
        if self.ui.streamed.with_untracked(|s| s.iter().any(open)) {
            self.ui.streamed.update(|s| {
                s.iter_mut()
                    .filter(|c| !done.contains(&c.id))
                    .for_each(|c| c.cut = true)
            });
        }
        let rest = self.splitter.finish();
        self.pieces(rest);
        self.scheduled.set(false);
        self.ui.show_blocks(&self.inc.borrow());
        self.ui.streaming.set(false);
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_new_only_above_the_last_id_seen() {
        assert_eq!(is_new(0, Some("1")), Some(1));
        assert_eq!(is_new(7, Some("8")), Some(8));
        assert_eq!(is_new(7, Some("7")), None, "a replayed frame");
        assert_eq!(is_new(7, Some("3")), None);
        assert_eq!(is_new(7, None), Some(7), "no id: kept, the position stays");
        assert_eq!(is_new(7, Some("x")), Some(7));
    }
}
