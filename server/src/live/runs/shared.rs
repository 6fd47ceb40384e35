//! Runs across instances, through a shared engine: the logic both engines share, over the
//! few operations each does its own way ([`RunLog`]: Redis in `redis`, PostgreSQL in
//! `postgres`, where the keys, tables and statements are described).
//!
//! Decisions:
//! - **The running instance writes, in order, off the reply's path**: each frame goes to the
//!   run's memory log first (its own tabs read that), then to a per-run copy task that appends
//!   what has queued up as one batch (which appends nothing once the run is no longer running
//!   in the engine, see the lease). The reply never waits on the engine.
//! - **Followers on other instances** read the engine's log from the id after their last,
//!   waiting for more (a blocking read of their own in Redis, a notification in PostgreSQL)
//!   and looking at the run's lease whenever a wait passes quietly. Followers on the running
//!   instance cost the engine nothing.
//! - **One running run per conversation across instances**: the engine takes the conversation
//!   at start, atomically (409 naming the running run otherwise), and frees it at the end only
//!   while it still names this run.
//! - **Stop from any instance**: the engine marks the run's stop and tells every instance
//!   (pub/sub or `NOTIFY`); each instance listens (one subscription per service, opened with
//!   its first run) and stops the run when it is its own, so the upstream request is dropped
//!   within milliseconds. Should the message be lost, the running instance also reads the mark
//!   with each lease refresh, once a second. The stop answer waits for the run's end as
//!   in-process.
//! - **An instance that dies mid-run** stops refreshing the run's lease ([`LEASE`], refreshed
//!   every [`LEASE_REFRESH`]). Whoever next looks at the run from elsewhere (a follower
//!   waiting on it, a stop, a resume, a conversation read, a new run in the conversation) and
//!   finds it running without a lease marks it failed in one atomic step (only if it is still
//!   running and still has no lease): the protocol's error frames given at start and the end
//!   go into the log, and the conversation is freed. The reply is not rebuilt from the log: the
//!   running instance saves it at least every [`CHECKPOINT_EVERY`] while text arrives (and at
//!   each step end and the finish), so a killed instance loses at most about a second of it.
//!   An instance that only stalled past its lease finds its run taken over at its next append
//!   and stops it.
//! - **An engine that goes away mid-run** (restarted, unreachable) costs the running reply
//!   nothing: its own tabs read the memory log. Frames the engine could not take wait in the
//!   copy task and go with the next batch or lease refresh (once a second), so a follower
//!   elsewhere that reconnects after the engine is back misses none. An engine that comes back
//!   without the run (a Redis restarted without persistence: [`Found::Unknown`]) is given it
//!   again: the copy task registers the run as at its start (taking its conversation back,
//!   unless another run took it meanwhile: then it stops, as when taken over) and sends the
//!   whole log. The run's end is tried again, with back-off, for [`RECOVER_FOR`]. Meanwhile a
//!   request that needs the engine answers 503 with `Retry-After` ([`EngineError::Busy`]), a
//!   follower on another instance sees its stream end and, reconnecting, that 503 until the
//!   engine is back; nothing needs a restart (connections reopen, the stop listener
//!   resubscribes). Tested with a `redis-server` of the test's own, stopped and started again
//!   mid-reply, and with PostgreSQL's connections cut mid-reply (`tests/tests/it/instances.rs`).
//!   An engine away for longer than the lease that keeps its data (PostgreSQL, a Redis with
//!   persistence) holds the run with its lease lapsed, so another instance that looks at it
//!   once the engine is back, before the running instance has refreshed the lease, marks it
//!   failed (its followers see that end). The running instance, which saw the engine out of
//!   reach meanwhile, then only stops copying: the reply goes on for its own client and its
//!   save replaces the copy marked failed. An instance that stalled without seeing the engine
//!   fail (a pause) stops the run as taken over, as before.
//! - **Retention**: a finished run stays readable for [`local::RETENTION`]; a running run for
//!   a day (refreshed while it runs), so nothing outlives a lost run for long. A run's log
//!   keeps about its last [`MAX_ENTRIES`] frames (a longer reply keeps its end).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use tokio::sync::{OnceCell, mpsc};

