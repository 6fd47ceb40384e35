//! The Redis side of runs across instances ([`crate::live::Redis`]); the logic both engines
//! share, and its decisions, are in `shared`.
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
//! Decisions of this engine:
//! - Each operation of [`RunLog`] that reads and writes is one Lua script, so it is atomic.
//! - A follower `XREAD BLOCK`s on a connection of its own (opened on its first read): a
//!   blocking read on the shared connection would hold up every other command of the instance.
//! - The lease is a key with a TTL, so "no lease" is simply its absence.

use std::collections::HashMap;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use redis::aio::MultiplexedConnection;
use redis::streams::StreamReadReply;
use redis::{AsyncCommands, Script};

use super::RunStatus;
use super::local::RETENTION;
use super::shared::{
    BATCH, BLOCK, Found, LEASE, LogReader, MAX_AGE, MAX_ENTRIES, Meta, NewRun, Read, RunLog,
    parse_status, status_str,
};
use crate::live::{EngineError, Redis};

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
/// is no longer running, -1 when Redis has no record of it (nothing appended either way). Ids
/// already in the log are skipped, so a batch whose answer was lost can be sent again.
const APPEND: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
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

fn engine(e: redis::RedisError) -> EngineError {
    EngineError::from(e)
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

/// Runs in Redis.
pub(crate) struct RedisRuns {
    redis: Redis,
}

impl RedisRuns {
    pub(crate) fn new(redis: Redis) -> Self {
        Self { redis }
    }

    fn active_key(&self, owner: &str, thread: &str) -> String {
        self.redis
            .key(&format!("active:{}:{owner}:{thread}", owner.len()))
    }
}

#[async_trait]
impl RunLog for RedisRuns {
    async fn start(&self, run: &NewRun<'_>) -> Result<Option<String>, EngineError> {
        let keys = Keys::of(&self.redis, run.id);
        let active = run.thread.map(|t| self.active_key(run.owner, t));
        let script = Script::new(START);
        let mut call = script.key(&keys.meta);
        call.key(&keys.lease);
        if let Some(a) = &active {
            call.key(a);
        }
        call.arg(run.owner)
            .arg(run.thread.unwrap_or_default())
            .arg(run.message_id)
            .arg(run.resume_base.as_deref().unwrap_or_default())
            .arg(LEASE.as_millis() as u64)
            .arg(MAX_AGE.as_secs())
            .arg(run.id)
            .arg(&run.lost);
        call.invoke_async(&mut self.redis.conn())
            .await
            .map_err(engine)
    }

    async fn append(&self, id: &str, batch: &[(u64, Bytes)]) -> Result<Found, EngineError> {
        let keys = Keys::of(&self.redis, id);
        let script = Script::new(APPEND);
        let mut call = script.key(&keys.meta);
        call.key(&keys.log).arg(MAX_ENTRIES).arg(MAX_AGE.as_secs());
        for (id, frame) in batch {
            call.arg(*id).arg(frame.as_ref());
        }
        let ok: i64 = call
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(match ok {
            1 => Found::Running,
            -1 => Found::Unknown,
            _ => Found::Ended,
        })
    }

    async fn end(&self, id: &str, status: RunStatus, reap: bool) -> Result<bool, EngineError> {
        let keys = Keys::of(&self.redis, id);
        let ended: i64 = Script::new(END)
            .key(&keys.meta)
            .key(&keys.log)
            .key(&keys.lease)
            .arg(status_str(status))
            .arg(RETENTION.as_secs().max(1))
            .arg(if reap { "1" } else { "0" })
            .arg(id)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(ended == 1)
    }

    async fn refresh(&self, id: &str) -> Result<Found, EngineError> {
        let keys = Keys::of(&self.redis, id);
        let (known, stop): (bool, Option<String>) = redis::pipe()
            .exists(&keys.meta)
            .pset_ex(&keys.lease, "1", LEASE.as_millis() as u64)
            .ignore()
            .expire(&keys.meta, MAX_AGE.as_secs() as i64)
            .ignore()
            .hget(&keys.meta, "stop")
            .query_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(if !known {
            Found::Unknown
        } else if stop.as_deref() == Some("1") {
            Found::StopAsked
        } else {
            Found::Running
        })
    }

    async fn stop(&self, id: &str) -> Result<(), EngineError> {
        let keys = Keys::of(&self.redis, id);
        let _: i64 = Script::new(STOP)
            .key(&keys.meta)
            .key(self.redis.key("runs:stop"))
            .arg(id)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Option<Meta>, EngineError> {
        let meta: HashMap<String, String> = self
            .redis
            .conn()
            .hgetall(Keys::of(&self.redis, id).meta)
            .await
            .map_err(engine)?;
        let Some(owner) = meta.get("owner") else {
            return Ok(None);
        };
        Ok(Some(Meta {
            owner: owner.clone(),
            thread: meta.get("thread").filter(|t| !t.is_empty()).cloned(),
            message_id: meta.get("message").cloned().unwrap_or_default(),
            resume_base: meta
                .get("base")
                .filter(|b| !b.is_empty())
                .and_then(|b| serde_json::from_str(b).ok()),
        }))
    }

    async fn status(&self, id: &str) -> Result<Option<(RunStatus, bool)>, EngineError> {
        let keys = Keys::of(&self.redis, id);
        let (status, lease): (Option<String>, bool) = redis::pipe()
            .hget(&keys.meta, "status")
            .exists(&keys.lease)
            .query_async(&mut self.redis.conn())
            .await
            .map_err(engine)?;
        Ok(status.map(|s| (parse_status(&s), lease)))
    }

    async fn active(&self, owner: &str, thread: &str) -> Result<Option<String>, EngineError> {
        let key = self.active_key(owner, thread);
        self.redis.conn().get(&key).await.map_err(engine)
    }

    fn reader(&self, id: &str) -> Box<dyn LogReader> {
        Box::new(Reader {
            redis: self.redis.clone(),
            log: Keys::of(&self.redis, id).log,
            conn: None,
        })
    }

    async fn stops(&self) -> Result<BoxStream<'static, String>, EngineError> {
        let mut ps = self.redis.subscribe().await?;
        ps.subscribe(self.redis.key("runs:stop"))
            .await
            .map_err(engine)?;
        Ok(ps
            .into_on_message()
            .filter_map(|msg| async move { msg.get_payload::<String>().ok() })
            .boxed())
    }
}

/// A follower's reader: `XREAD BLOCK` on a connection of its own.
struct Reader {
    redis: Redis,
    log: String,
    conn: Option<MultiplexedConnection>,
}

#[async_trait]
impl LogReader for Reader {
    async fn read(&mut self, after: u64) -> Result<Read, EngineError> {
        let c = match &mut self.conn {
            Some(c) => c,
            None => self.conn.insert(self.redis.dedicated().await?),
        };
        let reply: Option<StreamReadReply> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(BATCH)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(&self.log)
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
}
