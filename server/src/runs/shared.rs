//! Runs across instances, through Redis ([`crate::engine::Redis`]).
//!
//! Keys (all under the engine's prefix; `{id}` is a run id, checked for its shape before it
//! names a key):
//! - `run:{id}` — a hash: owner, thread, message id, resume base, status, the key of the
//!   conversation's active-run marker, the frames that end the log when its instance is lost,
//!   and `stop` once a stop was asked.
//! - `run:{id}:log` — a Stream: one entry per frame, entry id `0-{n}` for SSE id `n`, field
//!   `f` the frame's bytes (the same bytes the running instance's tabs get); then one entry
//!   with field `s`, the status the run ended with, so followers end.
//! - `run:{id}:lease` — set while the running instance is alive (a short TTL it refreshes).
//! - `active:{len}:{principal}:{thread}` — the running run of a conversation (the principal's
//!   length first, so no two principal/thread pairs share a key).
//! - channel `runs:stop` — stop requests, the run id as the payload.
//!
//! Decisions:
//! - **The running instance writes, in order, off the reply's path**: each frame goes to the
//!   run's memory log first (its own tabs read that), then to a per-run task that appends
//!   batches to the Stream with one script call (which appends nothing once the run is no
//!   longer running, see the lease). The reply never waits on Redis.
//! - **Followers on other instances** `XREAD BLOCK` the Stream from `0-{after}` on a
//!   connection of their own (opened on the first read): a blocking read on the shared
//!   connection would hold up every other command of the instance. A follower costs one
//!   connection to Redis while it reads; followers on the running instance cost none.
//! - **One running run per conversation across instances**: `SET active… NX` in the start
//!   script (409 naming the run otherwise); the end clears it only while it still names this
//!   run (in the end script).
//! - **Stop from any instance**: the stop script sets `stop` on the run's hash and publishes
//!   the id on `runs:stop`; every instance listens there (one subscription per service,
//!   opened with its first run) and stops the run when it is its own, so the upstream request
//!   is dropped within milliseconds. Should the message be lost (a dropped subscription), the
//!   running instance also reads `stop` with each lease refresh, once a second. The stop
//!   answer waits for the run's end as in-process.
//! - **An instance that dies mid-run** stops refreshing the run's lease ([`LEASE`], refreshed
//!   every [`LEASE_REFRESH`]). Whoever next looks at the run from elsewhere (a follower
//!   waiting on it, a stop, a resume, a conversation read, a new run in the conversation) and
//!   finds it running without a lease marks it failed in one script (only if it is still
//!   running and still has no lease): it appends the protocol's error frames given at start,
//!   the end entry, and frees the conversation. The reply is not rebuilt from the log: the
//!   running instance saves it at least every [`CHECKPOINT_EVERY`] while text arrives (and at
//!   each step end and the finish), so a killed instance loses at most about a second of it.
//!   An instance that only stalled past its lease finds its run taken over at its next append
//!   and stops it.
//! - **Retention**: a finished run's keys expire after [`local::RETENTION`]; a running run's
//!   after a day (refreshed while it runs), so nothing outlives a lost run for long. A run's
//!   log keeps about its last [`MAX_ENTRIES`] frames (a longer reply keeps its end).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use redis::aio::MultiplexedConnection;
use redis::streams::StreamReadReply;
use redis::{AsyncCommands, Script};
use tokio::sync::{OnceCell, mpsc};

use super::RunStatus;
use super::local::{self, RETENTION};
use crate::engine::{EngineError, Redis};
use crate::host::Principal;
use crate::http_util::ApiError;

/// How long a run's lease lasts without a refresh.
pub(crate) const LEASE: Duration = Duration::from_secs(5);
/// How often the running instance refreshes it.
pub(crate) const LEASE_REFRESH: Duration = Duration::from_secs(1);
/// How often a run saves its reply while text keeps coming.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// About how many frames a run's log keeps.
pub(crate) const MAX_ENTRIES: usize = 100_000;
/// How long a running run's keys live without being refreshed.
const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long a follower's read blocks before it checks the run's lease.
const BLOCK: Duration = Duration::from_secs(1);
/// How many entries one read takes at most.
const READ_COUNT: usize = 512;
/// How many times a batch of frames is sent before it is given up.
const APPEND_TRIES: u32 = 4;
/// How often a stop on another instance looks whether the run has ended.
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// `KEYS` meta, lease, [active]; `ARGV` owner, thread, message, base, lease ms, max age s,
/// id, lost frames (JSON array). Nil when started, else the id of the run already running.
const START: &str = r"
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[7], 'NX', 'EX', ARGV[6]) then
    return redis.call('GET', KEYS[3])
  end
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'thread', ARGV[2], 'message', ARGV[3],
  'base', ARGV[4], 'status', 'running', 'active', KEYS[3] or '', 'lost', ARGV[8])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[5])
