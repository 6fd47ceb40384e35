use std::time::Duration;

use futures_util::StreamExt;

use super::*;

fn alice() -> Principal {
    Principal::new("alice")
}

/// The events a follower sent, one string each (chunks may carry several).
async fn collect(s: impl Stream<Item = Bytes>) -> Vec<String> {
    let chunks: Vec<Bytes> = tokio::time::timeout(Duration::from_secs(5), s.collect())
        .await
        .expect("the stream ends");
    let all: String = chunks.iter().map(|b| String::from_utf8_lossy(b)).collect();
    all.split_inclusive("\n\n").map(str::to_owned).collect()
}

#[tokio::test]
async fn waiting_frames_go_out_as_one_chunk_of_at_most_64_kib() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let big = "x".repeat(20 << 10);
    for _ in 0..5 {
        w.append(&big);
    }
    let run = w.run().clone();
    w.finish(RunStatus::Finished);
    let chunks: Vec<Bytes> = run.follow(0).collect().await;
    let sizes: Vec<usize> = chunks.iter().map(Bytes::len).collect();
    // Three 20 KiB frames fit in 64 KiB, the fourth starts the next chunk.
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert!(sizes[0] <= CHUNK && sizes[0] > 3 * big.len(), "{sizes:?}");
    let whole: Vec<u8> = chunks.concat();
    assert_eq!(String::from_utf8(whole).unwrap().matches("\n\n").count(), 5);
}

/// While a run produces one frame per scheduler round, a follower's first chunk is what it
/// found (the time to first token is not held up), and what follows is gathered into one.
#[tokio::test]
async fn the_first_frame_goes_out_at_once_and_a_burst_after_it_as_one_chunk() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    w.append("1");
    let run = w.run().clone();
    let mut follower = std::pin::pin!(run.follow(0));
    let writer = tokio::spawn(async move {
        for n in 2..=10 {
            w.append(&n.to_string());
            tokio::task::yield_now().await;
        }
        w.finish(RunStatus::Finished);
    });
    let first = follower.next().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&first), "id: 1\ndata: 1\n\n");
    let rest = follower.next().await.unwrap();
    let want: String = (2..=10)
        .map(|n| format!("id: {n}\ndata: {n}\n\n"))
        .collect();
    assert_eq!(String::from_utf8_lossy(&rest), want);
    assert_eq!(follower.next().await, None);
    writer.await.unwrap();
}

/// A run reading an HTTP/1.1 upstream gets its chunks one at a time from the connection's own
/// task, so it adds a frame only every other scheduler round: the burst is still one chunk.
#[tokio::test]
async fn a_burst_with_a_round_between_its_frames_goes_out_as_one_chunk() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    w.append("1");
    let run = w.run().clone();
    let mut follower = std::pin::pin!(run.follow(0));
    let first = follower.next().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&first), "id: 1\ndata: 1\n\n");
    let writer = tokio::spawn(async move {
        for n in 2..=10 {
            w.append(&n.to_string());
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        }
        w.finish(RunStatus::Finished);
    });
    let rest: Vec<String> = follower
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .collect()
        .await;
    let want: String = (2..=10)
        .map(|n| format!("id: {n}\ndata: {n}\n\n"))
        .collect();
    assert_eq!(rest, [want]);
    writer.await.unwrap();
}

/// A run that wrote a preamble first (the AI SDK route's `start`) marks its first token: that
/// frame goes out at once instead of waiting for the burst after it.
#[tokio::test]
async fn a_frame_the_run_flushes_goes_out_without_waiting_for_the_burst() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    w.append("start");
    let run = w.run().clone();
    let mut follower = std::pin::pin!(run.follow(0));
    assert_eq!(follower.next().await.unwrap(), "id: 1\ndata: start\n\n");
    let writer = tokio::spawn(async move {
        w.append("token");
        w.flush_now();
        for n in 3..=10 {
            tokio::task::yield_now().await;
            w.append(&n.to_string());
        }
        w.finish(RunStatus::Finished);
    });
    assert_eq!(follower.next().await.unwrap(), "id: 2\ndata: token\n\n");
    let rest: Vec<Bytes> = follower.collect().await;
    let text = String::from_utf8(rest.concat()).unwrap();
    assert_eq!(text.matches("\n\n").count(), 8, "{text}");
    writer.await.unwrap();
}

