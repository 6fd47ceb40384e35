//! Runs through the service, with a host whose stream the test feeds token by token: a reply
//! that outlives its client, resume through the AI SDK route and through
//! `/api/runs/{id}/stream` with `Last-Event-ID`, stop, one run per thread, and ownership.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use http::Request;
use http_body_util::Full;
use lmchatkit::protocol::*;
use lmchatkit::store::{HistoryStore, MemoryStore};
use lmchatkit::{
    ChatService, CompleteRequest, EventStream, Host, HostError, Principal, RequestContext,
    async_trait,
};
use serde_json::{Value, json};
use support::stream_body::{Open, as_user, events, open, text_of};
use support::*;
use tokio::sync::mpsc;
use tower::ServiceExt;

const CHAT: &str = "/chat/api/aisdk/chat";

/// Sets its flag when dropped: the host's stream was dropped (the upstream request cut).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A host whose every completion streams what the test sends on `feed`.
#[derive(Clone, Default)]
struct FedHost {
    feeds: Arc<Mutex<Vec<mpsc::UnboundedReceiver<Event>>>>,
    dropped: Arc<AtomicBool>,
}

impl FedHost {
    /// The sender for the next completion.
    fn next_feed(&self) -> mpsc::UnboundedSender<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.feeds.lock().unwrap().push(rx);
        tx
    }
}

#[async_trait]
impl Host for FedHost {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("m")])
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        let rx = self.feeds.lock().unwrap().remove(0);
        let flag = DropFlag(self.dropped.clone());
        Box::pin(futures_util::stream::unfold(
            (rx, flag),
            |(mut rx, flag)| async move { rx.recv().await.map(|ev| (ev, (rx, flag))) },
        ))
    }
}

struct Setup {
    svc: ChatService,
    host: FedHost,
    store: Arc<MemoryStore>,
}

fn setup() -> Setup {
    let host = FedHost::default();
    let store = Arc::new(MemoryStore::new());
    let config = lmchatkit::Config::builder(host.clone())
        .history_arc(store.clone() as Arc<dyn HistoryStore>)
        .build()
        .unwrap();
    Setup {
        svc: ChatService::new(config),
        host,
        store,
    }
}

