//! The Redis side of `/api/events` across instances; the logic both engines share, and its
//! decisions, are in `fanout`.
//!
//! Keys: the counter `{prefix}events:seq` and the stream `{prefix}events:stream`, whose entry
//! ids are `0-{n}` for event id `n` (fields `s`, the scope, and `e`, the event JSON).
//!
//! Decisions of this engine: a Lua script `INCR`s the counter and `XADD`s the event with that
//! id in one step (trimming with `MAXLEN ~`); the reader `XREAD BLOCK`s on a connection of its
//! own (never the shared one); a replay is an `XRANGE`.

use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamRangeReply, StreamReadReply};

use super::fanout::{BLOCK, Entry, EventLog, EventReader, READ_COUNT};
use crate::live::{EngineError, Redis};

/// INCR the counter (started at the wall clock when missing) and XADD the event as `0-{n}`.
/// KEYS: counter, stream. ARGV: now (ms), stream length, scope, event JSON.
const PUBLISH: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1])
end
local n = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], string.format('0-%d', n), 's', ARGV[3], 'e', ARGV[4])
return n
";

/// Events in a Redis stream.
pub(super) struct RedisEvents {
    redis: Redis,
    seq: String,
    stream: String,
    script: redis::Script,
}

impl RedisEvents {
    pub(super) fn new(redis: Redis) -> Self {
        Self {
            seq: redis.key("events:seq"),
            stream: redis.key("events:stream"),
            redis,
            script: redis::Script::new(PUBLISH),
        }
    }
}

/// `0-{n}` → `n`.
fn entry_id(id: &str) -> Option<u64> {
    match id.split_once('-') {
        Some(("0", n)) => n.parse().ok(),
        _ => None,
    }
}

/// A stream entry as stored (`None` for an id that is not ours; missing fields are empty, so
/// the entry is skipped where it stands).
fn entry(e: &StreamId) -> Option<Entry> {
    Some(Entry {
        id: entry_id(&e.id)?,
        scope: e.get("s").unwrap_or_default(),
        event: e.get("e").unwrap_or_default(),
    })
}

#[async_trait]
impl EventLog for RedisEvents {
    async fn publish(
        &self,
        now_ms: u64,
        len: usize,
        scope: &str,
        event: &str,
    ) -> Result<u64, EngineError> {
        Ok(self
            .script
            .key(&self.seq)
            .key(&self.stream)
            .arg(now_ms)
            .arg(len)
            .arg(scope)
            .arg(event)
            .invoke_async::<u64>(&mut self.redis.conn())
            .await?)
    }

    async fn range(&self, from: u64, to: u64, count: u64) -> Result<Vec<Entry>, EngineError> {
        let reply: StreamRangeReply = redis::cmd("XRANGE")
            .arg(&self.stream)
            .arg(format!("0-{from}"))
            .arg(format!("0-{to}"))
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.redis.conn())
            .await?;
        Ok(reply.ids.iter().filter_map(entry).collect())
    }

    async fn seq(&self) -> Result<Option<u64>, EngineError> {
        Ok(self.redis.conn().get(&self.seq).await?)
    }

    async fn reader(&self) -> Result<Box<dyn EventReader>, EngineError> {
        Ok(Box::new(Reader {
            conn: self.redis.dedicated().await?,
            stream: self.stream.clone(),
        }))
    }
}

/// The reader: a connection of its own for `XREAD BLOCK`.
struct Reader {
    conn: MultiplexedConnection,
    stream: String,
}

#[async_trait]
impl EventReader for Reader {
    async fn tail(&mut self) -> Result<Option<u64>, EngineError> {
        let tail: StreamRangeReply = redis::cmd("XREVRANGE")
            .arg(&self.stream)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.conn)
            .await?;
        Ok(tail.ids.first().and_then(|e| entry_id(&e.id)))
    }

    async fn after(&mut self, pos: u64) -> Result<Vec<Entry>, EngineError> {
        let reply: Option<StreamReadReply> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(&self.stream)
            .arg(format!("0-{pos}"))
            .query_async(&mut self.conn)
            .await?;
        Ok(reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .filter_map(|e| entry(&e))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_are_whole_numbers_in_the_zero_millisecond_slot() {
        assert_eq!(entry_id("0-42"), Some(42));
        assert_eq!(entry_id("1-42"), None);
        assert_eq!(entry_id("0-x"), None);
        assert_eq!(entry_id("42"), None);
    }
}
