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

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use lmchatkit_protocol::StoredConversation;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::queries::{Attempt, Counters, Db, Stored, save_in};
use super::written::{Node, Written};
use crate::store::rows::storage;
use crate::store::{HistoryError, SaveOutcome};

/// The most saves committed together.
pub(super) const MAX_GROUP: usize = 64;

struct Job {
    principal: String,
    conversation: StoredConversation,
    reply: oneshot::Sender<Result<SaveOutcome, HistoryError>>,
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
    ) -> Result<Self, HistoryError> {
        let (jobs, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("lmchatkit-sqlite-writer".into())
            .spawn(move || writer(rx, &conn, &counters, &written))
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
            .send(Job {
                principal,
                conversation,
                reply,
            })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn writer(
    mut rx: mpsc::UnboundedReceiver<Job>,
    conn: &Mutex<Connection>,
    counters: &Counters,
    written: &Mutex<Written>,
) {
    while let Some(first) = rx.blocking_recv() {
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
            replies.push(job.reply);
            work.push((job.principal, job.conversation));
        }
        let n = work.len();
        // A panic mid-transaction rolled it back when the transaction dropped, so the
        // connection behind a poisoned lock is still usable; the group is answered an error.
        let results = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let mut written = written.lock().unwrap_or_else(|e| e.into_inner());
            save_group(&mut conn, counters, &mut written, work)
        }))
        .unwrap_or_else(|_| {
            let failed = || Err(HistoryError::Storage("the save panicked".into()));
            ((0..n).map(|_| failed()).collect(), Vec::new())
        });
        let (results, replaced) = results;
        for (reply, result) in replies.into_iter().zip(results) {
            // The caller may have gone away; the save stands either way.
            let _ = reply.send(result);
        }
        // What the cache held before, freed once every save is answered.
        drop(replaced);
    }
}

/// One answer per save, in order, and what `written` held of the conversations saved.
type Answers = (Vec<Result<SaveOutcome, HistoryError>>, Vec<Vec<Node>>);

/// Runs `work` in one transaction, each save in a savepoint.
fn save_group(
    conn: &mut Connection,
    counters: &Counters,
    written: &mut Written,
    work: Vec<(String, StoredConversation)>,
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
        (errors, Vec::new())
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
    if let Err(e) = tx.commit().db() {
        for (principal, id, ..) in &remember {
            replaced.extend(written.forget(principal, id));
        }
        return (all(&e).0, replaced);
    }
    for (principal, id, generation, messages) in remember {
        written.put(&principal, &id, generation, messages);
    }
    counters.written.fetch_add(changed, Ordering::SeqCst);
    counters.groups.fetch_add(1, Ordering::SeqCst);
    (results, replaced)
}
