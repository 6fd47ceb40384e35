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

use crate::error::Failure;
use crate::host::Principal;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

/// How long a finished run stays readable.
pub(crate) const RETENTION: Duration = Duration::from_secs(300);
/// How many bytes finished runs keep in all: their logs, each run counted with
/// [`RUN_OVERHEAD`] besides. 8 MiB holds about 1,300 finished 50-token replies (a 5 KB log
/// each): minutes of a busy instance's replies, for a tab that reconnects near a reply's end.
/// At 64 MiB (until 2026-12-07) the retained logs were most of the relay's memory after a
/// burst: 500 concurrent streams of 50 tokens left the process at 165 MiB against 51 MiB before
/// runs were retained at all (issue 48's outside harness).
pub(crate) const RETAINED_BYTES: usize = 8 << 20;
/// What a retained run costs besides its log, counted against [`RETAINED_BYTES`]: the `Run`
/// and its two `watch` channels (about 1,030 B), its ids and the registry's entries for it,
/// as heaptrack attributed them at 2,000 runs (2026-12-07).
const RUN_OVERHEAD: usize = 1280;

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
/// The most scheduler rounds a follower waits for a running run to add to a burst.
const GATHER: u32 = 32;
/// Rounds in a row without a new frame after which a follower takes the run to be waiting on
/// its upstream. One is not enough: a run reading an HTTP/1.1 upstream gets one chunk per
/// round from the connection's task, so it adds a frame only every other round even while the
/// upstream's bytes are all here (sending at the first idle round wrote one frame per
/// `writev`: 33 per 50-token stream in the bench, against 5 after).
const STALLS: u32 = 2;

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

/// A run's frames. While the run runs, each frame is one exactly sized `Bytes` (one
/// allocation). When it ends, the frames are packed into one buffer with their end offsets, so
/// a retained log costs its bytes plus four per frame, and a follower's chunk is a slice of it.
struct Log {
    frames: Vec<Bytes>,
    packed: Option<Packed>,
    /// What the log holds, in bytes (what retention counts).
    bytes: usize,
    status: RunStatus,
    /// Where the next frame is built before it is copied out (reused, so one allocation per
    /// frame).
    scratch: Vec<u8>,
    /// Frames below this index go out without gathering ([`RunWriter::flush_now`]).
    eager: usize,
}

/// The frames of an ended run in one buffer.
struct Packed {
    buf: Bytes,
    /// Where each frame ends in `buf`.
    ends: Vec<u32>,
}

impl Log {
    fn new() -> Self {
        Self {
            frames: Vec::new(),
            packed: None,
            bytes: 0,
            status: RunStatus::Running,
            scratch: Vec::new(),
            eager: 0,
        }
    }

    /// How many frames the log holds.
    fn len(&self) -> usize {
        match &self.packed {
            Some(p) => p.ends.len(),
            None => self.frames.len(),
        }
    }

    /// The frames from `next` on as one chunk of at most [`CHUNK`] bytes (at least one frame,
    /// whatever its size), and how many frames it holds. `next` is below [`Log::len`].
    fn chunk(&self, next: usize) -> (Bytes, usize) {
        if let Some(p) = &self.packed {
            let start = next.checked_sub(1).map_or(0, |i| p.ends[i] as usize);
            let mut take = 1;
            while next + take < p.ends.len() && p.ends[next + take] as usize - start <= CHUNK {
                take += 1;
            }
            let end = p.ends[next + take - 1] as usize;
            return (p.buf.slice(start..end), take);
        }
        let mut take = 0;
        let mut len = 0;
        for frame in &self.frames[next..] {
            if take > 0 && len + frame.len() > CHUNK {
                break;
            }
            take += 1;
            len += frame.len();
        }
        let chunk = match &self.frames[next..next + take] {
            [one] => one.clone(),
            many => {
                let mut buf = bytes::BytesMut::with_capacity(len);
                for frame in many {
                    buf.extend_from_slice(frame);
                }
                buf.freeze()
            }
        };
        (chunk, take)
    }

    /// Packs the frames into one buffer (once the run has ended); its size then.
    fn pack(&mut self) -> usize {
        let frames = std::mem::take(&mut self.frames);
        self.scratch = Vec::new();
        let total: usize = frames.iter().map(Bytes::len).sum();
        // Offsets are `u32`: a log past 4 GiB (never, given the turn's limits) stays unpacked.
        if self.packed.is_none() && u32::try_from(total).is_ok() {
            let mut buf = Vec::with_capacity(total);
            let mut ends = Vec::with_capacity(frames.len());
            for frame in &frames {
                buf.extend_from_slice(frame);
                ends.push(buf.len() as u32);
            }
            self.bytes = total + 4 * ends.len();
            self.packed = Some(Packed {
                buf: Bytes::from(buf),
                ends,
            });
        } else {
            self.frames = frames;
        }
        self.bytes
    }
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

