//! The loop's events as a stream, handed over in the task that polls the stream.
//!
//! [`Agent::events`](super::Agent::events) gives a [`Events`] stream that owns the loop: each
//! poll hands out a queued event, else polls the loop, which queues what it reports into an
//! [`Outbox`]. The loop and its reader share one task, so most events never cross tasks, and
//! the queue needs no channel's machinery.
//!
//! Decisions:
//! - **A queue, not a channel.** The loop's own events were sent over a bounded tokio `mpsc`
//!   channel (64) to the same task that polled the loop. Under callgrind, at 50-token replies
//!   (1,000 replies, 10 at once, no history), the channel cost about 42k instructions a reply
//!   (a semaphore permit, the block list, the receiver's waker registered on every poll) of
//!   the AI SDK route's 118k more than the native route's; with this queue the route runs
//!   86k more (892 M against 806 M in all). Here an event costs two uncontended locks.
//! - **Nothing wakes the task for an event queued while the stream is polled**: the stream
//!   reads the queue before it waits. Only a report from another task (a tool's progress, a
//!   task's state, pushed with [`Outbox::try_push`]) wakes it, by the waker the stream left
//!   when it last waited. The channel woke the task for its own sends (the receiver had
//!   registered before the loop sent), and each such needless round made the run's follower
//!   see an idle round and write early: at 50 replies at once the AI SDK route made 4.16
//!   `writev` and 1.16 `epoll_wait` calls a reply against the native route's 3.52 and 0.68
//!   (strace, 3,000 replies). With the queue it makes 3.56 and 0.68, as the native route.
//! - **Bounded as the channel was**: once [`CAP`] events wait, the loop yields after queueing
//!   one (its reader drains the queue before polling it again), and a report from another task
//!   is dropped (a later one says more, as before).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_util::Stream;

use super::AgentEvent;

/// Events that may wait before the loop yields (the channel's former capacity).
pub(crate) const CAP: usize = 64;

/// Where the loop queues its events. Cheap to clone (the clones share the queue).
#[derive(Clone, Default)]
pub(crate) struct Outbox {
    inner: Arc<Mutex<Queue>>,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<AgentEvent>,
    /// The reader's waker while it waits (none while it is being polled).
    waiting: Option<Waker>,
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while the lock was held left a queue that is still whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `ev` (from the loop itself); once [`CAP`] events wait, yields once so the reader
    /// drains them.
    pub(crate) async fn push(&self, ev: AgentEvent) {
        let (full, waker) = {
            let mut q = self.lock();
            q.events.push_back(ev);
            (q.events.len() >= CAP, q.waiting.take())
        };
        if let Some(w) = waker {
            w.wake();
        }
        if full {
            YieldOnce(false).await;
        }
    }

    /// Queues `ev` from anywhere (a tool's progress callback, another task), waking the reader
    /// if it waits; dropped when [`CAP`] events wait already.
    pub(crate) fn try_push(&self, ev: AgentEvent) {
        let waker = {
            let mut q = self.lock();
            if q.events.len() >= CAP {
                return;
            }
            q.events.push_back(ev);
            q.waiting.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The next event; the reader is being polled, so nothing needs to wake it now.
    fn pop(&self) -> Option<AgentEvent> {
        let mut q = self.lock();
        q.waiting = None;
        q.events.pop_front()
    }

    /// Leaves `waker` to be woken by the next event, unless one came meanwhile (then `false`:
    /// read it).
    fn wait(&self, waker: &Waker) -> bool {
        let mut q = self.lock();
        if !q.events.is_empty() {
            return false;
        }
        q.waiting = Some(waker.clone());
        true
    }
}

/// Pending once (after waking its task), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The loop's events as a stream: it ends once the loop has and its last event is out.
/// Dropping it drops the loop (which cancels it).
pub(crate) struct Events {
    outbox: Outbox,
    /// The loop, until it ends.
    run: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Events {
    /// The stream of `run`, which queues its events into `outbox`.
    pub(crate) fn new(outbox: Outbox, run: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            outbox,
            run: Some(Box::pin(run)),
        }
    }
}

impl Stream for Events {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = &mut *self;
        loop {
            if let Some(ev) = this.outbox.pop() {
                return Poll::Ready(Some(ev));
            }
            let Some(run) = &mut this.run else {
                return Poll::Ready(None);
            };
            if run.as_mut().poll(cx).is_ready() {
                this.run = None;
            } else if this.outbox.wait(cx.waker()) {
                // The loop waits (on its model, a tool) and queued nothing.
                return Poll::Pending;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::StreamExt;

    use super::*;

    fn text(i: usize) -> AgentEvent {
        AgentEvent::Text(i.to_string())
    }

    #[tokio::test]
    async fn every_event_comes_in_order_even_past_the_cap_in_one_go_and_the_stream_then_ends() {
        let outbox = Outbox::default();
        let out = outbox.clone();
        let events = Events::new(outbox, async move {
            for i in 0..3 * CAP + 5 {
                out.push(text(i)).await;
            }
        });
        let got: Vec<_> = events.collect().await;
        assert_eq!(got, (0..3 * CAP + 5).map(text).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn the_loop_yields_once_the_cap_waits_so_its_reader_drains_the_queue() {
        let outbox = Outbox::default();
        let out = outbox.clone();
        let mut events = Events::new(outbox.clone(), async move {
            for i in 0..2 * CAP {
                out.push(text(i)).await;
            }
        });
        assert_eq!(events.next().await, Some(text(0)));
        // The loop stopped at the cap: the rest of the first batch waits, no more.
        assert_eq!(outbox.lock().events.len(), CAP - 1);
        assert_eq!(events.count().await, 2 * CAP - 1);
    }

    #[tokio::test]
    async fn a_report_from_another_task_wakes_the_reader_while_the_loop_waits() {
        let outbox = Outbox::default();
        let (out, reporter) = (outbox.clone(), outbox.clone());
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let mut events = Events::new(outbox, async move {
            out.push(AgentEvent::StepStart).await;
            let _ = wait.await; // a tool that runs until released
            out.push(AgentEvent::StepEnd { usage: None }).await;
        });
        assert_eq!(events.next().await, Some(AgentEvent::StepStart));
        let report = AgentEvent::ToolDenied {
            call_id: "c1".into(),
        };
        let sent = report.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            reporter.try_push(sent);
        });
        let got = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("the report woke the reader");
        assert_eq!(got, Some(report));
        release.send(()).unwrap();
        assert_eq!(
            events.next().await,
            Some(AgentEvent::StepEnd { usage: None })
        );
        assert_eq!(events.next().await, None);
    }

    #[tokio::test]
    async fn a_report_from_elsewhere_is_dropped_once_the_cap_waits() {
        let outbox = Outbox::default();
        for i in 0..CAP + 3 {
            outbox.try_push(text(i));
        }
        assert_eq!(outbox.lock().events.len(), CAP);
        assert_eq!(outbox.pop(), Some(text(0)));
    }
}