use super::RunStatus;
use super::local;
use crate::error::Failure;
use crate::host::Principal;
use crate::live::EngineError;

/// How long a run's lease lasts without a refresh.
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// How often the running instance refreshes it.
pub(crate) const LEASE_REFRESH: Duration = Duration::from_secs(1);
/// How often a run saves its reply while text keeps coming.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// About how many frames a run's log keeps.
pub(crate) const MAX_ENTRIES: usize = 100_000;
/// How long a running run lives in the engine without being refreshed.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long a follower waits for more before it checks the run's lease.
pub(crate) const BLOCK: Duration = Duration::from_secs(1);
/// How many frames one read or one append takes at most.
pub(crate) const BATCH: usize = 512;
/// How many times a batch of frames is sent before it is given up.
const APPEND_TRIES: u32 = 4;
/// How often a stop on another instance looks whether the run has ended.
const SETTLE_POLL: Duration = Duration::from_millis(20);
/// How long an ended run keeps trying to record its end in an engine that is away.
const RECOVER_FOR: Duration = Duration::from_secs(600);

/// What an append or a lease refresh found of the run in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Running: the frames were appended, the lease refreshed.
    Running,
    /// Running, and a stop was asked (a refresh only).
    StopAsked,
    /// No longer running (marked failed elsewhere): nothing was written.
    Ended,
    /// The engine has no record of the run: it lost its data (a Redis restarted without
    /// persistence). Nothing was written.
    Unknown,
}

/// A run's record as its start gave it to the engine, kept by its copy task to give it again
/// to an engine that lost it.
struct Registration {
    id: String,
    owner: String,
    thread: Option<String>,
    message_id: String,
    resume_base: Option<String>,
    lost: String,
}

impl Registration {
    fn of(new: &NewRun<'_>) -> Self {
        Self {
            id: new.id.to_owned(),
            owner: new.owner.to_owned(),
            thread: new.thread.map(str::to_owned),
            message_id: new.message_id.to_owned(),
            resume_base: new.resume_base.clone(),
            lost: new.lost.clone(),
        }
    }

    fn new_run(&self) -> NewRun<'_> {
        NewRun {
            id: &self.id,
            owner: &self.owner,
            thread: self.thread.as_deref(),
            message_id: &self.message_id,
            resume_base: self.resume_base.clone(),
            lost: self.lost.clone(),
        }
    }
}

/// A run about to start, as the engine records it.
pub(crate) struct NewRun<'a> {
    pub(crate) id: &'a str,
    pub(crate) owner: &'a str,
    /// The conversation it writes (taken for the run), if any.
    pub(crate) thread: Option<&'a str>,
    pub(crate) message_id: &'a str,
    /// The message it continues, as JSON.
    pub(crate) resume_base: Option<String>,
    /// The `data:` lines that end its log should its instance be lost, as a JSON array.
    pub(crate) lost: String,
}

/// What the engine holds of a run besides its log and status.
pub(crate) struct Meta {
    pub(crate) owner: String,
    /// The conversation it writes, if any.
    pub(crate) thread: Option<String>,
    pub(crate) message_id: String,
    pub(crate) resume_base: Option<serde_json::Value>,
}

/// What one read of a log gave.
pub(crate) enum Read {
    /// Frames (and the id of the last) and whether the end came.
    Entries {
        frames: Vec<Bytes>,
        last: u64,
        ended: bool,
    },
    /// Nothing within the wait.
    Nothing,
}