fn ask(thread: &str) -> Request<Full<Bytes>> {
    post(
        CHAT,
        &json!({"id": thread, "trigger": "submit-message", "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
    )
}

/// Waits until conversation `id` satisfies `ok` (the run saves off the reply's path).
async fn stored_as(
    s: &Setup,
    id: &str,
    ok: impl Fn(&StoredConversation) -> bool,
) -> StoredConversation {
    for _ in 0..500 {
        if let Some(c) = s.store.get(&Principal::anonymous(), id).await.unwrap()
            && ok(&c)
        {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("conversation {id} never reached the expected state");
}

#[tokio::test]
async fn a_reply_goes_on_and_is_saved_after_its_client_leaves() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut client = open(&s.svc, ask("t1")).await;
    assert_eq!(client.status, 200);
    feed.send(Event::delta("Hel")).unwrap();
    client.until("Hel").await;
    drop(client);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !s.host.dropped.load(Ordering::SeqCst),
        "the upstream stream was dropped when the client left"
    );
    feed.send(Event::delta("lo")).unwrap();
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let c = stored_as(&s, "t1", |c| {
        c.messages.len() == 2 && c.messages[1].content.joined_text("") == "Hello"
    })
    .await;
    assert_eq!(c.messages[0].content.joined_text(""), "hi");
}

#[tokio::test]
async fn a_reloaded_ai_sdk_client_resumes_the_running_reply_from_its_start() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut first = open(&s.svc, ask("t1")).await;
    feed.send(Event::delta("Hel")).unwrap();
    first.until("Hel").await;
    let run_id = first.run_id();
    drop(first);

    // The reloaded page reads the thread without the reply in progress…
    let thread = send(&s.svc, get("/chat/api/aisdk/threads/t1")).await.json();
    let roles: Vec<&str> = thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "{thread}");
    // …and resumes it: the whole reply from its `start`, then what comes next.
    let mut resumed = open(&s.svc, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(resumed.status, 200);
    assert_eq!(resumed.headers["x-vercel-ai-ui-message-stream"], "v1");
    resumed.until("Hel").await;
    feed.send(Event::delta("lo")).unwrap();
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let body = resumed.rest().await;
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let chunks: Vec<Value> = events(&body)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str(d).ok())
        .collect();
    assert_eq!(chunks[0]["type"], "start");
    assert_eq!(chunks[0]["messageMetadata"]["runId"], run_id.as_str());
    assert_eq!(text_of(&body), "Hello");

    // Once it has ended, there is nothing to resume and the thread has the whole reply.
    let after = send(&s.svc, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(after.status, 204);
    let thread = send(&s.svc, get("/chat/api/aisdk/threads/t1")).await.json();
    assert_eq!(thread["messages"][1]["metadata"]["runId"], run_id.as_str());
}

#[tokio::test]
async fn the_run_stream_resumes_after_last_event_id_with_nothing_lost_or_repeated() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut first = open(&s.svc, ask("t1")).await;
    let run = first.run_id();
    feed.send(Event::delta("a")).unwrap();
    feed.send(Event::delta("b")).unwrap();
    first.until("\"b\"").await;
    let got = events(&first.seen);
    let last = got.last().unwrap().0;
    drop(first);

    let url = format!("/chat/api/runs/{run}/stream");
    let mut req = get(&url);
    req.headers_mut()
        .insert("last-event-id", last.to_string().parse().unwrap());
    let mut second = open(&s.svc, req).await;
    assert_eq!(second.status, 200);
    feed.send(Event::delta("c")).unwrap();
    second.until("\"c\"").await;
    let second_events = events(&second.seen);
    drop(second);
    // A third reconnect, by query this time, picks up after the second's last event.
    let mid = second_events.last().unwrap().0;
    let third = open(&s.svc, get(&format!("{url}?after={mid}"))).await;
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let third_events = events(&third.rest().await);

    let mut joined = got.clone();
    joined.extend(second_events);
    joined.extend(third_events);
    let ids: Vec<u64> = joined.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "every event once, in order");
    let whole = events(&send(&s.svc, get(&url)).await.text());
    assert_eq!(joined, whole);
    assert_eq!(whole.last().unwrap().1, "[DONE]");
}

#[tokio::test]
async fn a_stop_cuts_the_upstream_and_keeps_the_partial_reply_marked_stopped() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut client = open(&s.svc, ask("t1")).await;
    feed.send(Event::delta("par")).unwrap();
    client.until("par").await;
    let run = client.run_id();

    let asked = Instant::now();
    let stop = send(
        &s.svc,
        post(&format!("/chat/api/runs/{run}/stop"), &json!({})),
    )
    .await;
    let answered = asked.elapsed();
    assert_eq!(stop.status, 200, "{}", stop.text());
    assert_eq!(stop.json(), json!({"id": run, "status": "stopped"}));
    assert!(
        s.host.dropped.load(Ordering::SeqCst),
        "the upstream stream is dropped before the stop is answered ({answered:?})"
    );
    // The client's stream ends with the stopped metadata and `abort`.
    let body = client.rest().await;
    let chunks: Vec<Value> = events(&body)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str(d).ok())
        .collect();
    let n = chunks.len();
    assert_eq!(chunks[n - 2]["messageMetadata"]["stopped"], true, "{body}");
    assert_eq!(chunks[n - 1]["type"], "abort", "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"));
    // The partial reply is saved, marked stopped.
    let c = stored_as(&s, "t1", |c| c.messages.len() == 2).await;
    assert_eq!(c.messages[1].content.joined_text(""), "par");
    let thread = send(&s.svc, get("/chat/api/aisdk/threads/t1")).await.json();
    assert_eq!(thread["messages"][1]["metadata"]["stopped"], true);
    // Stopping it again answers the run as it is.
    let again = send(
        &s.svc,
        post(&format!("/chat/api/runs/{run}/stop"), &json!({})),
    )
    .await;
    assert_eq!(again.json()["status"], "stopped");
}

