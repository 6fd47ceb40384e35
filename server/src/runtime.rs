//! The tokio runtime the `lmchatkit` app runs on: tokio's multi-thread scheduler, with the
//! global queue polled every [`GLOBAL_QUEUE_INTERVAL`] tasks.
//!
//! ```
//! let rt = lmchatkit::runtime::builder().build()?;
//! assert_eq!(rt.block_on(async { 1 + 1 }), 2);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A host that serves [`ChatService`](crate::ChatService) on a runtime of its own can start
//! from this builder, or set the same interval on its own builder.
//!
//! Decisions:
//! - **Tasks that wait in the global queue are served every 7 polls, not every 127.** Each
//!   worker runs tasks from a local queue of 256; when more tasks are ready than that, tokio
//!   moves half of them to the global queue, which a busy worker polls only every so many
//!   tasks (by default an interval it tunes to about 200 µs of polls, at most 127 tasks; the
//!   relay's polls are short, so it sits near 127). With 500 streams at once on 2 cores (50
//!   tokens each, no delay between them) the global queue held 444 tasks on average (at most
//!   671, sampled every 5 ms), and a stream whose tasks landed there waited: time to first
//!   token p50 7.6–8.0 ms but p90 51 ms and p99 90–92 ms, against the upstream's own p99 of
//!   31–36 ms. Polled every 7 tasks: p50 9.9–11.3 ms, p90 25–27 ms, p99 38.5–39.9 ms (the same
//!   wait, shared evenly). 7 came from a sweep of three interleaved rounds: every 4 tasks gave
//!   p99 27–38 ms at 0.27–0.39 ms of relay CPU a stream; every 7, 39–44 ms at 0.27–0.33; every
//!   11, 50–58 ms; every 15, 58–68 ms; tokio's default 67–90 ms at 0.23–0.28.
//! - **The price is paid when the relay is saturated.** In paired 5-second runs at 500 streams,
//!   where the relay is saturated, it spent 0.296–0.319 ms of CPU a stream against 0.266–0.268 (+15%) and
//!   served 11% fewer streams a second; at 50 streams with history the global queue stayed
//!   empty (0 in every sample) and a turn cost the same (0.226–0.237 ms against 0.228–0.236).
//!   The AI SDK route, which saves its thread on each request, pays more at 500: 0.69–0.83 ms
//!   a stream against 0.55–0.65 (+27%), for a p99 of 58–68 ms against 104–132. At 50 its
//!   saves keep a few tasks in the global queue (6 on average, woken by the SQLite writer's
//!   thread), and a stream cost 0.41–0.49 ms against 0.42–0.46. (The full bench, medians of
//!   three rounds, read 0.253 ms a stream at 500 both before and after; one draw each.)
//!   A chat relay overloaded should keep every user's first token prompt rather than finish a
//!   few more streams.

/// How many tasks a busy worker runs from its own queue between polls of the global queue.
pub const GLOBAL_QUEUE_INTERVAL: u32 = 7;

/// A multi-thread runtime builder with every driver on (I/O, time) and the global queue polled
/// every [`GLOBAL_QUEUE_INTERVAL`] tasks; tokio's defaults otherwise (a worker a core,
/// `TOKIO_WORKER_THREADS` honoured).
pub fn builder() -> tokio::runtime::Builder {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.enable_all().global_queue_interval(GLOBAL_QUEUE_INTERVAL);
    b
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::task::{Context, Poll};
    use std::time::Duration;

    /// Never finishes: counts each poll and asks to be polled again.
    struct Busy(Arc<AtomicU64>);

    impl Future for Busy {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// 1,000 always-ready tasks on one worker: 256 fit its local queue, the rest wait in the
    /// global queue, as the relay's tasks did at 500 streams. A task spawned from outside the
    /// runtime joins the global queue behind them.
    #[test]
    fn a_task_in_the_global_queue_runs_within_a_few_thousand_polls_when_the_local_queue_overflows()
    {
        let rt = super::builder()
            .worker_threads(1)
            .build()
            .expect("a runtime");
        let polls = Arc::new(AtomicU64::new(0));
        for _ in 0..1000 {
            rt.spawn(Busy(polls.clone()));
        }
        // Let the queues settle: every task polled many times over.
        while polls.load(Ordering::Relaxed) < 200_000 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (at_spawn, seen) = (polls.load(Ordering::Relaxed), polls.clone());
        rt.spawn(async move {
            let _ = tx.send(seen.load(Ordering::Relaxed));
        });
        let at_run = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the task ran");
        rt.shutdown_background();
        let waited = at_run.saturating_sub(at_spawn);
        // With the global queue polled every 7 tasks, about 750 tasks ahead × 7 = 5,000 polls;
        // with tokio's tuned default (127 for polls this short), about 95,000.
        assert!(
            waited < 30_000,
            "the task waited {waited} polls of other tasks"
        );
    }
}
