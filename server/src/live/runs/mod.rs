//! Runs: a turn as a server task, detached from the request that started it.
//!
//! A run appends its events, numbered from 1, to its log; every HTTP response about the run
//! only tails that log: the request that started it, a tab that reloaded mid-reply
//! (`GET {prefix}/api/runs/{id}/stream` with `Last-Event-ID` or `?after=`, or the AI SDK's
//! `GET {prefix}/api/aisdk/chat/{id}/stream`), a second tab. The task saves the reply to the
//! history store itself as it goes (see the protocols' turn modules), so a reply is kept even
//! when every tab closed.
//!
//! Decisions:
//! - **A client leaving never stops a run.** A reload, a tab switch or a network drop looks
//!   exactly like a client that went away for good, so only `POST {prefix}/api/runs/{id}/stop`
//!   stops one: the task drops the upstream request and the running tool calls at once, keeps
//!   the partial reply and marks it stopped.
//! - **One running run per conversation** (and principal): starting another while one runs is
//!   a 409 naming the running one, so two replies never write one conversation at once.
//! - **Ids** are `run-` and 128 random bits in hex; another principal's run is a 404, never a
//!   403, so ids cannot be probed.
//! - **The log holds framed events** (`id:` and `data:` lines, encoded once when appended):
//!   every follower shares the same bytes, and a follower that falls behind only reads further
//!   back in the log (a follower never holds up the run). What a follower finds waiting goes
//!   out as one chunk (up to 64 KiB): a burst of events costs one write, not one each. While
//!   the run is producing, a follower gives it a few scheduler rounds to add to the burst,
//!   except before its first chunk, which goes out at once: that is the time to first token,
//!   and under load each round can cost milliseconds. The run counts as waiting on its
//!   upstream (and what is here goes out) after two rounds in a row with no new frame, not
//!   one: over HTTP/1.1 the upstream's connection task hands the run one chunk per round.
//! - **A run's task starts in the request that starts it** ([`launch`]) and is spawned once
//!   its first output is flushed (or after 50 ms), so the response's head and first token go
//!   out in one write. Spawned at once, the task's first token waited for the scheduler to
//!   come round to the response's task, a whole round of the run queue when it missed the
//!   LIFO slot: at 500 concurrent streams on two cores the first chunk left 2 ms after it was
//!   appended at p50 and 40 ms at p90, against 6 µs and 10 µs now. A model slower than that
//!   gets the head (with the run's id, to stop it) first; a request dropped meanwhile spawns
//!   the task, so it still runs.
//! - **Once its first output is out, the run is a task of its own**, not polled by the
//!   response that follows it. That alternative (the response's body polling the run in the
//!   client's connection task; the run spawned when its client leaves, is stopped, or stops
//!   reading for 500 ms) was built and measured against this design on 2026-12-04, 50-token
//!   replies, the relay unpinned on two cores. At 500 concurrent streams it cut TTFT p99 from
//!   82-89 ms to 36-52 ms (one task fewer per stream). At 50 streams each stream cost
//!   10-20% more relay CPU (0.214-0.255 against 0.192-0.232 ms; with history 0.38 against
//!   0.29-0.35 ms a turn) and 6.0 writes instead of 3.5: with fewer tasks in the scheduler's
//!   queues a follower's rounds of gathering end before the upstream's next segment is read,
//!   so a burst goes out in pieces. Waiting 500 µs for more (a timer) still left 5.0 writes.
//!   With tokens 10 ms apart (500 streams of 20) the two cost the same (0.51-0.53 against
//!   0.51 ms a stream) and p99 did not fall (41-45 against 38-40 ms): it gains only on
//!   bursts, where it loses the CPU.
//! - **Retention**: a finished run stays readable for [`local::RETENTION`] (a tab that lost its
//!   connection near the end still gets the end), and finished runs hold at most
//!   [`local::RETAINED_BYTES`] in all (8 MiB: their logs, and a fixed cost each for the run
//!   itself), the oldest dropped first. A running run is never dropped. The bound was 64 MiB
//!   of logs alone until 2026-12-07, which made retained runs most of a busy relay's memory.
//! - **A run whose task ended without saying how** (it panicked) is marked failed, so its
//!   followers end instead of waiting for ever.
//!
//! Two backends behind this one interface ([`Runs`], [`Run`], [`RunWriter`]); the routes and
//! the turn modules never know which one runs:
//! - **In-process** (the default, [`local`]): runs are shared by the tabs of one instance.
//! - **Shared** (`ConfigBuilder::shared_engine`, `shared`): runs are shared by every instance
//!   using that Redis or PostgreSQL. The instance running a run still keeps its log in memory
//!   (its own tabs tail that, as in-process) and copies every frame, in order, to the engine's
//!   log with the SSE id as the entry's id, so a follower on any other instance reads the same
//!   bytes with the same ids. The decisions of that backend are in its module docs.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