/// What an engine does for runs; each operation is atomic in the engine.
#[async_trait]
pub(crate) trait RunLog: Send + Sync + 'static {
    /// Records `run` running with a fresh lease and takes its conversation; `Some` with the id
    /// of the run already running there instead (empty when it could not be told).
    async fn start(&self, run: &NewRun<'_>) -> Result<Option<String>, EngineError>;
    /// Appends frames (ids already in the log are skipped, so a batch can be sent again);
    /// [`Found::Running`], or what the engine found instead (nothing appended).
    async fn append(&self, id: &str, batch: &[(u64, Bytes)]) -> Result<Found, EngineError>;
    /// Ends the run with `status` (`reap`: only while it has no lease, with its lost frames
    /// appended first) and frees its conversation; whether it did.
    async fn end(&self, id: &str, status: RunStatus, reap: bool) -> Result<bool, EngineError>;
    /// Refreshes the lease; [`Found::StopAsked`] when a stop was asked.
    async fn refresh(&self, id: &str) -> Result<Found, EngineError>;
    /// Marks a stop and tells every instance, while the run runs.
    async fn stop(&self, id: &str) -> Result<(), EngineError>;
    /// The run's record (`None` when unknown or expired).
    async fn load(&self, id: &str) -> Result<Option<Meta>, EngineError>;
    /// The run's status and whether its lease holds (`None` when unknown or expired).
    async fn status(&self, id: &str) -> Result<Option<(RunStatus, bool)>, EngineError>;
    /// The id of the run holding `owner`'s conversation `thread`.
    async fn active(&self, owner: &str, thread: &str) -> Result<Option<String>, EngineError>;
    /// A reader of run `id`'s log.
    fn reader(&self, id: &str) -> Box<dyn LogReader>;
    /// The ids of runs asked to stop, from now on (ends when the subscription is lost).
    async fn stops(&self) -> Result<BoxStream<'static, String>, EngineError>;
}

/// Reads one run's log, waiting up to [`BLOCK`] for more.
#[async_trait]
pub(crate) trait LogReader: Send {
    /// What follows event `after`.
    async fn read(&mut self, after: u64) -> Result<Read, EngineError>;
}

/// The shared backend of [`super::Runs`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Shared {
    inner: Arc<Inner>,
}

/// A run found running without its instance and marked failed: whose, which conversation
/// and which reply, for the saved reply to say so too (its instance cannot).
pub(crate) struct Reaped {
    pub(crate) owner: String,
    pub(crate) thread: String,
    pub(crate) message_id: String,
}

/// Told of every run this instance marks failed for its lost instance.
pub(crate) type OnReaped = Arc<dyn Fn(Reaped) + Send + Sync>;

struct Inner {
    log: Arc<dyn RunLog>,
    on_reaped: Option<OnReaped>,
    /// This instance's runs.
    local: local::Runs,
    /// Set once the stop listener is subscribed.
    listening: OnceCell<()>,
}