/// A run waiting on its upstream adds nothing for many rounds: what it added goes out without
/// waiting for more.
#[tokio::test]
async fn frames_go_out_while_the_run_waits_on_its_upstream() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let run = w.run().clone();
    let mut follower = std::pin::pin!(run.follow(0));
    w.append("1");
    assert_eq!(follower.next().await.unwrap(), "id: 1\ndata: 1\n\n");
    w.append("2");
    w.append("3");
    let (upstream, waiting) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        let _ = waiting.await;
        w.finish(RunStatus::Finished);
    });
    let got = tokio::time::timeout(Duration::from_secs(5), follower.next()).await;
    assert_eq!(
        got.expect("sent while the run waits").unwrap(),
        "id: 2\ndata: 2\n\nid: 3\ndata: 3\n\n"
    );
    let _ = upstream.send(());
    assert_eq!(follower.next().await, None);
    writer.await.unwrap();
}

/// An ended run's frames are packed into one buffer: read from any id, the log is the same as
/// it was while the run ran, chunked the same way.
#[tokio::test]
async fn an_ended_run_reads_the_same_from_every_id_as_while_it_ran() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let run = w.run().clone();
    let sizes = [10, 30 << 10, 1, 40 << 10, 70 << 10, 5, 0];
    for (n, size) in sizes.iter().enumerate() {
        w.append(&n.to_string().repeat(*size));
    }
    let live: Vec<_> = (0..=sizes.len() as u64)
        .map(|after| tokio::spawn(run.follow(after).collect::<Vec<Bytes>>()))
        .collect();
    tokio::task::yield_now().await;
    w.finish(RunStatus::Finished);
    for (after, live) in live.into_iter().enumerate() {
        let live = live.await.unwrap();
        let ended: Vec<Bytes> = run.follow(after as u64).collect().await;
        assert_eq!(ended, live, "after {after}");
        let text = String::from_utf8(ended.concat()).unwrap();
        assert_eq!(text.matches("\n\n").count(), sizes.len() - after);
        if after < sizes.len() {
            assert!(
                text.starts_with(&format!("id: {}\n", after + 1)),
                "after {after}"
            );
        }
    }
}

#[tokio::test]
async fn a_follower_gets_every_event_with_its_id_and_ends_with_the_run() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let run = w.run().clone();
    w.append("{\"n\":1}");
    let follower = tokio::spawn(collect(run.follow(0)));
    tokio::task::yield_now().await;
    w.append("{\"n\":2}");
    w.append("[DONE]");
    w.finish(RunStatus::Finished);
    assert_eq!(
        follower.await.unwrap(),
        [
            "id: 1\ndata: {\"n\":1}\n\n",
            "id: 2\ndata: {\"n\":2}\n\n",
            "id: 3\ndata: [DONE]\n\n"
        ]
    );
    assert_eq!(run.status(), RunStatus::Finished);
}

#[tokio::test]
async fn a_follower_after_an_id_gets_only_what_came_later() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    for n in 1..=4 {
        w.append(&n.to_string());
    }
    let run = w.run().clone();
    w.finish(RunStatus::Finished);
    assert_eq!(
        collect(run.follow(2)).await,
        ["id: 3\ndata: 3\n\n", "id: 4\ndata: 4\n\n"]
    );
    assert!(collect(run.follow(9)).await.is_empty());
}

#[tokio::test]
async fn a_second_run_in_a_conversation_is_a_conflict_until_the_first_ends() {
    let runs = Runs::default();
    let first = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let err = runs
        .start(&alice(), Some("t1"), "m2", None)
        .err()
        .expect("409");
    assert!(matches!(err, Failure::Conflict(ref m) if m.contains(first.run().id())));
    // Another conversation, or another principal's conversation of the same id, is free.
    assert!(runs.start(&alice(), Some("t2"), "m3", None).is_ok());
    assert!(
        runs.start(&Principal::new("bob"), Some("t1"), "m4", None)
            .is_ok()
    );
    // Runs of no conversation conflict with nothing.
    let a = runs.start(&alice(), None, "m6", None).unwrap();
    let b = runs.start(&alice(), None, "m7", None).unwrap();
    assert_ne!(a.run().id(), b.run().id());
    assert_eq!(
        runs.active(&alice(), "t1").map(|r| r.id().to_owned()),
        Some(first.run().id().to_owned())
    );
    first.finish(RunStatus::Finished);
    assert!(runs.active(&alice(), "t1").is_none());
    assert!(runs.start(&alice(), Some("t1"), "m5", None).is_ok());
}

