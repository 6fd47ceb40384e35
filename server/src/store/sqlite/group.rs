//! Saves committed in groups: one writer thread per store takes every save waiting, runs each in
//! a savepoint of one `IMMEDIATE` transaction and commits them together, so concurrent saves
//! share one commit (with `synchronous=FULL`, one WAL sync) instead of queueing for one each.
//!
//! Decisions:
//! - **Each save stays its own**: a save that fails rolls back its savepoint only; the others
//!   in the group commit. A conflict writes nothing and answers the stored copy, as alone.
//! - **Acknowledged after the commit**, never before: a save answered `Saved` is as durable as
//!   one committed alone. If the commit itself fails, every save of the group gets the error
//!   and nothing of it is kept (not in the file, not in `written`).
//! - **A group is whatever is waiting** when the writer is free, at most [`MAX_GROUP`]; a lone
//!   save waits for nobody.
//! - The writer holds the connection's lock for the group only; reads and the other stores'
//!   operations on the connection go between groups. It ends when the store is dropped.
//! - **The full-text index is filled by the writer when it is idle.** A save queues its
//!   messages' text in `message_index_pending` (schema migration 12), in its own transaction,
//!   where search reads it. Once [`FLUSH_AT`] rows wait and no save does, the writer moves them
//!   into FTS5, [`FLUSH_BATCH`] per transaction, stopping as soon as a save arrives; a save
//!   therefore waits for at most one batch. If saves never stop, a group moves them before
//!   its commit once [`FLUSH_FORCED`] wait, so what search has to check in Rust stays bounded.
//!   FTS5 pays for each transaction that writes to it, so rows moved by the hundred cost it
//!   about a tenth per row of what a turn's two rows cost it alone; measured by the ignored
//!   test `search_figures_on_ten_thousand_conversations` (its note in `schema`).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use lmchatkit_protocol::StoredConversation;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::queries::{Attempt, Counters, Db, Stored, flush_index, pending_count, save_in};
use super::written::{Node, Written};
use crate::store::rows::storage;
use crate::store::{HistoryError, SaveOutcome};

/// The most saves committed together.
pub(super) const MAX_GROUP: usize = 64;

/// Rows waiting for the full-text index from which an idle writer moves them in.
pub(super) const FLUSH_AT: usize = 256;

/// The most rows moved into the full-text index in one transaction.
pub(super) const FLUSH_BATCH: usize = 512;

/// Rows waiting past which a group moves them all in before its commit, idle or not.
pub(super) const FLUSH_FORCED: usize = 2048;

/// When the writer moves waiting rows into the full-text index: [`FLUSH_AT`] and
/// [`FLUSH_FORCED`] unless a test sets others.
pub(super) struct FlushLimits {
    pub(super) at: AtomicUsize,
    pub(super) forced: AtomicUsize,
}

impl Default for FlushLimits {
    fn default() -> Self {
        Self {
            at: AtomicUsize::new(FLUSH_AT),
            forced: AtomicUsize::new(FLUSH_FORCED),
        }
    }
}

// The small variant exists only in tests.
#[cfg_attr(test, allow(clippy::large_enum_variant))]
enum Job {
    Save {
        principal: String,
        conversation: StoredConversation,
        reply: oneshot::Sender<Result<SaveOutcome, HistoryError>>,
    },
    /// Answered once the writer has finished what it was doing (a test's way to wait for an
    /// idle flush to end).
    #[cfg(test)]
    Settle(oneshot::Sender<()>),
}

/// The handle of a store's writer thread.
pub(super) struct Group {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Group {
    /// Starts the writer on `conn`.
    pub(super) fn start(
        conn: Arc<Mutex<Connection>>,
        counters: Arc<Counters>,
        written: Arc<Mutex<Written>>,
        limits: Arc<FlushLimits>,
    ) -> Result<Self, HistoryError> {
        let (jobs, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("lmchatkit-sqlite-writer".into())
            .spawn(move || writer(rx, &conn, &counters, &written, &limits))
            .map_err(storage)?;
        Ok(Self { jobs })
    }

    /// Saves `conversation` of `principal` with the next group.
    pub(super) async fn save(
        &self,
        principal: String,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        let (reply, answer) = oneshot::channel();
        let stopped = || HistoryError::Storage("the SQLite writer stopped".into());
        self.jobs
            .send(Job::Save {
                principal,
                conversation,
                reply,
            })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Waits until the writer has ended what it was doing (a save group or a step of moving
    /// rows into the full-text index).
    #[cfg(test)]
    pub(super) async fn settle(&self) {
        let (reply, answer) = oneshot::channel();
        if self.jobs.send(Job::Settle(reply)).is_ok() {
            let _ = answer.await;
        }
    }
}

fn writer(
    mut rx: mpsc::UnboundedReceiver<Job>,
    conn: &Mutex<Connection>,
    counters: &Counters,
    written: &Mutex<Written>,
    limits: &FlushLimits,
) {
    let mut next = rx.blocking_recv();
    while let Some(first) = next.take() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let mut replies = Vec::with_capacity(jobs.len());
        let mut work = Vec::with_capacity(jobs.len());
        for job in jobs {
            match job {
                Job::Save {
                    principal,
                    conversation,
                    reply,
                } => {
                    replies.push(reply);
                    work.push((principal, conversation));
                }
                #[cfg(test)]
                Job::Settle(reply) => {
                    let _ = reply.send(());
                }
            }
        }
        if work.is_empty() {
            next = rx.blocking_recv();
            continue;
        }
        let n = work.len();
        // A panic mid-transaction rolled it back when the transaction dropped, so the
        // connection behind a poisoned lock is still usable; the group is answered an error.
        let results = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let mut written = written.lock().unwrap_or_else(|e| e.into_inner());
            let forced = limits.forced.load(Ordering::Relaxed);
            save_group(&mut conn, counters, &mut written, work, forced)
        }))
        .unwrap_or_else(|_| {
            let failed = || Err(HistoryError::Storage("the save panicked".into()));
            ((0..n).map(|_| failed()).collect(), Vec::new(), 0)
        });
        let (results, replaced, mut pending) = results;
        for (reply, result) in replies.into_iter().zip(results) {
            // The caller may have gone away; the save stands either way.
            let _ = reply.send(result);
        }
        // What the cache held before, freed once every save is answered.
        drop(replaced);
        // Idle: the full-text index takes what waits, a batch at a time, until a save comes.
        while pending >= limits.at.load(Ordering::Relaxed) && rx.is_empty() {
            match flush_step(conn, counters) {
                Ok(left) => pending = left,
                Err(e) => {
                    tracing::warn!(error = %e, "moving rows into the full-text index failed");
                    break;
                }
            }
        }
        next = rx.blocking_recv();
    }
}