#[tokio::test]
async fn a_second_message_while_a_reply_runs_is_a_409_naming_the_run() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut first = open(&s.svc, ask("t1")).await;
    first.until("start").await;
    let second = send(&s.svc, ask("t1")).await;
    assert_eq!(second.status, 409, "{}", second.text());
    assert!(
        second.error().contains(&first.run_id()),
        "{}",
        second.error()
    );
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    first.rest().await;
    // Once it ended, the thread takes the next message.
    let _feed = s.host.next_feed();
    let third = open(&s.svc, ask("t1")).await;
    assert_eq!(third.status, 200);
}

#[tokio::test]
async fn another_principal_can_neither_follow_nor_stop_a_run_and_bad_ids_are_refused() {
    let s = setup();
    let feed = s.host.next_feed();
    let mut first = open(&s.svc, as_user(ask("t1"), "alice")).await;
    first.until("start").await;
    let run = first.run_id();
    let stream = format!("/chat/api/runs/{run}/stream");
    let stop = format!("/chat/api/runs/{run}/stop");
    let mallory_stream = send(&s.svc, as_user(get(&stream), "mallory")).await;
    assert_eq!(mallory_stream.status, 404);
    let mallory_stop = send(&s.svc, as_user(post(&stop, &json!({})), "mallory")).await;
    assert_eq!(mallory_stop.status, 404);
    let mallory_resume = send(
        &s.svc,
        as_user(get("/chat/api/aisdk/chat/t1/stream"), "mallory"),
    )
    .await;
    assert_eq!(mallory_resume.status, 204, "mallory's own t1 runs nothing");
    assert!(!s.host.dropped.load(Ordering::SeqCst), "still running");

    let unknown = send(&s.svc, as_user(get("/chat/api/runs/run-0/stream"), "alice")).await;
    assert_eq!(unknown.status, 404);
    let bogus = send(
        &s.svc,
        as_user(get(&format!("/chat/api/runs/{run}/bogus")), "alice"),
    )
    .await;
    assert_eq!(bogus.status, 404);
    let mut bad = as_user(get(&stream), "alice");
    bad.headers_mut()
        .insert("last-event-id", "x1".parse().unwrap());
    let bad = send(&s.svc, bad).await;
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains("x1"), "{}", bad.error());

    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let body = first.rest().await;
    assert_eq!(events(&body).last().unwrap().1, "[DONE]");
}

#[tokio::test]
async fn runs_are_followed_by_many_tabs_at_once() {
    let s = setup();
    let feed = s.host.next_feed();
    let first = open(&s.svc, ask("t1")).await;
    let url = format!("/chat/api/runs/{}/stream", first.run_id());
    let tabs: Vec<Open> =
        futures_util::future::join_all((0..3).map(|_| open(&s.svc, get(&url)))).await;
    for word in ["one ", "two ", "three"] {
        feed.send(Event::delta(word)).unwrap();
    }
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let first = first.rest().await;
    assert_eq!(text_of(&first), "one two three");
    let bodies = futures_util::stream::iter(tabs)
        .then(Open::rest)
        .collect::<Vec<_>>()
        .await;
    for body in bodies {
        assert_eq!(events(&body), events(&first));
    }
}

fn native(conversation: &str) -> Request<Full<Bytes>> {
    post(
        "/chat/api/chat",
        &json!({"model": "m", "conversation_id": conversation, "reply_id": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "hi"}]}),
    )
}