return false
";

/// `KEYS` meta, log; `ARGV` max entries, max age s, then id and frame pairs. 0 when the run
/// is no longer running (nothing appended). Ids already in the log are skipped, so a batch
/// whose answer was lost can be sent again.
const APPEND: &str = r"
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
local seq = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if last[1] then seq = tonumber(string.match(last[1][1], '-(%d+)$')) end
for i = 3, #ARGV, 2 do
  if tonumber(ARGV[i]) > seq then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '0-' .. ARGV[i], 'f', ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
";

/// `KEYS` meta, log, lease; `ARGV` status, retention s, reap ('1': only without a lease, and
/// the lost frames are appended first), id. 1 when it ended the run.
const END: &str = r"
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local seq = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if last[1] then seq = tonumber(string.match(last[1][1], '-(%d+)$')) end
if ARGV[3] == '1' then
  local lost = cjson.decode(redis.call('HGET', KEYS[1], 'lost') or '[]')
  for _, data in ipairs(lost) do
    seq = seq + 1
    redis.call('XADD', KEYS[2], '0-' .. seq, 'f', 'id: ' .. seq .. '\ndata: ' .. data .. '\n\n')
  end
end
redis.call('XADD', KEYS[2], '0-' .. (seq + 1), 's', ARGV[1])
redis.call('HSET', KEYS[1], 'status', ARGV[1])
local active = redis.call('HGET', KEYS[1], 'active')
if active and active ~= '' and redis.call('GET', active) == ARGV[4] then
  redis.call('DEL', active)
end
redis.call('DEL', KEYS[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
";

/// `KEYS` meta, channel; `ARGV` id. Marks the stop and publishes it while the run runs.
const STOP: &str = r"
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'stop', '1')
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
";

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        ApiError::Internal(format!("the shared run engine failed: {e}"))
    }
}

fn engine(e: redis::RedisError) -> EngineError {
    EngineError::from(e)
}

fn status_str(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Finished => "finished",
        RunStatus::Stopped => "stopped",
        RunStatus::Failed => "failed",
    }
}

fn parse_status(s: &str) -> RunStatus {
    match s {
        "running" => RunStatus::Running,
        "finished" => RunStatus::Finished,
        "stopped" => RunStatus::Stopped,
        _ => RunStatus::Failed,
    }
}

/// The keys of run `id`.
struct Keys {
    meta: String,
    log: String,
    lease: String,
}

impl Keys {
    fn of(redis: &Redis, id: &str) -> Self {
        Self {
            meta: redis.key(&format!("run:{id}")),
            log: redis.key(&format!("run:{id}:log")),
            lease: redis.key(&format!("run:{id}:lease")),
        }
    }
}

/// The Redis backend of [`super::Runs`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Shared {
    inner: Arc<Inner>,
}

struct Inner {
    redis: Redis,
    /// This instance's runs.
    local: local::Runs,
    /// Set once the stop listener is subscribed.
    listening: OnceCell<()>,
}

impl Shared {
    pub(crate) fn new(redis: Redis, local: local::Runs) -> Self {
        Self {
            inner: Arc::new(Inner {
                redis,
                local,
                listening: OnceCell::new(),
            }),
        }
    }

    fn active_key(&self, principal: &Principal, thread: &str) -> String {
        let p = principal.id();
        self.inner
            .redis
            .key(&format!("active:{}:{p}:{thread}", p.len()))
    }