/// Moves one batch of waiting rows into the full-text index in its own transaction; how many
/// still wait.
fn flush_step(conn: &Mutex<Connection>, counters: &Counters) -> Result<usize, HistoryError> {
    let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
    let started = std::time::Instant::now();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let moved = flush_index(&tx, FLUSH_BATCH)?;
    let left = pending_count(&tx)?;
    tx.commit().db()?;
    counters.flushed.fetch_add(moved as u64, Ordering::SeqCst);
    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    counters.flush_nanos.fetch_add(nanos, Ordering::SeqCst);
    Ok(left)
}

/// One answer per save, in order, what `written` held of the conversations saved, and how many
/// rows wait for the full-text index after the commit.
type Answers = (
    Vec<Result<SaveOutcome, HistoryError>>,
    Vec<Vec<Node>>,
    usize,
);

/// Runs `work` in one transaction, each save in a savepoint.
fn save_group(
    conn: &mut Connection,
    counters: &Counters,
    written: &mut Written,
    work: Vec<(String, StoredConversation)>,
    forced: usize,
) -> Answers {
    let n = work.len();
    let all = |e: &HistoryError| {
        let text = match e {
            HistoryError::Storage(m) => m.clone(),
            other => other.to_string(),
        };
        let errors = (0..n)
            .map(|_| Err(HistoryError::Storage(text.clone())))
            .collect();
        (errors, Vec::new(), 0)
    };
    let mut tx = match conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()
    {
        Ok(tx) => tx,
        Err(e) => return all(&e),
    };
    let mut results = Vec::with_capacity(n);
    // What the saves wrote, for `written` once committed: (principal, id, generation, messages).
    let mut remember = Vec::new();
    let mut changed = 0;
    let mut replaced = Vec::new();
    for (principal, conversation) in work {
        let id = conversation.id.clone();
        // A save that fails drops its savepoint, which rolls it back; the others stand.
        let attempt = tx.savepoint().db().and_then(|sp| {
            save_in(&sp, &counters.read, written, &principal, conversation)
                .and_then(|a| sp.commit().db().map(|()| a))
        });
        results.push(match attempt {
            Ok(Attempt::Saved {
                revision,
                generation,
                messages,
                changed: rows,
            }) => {
                // Forgotten now: should the commit fail, no entry claims rows never written.
                let before = written.forget(&principal, &id);
                match messages {
                    Stored::All(messages) => {
                        replaced.extend(before);
                        remember.push((principal, id, generation, messages));
                    }
                    // The cache held what the kept save started from: it becomes what the
                    // save left, without copying the kept messages.
                    Stored::Kept {
                        kept,
                        added,
                        cached,
                    } => match before {
                        Some(mut messages) if cached => {
                            replaced.push(messages.split_off(kept.min(messages.len())));
                            messages.extend(added);
                            remember.push((principal, id, generation, messages));
                        }
                        before => replaced.extend(before),
                    },
                }
                changed += rows;
                Ok(SaveOutcome::Saved { revision })
            }
            Ok(Attempt::Conflict(current)) => Ok(SaveOutcome::Conflict(current)),
            Err(e) => Err(e),
        });
    }
    // Saves that never stop leave the writer no idle time: past FLUSH_FORCED waiting rows,
    // the group moves them in (in a savepoint: should that fail, the saves still commit).
    let mut pending = pending_count(&tx).unwrap_or(0);
    if pending >= forced {
        let started = std::time::Instant::now();
        let moved = tx.savepoint().db().and_then(|sp| {
            let moved = flush_index(&sp, pending)?;
            sp.commit().db().map(|()| moved)
        });
        match moved {
            Ok(moved) => {
                pending -= moved.min(pending);
                counters.flushed.fetch_add(moved as u64, Ordering::SeqCst);
                let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                counters.flush_nanos.fetch_add(nanos, Ordering::SeqCst);
            }
            Err(e) => tracing::warn!(error = %e, "moving rows into the full-text index failed"),
        }
    }
    if let Err(e) = tx.commit().db() {
        for (principal, id, ..) in &remember {
            replaced.extend(written.forget(principal, id));
        }
        return (all(&e).0, replaced, 0);
    }
    for (principal, id, generation, messages) in remember {
        written.put(&principal, &id, generation, messages);
    }
    counters.written.fetch_add(changed, Ordering::SeqCst);
    counters.groups.fetch_add(1, Ordering::SeqCst);
    (results, replaced, pending)
}