/// The tab's own save of a conversation: an info card (UI-only, never sent to the model) and
/// the user's message.
async fn tab_saved(s: &Setup) -> u64 {
    let c = json!({"id": "c1", "title": "hi", "revision": 0, "messages": [
        {"id": "card", "role": "assistant", "content": "", "info": {"kind": "help"}},
        {"id": "u1", "role": "user", "content": "hi"}]});
    let r = send(&s.svc, put("/chat/api/conversations/c1", &c)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["revision"].as_u64().unwrap()
}

#[tokio::test]
async fn a_native_turn_saves_its_reply_in_place_and_names_the_revision_last() {
    let s = setup();
    let base = tab_saved(&s).await;
    let feed = s.host.next_feed();
    let client = open(&s.svc, native("c1")).await;
    assert_eq!(client.status, 200);
    assert!(client.run_id().starts_with("run-"));
    feed.send(Event::delta("Hel")).unwrap();
    feed.send(Event::delta("lo")).unwrap();
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    let body = client.rest().await;
    let all = events(&body);
    let types: Vec<Value> = all
        .iter()
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap()["type"].clone())
        .collect();
    assert_eq!(
        types,
        [
            json!("delta"),
            json!("delta"),
            json!("done"),
            json!("saved")
        ]
    );
    let revision = serde_json::from_str::<Value>(&all[3].1).unwrap()["revision"]
        .as_u64()
        .unwrap();
    assert_eq!(revision, base + 1);

    let c = s
        .store
        .get(&Principal::anonymous(), "c1")
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = c.messages.iter().filter_map(|m| m.id.as_deref()).collect();
    assert_eq!(
        ids,
        ["card", "u1", "r1"],
        "the reply in place, the card kept"
    );
    assert_eq!(c.messages[2].content.joined_text(""), "Hello");
    assert!(!c.messages[2].stopped);

    // The tab's own save after the stream, based on that revision, is no conflict.
    let mut mine = serde_json::to_value(&c).unwrap();
    mine["revision"] = json!(revision);
    let r = send(&s.svc, put("/chat/api/conversations/c1", &mine)).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn a_native_reply_outlives_its_tab_and_a_stop_saves_it_marked_stopped() {
    let s = setup();
    tab_saved(&s).await;
    let feed = s.host.next_feed();
    let mut client = open(&s.svc, native("c1")).await;
    feed.send(Event::delta("par")).unwrap();
    client.until("par").await;
    let run = client.run_id();
    drop(client);
    // A reloaded tab learns of the run from the conversation.
    let opened = send(&s.svc, get("/chat/api/conversations/c1")).await;
    assert_eq!(opened.headers[RUN_ID_HEADER], run.as_str());
    feed.send(Event::delta("tial")).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !s.host.dropped.load(Ordering::SeqCst),
        "the tab leaving stops nothing"
    );

    // A second tab follows it from the start, then stops it.
    let mut other = open(&s.svc, get(&format!("/chat/api/runs/{run}/stream"))).await;
    assert_eq!(
        other.headers[RUN_MESSAGE_HEADER], "r1",
        "the stream names the message the run writes"
    );
    other.until("tial").await;
    let stop = send(
        &s.svc,
        post(&format!("/chat/api/runs/{run}/stop"), &json!({})),
    )
    .await;
    assert_eq!(stop.json()["status"], "stopped");
    assert!(s.host.dropped.load(Ordering::SeqCst));
    let body = other.rest().await;
    let last: Vec<Value> = events(&body)
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let n = last.len();
    assert_eq!(
        last[n - 2],
        json!({"type": "done", "finish_reason": "stopped"})
    );
    assert_eq!(last[n - 1]["type"], "saved");
    let c = stored_as(&s, "c1", |c| c.messages.len() == 3).await;
    assert_eq!(c.messages[2].content.joined_text(""), "partial");
    assert!(c.messages[2].stopped);
    let opened = send(&s.svc, get("/chat/api/conversations/c1")).await;
    assert!(opened.headers.get(RUN_ID_HEADER).is_none(), "no run now");
}