impl Shared {
    pub(crate) fn new(
        log: Arc<dyn RunLog>,
        local: local::Runs,
        on_reaped: Option<OnReaped>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                log,
                on_reaped,
                local,
                listening: OnceCell::new(),
            }),
        }
    }

    /// Starts the stop listener once (a start waits for its subscription, at most a second:
    /// without it, stops still arrive through the lease refresh).
    async fn listen(&self) {
        let shared = self.clone();
        self.inner
            .listening
            .get_or_init(|| async move {
                let (ready_tx, ready) = tokio::sync::oneshot::channel();
                tokio::spawn(shared.stop_listener(ready_tx));
                if tokio::time::timeout(Duration::from_secs(1), ready)
                    .await
                    .is_err()
                {
                    tracing::warn!("the run stop listener is not subscribed yet");
                }
            })
            .await;
    }

    /// Stops this instance's runs named by stop notices; resubscribes after a loss.
    async fn stop_listener(self, ready: tokio::sync::oneshot::Sender<()>) {
        let mut ready = Some(ready);
        loop {
            match self.inner.log.stops().await {
                Ok(mut stops) => {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                    while let Some(id) = stops.next().await {
                        if let Some(run) = self.inner.local.get_any(&id) {
                            tracing::debug!(run = %id, "a stop from another instance");
                            run.stop();
                        }
                    }
                    tracing::warn!("the run stop subscription ended; resubscribing");
                }
                Err(e) => tracing::warn!(error = %e, "subscribing to run stops failed"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Starts a run in the engine and in this instance's registry.
    pub(crate) async fn start(
        &self,
        owner: &Principal,
        thread: Option<&str>,
        message_id: &str,
        resume_base: Option<serde_json::Value>,
        lost: &[String],
    ) -> Result<(local::RunWriter, Mirror), Failure> {
        self.listen().await;
        let log = &self.inner.log;
        let id = local::new_id();
        let new = NewRun {
            id: &id,
            owner: owner.id(),
            thread,
            message_id,
            resume_base: resume_base.as_ref().map(|v| v.to_string()),
            lost: serde_json::to_string(lost).unwrap_or_else(|_| "[]".into()),
        };
        // Twice: a conversation held by a lost run is freed (marked failed), then taken.
        for _ in 0..2 {
            let Some(running) = log.start(&new).await? else {
                let writer = match self.inner.local.start_with_id(
                    id.clone(),
                    owner,
                    thread,
                    message_id,
                    resume_base,
                ) {
                    Ok(w) => w,
                    Err(e) => {
                        if let Err(end) = log.end(&id, RunStatus::Failed, false).await {
                            tracing::warn!(run = %id, error = %end, "ending a run that could not start failed");
                        }
                        return Err(e);
                    }
                };
                let mirror =
                    Mirror::start(log.clone(), writer.run().clone(), Registration::of(&new));
                return Ok((writer, mirror));
            };
            let on_reaped = self.inner.on_reaped.as_ref();
            if local::is_run_id(&running) && reap_if_lost(log.as_ref(), &running, on_reaped).await?
            {
                continue;
            }
            if running.is_empty() {
                break;
            }
            return Err(Failure::Conflict(format!(
                "a reply is still running in this conversation (run {running}); stop it or wait for it"
            )));
        }
        Err(Failure::Conflict(
            "a reply is still running in this conversation; stop it or wait for it".into(),
        ))
    }

    /// `principal`'s run `id`, as the engine holds it (a lost one is marked failed on the way).
    pub(crate) async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<Arc<SharedRun>>, EngineError> {
        if !local::is_run_id(id) {
            return Ok(None);
        }
        let Some(meta) = self.inner.log.load(id).await? else {
            return Ok(None);
        };
        if meta.owner != principal.id() {
            return Ok(None);
        }
        let run = SharedRun {
            log: self.inner.log.clone(),
            on_reaped: self.inner.on_reaped.clone(),
            id: id.to_owned(),
            message_id: meta.message_id,
            resume_base: meta.resume_base,
        };
        run.status().await?;
        Ok(Some(Arc::new(run)))
    }

    /// The run now running in `principal`'s conversation `thread` (a lost one is marked
    /// failed, and then there is none).
    pub(crate) async fn active(
        &self,
        principal: &Principal,
        thread: &str,
    ) -> Result<Option<Arc<SharedRun>>, EngineError> {
        let Some(id) = self.inner.log.active(principal.id(), thread).await? else {
            return Ok(None);
        };
        let Some(run) = self.get(principal, &id).await? else {
            return Ok(None);
        };
        match run.status().await? {
            Some(RunStatus::Running) => Ok(Some(run)),
            _ => Ok(None),
        }
    }
}

/// Marks run `id` failed when it is running without a lease (its instance is gone), and tells
/// `on_reaped` of a run that wrote a conversation; whether it did.
async fn reap_if_lost(
    log: &dyn RunLog,
    id: &str,
    on_reaped: Option<&OnReaped>,
) -> Result<bool, EngineError> {
    let reaped = log.end(id, RunStatus::Failed, true).await?;
    if reaped {
        tracing::warn!(run = %id, "the instance running this run is gone; marked failed");
        if let Some(tell) = on_reaped
            && let Some(meta) = log.load(id).await?
            && let Some(thread) = meta.thread
        {
            tell(Reaped {
                owner: meta.owner,
                thread,
                message_id: meta.message_id,
            });
        }
    }
    Ok(reaped)
}

/// A run as the engine holds it.
pub(crate) struct SharedRun {
    log: Arc<dyn RunLog>,
    on_reaped: Option<OnReaped>,
    id: String,
    message_id: String,
    resume_base: Option<serde_json::Value>,
}

impl fmt::Debug for SharedRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRun")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl SharedRun {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn message_id(&self) -> &str {
        &self.message_id
    }

    pub(crate) fn resume_base(&self) -> Option<&serde_json::Value> {
        self.resume_base.as_ref()
    }

    /// The run's status now (`None` when the engine no longer has it); a run found running
    /// without a lease is marked failed first.
    async fn status(&self) -> Result<Option<RunStatus>, EngineError> {
        let Some((status, lease)) = self.log.status(&self.id).await? else {
            return Ok(None);
        };
        if status == RunStatus::Running
            && !lease
            && reap_if_lost(self.log.as_ref(), &self.id, self.on_reaped.as_ref()).await?
        {
            return Ok(Some(RunStatus::Failed));
        }
        Ok(Some(status))
    }

    /// Asks the instance running it to stop it.
    pub(crate) async fn stop(&self) -> Result<(), EngineError> {
        self.log.stop(&self.id).await
    }

    /// Waits at most `wait` for the run to end; its status then.
    pub(crate) async fn settle(&self, wait: Duration) -> RunStatus {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match self.status().await {
                Ok(Some(RunStatus::Running)) => {}
                Ok(Some(status)) => return status,
                Ok(None) => return RunStatus::Failed,
                Err(e) => {
                    tracing::warn!(run = %self.id, error = %e, "reading the run's status failed");
                }
            }
            if tokio::time::Instant::now() + SETTLE_POLL > deadline {
                return RunStatus::Running;
            }
            tokio::time::sleep(SETTLE_POLL).await;
        }
    }

    /// The log from event `after + 1` on, following it until the run ends (or the engine no
    /// longer has it, or fails: the client reconnects with its last id).
    pub(crate) fn follow(self: Arc<Self>, after: u64) -> impl Stream<Item = Bytes> + Send + use<> {
        let reader = self.log.reader(&self.id);
        let state = (self, reader, after, VecDeque::<Bytes>::new(), false);
        futures_util::stream::unfold(
            state,
            |(run, mut reader, mut after, mut ready, mut done)| async move {
                loop {
                    if let Some(frame) = ready.pop_front() {
                        return Some((frame, (run, reader, after, ready, done)));
                    }
                    if done {
                        return None;
                    }
                    match reader.read(after).await {
                        Ok(Read::Entries {
                            frames,
                            last,
                            ended,
                        }) => {
                            ready.extend(frames);
                            after = last;
                            done = ended;
                        }
                        // Quiet for a while: is its instance still there?
                        Ok(Read::Nothing) => match run.status().await {
                            Ok(Some(_)) => {}
                            Ok(None) => return None,
                            Err(e) => {
                                tracing::warn!(run = %run.id, error = %e, "following the run failed");
                                return None;
                            }
                        },
                        Err(e) => {
                            tracing::warn!(run = %run.id, error = %e, "following the run failed");
                            return None;
                        }
                    }
                }
            },
        )
    }
}