pub(crate) use lmchatkit_protocol::RunStatus;

use crate::error::Failure;
use crate::host::Principal;

pub(crate) mod local;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
pub(crate) mod saver;
#[cfg(shared_engine)]
mod shared;
#[cfg(shared_engine)]
pub(crate) use shared::{OnReaped, Reaped};

/// The registry of runs, with the backend it was built with. Cheap to clone; clones share it.
#[derive(Clone, Default)]
pub(crate) struct Runs {
    local: local::Runs,
    #[cfg(shared_engine)]
    shared: Option<shared::Shared>,
}

/// A run, wherever it runs. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) enum Run {
    /// A run of this instance (or any run, in-process).
    Local(Arc<local::Run>),
    /// A run another instance runs (or ran), read through the shared engine.
    #[cfg(shared_engine)]
    Shared(Arc<shared::SharedRun>),
}

impl Runs {
    /// Runs shared through `engine` (in-process when `None`); a run found running without its
    /// instance is marked failed, and `on_reaped` told of it.
    #[cfg(shared_engine)]
    pub(crate) fn new(
        engine: Option<crate::live::SharedEngine>,
        on_reaped: Option<shared::OnReaped>,
    ) -> Self {
        use crate::live::SharedEngine;
        let local = local::Runs::default();
        let log = engine.map(|e| -> Arc<dyn shared::RunLog> {
            match e {
                #[cfg(feature = "redis")]
                SharedEngine::Redis(r) => Arc::new(redis::RedisRuns::new(r)),
                #[cfg(feature = "postgres")]
                SharedEngine::Postgres(p) => Arc::new(postgres::PostgresRuns::new(p)),
            }
        });
        Self {
            shared: log.map(|l| shared::Shared::new(l, local.clone(), on_reaped)),
            local,
        }
    }

    /// How often a run saves its reply while text keeps coming (besides each step end and
    /// the finish): with a shared engine, once a second, so an instance that dies mid-reply
    /// loses at most about a second of it; in-process, never (the run ends with its process).
    pub(crate) fn checkpoint_every(&self) -> Option<Duration> {
        #[cfg(shared_engine)]
        if self.shared.is_some() {
            return Some(shared::CHECKPOINT_EVERY);
        }
        None
    }

    /// Starts a run writing message `message_id` of `owner`'s conversation `thread` (continuing
    /// `resume_base`, when given); a 409 while another run writes that conversation (on any
    /// instance). A run of no conversation (`None`) conflicts with nothing. `lost` are the
    /// events (`data:` lines, the protocol's error) that end the log should the instance
    /// running it be lost.
    pub(crate) async fn start(
        &self,
        owner: &Principal,
        thread: Option<&str>,
        message_id: &str,
        resume_base: Option<serde_json::Value>,
        #[cfg_attr(not(shared_engine), allow(unused_variables))] lost: &[String],
    ) -> Result<RunWriter, Failure> {
        #[cfg(shared_engine)]
        if let Some(shared) = &self.shared {
            let (local, mirror) = shared
                .start(owner, thread, message_id, resume_base, lost)
                .await?;
            return Ok(RunWriter {
                local,
                mirror: Some(mirror),
            });
        }
        Ok(RunWriter {
            local: self.local.start(owner, thread, message_id, resume_base)?,
            #[cfg(shared_engine)]
            mirror: None,
        })
    }

