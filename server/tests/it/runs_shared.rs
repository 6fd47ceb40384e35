//! Runs across two instances of the service sharing one engine — Redis (127.0.0.1:6379) or
//! PostgreSQL (127.0.0.1:5432, database `test`) — and one history store: a run started on A
//! followed from B after the client left A, a stop sent to B stopping A's upstream through
//! the engine's notice (not the once-a-second lease refresh), one running run per conversation across instances, and a run whose instance
//! vanished marked failed by B with its partial reply saved. Every test runs on each engine
//! (`…::on_redis`, `…::on_postgres`).
//!
//! Each test uses a key prefix or a schema of its own and removes it at the end. Without the
//! engine the tests fail when `CI` is set and skip (saying so) otherwise.

use crate::shared_engines;
use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::protocol::*;
use lmchatkit::store::{HistoryStore, MemoryStore};
use lmchatkit::{
    ChatService, CompleteRequest, EventStream, Host, HostError, Principal, RequestContext,
    async_trait,
};
use serde_json::{Value, json};
use shared_engines::Spec;
use support::stream_body::{as_user, events, open, text_of};
use support::*;
use tokio::sync::mpsc;

const CHAT: &str = "/chat/api/aisdk/chat";

/// Notes when it was dropped: the host's stream was dropped (the upstream request cut).
struct DropFlag(Arc<Mutex<Option<Instant>>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.lock().unwrap().get_or_insert_with(Instant::now);
    }
}

/// A host whose every completion streams what the test sends on `feed`, shared by both
/// instances (the one running the turn takes the feed).
#[derive(Clone, Default)]
struct FedHost {
    feeds: Arc<Mutex<Vec<mpsc::UnboundedReceiver<Event>>>>,
    dropped_at: Arc<Mutex<Option<Instant>>>,
}

impl FedHost {
    fn next_feed(&self) -> mpsc::UnboundedSender<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.feeds.lock().unwrap().push(rx);
        tx
    }

    fn dropped_at(&self) -> Option<Instant> {
        *self.dropped_at.lock().unwrap()
    }
}

#[async_trait]
impl Host for FedHost {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("m")])
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        let rx = self.feeds.lock().unwrap().remove(0);
        let flag = DropFlag(self.dropped_at.clone());
        Box::pin(futures_util::stream::unfold(
            (rx, flag),
            |(mut rx, flag)| async move { rx.recv().await.map(|ev| (ev, (rx, flag))) },
        ))
    }
}

on_each_engine!(
    a_run_started_on_a_is_followed_from_b_with_nothing_lost_or_repeated,
    another_principal_can_neither_follow_nor_stop_a_run_through_the_other_instance,
    a_stop_sent_to_b_drops_the_upstream_on_a_by_its_notice_not_the_lease_refresh,
    two_instances_starting_a_run_in_one_conversation_at_once_get_one_409,
    the_next_message_sent_the_moment_a_reply_ended_is_taken_by_either_instance,
    a_run_whose_instance_vanished_is_marked_failed_by_b_with_its_partial_reply_saved,
);

/// One instance: its own service and engine connection, the shared host, store and engine.
async fn instance(host: &FedHost, store: &Arc<MemoryStore>, spec: &Spec) -> ChatService {
    let config = lmchatkit::Config::builder(host.clone())
        .history_arc(store.clone() as Arc<dyn HistoryStore>)
        .shared_engine(spec.connect().await)
        .build()
        .unwrap();
    ChatService::new(config)
}