/// How long a finishing run waits for the engine to record its end before its followers end
/// anyway.
const END_WAIT: Duration = Duration::from_secs(5);

/// What the running side hands its copy task.
enum Copy {
    Frame(u64, Bytes),
    Finish(RunStatus),
}

/// The copy of a running run to the engine: frames in order, its lease, its end. Dropped
/// without [`Mirror::finish`], the run ends failed.
pub(crate) struct Mirror {
    tx: mpsc::UnboundedSender<Copy>,
    /// Resolves once the copy task ended the run in the engine.
    ended: tokio::sync::oneshot::Receiver<()>,
}

impl Mirror {
    fn start(log: Arc<dyn RunLog>, run: Arc<local::Run>, registration: Registration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ended_tx, ended) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            copy(log, run, registration, rx).await;
            let _ = ended_tx.send(());
        });
        Self { tx, ended }
    }

    /// Copies one frame.
    pub(crate) fn frame(&self, (id, frame): (u64, Bytes)) {
        let _ = self.tx.send(Copy::Frame(id, frame));
    }

    /// Ends the run with `status` once every frame is copied, and waits for that (at most
    /// [`END_WAIT`]): the run's followers end only after, so a client that saw the end and
    /// sends the next message at once, to any instance, finds the conversation free.
    pub(crate) async fn finish(self, status: RunStatus) {
        let _ = self.tx.send(Copy::Finish(status));
        if tokio::time::timeout(END_WAIT, self.ended).await.is_err() {
            tracing::warn!("ending the run in the shared engine takes long; ending it here first");
        }
    }
}