    /// `principal`'s run `id` (running or retained), on any instance.
    pub(crate) async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<Run>, Failure> {
        if let Some(run) = self.local.get(principal, id) {
            return Ok(Some(Run::Local(run)));
        }
        #[cfg(shared_engine)]
        if let Some(shared) = &self.shared {
            return Ok(shared.get(principal, id).await?.map(Run::Shared));
        }
        Ok(None)
    }

    /// The run now running in `principal`'s conversation `thread`, on any instance (`None`
    /// when the engine cannot be asked; logged).
    pub(crate) async fn active(&self, principal: &Principal, thread: &str) -> Option<Run> {
        if let Some(run) = self.local.active(principal, thread) {
            return Some(Run::Local(run));
        }
        #[cfg(shared_engine)]
        if let Some(shared) = &self.shared {
            match shared.active(principal, thread).await {
                Ok(run) => return run.map(Run::Shared),
                Err(e) => {
                    tracing::warn!(error = %e, "finding the conversation's running run failed");
                }
            }
        }
        None
    }
}

impl Run {
    /// The run's id.
    pub(crate) fn id(&self) -> &str {
        match self {
            Self::Local(r) => r.id(),
            #[cfg(shared_engine)]
            Self::Shared(r) => r.id(),
        }
    }

    /// The id of the message the run writes.
    pub(crate) fn message_id(&self) -> &str {
        match self {
            Self::Local(r) => r.message_id(),
            #[cfg(shared_engine)]
            Self::Shared(r) => r.message_id(),
        }
    }

    /// The message the run continues, as it was when the run started.
    pub(crate) fn resume_base(&self) -> Option<&serde_json::Value> {
        match self {
            Self::Local(r) => r.resume_base(),
            #[cfg(shared_engine)]
            Self::Shared(r) => r.resume_base(),
        }
    }

    /// Whether this instance's run has flushed its first output or ended (see [`launch`]);
    /// a run another instance runs is not this instance's to wait for.
    fn flushed(&self) -> bool {
        match self {
            Self::Local(r) => r.flushed(),
            #[cfg(shared_engine)]
            Self::Shared(_) => true,
        }
    }

    /// Asks the run to stop, wherever it runs (nothing when it has ended).
    pub(crate) async fn stop(&self) -> Result<(), Failure> {
        match self {
            Self::Local(r) => {
                r.stop();
                Ok(())
            }
            #[cfg(shared_engine)]
            Self::Shared(r) => Ok(r.stop().await?),
        }
    }

    /// Waits at most `wait` for the run to end; its status then.
    pub(crate) async fn settle(&self, wait: Duration) -> RunStatus {
        match self {
            Self::Local(r) => r.settle(wait).await,
            #[cfg(shared_engine)]
            Self::Shared(r) => r.settle(wait).await,
        }
    }

    /// The log from event `after + 1` on, following it until the run ends, keeping `hold` (a
    /// client's stream place) until the stream is dropped.
    pub(crate) fn follow_holding(
        &self,
        after: u64,
        hold: impl Send + 'static,
    ) -> BoxStream<'static, Bytes> {
        // Mapped before the one box, so a chunk costs no second dynamic poll.
        let holding = move |frame| {
            let _held = &hold;
            frame
        };
        match self {
            Self::Local(r) => r.follow(after).map(holding).boxed(),
            #[cfg(shared_engine)]
            Self::Shared(r) => r.clone().follow(after).map(holding).boxed(),
        }
    }
}