fn ask(thread: &str) -> Request<Full<Bytes>> {
    post(
        CHAT,
        &json!({"id": thread, "trigger": "submit-message", "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
    )
}

async fn stored_as(
    store: &MemoryStore,
    id: &str,
    ok: impl Fn(&StoredConversation) -> bool,
) -> StoredConversation {
    for _ in 0..1000 {
        if let Some(c) = store.get(&Principal::anonymous(), id).await.unwrap()
            && ok(&c)
        {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("conversation {id} never reached the expected state");
}

async fn a_run_started_on_a_is_followed_from_b_with_nothing_lost_or_repeated(spec: &Spec) {
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let a = instance(&host, &store, spec).await;
    let b = instance(&host, &store, spec).await;

    let feed = host.next_feed();
    let mut on_a = open(&a, ask("t1")).await;
    assert_eq!(on_a.status, 200);
    let run = on_a.run_id();
    feed.send(Event::delta("a")).unwrap();
    feed.send(Event::delta("b")).unwrap();
    on_a.until("\"b\"").await;
    let got = events(&on_a.seen);
    let last = got.last().unwrap().0;
    drop(on_a); // the client's connection to A is cut

    // B knows the conversation's running run and names it.
    let conv = send(&b, get("/chat/api/conversations/t1")).await;
    assert_eq!(conv.status, 200, "{}", conv.text());
    assert_eq!(conv.headers[RUN_ID_HEADER].to_str().unwrap(), run);

    let url = format!("/chat/api/runs/{run}/stream");
    let mut req = get(&url);
    req.headers_mut()
        .insert("last-event-id", last.to_string().parse().unwrap());
    let mut on_b = open(&b, req).await;
    assert_eq!(on_b.status, 200);
    // The AI SDK resume on B finds the thread's running run too.
    let resumed = open(&b, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(resumed.status, 200);

    let sent = Instant::now();
    feed.send(Event::delta("c")).unwrap();
    on_b.until("\"c\"").await;
    eprintln!(
        "a delta reached B's follower {:?} after A's host sent it",
        sent.elapsed()
    );
    feed.send(Event::delta("d")).unwrap();
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let rest = events(&on_b.rest().await);

    let mut joined = got.clone();
    joined.extend(rest);
    let ids: Vec<u64> = joined.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "every event once, in order");
    assert_eq!(joined.last().unwrap().1, "[DONE]");
    // The whole log read on A (memory) and on B (the engine) is the same, byte for byte.
    let whole_a = send(&a, get(&url)).await.text();
    let whole_b = send(&b, get(&url)).await.text();
    assert_eq!(events(&whole_a), joined);
    assert_eq!(whole_a, whole_b);
    assert_eq!(text_of(&whole_b), "abcd");
    let resumed = resumed.rest().await;
    assert_eq!(
        text_of(&resumed),
        "abcd",
        "the AI SDK resume replays from the start"
    );

    // Ended: no running run anywhere.
    let none = send(&b, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(none.status, 204);
    let conv = send(&b, get("/chat/api/conversations/t1")).await;
    assert!(conv.headers.get(RUN_ID_HEADER).is_none());
}

async fn another_principal_can_neither_follow_nor_stop_a_run_through_the_other_instance(
    spec: &Spec,
) {
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let a = instance(&host, &store, spec).await;
    let b = instance(&host, &store, spec).await;

    let feed = host.next_feed();
    let mut on_a = open(&a, as_user(ask("t1"), "alice")).await;
    feed.send(Event::delta("alice's words")).unwrap();
    on_a.until("alice's words").await;
    let run = on_a.run_id();
    let stream = format!("/chat/api/runs/{run}/stream");
    let stop = format!("/chat/api/runs/{run}/stop");

    let mallory_stream = send(&b, as_user(get(&stream), "mallory")).await;
    assert_eq!(mallory_stream.status, 404, "{}", mallory_stream.text());
    let mallory_stop = send(&b, as_user(post(&stop, &json!({})), "mallory")).await;
    assert_eq!(mallory_stop.status, 404);
    let mallory_resume = send(
        &b,
        as_user(get("/chat/api/aisdk/chat/t1/stream"), "mallory"),
    )
    .await;
    assert_eq!(mallory_resume.status, 204, "mallory's own t1 runs nothing");
    assert!(host.dropped_at().is_none(), "the run goes on");

    // Alice herself reaches it through B.
    let on_b = open(&b, as_user(get(&stream), "alice")).await;
    assert_eq!(on_b.status, 200);
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    assert!(on_b.rest().await.contains("alice's words"));
}

async fn a_stop_sent_to_b_drops_the_upstream_on_a_by_its_notice_not_the_lease_refresh(spec: &Spec) {
    // Timed: no browser test runs meanwhile (support/quiet.rs).
    let _quiet = support::quiet::exclusive().await;
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let a = instance(&host, &store, spec).await;
    let b = instance(&host, &store, spec).await;

    // The notice is what is tested: without it a stop still arrives, with the lease refresh
    // (once a second), at a uniformly random 0 to 1,000 ms. Every one of eight stops landing
    // within 400 ms would then be a 0.4^8 = 0.07% chance, while a notice takes a few ms, and
    // 116 ms at worst seen on a machine loaded by a whole CI run (this bound is no latency
    // target: the bench measures speed).
    let mut worst = Duration::ZERO;
    for n in 0..8 {
        let thread = format!("t{n}");
        let feed = host.next_feed();
        *host.dropped_at.lock().unwrap() = None;
        let mut on_a = open(&a, ask(&thread)).await;
        feed.send(Event::delta("par")).unwrap();
        on_a.until("par").await;
        let run = on_a.run_id();

        let asked = Instant::now();
        let stop = send(&b, post(&format!("/chat/api/runs/{run}/stop"), &json!({}))).await;
        assert_eq!(stop.status, 200, "{}", stop.text());
        assert_eq!(stop.json(), json!({"id": run, "status": "stopped"}));
        let dropped = host.dropped_at().expect("the upstream was dropped");
        let took = dropped.duration_since(asked);
        eprintln!("stop through B: A's upstream dropped after {took:?}");
        worst = worst.max(took);

        let body = on_a.rest().await;
        assert!(body.contains("\"abort\""), "{body}");
        let c = stored_as(&store, &thread, |c| c.messages.len() == 2).await;
        assert_eq!(c.messages[1].content.joined_text(""), "par");
    }
    assert!(worst < Duration::from_millis(400), "worst {worst:?}");
}

async fn two_instances_starting_a_run_in_one_conversation_at_once_get_one_409(spec: &Spec) {
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let a = instance(&host, &store, spec).await;
    let b = instance(&host, &store, spec).await;

    let feed = host.next_feed();
    let (on_a, on_b) = tokio::join!(open(&a, ask("t1")), open(&b, ask("t1")));
    let mut codes = [on_a.status.as_u16(), on_b.status.as_u16()];
    codes.sort();
    assert_eq!(codes, [200, 409]);
    let (winner, loser) = if on_a.status == 200 {
        (on_a, on_b)
    } else {
        (on_b, on_a)
    };
    let run = winner.run_id();
    let refused = loser.rest().await;
    assert!(
        refused.contains(&run),
        "the 409 names the running run: {refused}"
    );

    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    winner.rest().await;
    // Once it ended, either instance takes the next message.
    let _feed = host.next_feed();
    let mut next = None;
    for _ in 0..100 {
        let res = open(&b, ask("t1")).await;
        if res.status == 200 {
            next = Some(res);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(next.is_some(), "the conversation was freed");
}

async fn the_next_message_sent_the_moment_a_reply_ended_is_taken_by_either_instance(spec: &Spec) {
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let a = instance(&host, &store, spec).await;
    let b = instance(&host, &store, spec).await;
    for round in 0..20 {
        let (first, next) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let feed = host.next_feed();
        let on_first = open(first, ask("t1")).await;
        assert_eq!(on_first.status, 200, "round {round}");
        feed.send(Event::delta("x")).unwrap();
        feed.send(Event::done(FinishReason::Stop, None)).unwrap();
        on_first.rest().await;
        // At once, no retry: the end a client sees means the conversation is free everywhere.
        let feed = host.next_feed();
        let on_next = open(next, ask("t1")).await;
        assert_eq!(
            on_next.status, 200,
            "round {round}: the next message was refused"
        );
        feed.send(Event::done(FinishReason::Stop, None)).unwrap();
        on_next.rest().await;
    }
}

async fn a_run_whose_instance_vanished_is_marked_failed_by_b_with_its_partial_reply_saved(
    spec: &Spec,
) {
    let (host, store) = (FedHost::default(), Arc::new(MemoryStore::new()));
    let b = instance(&host, &store, spec).await;

    // Instance A lives on a runtime of its own, shut down mid-reply like a killed process.
    let rt_a = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let feed = host.next_feed();
    let (h, s, p) = (host.clone(), store.clone(), spec.clone());
    let feeding = feed.clone();
    let run = rt_a
        .spawn(async move {
            let a = instance(&h, &s, &p).await;
            let mut on_a = open(&a, ask("t1")).await;
            feeding.send(Event::delta("Hel")).unwrap();
            on_a.until("Hel").await;
            // A second later, the next text is saved with the reply so far.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            feeding.send(Event::delta("lo")).unwrap();
            on_a.until("\"lo\"").await;
            let run = on_a.run_id();
            // The client keeps reading, as a real one would, until A vanishes.
            tokio::spawn(async move {
                let _a = a;
                on_a.rest().await
            });
            run
        })
        .await
        .unwrap();
    stored_as(&store, "t1", |c| {
        c.messages.len() == 2 && c.messages[1].content.joined_text("") == "Hello"
    })
    .await;
    // A follower on B has read what A's tabs saw when A vanishes.
    let url = format!("/chat/api/runs/{run}/stream");
    let mut on_b = open(&b, get(&url)).await;
    on_b.until("\"lo\"").await;
    rt_a.shutdown_background();
    let vanished = Instant::now();

    // It ends once A's lease is gone: the run failed, said in the protocol.
    let body = on_b.rest().await;
    let waited = vanished.elapsed();
    eprintln!("B marked the run failed {waited:?} after A vanished");
    let chunks: Vec<(u64, String)> = events(&body);
    let ids: Vec<u64> = chunks.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "{body}");
    assert_eq!(text_of(&body), "Hello");
    let n = chunks.len();
    let error: Value = serde_json::from_str(&chunks[n - 2].1).unwrap();
    assert_eq!(error["type"], "error", "{body}");
    assert_eq!(chunks[n - 1].1, "[DONE]");
    assert!(waited < Duration::from_secs(8), "{waited:?}");

    let stop = send(&b, post(&format!("/chat/api/runs/{run}/stop"), &json!({}))).await;
    assert_eq!(stop.json()["status"], "failed");
    // The conversation is free again, and its partial reply is kept, marked as cut off (B
    // marks it in the background once it found the run lost).
    let mut conv = send(&b, get("/chat/api/conversations/t1")).await;
    for _ in 0..100 {
        if conv.json()["messages"][1]["failed"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        conv = send(&b, get("/chat/api/conversations/t1")).await;
    }
    assert!(conv.headers.get(RUN_ID_HEADER).is_none());
    assert_eq!(conv.json()["messages"][1]["content"], "Hello");
    assert!(
        conv.json()["messages"][1]["failed"].is_string(),
        "the saved reply says its run failed: {}",
        conv.text()
    );
    assert!(conv.json().get("branches").is_none(), "marked in place");
    // An AI SDK reader sees its text part closed and the metadata saying why.
    let thread = send(&b, get("/chat/api/aisdk/threads/t1")).await.json();
    let reply = &thread["messages"][1];
    assert!(reply["metadata"]["failed"].is_string(), "{thread}");
    let text = reply["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "text")
        .cloned()
        .unwrap();
    assert_eq!(
        (text["text"].as_str(), text["state"].as_str()),
        (Some("Hello"), Some("done"))
    );
    let none = send(&b, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(none.status, 204);
    drop(feed);
}