/// The copy task of one run.
async fn copy(
    log: Arc<dyn RunLog>,
    run: Arc<local::Run>,
    registration: Registration,
    mut rx: mpsc::UnboundedReceiver<Copy>,
) {
    let mut lease = tokio::time::interval(LEASE_REFRESH);
    lease.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    lease.tick().await; // the first tick is now: the start set the lease
    let mut copier = Copier {
        log: log.as_ref(),
        run: &run,
        registration: &registration,
        backlog: Vec::new(),
        reachable: true,
        cut_off: false,
        taken_over: false,
    };
    let status = loop {
        tokio::select! {
            biased;
            msg = rx.recv() => {
                let mut finish = None;
                match msg {
                    Some(Copy::Frame(id, f)) => copier.backlog.push((id, f)),
                    Some(Copy::Finish(s)) => finish = Some(s),
                    None => finish = Some(RunStatus::Failed),
                }
                while finish.is_none() && copier.backlog.len() < BATCH {
                    match rx.try_recv() {
                        Ok(Copy::Frame(id, f)) => copier.backlog.push((id, f)),
                        Ok(Copy::Finish(s)) => finish = Some(s),
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            finish = Some(RunStatus::Failed)
                        }
                    }
                }
                // While the engine is away, frames wait for the lease tick's attempt.
                if copier.reachable {
                    copier.send().await;
                }
                if let Some(s) = finish {
                    break s;
                }
            }
            _ = lease.tick() => {
                if copier.taken_over {
                    continue;
                }
                match log.refresh(run.id()).await {
                    Ok(Found::StopAsked) => run.stop(),
                    Ok(Found::Unknown) => copier.register_again().await,
                    Ok(Found::Running | Found::Ended) => {}
                    Err(e) => {
                        copier.cut_off = true;
                        tracing::warn!(run = %run.id(), error = %e, "refreshing the run's lease failed");
                    }
                }
                copier.send().await;
            }
        }
    };
    // The end, after what is left of the log: tried again with back-off while the engine is
    // away (the run's own tabs have it all already; this is for followers elsewhere and the
    // conversation's running-run marker).
    let deadline = tokio::time::Instant::now() + RECOVER_FOR;
    let mut pause = Duration::from_millis(250);
    while !copier.taken_over {
        copier.send().await;
        if copier.taken_over {
            break;
        }
        if copier.reachable && copier.backlog.is_empty() {
            match log.end(run.id(), status, false).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(run = %run.id(), error = %e, "ending the run in the shared engine failed; trying again");
                }
            }
        }
        if tokio::time::Instant::now() + pause > deadline {
            tracing::warn!(run = %run.id(), "the shared engine stayed away; the run's end is not recorded there");
            break;
        }
        tokio::time::sleep(pause).await;
        // Never longer than a lease refresh: once the engine is back, the end should be there
        // before another instance, finding the lease lapsed, marks the run failed.
        pause = (pause * 2).min(LEASE_REFRESH);
    }
}

/// The copy task's state: the frames the engine has not taken yet.
struct Copier<'a> {
    log: &'a dyn RunLog,
    run: &'a Arc<local::Run>,
    registration: &'a Registration,
    /// Frames not yet in the engine, in order.
    backlog: Vec<(u64, Bytes)>,
    /// Whether the last attempt reached the engine.
    reachable: bool,
    /// An attempt failed since the last frames the engine took: this instance was cut off
    /// from it for a while.
    cut_off: bool,
    /// The run was marked failed elsewhere, or its conversation taken by another run: it is
    /// stopped and nothing more is copied.
    taken_over: bool,
}