    fn stop_channel(&self) -> String {
        self.inner.redis.key("runs:stop")
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

    /// Stops this instance's runs named on the stop channel; resubscribes after a loss.
    async fn stop_listener(self, ready: tokio::sync::oneshot::Sender<()>) {
        let mut ready = Some(ready);
        let channel = self.stop_channel();
        loop {
            let sub = async {
                let mut ps = self.inner.redis.subscribe().await?;
                ps.subscribe(&channel).await.map_err(engine)?;
                Ok::<_, EngineError>(ps)
            };
            match sub.await {
                Ok(mut ps) => {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                    let mut messages = ps.on_message();
                    while let Some(msg) = messages.next().await {
                        let Ok(id) = msg.get_payload::<String>() else {
                            continue;
                        };
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

    /// Starts a run in Redis and in this instance's registry.
    pub(crate) async fn start(
        &self,
        owner: &Principal,
        thread: Option<&str>,
        message_id: &str,
        resume_base: Option<serde_json::Value>,
        lost: &[String],
    ) -> Result<(local::RunWriter, Mirror), ApiError> {
        self.listen().await;
        let redis = &self.inner.redis;
        let id = local::new_id();
        let keys = Keys::of(redis, &id);
        let active = thread.map(|t| self.active_key(owner, t));
        let base = resume_base
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default();
        let lost = serde_json::to_string(lost).unwrap_or_else(|_| "[]".into());
        // Twice: a conversation held by a lost run is freed (marked failed), then taken.
        for _ in 0..2 {
            let script = Script::new(START);
            let mut call = script.key(&keys.meta);
            call.key(&keys.lease);
            if let Some(a) = &active {
                call.key(a);
            }
            call.arg(owner.id())
                .arg(thread.unwrap_or_default())
                .arg(message_id)
                .arg(&base)
                .arg(LEASE.as_millis() as u64)
                .arg(MAX_AGE.as_secs())
                .arg(&id)
                .arg(&lost);
            let running: Option<String> =
                call.invoke_async(&mut redis.conn()).await.map_err(engine)?;
            let Some(running) = running else {
                let writer = match self.inner.local.start_with_id(
                    id.clone(),
                    owner,
                    thread,
                    message_id,
                    resume_base,
                ) {
                    Ok(w) => w,
                    Err(e) => {
                        end(redis, &id, RunStatus::Failed, false).await.ok();
                        return Err(e);
                    }
                };
                let mirror = Mirror::start(redis.clone(), writer.run().clone());
                return Ok((writer, mirror));
            };
            if local::is_run_id(&running) && reap_if_lost(redis, &running).await? {
                continue;
            }
            return Err(ApiError::Conflict(format!(
                "a reply is still running in this conversation (run {running}); stop it or wait for it"
            )));
        }
        Err(ApiError::Conflict(
            "a reply is still running in this conversation; stop it or wait for it".into(),
        ))
    }

    /// `principal`'s run `id`, as Redis holds it (a lost one is marked failed on the way).
    pub(crate) async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<Arc<SharedRun>>, EngineError> {
        if !local::is_run_id(id) {
            return Ok(None);
        }
        let run = SharedRun::load(&self.inner.redis, id).await?;
        let Some(run) = run.filter(|r| r.owner == principal.id()) else {
            return Ok(None);
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
        let key = self.active_key(principal, thread);
        let id: Option<String> = self.inner.redis.conn().get(&key).await.map_err(engine)?;
        let Some(id) = id else { return Ok(None) };
        let Some(run) = self.get(principal, &id).await? else {
            return Ok(None);
        };
        match run.status().await? {
            Some(RunStatus::Running) => Ok(Some(run)),
            _ => Ok(None),
        }
    }
}

/// Ends run `id` with `status` (`reap`: only when its lease is gone, with its lost frames).
async fn end(redis: &Redis, id: &str, status: RunStatus, reap: bool) -> Result<bool, EngineError> {
    let keys = Keys::of(redis, id);
    let ended: i64 = Script::new(END)
        .key(&keys.meta)
        .key(&keys.log)
        .key(&keys.lease)
        .arg(status_str(status))
        .arg(RETENTION.as_secs().max(1))
        .arg(if reap { "1" } else { "0" })
        .arg(id)
        .invoke_async(&mut redis.conn())
        .await
        .map_err(engine)?;
    Ok(ended == 1)
}

/// Marks run `id` failed when it is running without a lease (its instance is gone); whether
/// it did.
async fn reap_if_lost(redis: &Redis, id: &str) -> Result<bool, EngineError> {
    let reaped = end(redis, id, RunStatus::Failed, true).await?;
    if reaped {
        tracing::warn!(run = %id, "the instance running this run is gone; marked failed");
    }
    Ok(reaped)
}

/// A run as Redis holds it.
pub(crate) struct SharedRun {
    redis: Redis,
    id: String,
    owner: String,
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

/// What one read of a log gave.
enum Read {
    /// Frames (and the id of the last) and whether the end entry came.
    Entries {
        frames: Vec<Bytes>,
        last: u64,
        ended: bool,
    },
    /// Nothing within the block time.
    Nothing,
}

impl SharedRun {
    async fn load(redis: &Redis, id: &str) -> Result<Option<Self>, EngineError> {
        let meta: HashMap<String, String> = redis
            .conn()
            .hgetall(Keys::of(redis, id).meta)
            .await
            .map_err(engine)?;
        let Some(owner) = meta.get("owner") else {
            return Ok(None);
        };
        Ok(Some(Self {
            redis: redis.clone(),
            id: id.to_owned(),
            owner: owner.clone(),
            message_id: meta.get("message").cloned().unwrap_or_default(),
            resume_base: meta
                .get("base")
                .filter(|b| !b.is_empty())
                .and_then(|b| serde_json::from_str(b).ok()),
        }))
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn message_id(&self) -> &str {
        &self.message_id
    }

    pub(crate) fn resume_base(&self) -> Option<&serde_json::Value> {
        self.resume_base.as_ref()
    }

    /// The run's status now (`None` when its keys expired); a run found running without a
    /// lease is marked failed first.
    async fn status(&self) -> Result<Option<RunStatus>, EngineError> {
        let keys = Keys::of(&self.redis, &self.id);
        let (status, lease): (Option<String>, bool) = redis::pipe()
            .hget(&keys.meta, "status")
            .exists(&keys.lease)
            .query_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        let Some(status) = status.map(|s| parse_status(&s)) else {
            return Ok(None);
        };
        if status == RunStatus::Running && !lease && reap_if_lost(&self.redis, &self.id).await? {
            return Ok(Some(RunStatus::Failed));
        }
        Ok(Some(status))
    }

    /// Asks the instance running it to stop it.
    pub(crate) async fn stop(&self) -> Result<(), EngineError> {
        let keys = Keys::of(&self.redis, &self.id);
        let _: i64 = Script::new(STOP)
            .key(&keys.meta)
            .key(self.redis.key("runs:stop"))
            .arg(&self.id)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(())
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

    /// Reads what follows event `after`, blocking up to [`BLOCK`].
    async fn read(
        &self,
        conn: &mut Option<MultiplexedConnection>,
        after: u64,
    ) -> Result<Read, EngineError> {
        let c = match conn {
            Some(c) => c,
            None => conn.insert(self.redis.dedicated().await?),
        };
        let log = Keys::of(&self.redis, &self.id).log;
        let reply: Option<StreamReadReply> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(&log)
            .arg(format!("0-{after}"))
            .query_async(c)
            .await
            .map_err(engine)?;
        let Some(reply) = reply else {
            return Ok(Read::Nothing);
        };
        let (mut frames, mut last, mut ended) = (Vec::new(), after, false);
        for entry in reply.keys.into_iter().flat_map(|k| k.ids) {
            let seq = entry
                .id
                .rsplit_once('-')
                .and_then(|(_, n)| n.parse().ok())
                .unwrap_or(last);
            if let Some(redis::Value::BulkString(f)) = entry.map.get("f") {
                frames.push(Bytes::from(f.clone()));
                last = seq;
            } else if entry.map.contains_key("s") {
                ended = true;
                break;
            }
        }
        if frames.is_empty() && !ended {
            return Ok(Read::Nothing);
        }
        Ok(Read::Entries {
            frames,
            last,
            ended,
        })
    }

    /// The log from event `after + 1` on, following it until the run ends (or its keys
    /// expire, or Redis fails: the client reconnects with its last id).
    pub(crate) fn follow(self: Arc<Self>, after: u64) -> impl Stream<Item = Bytes> + Send + use<> {
        let state = (self, None, after, VecDeque::<Bytes>::new(), false);
        futures_util::stream::unfold(
            state,
            |(run, mut conn, mut after, mut ready, mut done)| async move {
                loop {
                    if let Some(frame) = ready.pop_front() {
                        return Some((frame, (run, conn, after, ready, done)));
                    }
                    if done {
                        return None;
                    }
                    match run.read(&mut conn, after).await {
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

/// What the running side hands its copy task.
enum Copy {
    Frame(u64, Bytes),
    Finish(RunStatus),
}

/// The copy of a running run to Redis: frames in order, its lease, its end. Dropped without
/// [`Mirror::finish`], the run ends failed.
pub(crate) struct Mirror {
    tx: mpsc::UnboundedSender<Copy>,
}

impl Mirror {
    fn start(redis: Redis, run: Arc<local::Run>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(copy(redis, run, rx));
        Self { tx }
    }

    /// Copies one frame.
    pub(crate) fn frame(&self, (id, frame): (u64, Bytes)) {
        let _ = self.tx.send(Copy::Frame(id, frame));
    }

    /// Ends the run with `status` once every frame is copied.
    pub(crate) fn finish(&self, status: RunStatus) {
        let _ = self.tx.send(Copy::Finish(status));
    }
}

/// The copy task of one run.
async fn copy(redis: Redis, run: Arc<local::Run>, mut rx: mpsc::UnboundedReceiver<Copy>) {
    let keys = Keys::of(&redis, run.id());
    let mut lease = tokio::time::interval(LEASE_REFRESH);
    lease.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    lease.tick().await; // the first tick is now: the start set the lease
    let mut taken_over = false;
    let status = loop {
        tokio::select! {
            biased;
            msg = rx.recv() => {
                let mut batch = Vec::new();
                let mut finish = None;
                match msg {
                    Some(Copy::Frame(id, f)) => batch.push((id, f)),
                    Some(Copy::Finish(s)) => finish = Some(s),
                    None => finish = Some(RunStatus::Failed),
                }
                while finish.is_none() && batch.len() < READ_COUNT {
                    match rx.try_recv() {
                        Ok(Copy::Frame(id, f)) => batch.push((id, f)),
                        Ok(Copy::Finish(s)) => finish = Some(s),
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            finish = Some(RunStatus::Failed)
                        }
                    }
                }
                if !batch.is_empty() && !taken_over && !append_retrying(&redis, &keys, &batch).await {
                    tracing::warn!(run = %run.id(), "the run was marked failed elsewhere (its lease lapsed); stopping it");
                    taken_over = true;
                    run.stop();
                }
                if let Some(s) = finish {
                    break s;
                }
            }
            _ = lease.tick() => {
                match refresh(&redis, &keys).await {
                    Ok(true) => run.stop(),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(run = %run.id(), error = %e, "refreshing the run's lease failed"),
                }
            }
        }
    };
    if !taken_over && let Err(e) = end(&redis, run.id(), status, false).await {
        tracing::warn!(run = %run.id(), error = %e, "ending the run in Redis failed");
    }
}

/// Appends `batch`, trying again a few times when Redis fails (a follower elsewhere would
/// otherwise miss frames); false when the run no longer runs there.
async fn append_retrying(redis: &Redis, keys: &Keys, batch: &[(u64, Bytes)]) -> bool {
    for attempt in 1..=APPEND_TRIES {
        match append(redis, keys, batch).await {
            Ok(running) => return running,
            Err(e) if attempt == APPEND_TRIES => {
                tracing::warn!(error = %e, "copying a run's frames to Redis failed; followers on other instances miss them");
            }
            Err(e) => {
                tracing::debug!(error = %e, attempt, "copying a run's frames to Redis failed; trying again");
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
        }
    }
    true
}

/// Appends `batch`; false when the run no longer runs there.
async fn append(redis: &Redis, keys: &Keys, batch: &[(u64, Bytes)]) -> Result<bool, EngineError> {
    let script = Script::new(APPEND);
    let mut call = script.key(&keys.meta);
    call.key(&keys.log).arg(MAX_ENTRIES).arg(MAX_AGE.as_secs());
    for (id, frame) in batch {
        call.arg(*id).arg(frame.as_ref());
    }
    let ok: i64 = call.invoke_async(&mut redis.conn()).await.map_err(engine)?;
    Ok(ok == 1)
}

/// Refreshes the lease (and the keys' lifetime); whether a stop was asked.
async fn refresh(redis: &Redis, keys: &Keys) -> Result<bool, EngineError> {
    let (stop,): (Option<String>,) = redis::pipe()
        .pset_ex(&keys.lease, "1", LEASE.as_millis() as u64)
        .ignore()
        .expire(&keys.meta, MAX_AGE.as_secs() as i64)
        .ignore()
        .hget(&keys.meta, "stop")
        .query_async(&mut redis.conn())
        .await
        .map_err(engine)?;
    Ok(stop.as_deref() == Some("1"))
}
