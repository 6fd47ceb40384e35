//! The in-process registry of runs: each run's log in memory, its stop, the running run of
//! each conversation, and the retention of finished runs (see [`super`] for the decisions).
//! With a shared engine it still holds the runs this instance runs: their tabs on this
//! instance tail the memory log, and the engine gets a copy of every frame.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::watch;

pub(crate) use lmchatkit_protocol::RunStatus;

use crate::host::Principal;
use crate::http_util::ApiError;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

/// How long a finished run stays readable.
pub(crate) const RETENTION: Duration = Duration::from_secs(300);
/// How many bytes the logs of finished runs keep in all.
pub(crate) const RETAINED_BYTES: usize = 64 << 20;

/// A new run id: `run-` and 128 random bits in hex.
pub(crate) fn new_id() -> String {
    format!("run-{:032x}", rand::random::<u128>())
}

#[cfg(shared_engine)]
/// Whether `id` has the shape of a run id (so it can name an engine key).
pub(crate) fn is_run_id(id: &str) -> bool {
    id.len() == 36
        && id.starts_with("run-")
        && id[4..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The most bytes a follower sends as one chunk when several frames are waiting.
const CHUNK: usize = 64 << 10;

/// One run: who owns it, which conversation it writes, its log.
pub(crate) struct Run {
    id: String,
    owner: Principal,
    /// The conversation it writes, when it writes one.
    thread: Option<String>,
    /// The id of the message the run writes.
    message_id: String,
    /// What a resuming client needs besides the log: the message the run continues, as it was
    /// when the run started (`None` for a new message).
    resume_base: Option<serde_json::Value>,
    log: Mutex<Log>,
    /// Bumped on every append and at the end: followers wait on it.
    tick: watch::Sender<()>,
    /// Set by a stop request.
    stop: watch::Sender<bool>,
}

struct Log {
    frames: Vec<Bytes>,
    bytes: usize,
    status: RunStatus,
}

impl fmt::Debug for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("id", &self.id)
            .field("thread", &self.thread)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Run {
    /// The run's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The id of the message the run writes.
    pub(crate) fn message_id(&self) -> &str {
        &self.message_id
    }

    /// The message the run continues, as it was when the run started.
    pub(crate) fn resume_base(&self) -> Option<&serde_json::Value> {
        self.resume_base.as_ref()
    }

    /// Where the run is.
    pub(crate) fn status(&self) -> RunStatus {
        self.lock().status
    }

    /// Asks the run to stop (nothing when it has ended).
    pub(crate) fn stop(&self) {
        if self.status() == RunStatus::Running {
            self.stop.send_replace(true);
        }
    }

    /// Waits at most `wait` for the run to end; its status then.
    pub(crate) async fn settle(&self, wait: Duration) -> RunStatus {
        let mut rx = self.tick.subscribe();
        let ended = async {
            loop {
                rx.borrow_and_update();
                if self.status() != RunStatus::Running || rx.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(wait, ended).await.is_err() {
            tracing::debug!(run = %self.id, "the run did not end within {wait:?}");
        }
        self.status()
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panic while holding this lock leaves a log that is still whole: keep using it.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The log from event `after + 1` on, following it until the run ends.
    pub(crate) fn follow(self: &Arc<Self>, after: u64) -> impl Stream<Item = Bytes> + Send + use<> {
        let rx = self.tick.subscribe();
        let next = usize::try_from(after).unwrap_or(usize::MAX);
        let state = (self.clone(), next, rx);
        futures_util::stream::unfold(state, |(run, mut next, mut rx)| async move {
            loop {
                // Marked seen before reading, so an append after the read wakes us.
                rx.borrow_and_update();
                {
                    let log = run.lock();
                    if next < log.frames.len() {
                        // The frames appended since the last look go out as one chunk (up to
                        // CHUNK bytes): one body frame and one write for a burst, not one per
                        // event.
                        let mut take = 0;
                        let mut len = 0;
                        for frame in &log.frames[next..] {
                            if take > 0 && len + frame.len() > CHUNK {
                                break;
                            }
                            take += 1;
                            len += frame.len();
                        }
                        let chunk = match &log.frames[next..next + take] {
                            [one] => one.clone(),
                            many => {
                                let mut buf = bytes::BytesMut::with_capacity(len);
                                for frame in many {
                                    buf.extend_from_slice(frame);
                                }
                                buf.freeze()
                            }
                        };
                        next += take;
                        drop(log);
                        return Some((chunk, (run, next, rx)));
                    }
                    if log.status != RunStatus::Running {
                        return None;
                    }
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

/// The running side of a run: appends to its log, learns of a stop, finishes it. Dropping it
/// without [`RunWriter::finish`] marks the run failed.
pub(crate) struct RunWriter {
    run: Arc<Run>,
    runs: Runs,
    done: bool,
}

impl RunWriter {
    /// The run being written.
    pub(crate) fn run(&self) -> &Arc<Run> {
        &self.run
    }

    /// Appends one event whose `data:` is `data` (one line); its id and frame.
    pub(crate) fn append(&self, data: &str) -> (u64, Bytes) {
        self.push(|buf| buf.extend_from_slice(data.as_bytes()))
    }

    /// Appends one event whose `data:` is `value` as JSON, encoded straight into the frame;
    /// its id and frame.
    pub(crate) fn append_json<T: serde::Serialize>(&self, value: &T) -> (u64, Bytes) {
        self.push(|buf| {
            // serde_json never writes a raw newline, so one data line is always enough.
            if let Err(e) = serde_json::to_writer(&mut *buf, value) {
                tracing::warn!(error = %e, "encoding a run event failed");
                buf.extend_from_slice(br#"{"type":"error","error":"encoding the event failed"}"#);
            }
        })
    }

    fn push(&self, data: impl FnOnce(&mut Vec<u8>)) -> (u64, Bytes) {
        let pushed = {
            let mut log = self.run.lock();
            let id = log.frames.len() as u64 + 1;
            let mut buf = Vec::with_capacity(64);
            buf.extend_from_slice(b"id: ");
            buf.extend_from_slice(id.to_string().as_bytes());
            buf.extend_from_slice(b"\ndata: ");
            data(&mut buf);
            buf.extend_from_slice(b"\n\n");
            log.bytes += buf.len();
            let frame = Bytes::from(buf);
            log.frames.push(frame.clone());
            (id, frame)
        };
        self.run.tick.send_replace(());
        pushed
    }

    /// Resolves when a stop is asked (never, if the registry goes first).
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + Send + use<> {
        let mut rx = self.run.stop.subscribe();
        async move {
            if rx.wait_for(|stop| *stop).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Ends the run with `status`: followers read to the end and stop.
    pub(crate) fn finish(mut self, status: RunStatus) {
        self.end(status);
    }

    fn end(&mut self, status: RunStatus) {
        if self.done {
            return;
        }
        self.done = true;
        let bytes = {
            let mut log = self.run.lock();
            log.status = status;
            log.bytes
        };
        self.run.tick.send_replace(());
        self.runs.ended(&self.run, bytes);
    }
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        if !self.done {
            tracing::warn!(run = %self.run.id, "a run's task ended without finishing it; marked failed");
            self.end(RunStatus::Failed);
        }
    }
}

/// The registry of runs. Cheap to clone; clones share it.
#[derive(Clone)]
pub(crate) struct Runs {
    inner: Arc<Mutex<Registry>>,
    retention: Duration,
    retained_bytes: usize,
}

impl Default for Runs {
    fn default() -> Self {
        Self::with_limits(RETENTION, RETAINED_BYTES)
    }
}

#[derive(Default)]
struct Registry {
    runs: HashMap<String, Arc<Run>>,
    /// The running run of each conversation.
    active: HashMap<(Principal, String), Arc<Run>>,
    /// Finished runs, oldest first: when each ended and its log's size.
    finished: VecDeque<(Instant, String, usize)>,
    finished_bytes: usize,
}

impl Runs {
    /// A registry keeping finished runs for `retention`, `retained_bytes` of logs at most.
    pub(crate) fn with_limits(retention: Duration, retained_bytes: usize) -> Self {
        Self {
            inner: Arc::default(),
            retention,
            retained_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a run writing message `message_id` of `owner`'s conversation `thread` (continuing
    /// `resume_base`, when given); a 409 while another run writes that conversation. A run of
    /// no conversation (`None`) conflicts with nothing.
    pub(crate) fn start(
        &self,
        owner: &Principal,
        thread: Option<&str>,
        message_id: &str,
        resume_base: Option<serde_json::Value>,
    ) -> Result<RunWriter, ApiError> {
        self.start_with_id(new_id(), owner, thread, message_id, resume_base)
    }

    /// Like [`Runs::start`], with the run's id given (the shared engine has taken it).
    pub(crate) fn start_with_id(
        &self,
        id: String,
        owner: &Principal,
        thread: Option<&str>,
        message_id: &str,
        resume_base: Option<serde_json::Value>,
    ) -> Result<RunWriter, ApiError> {
        let mut reg = self.lock();
        let key = thread.map(|t| (owner.clone(), t.to_owned()));
        if let Some(running) = key.as_ref().and_then(|k| reg.active.get(k)) {
            return Err(ApiError::Conflict(format!(
                "a reply is still running in this conversation (run {}); stop it or wait for it",
                running.id
            )));
        }
        let run = Arc::new(Run {
            id,
            owner: owner.clone(),
            thread: thread.map(str::to_owned),
            message_id: message_id.to_owned(),
            resume_base,
            log: Mutex::new(Log {
                frames: Vec::new(),
                bytes: 0,
                status: RunStatus::Running,
            }),
            tick: watch::Sender::new(()),
            stop: watch::Sender::new(false),
        });
        reg.runs.insert(run.id.clone(), run.clone());
        if let Some(key) = key {
            reg.active.insert(key, run.clone());
        }
        Ok(RunWriter {
            run,
            runs: self.clone(),
            done: false,
        })
    }

    /// `principal`'s run `id` (running or retained).
    pub(crate) fn get(&self, principal: &Principal, id: &str) -> Option<Arc<Run>> {
        let reg = self.lock();
        reg.runs.get(id).filter(|r| r.owner == *principal).cloned()
    }

    #[cfg(shared_engine)]
    /// Run `id`, whoever owns it (for a stop the shared engine relays, checked there).
    pub(crate) fn get_any(&self, id: &str) -> Option<Arc<Run>> {
        self.lock().runs.get(id).cloned()
    }

    /// The run now running in `principal`'s conversation `thread`.
    pub(crate) fn active(&self, principal: &Principal, thread: &str) -> Option<Arc<Run>> {
        let reg = self.lock();
        reg.active
            .get(&(principal.clone(), thread.to_owned()))
            .cloned()
    }

    /// Moves a run that ended to the retained ones and drops what retention lets go.
    fn ended(&self, run: &Arc<Run>, bytes: usize) {
        let mut reg = self.lock();
        if let Some(thread) = &run.thread {
            let key = (run.owner.clone(), thread.clone());
            if reg.active.get(&key).is_some_and(|r| Arc::ptr_eq(r, run)) {
                reg.active.remove(&key);
            }
        }
        let now = Instant::now();
        reg.finished.push_back((now, run.id.clone(), bytes));
        reg.finished_bytes += bytes;
        while let Some((at, _, size)) = reg.finished.front() {
            let (at, size) = (*at, *size);
            if now.duration_since(at) < self.retention && reg.finished_bytes <= self.retained_bytes
            {
                break;
            }
            if let Some((_, id, _)) = reg.finished.pop_front() {
                reg.runs.remove(&id);
            }
            reg.finished_bytes -= size;
        }
    }
}