#[tokio::test]
async fn another_principal_cannot_find_a_run() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let id = w.run().id().to_owned();
    assert!(id.starts_with("run-") && id.len() == 36, "{id}");
    assert!(runs.get(&alice(), &id).is_some());
    assert!(runs.get(&Principal::new("bob"), &id).is_none());
    assert!(runs.active(&Principal::new("bob"), "t1").is_none());
}

#[tokio::test]
async fn a_stop_wakes_the_writer_and_a_finished_run_ignores_it() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let run = w.run().clone();
    let stopped = w.stopped();
    run.stop();
    tokio::time::timeout(Duration::from_secs(1), stopped)
        .await
        .expect("the writer learns of the stop");
    w.finish(RunStatus::Stopped);
    assert_eq!(
        run.settle(Duration::from_millis(10)).await,
        RunStatus::Stopped
    );

    let w = runs.start(&alice(), Some("t1"), "m2", None).unwrap();
    let run = w.run().clone();
    w.finish(RunStatus::Finished);
    run.stop();
    assert_eq!(run.status(), RunStatus::Finished);
}

#[tokio::test]
async fn settle_waits_for_the_end_and_gives_up_after_the_wait() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    let run = w.run().clone();
    assert_eq!(
        run.settle(Duration::from_millis(20)).await,
        RunStatus::Running
    );
    let ender = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        w.finish(RunStatus::Stopped);
    });
    assert_eq!(run.settle(Duration::from_secs(5)).await, RunStatus::Stopped);
    ender.await.unwrap();
}

#[tokio::test]
async fn a_writer_dropped_without_finishing_fails_the_run_and_frees_the_conversation() {
    let runs = Runs::default();
    let w = runs.start(&alice(), Some("t1"), "m1", None).unwrap();
    w.append("1");
    let run = w.run().clone();
    let follower = tokio::spawn(collect(run.follow(0)));
    tokio::task::yield_now().await;
    drop(w);
    assert_eq!(follower.await.unwrap(), ["id: 1\ndata: 1\n\n"]);
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(runs.active(&alice(), "t1").is_none());
}

#[tokio::test]
async fn finished_runs_are_dropped_oldest_first_past_the_byte_limit() {
    // Each run logs one 100-byte event (plus its framing) and counts its own cost besides;
    // the limit holds two.
    let runs = Runs::with_limits(RETENTION, 2 * (RUN_OVERHEAD + 130));
    let mut ids = Vec::new();
    for n in 0..3 {
        let w = runs
            .start(&alice(), Some(&format!("t{n}")), "m", None)
            .unwrap();
        w.append(&"x".repeat(100));
        ids.push(w.run().id().to_owned());
        w.finish(RunStatus::Finished);
    }
    assert!(
        runs.get(&alice(), &ids[0]).is_none(),
        "the oldest is dropped"
    );
    assert!(runs.get(&alice(), &ids[1]).is_some());
    assert!(runs.get(&alice(), &ids[2]).is_some());
}

#[tokio::test]
async fn runs_with_empty_logs_still_count_against_the_byte_limit() {
    // A thousand finished runs that logged nothing must not all stay: each costs memory of its
    // own (the run, its channels, its ids) whatever its log holds.
    let runs = Runs::with_limits(RETENTION, 10 * RUN_OVERHEAD);
    let mut ids = Vec::new();
    for n in 0..1000 {
        let w = runs
            .start(&alice(), Some(&format!("t{n}")), "m", None)
            .unwrap();
        ids.push(w.run().id().to_owned());
        w.finish(RunStatus::Finished);
    }
    let kept = ids
        .iter()
        .filter(|id| runs.get(&alice(), id).is_some())
        .count();
    assert_eq!(kept, 10, "the newest ten stay");
    assert!(runs.get(&alice(), &ids[999]).is_some());
}

#[tokio::test]
async fn finished_runs_are_dropped_after_the_retention() {
    let runs = Runs::with_limits(Duration::from_millis(30), RETAINED_BYTES);
    let w = runs.start(&alice(), Some("t1"), "m", None).unwrap();
    let old = w.run().id().to_owned();
    w.finish(RunStatus::Finished);
    // A running run is never dropped, however old.
    let running = runs.start(&alice(), Some("t2"), "m", None).unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert!(
        runs.get(&alice(), &old).is_some(),
        "dropped when the next run ends"
    );
    runs.start(&alice(), Some("t3"), "m", None)
        .unwrap()
        .finish(RunStatus::Finished);
    assert!(runs.get(&alice(), &old).is_none());
    assert!(runs.get(&alice(), running.run().id()).is_some());
}