impl Copier<'_> {
    /// Sends the backlog, a batch at a time; what could not be sent stays for the next try.
    /// Back in touch after being cut off, it renews the run's lease before anything else, so
    /// no other instance finds the lease lapsed once this one is heard from again.
    async fn send(&mut self) {
        if self.cut_off && !self.taken_over {
            match self.log.refresh(self.run.id()).await {
                Ok(Found::Running) => self.cut_off = false,
                Ok(Found::StopAsked) => {
                    self.cut_off = false;
                    self.run.stop();
                }
                Ok(Found::Ended) => {
                    self.went_on_alone();
                    return;
                }
                Ok(Found::Unknown) => {
                    self.register_again().await;
                    if !self.reachable {
                        return;
                    }
                    self.cut_off = false;
                }
                Err(_) => {
                    self.reachable = false;
                    return;
                }
            }
        }
        while !self.taken_over && !self.backlog.is_empty() {
            let n = self.backlog.len().min(BATCH);
            match append_retrying(self.log, self.run.id(), &self.backlog[..n]).await {
                Some(Found::Running | Found::StopAsked) => {
                    self.reachable = true;
                    self.backlog.drain(..n);
                }
                Some(Found::Ended) if self.cut_off => self.went_on_alone(),
                Some(Found::Ended) => {
                    tracing::warn!(run = %self.run.id(), "the run was marked failed elsewhere (its lease lapsed); stopping it");
                    self.taken_over = true;
                    self.run.stop();
                }
                Some(Found::Unknown) => {
                    self.register_again().await;
                    if !self.reachable {
                        return;
                    }
                }
                None => {
                    self.reachable = false;
                    self.cut_off = true;
                    return;
                }
            }
        }
    }

    /// The engine was away longer than the lease, and another instance that looked at the run
    /// first once it was back marked it failed (its followers saw that end). The reply goes on
    /// for its own client and is saved; only the copy ends.
    fn went_on_alone(&mut self) {
        tracing::warn!(run = %self.run.id(), "the run was marked failed elsewhere while the shared engine was out of reach; the reply goes on here");
        self.taken_over = true;
    }

    /// Gives the run again to an engine that lost it: its record as at its start, then its
    /// whole log (as the backlog). Another run that took the conversation meanwhile keeps it,
    /// and this one stops.
    async fn register_again(&mut self) {
        match self.log.start(&self.registration.new_run()).await {
            Ok(Some(other)) if other != self.registration.id => {
                tracing::warn!(run = %self.run.id(), other = %other, "the shared engine lost this run and another run took its conversation; stopping it");
                self.taken_over = true;
                self.run.stop();
            }
            Ok(_) => {
                tracing::warn!(run = %self.run.id(), "the shared engine lost this run (restarted?); registered it again");
                self.reachable = true;
                self.backlog = self.run.frames_after(0);
            }
            Err(e) => {
                tracing::warn!(run = %self.run.id(), error = %e, "registering the run again failed");
                self.reachable = false;
                self.cut_off = true;
            }
        }
    }
}

/// Appends `batch`, trying again a few times when the engine fails; `None` when it stayed
/// unreachable (the caller keeps the batch).
async fn append_retrying(log: &dyn RunLog, id: &str, batch: &[(u64, Bytes)]) -> Option<Found> {
    for attempt in 1..=APPEND_TRIES {
        match log.append(id, batch).await {
            Ok(found) => return Some(found),
            Err(e) if attempt == APPEND_TRIES => {
                tracing::warn!(error = %e, "copying a run's frames to the shared engine failed; they wait for it");
            }
            Err(e) => {
                tracing::debug!(error = %e, attempt, "copying a run's frames to the shared engine failed; trying again");
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
        }
    }
    None
}

/// `RunStatus` as the engines store it.
pub(crate) fn status_str(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Finished => "finished",
        RunStatus::Stopped => "stopped",
        RunStatus::Failed => "failed",
    }
}

/// A stored status (anything unknown reads as failed).
pub(crate) fn parse_status(s: &str) -> RunStatus {
    match s {
        "running" => RunStatus::Running,
        "finished" => RunStatus::Finished,
        "stopped" => RunStatus::Stopped,
        _ => RunStatus::Failed,
    }
}