/// The running side of a run: appends to its log, learns of a stop, finishes it. Dropping it
/// without [`RunWriter::finish`] marks the run failed.
pub(crate) struct RunWriter {
    local: local::RunWriter,
    /// The copy to the shared engine, when there is one.
    #[cfg(shared_engine)]
    mirror: Option<shared::Mirror>,
}

impl RunWriter {
    /// The run being written.
    pub(crate) fn run(&self) -> Run {
        Run::Local(self.local.run().clone())
    }

    /// The run's id.
    pub(crate) fn id(&self) -> &str {
        self.local.run().id()
    }

    /// Appends one event whose `data:` is `data` (one line).
    pub(crate) fn append(&self, data: &str) {
        let _frame = self.local.append(data);
        #[cfg(shared_engine)]
        if let Some(m) = &self.mirror {
            m.frame(_frame);
        }
    }

    /// Appends one event whose `data:` is `value` as JSON, encoded straight into the frame.
    pub(crate) fn append_json<T: serde::Serialize>(&self, value: &T) {
        let _frame = self.local.append_json(value);
        #[cfg(shared_engine)]
        if let Some(m) = &self.mirror {
            m.frame(_frame);
        }
    }

    /// The frames appended so far go out to this instance's followers at once, without
    /// waiting for a burst to gather: a run whose log starts with a preamble (the AI SDK
    /// route's `start`) calls it after its first token, the time to first token.
    pub(crate) fn flush_now(&self) {
        self.local.flush_now();
    }

    /// Resolves when a stop is asked, from any instance (never, if the registry goes first).
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + Send + use<> {
        self.local.stopped()
    }

    /// Ends the run with `status`: followers read to the end and stop. With a shared engine
    /// the engine records the end first, so the conversation is free on every instance by
    /// the time a follower sees the end.
    pub(crate) async fn finish(self, status: RunStatus) {
        #[cfg(shared_engine)]
        if let Some(m) = self.mirror {
            m.finish(status).await;
        }
        self.local.finish(status);
    }
}

/// Runs `task`, the whole work of `run` (which this instance runs), in the caller's task until
/// the run has flushed its first output ([`RunWriter::flush_now`]) or ended, or for
/// [`INLINE`] at most; then spawns the rest. The request that starts a run awaits it before it
/// answers, so its response's head and first token go out in one write, without the
/// scheduler round a spawned task's wake-up costs (under load a round is milliseconds). Should
/// the request be dropped meanwhile, the task is spawned then: a client leaving never stops a
/// run.
pub(crate) async fn launch(run: &Run, task: impl Future<Output = ()> + Send + 'static) {
    let mut handoff = Handoff(Some(Box::pin(task)));
    let deadline = tokio::time::sleep(INLINE);
    let mut deadline = std::pin::pin!(deadline);
    std::future::poll_fn(|cx| {
        let Some(task) = handoff.0.as_mut() else {
            return Poll::Ready(());
        };
        if task.as_mut().poll(cx).is_ready() {
            handoff.0 = None;
            return Poll::Ready(());
        }
        if run.flushed() {
            return Poll::Ready(());
        }
        deadline.as_mut().poll(cx)
    })
    .await;
}

/// The longest a run's task runs in the request that started it ([`launch`]): a model slower
/// to answer gets the response's head (with the run's id) first.
const INLINE: Duration = Duration::from_millis(50);

/// A run's task not spawned yet: spawned when dropped.
struct Handoff(Option<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl Drop for Handoff {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            if std::thread::panicking() {
                // The task panicked in the request: dropping it marks the run failed.
                return;
            }
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn(task)),
                // No runtime (it is shutting down): the writer's drop marks the run failed.
                Err(_) => tracing::warn!("a run's task could not be spawned: no runtime"),
            }
        }
    }
}