#[tokio::test]
async fn a_native_turn_without_a_conversation_saves_nothing_and_conflicts_with_nothing() {
    let s = setup();
    let feeds: Vec<_> = (0..2).map(|_| s.host.next_feed()).collect();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let a = open(&s.svc, post("/chat/api/chat", &body)).await;
    let b = open(&s.svc, post("/chat/api/chat", &body)).await;
    assert_eq!((a.status.as_u16(), b.status.as_u16()), (200, 200));
    for f in &feeds {
        f.send(Event::delta("x")).unwrap();
        f.send(Event::done(FinishReason::Stop, None)).unwrap();
    }
    for body in [a.rest().await, b.rest().await] {
        assert!(!body.contains("\"saved\""), "{body}");
    }
    assert!(
        s.store
            .list(&Principal::anonymous())
            .await
            .unwrap()
            .is_empty()
    );
    // A bad conversation id is a 400 before anything runs.
    let bad = json!({"model": "m", "conversation_id": "a/b",
                     "messages": [{"role": "user", "content": "hi"}]});
    let r = send(&s.svc, post("/chat/api/chat", &bad)).await;
    assert_eq!(r.status, 400, "{}", r.text());
}

/// The first chunk of `body` if it is there without waiting.
fn chunk_now(body: &mut lmchatkit::api::ResponseBody) -> Option<String> {
    use futures_util::FutureExt;
    use http_body_util::BodyExt;
    let frame = body.frame().now_or_never()??.ok()?;
    Some(String::from_utf8_lossy(&frame.into_data().ok()?).into_owned())
}

#[tokio::test]
async fn a_first_token_already_there_comes_with_the_response_itself() {
    let s = setup();
    // Native route: the model has answered by the time the run reads it.
    let feed = s.host.next_feed();
    feed.send(Event::delta("Hel")).unwrap();
    let res = s.svc.clone().oneshot(native("c1")).await.unwrap();
    let first = chunk_now(&mut res.into_body());
    assert!(
        first.as_deref().is_some_and(|c| c.contains("\"Hel\"")),
        "the response came before its first token: {first:?}"
    );
    // AI SDK route: its `start` and the first token together.
    let feed = s.host.next_feed();
    feed.send(Event::delta("Hi")).unwrap();
    let res = s.svc.clone().oneshot(ask("t1")).await.unwrap();
    let first = chunk_now(&mut res.into_body()).unwrap_or_default();
    assert!(
        first.contains("\"start\"") && first.contains("\"delta\":\"Hi\""),
        "{first:?}"
    );
}

#[tokio::test]
async fn a_slow_model_gets_the_response_head_first_and_a_request_dropped_meanwhile_still_runs() {
    let s = setup();
    // A model that has not answered: the head (with the run's id) comes anyway, soon.
    let feed = s.host.next_feed();
    let asked = Instant::now();
    let mut client = open(&s.svc, ask("t1")).await;
    assert_eq!(client.status, 200);
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert!(client.run_id().starts_with("run-"));
    feed.send(Event::delta("late")).unwrap();
    client.until("late").await;
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    drop(client);

    // A request dropped while its run waits for the first token inside it: the run goes on
    // and its reply is saved.
    let feed = s.host.next_feed();
    let call = s.svc.clone().oneshot(ask("t2"));
    let early = tokio::time::timeout(Duration::from_millis(5), call).await;
    assert!(
        early.is_err(),
        "the response did not wait for the first token"
    );
    feed.send(Event::delta("kept")).unwrap();
    feed.send(Event::done(FinishReason::Stop, None)).unwrap();
    stored_as(&s, "t2", |c| {
        c.messages.len() == 2 && c.messages[1].content.joined_text("") == "kept"
    })
    .await;
}