    /// Every frame from event `after + 1` on, each with its event id (a shared engine that
    /// lost the run's log is given it again).
    #[cfg(shared_engine)]
    pub(crate) fn frames_after(&self, after: u64) -> Vec<(u64, Bytes)> {
        let log = self.lock();
        let first = usize::try_from(after).unwrap_or(usize::MAX);
        let frame = |i: usize| match &log.packed {
            Some(p) => {
                let start = i.checked_sub(1).map_or(0, |j| p.ends[j] as usize);
                p.buf.slice(start..p.ends[i] as usize)
            }
            None => log.frames[i].clone(),
        };
        (first..log.len())
            .map(|i| (i as u64 + 1, frame(i)))
            .collect()
    }

    /// Whether the run has flushed its first output ([`RunWriter::flush_now`]) or ended.
    pub(crate) fn flushed(&self) -> bool {
        let log = self.lock();
        log.eager > 0 || log.status != RunStatus::Running
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
        // Nothing sent yet: the first frames go out at once (they are the time to first token).
        let state = (self.clone(), next, rx, true);
        futures_util::stream::unfold(state, |(run, mut next, mut rx, first)| async move {
            // The log's length when this follower last yielded to let the run go on.
            let mut seen = next;
            let mut yields = 0;
            // Rounds in a row in which the run added nothing.
            let mut stalls = 0;
            loop {
                // Marked seen before reading, so an append after the read wakes us.
                rx.borrow_and_update();
                let look = {
                    let log = run.lock();
                    let len = log.len();
                    let running = log.status == RunStatus::Running;
                    stalls = if len > seen { 0 } else { stalls + 1 };
                    let gather = !first && next >= log.eager && yields < GATHER;
                    if next >= len {
                        if running { Look::Wait } else { Look::End }
                    } else if running && gather && stalls < STALLS {
                        // While the run is still producing, give it one more scheduler round
                        // before writing (up to GATHER rounds): a burst then goes out as one
                        // write, not one per event. A run that added nothing in STALLS rounds
                        // is waiting on its upstream, so what is here goes out now.
                        seen = len;
                        yields += 1;
                        Look::Gather
                    } else {
                        // The frames appended since the last look go out as one chunk (up to
                        // CHUNK bytes): one body frame and one write for a burst.
                        let (chunk, take) = log.chunk(next);
                        next += take;
                        Look::Send(chunk)
                    }
                };
                match look {
                    Look::Send(chunk) => return Some((chunk, (run, next, rx, false))),
                    Look::End => return None,
                    Look::Gather => tokio::task::yield_now().await,
                    Look::Wait => {
                        yields = 0;
                        if rx.changed().await.is_err() {
                            return None;
                        }
                    }
                }
            }
        })
    }
}

/// What a follower does after looking at the log.
enum Look {
    /// Send this chunk.
    Send(Bytes),
    /// Let the run add to the burst first.
    Gather,
    /// Wait for the next append.
    Wait,
    /// The run ended and everything was sent.
    End,
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
            let mut buf = std::mem::take(&mut log.scratch);
            buf.clear();
            buf.extend_from_slice(b"id: ");
            buf.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
            buf.extend_from_slice(b"\ndata: ");
            data(&mut buf);
            buf.extend_from_slice(b"\n\n");
            log.bytes += buf.len();
            let frame = Bytes::copy_from_slice(&buf);
            log.scratch = buf;
            log.frames.push(frame.clone());
            (id, frame)
        };
        self.run.tick.send_replace(());
        pushed
    }

    /// The frames appended so far go out at once, without waiting for a burst to gather: the
    /// run calls it after its first token when a preamble went out before it.
    pub(crate) fn flush_now(&self) {
        {
            let mut log = self.run.lock();
            log.eager = log.len();
        }
        self.run.tick.send_replace(());
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
            log.pack()
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
    ) -> Result<RunWriter, Failure> {
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
    ) -> Result<RunWriter, Failure> {
        let mut reg = self.lock();
        let key = thread.map(|t| (owner.clone(), t.to_owned()));
        if let Some(running) = key.as_ref().and_then(|k| reg.active.get(k)) {
            return Err(Failure::Conflict(format!(
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
            log: Mutex::new(Log::new()),
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
        let bytes = bytes + RUN_OVERHEAD;
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
