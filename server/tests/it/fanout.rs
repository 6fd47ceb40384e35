//! Two instances of the service in one process, sharing one engine and one history store, each
//! served on its own loopback port: `/api/events` across instances (scoping, ids, replay,
//! resync), view URLs redeemed once on any instance, and approval ids that verify on any
//! instance sharing the signing secret. Every test runs on each engine, Redis and PostgreSQL
//! (`…::on_redis`, `…::on_postgres`; see `shared_engines`).

use crate::shared_engines;
use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use lmchatkit::live::SharedEngine;
use lmchatkit::live::events::EventBroadcaster;
use lmchatkit::protocol::*;
use lmchatkit::store::{HistoryStore, MemoryStore};
use lmchatkit::{ChatService, ConfigBuilder, Principal};
use serde_json::{Value, json};
use shared_engines::Spec;
use support::*;

/// One instance served on loopback; the principal is the `x-user` header (as a host's auth
/// layer would set it). Aborted when dropped.
struct Instance {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Instance {
    async fn serve(svc: ChatService) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/chat", listener.local_addr().unwrap());
        let svc = tower::ServiceBuilder::new()
            .map_request(|mut req: http::Request<hyper::body::Incoming>| {
                let who = req
                    .headers()
                    .get("x-user")
                    .and_then(|v| v.to_str().ok())
                    .map(Principal::new);
                if let Some(who) = who {
                    req.extensions_mut().insert(who);
                }
                req
            })
            .service(svc);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let svc = TowerToHyperService::new(svc.clone());
                tokio::spawn(async move {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self { base, task }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Saves conversation `id` (a new one, revision 0) through `at` as `who`.
async fn save(at: &Instance, who: &str, id: &str) {
    let body = json!({"id": id, "title": "T", "persona_id": "default", "model": "m",
                      "revision": 0, "messages": [{"id": "m1", "role": "user", "content": "hi"}]});
    let r = client()
        .put(at.url(&format!("/api/conversations/{id}")))
        .header("x-user", who)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
}

/// An open `/api/events` stream.
struct Events {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl Events {
    async fn open(at: &Instance, who: &str, last_event_id: Option<u64>) -> Self {
        let mut req = client()
            .get(at.url("/api/events"))
            .header("x-user", who)
            // The stream outlives the client's default timeout.
            .timeout(Duration::from_secs(3600));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 200);
        Self {
            body: r.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next event as `(id, event)`, waiting at most `wait`.
    async fn next_within(&mut self, wait: Duration) -> Option<(Option<u64>, Value)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = None;
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(v).unwrap());
                    }
                }
                if let Some(data) = data {
                    return Some((id, data));
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .ok()??
                .ok()?;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    async fn next(&mut self) -> (Option<u64>, Value) {
        self.next_within(Duration::from_secs(5))
            .await
            .expect("an event within 5 s")
    }
}

/// Two instances sharing the engine and one history store, each with a connection of its own;
/// `events` builds each broadcaster.
async fn two_instances(
    spec: &Spec,
    events: impl Fn(SharedEngine) -> EventBroadcaster,
) -> (Instance, Instance) {
    let store = Arc::new(MemoryStore::new()) as Arc<dyn HistoryStore>;
    let build = |engine: SharedEngine| {
        service(
            config(FakeHost::default())
                .history_arc(store.clone())
                .event_broadcaster(events(engine.clone()))
                .shared_engine(engine),
        )
    };
    let a = Instance::serve(build(spec.connect().await)).await;
    let b = Instance::serve(build(spec.connect().await)).await;
    (a, b)
}

on_each_engine!(
    a_save_through_b_reaches_a_tab_of_the_same_principal_on_a_and_no_one_elses,
    catalog_events_of_one_instance_reach_every_principal_on_the_other,
    event_ids_increase_across_instances,
    a_tab_reconnecting_to_the_other_instance_replays_what_it_missed,
    an_id_older_than_the_stream_gets_resync_and_an_unknown_one_too,
    a_view_url_issued_by_a_loads_from_b_once_and_then_fails_on_both,
    an_approval_id_issued_on_a_verifies_on_b_when_they_share_the_signing_secret,
    without_a_shared_signing_secret_an_approval_id_verifies_only_where_it_was_made,
);

fn saved(id: &str) -> (&'static str, String) {
    ("conversation_saved", id.to_owned())
}

fn kind_and_id(e: &Value) -> (&str, String) {
    (
        e["type"].as_str().unwrap_or_default(),
        e["id"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn a_save_through_b_reaches_a_tab_of_the_same_principal_on_a_and_no_one_elses(spec: &Spec) {
    let (a, b) = two_instances(spec, EventBroadcaster::over_engine).await;
    let mut alice_on_a = Events::open(&a, "alice", None).await;
    let mut bob_on_a = Events::open(&a, "bob", None).await;
    save(&b, "alice", "c-alice").await;
    let (id, e) = alice_on_a.next().await;
    assert_eq!(kind_and_id(&e), ("conversation_saved", "c-alice".into()));
    assert_eq!(e["revision"], 1);
    assert!(id.is_some_and(|id| id > 0), "a whole-number id: {id:?}");
    save(&b, "bob", "c-bob").await;
    let (_, e) = bob_on_a.next().await;
    assert_eq!(
        kind_and_id(&e),
        saved("c-bob"),
        "bob's first event is his own, not alice's"
    );
    assert!(
        alice_on_a
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "alice does not get bob's save"
    );
}

async fn catalog_events_of_one_instance_reach_every_principal_on_the_other(spec: &Spec) {
    let on_a = EventBroadcaster::over_engine(spec.connect().await);
    let on_b = EventBroadcaster::over_engine(spec.connect().await);
    // Handed out in order: A's first, then B's.
    let handed = Mutex::new(vec![on_b, on_a.clone()]);
    let (_a, b) = two_instances(spec, |_| handed.lock().unwrap().pop().unwrap()).await;
    let mut carol_on_b = Events::open(&b, "carol", None).await;
    let mut dave_on_b = Events::open(&b, "dave", None).await;
    on_a.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
    assert_eq!(carol_on_b.next().await.1["type"], "tools_changed");
    assert_eq!(dave_on_b.next().await.1["type"], "tools_changed");
}

async fn event_ids_increase_across_instances(spec: &Spec) {
    let (a, b) = two_instances(spec, EventBroadcaster::over_engine).await;
    let mut tab_on_a = Events::open(&a, "alice", None).await;
    let mut tab_on_b = Events::open(&b, "alice", None).await;
    for (i, at) in [&a, &b, &a, &b, &b, &a].into_iter().enumerate() {
        save(at, "alice", &format!("c{i}")).await;
    }
    let mut seen_a = Vec::new();
    let mut seen_b = Vec::new();
    for _ in 0..6 {
        seen_a.push(tab_on_a.next().await);
        seen_b.push(tab_on_b.next().await);
    }
    let ids: Vec<u64> = seen_a.iter().map(|(id, _)| id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(
        seen_a, seen_b,
        "both instances deliver the same ids in the same order"
    );
    // Each instance publishes off the save's path, in its own order: the saves through one
    // instance keep their order, and the two instances' events interleave as they reached the
    // engine.
    let order: Vec<String> = seen_a.iter().map(|(_, e)| kind_and_id(e).1).collect();
    let through = |names: [&str; 3]| -> Vec<String> {
        order
            .iter()
            .filter(|c| names.contains(&c.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(through(["c0", "c2", "c5"]), ["c0", "c2", "c5"], "{order:?}");
    assert_eq!(through(["c1", "c3", "c4"]), ["c1", "c3", "c4"], "{order:?}");
}

async fn a_tab_reconnecting_to_the_other_instance_replays_what_it_missed(spec: &Spec) {
    let (a, b) = two_instances(spec, EventBroadcaster::over_engine).await;
    let mut tab = Events::open(&a, "alice", None).await;
    save(&a, "alice", "c1").await;
    let (seen, _) = tab.next().await;
    drop(tab);
    save(&b, "alice", "c2").await;
    save(&a, "bob", "not-yours").await;
    save(&a, "alice", "c3").await;
    // Every save is in the stream before the tab comes back.
    let mut witness = Events::open(&b, "alice", seen).await;
    witness.next().await;
    witness.next().await;
    drop(witness);
    let mut again = Events::open(&b, "alice", seen).await;
    let (id2, e2) = again.next().await;
    let (id3, e3) = again.next().await;
    assert_eq!(
        (kind_and_id(&e2), kind_and_id(&e3)),
        (saved("c2"), saved("c3"))
    );
    assert!(seen < id2 && id2 < id3, "{seen:?} {id2:?} {id3:?}");
    // And it follows live from there.
    save(&a, "alice", "c4").await;
    assert_eq!(kind_and_id(&again.next().await.1), saved("c4"));
}

async fn an_id_older_than_the_stream_gets_resync_and_an_unknown_one_too(spec: &Spec) {
    let (a, b) = two_instances(spec, |engine| {
        EventBroadcaster::over_engine_with(engine, 256, 5)
    })
    .await;
    let mut tab = Events::open(&a, "alice", None).await;
    save(&a, "alice", "first").await;
    let (first, _) = tab.next().await;
    drop(tab);
    // Far more than the stream keeps (`MAXLEN ~` trims whole nodes of 100 entries).
    let burst = EventBroadcaster::over_engine_with(spec.connect().await, 256, 5);
    let mut counter = Events::open(&b, "alice", None).await;
    for _ in 0..400 {
        burst.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
    }
    // A burst of 400 through PostgreSQL's NOTIFY: on a loaded 2-core machine (the browser
    // tests beside it) one event once took over 5 s, so the burst gets 30 s an event.
    for n in 0..400 {
        counter
            .next_within(Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("event {n} of the burst within 30 s"));
    }
    let mut old = Events::open(&b, "alice", first).await;
    assert_eq!(old.next().await.1["type"], "resync");
    let mut future = Events::open(&a, "alice", Some(u64::MAX - 1)).await;
    assert_eq!(future.next().await.1["type"], "resync");
}

/// Tools `show` of server `a`, whose view is `ui://a/view`.
fn view_host() -> FakeHost {
    let mut h = FakeHost::default();
    h.sources.insert("show".into(), "a".into());
    let ui = json!({"prefersBorder": false});
    let view = ResourceResult {
        uri: "ui://a/view".into(),
        text: Some("<!doctype html><p>view</p>".into()),
        mime_type: Some("text/html;profile=mcp-app".into()),
        ui: Some(serde_json::from_value(ui).unwrap()),
        ..Default::default()
    };
    h.contents.insert(view.uri.clone(), ("a".into(), view));
    h
}

async fn view_instance(spec: &Spec) -> ConfigBuilder {
    config(view_host()).shared_engine(spec.connect().await)
}

async fn a_view_url_issued_by_a_loads_from_b_once_and_then_fails_on_both(spec: &Spec) {
    let a = Instance::serve(service(view_instance(spec).await)).await;
    let b = Instance::serve(service(view_instance(spec).await)).await;
    let answer: Value = client()
        .post(a.url("/api/apps/view"))
        .header("x-user", "alice")
        .json(&json!({"via": "show", "uri": "ui://a/view"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let path = answer["url"]
        .as_str()
        .unwrap()
        .strip_prefix("/chat")
        .unwrap();
    let load = |at: &Instance, who: &str| client().get(at.url(path)).header("x-user", who).send();
    let by_mallory = load(&b, "mallory").await.unwrap();
    assert_eq!(
        by_mallory.status(),
        404,
        "another principal cannot redeem it"
    );
    let first = load(&b, "alice").await.unwrap();
    assert_eq!(first.status(), 200);
    assert!(first.text().await.unwrap().contains("<p>view</p>"));
    assert_eq!(load(&b, "alice").await.unwrap().status(), 404);
    assert_eq!(load(&a, "alice").await.unwrap().status(), 404);
}

// --- Approval ids of the AI SDK route ---

const CHAT: &str = "/api/aisdk/chat";

/// A host asking for `weather` once, then answering with text. The hosts of both instances
/// share their call counts, as one upstream would.
fn weather_host(seen: &Arc<Mutex<Vec<lmchatkit::CompleteRequest>>>) -> FakeHost {
    let call = Event::ToolCall {
        tool_call: ToolCall::new("call_1", "weather", json!({"city": "Paris"})),
        decision: None,
    };
    FakeHost {
        models: vec![Model::new("m")],
        tools: vec![Tool::new("weather")],
        steps: vec![
            vec![call, Event::done(FinishReason::ToolCalls, None)],
            vec![
                Event::delta("It is sunny."),
                Event::done(FinishReason::Stop, None),
            ],
        ],
        seen: seen.clone(),
        ..FakeHost::default()
    }
}

fn user_message() -> Value {
    json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]})
}

/// The client's re-post answering the approval `approval` of message `message_id`.
fn approved(message_id: &str, approval: &str, city: &str) -> Value {
    json!({"id": "t1", "trigger": "submit-message", "messages": [user_message(),
        {"id": message_id, "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "dynamic-tool", "toolName": "weather", "toolCallId": "call_1",
             "state": "approval-responded", "input": {"city": city},
             "approval": {"id": approval, "approved": true}}]}]})
}

fn chunks(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn post_chat(at: &Instance, body: &Value) -> (u16, String) {
    let r = client()
        .post(at.url(CHAT))
        .header("x-user", "alice")
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Two instances sharing a history store and the engine, with `secret` as their signing secret
/// (each a random key of its own when `None`); the first request asks for approval on A.
/// Answers the instances, the message id and the approval id.
async fn asked_on_a(spec: &Spec, secret: Option<[u8; 32]>) -> (Instance, Instance, String, String) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::new(MemoryStore::new()) as Arc<dyn HistoryStore>;
    let engine = spec.connect().await;
    let build = || {
        let mut c = config(weather_host(&seen))
            .history_arc(store.clone())
            .shared_engine(engine.clone());
        if let Some(s) = secret {
            c = c.signing_secret(s);
        }
        service(c)
    };
    let a = Instance::serve(build()).await;
    let b = Instance::serve(build()).await;
    let (status, text) = post_chat(
        &a,
        &json!({"id": "t1", "trigger": "submit-message", "messages": [user_message()]}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let c = chunks(&text);
    let find = |kind: &str| {
        c.iter()
            .find(|c| c["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {c:?}"))
            .clone()
    };
    let message_id = find("start")["messageId"].as_str().unwrap().to_owned();
    let approval = find("tool-approval-request")["approvalId"]
        .as_str()
        .unwrap()
        .to_owned();
    (a, b, message_id, approval)
}

async fn an_approval_id_issued_on_a_verifies_on_b_when_they_share_the_signing_secret(spec: &Spec) {
    let (a, b, message_id, approval) = asked_on_a(spec, Some([42; 32])).await;
    let (status, text) = post_chat(&b, &approved(&message_id, &approval, "Paris")).await;
    assert_eq!(status, 200, "{text}");
    let c = chunks(&text);
    assert!(
        c.iter()
            .any(|c| c["type"] == "tool-output-available" && c["toolCallId"] == "call_1"),
        "{c:?}"
    );
    // A tampered call fails on both.
    for at in [&a, &b] {
        let (status, text) = post_chat(at, &approved(&message_id, &approval, "Oslo")).await;
        assert_eq!(status, 403, "{text}");
    }
    let mut forged = approval.clone();
    let last = if forged.ends_with('0') { "1" } else { "0" };
    forged.replace_range(forged.len() - 1.., last);
    for at in [&a, &b] {
        let (status, text) = post_chat(at, &approved(&message_id, &forged, "Paris")).await;
        assert_eq!(status, 403, "{text}");
    }
}

/// Without a shared secret each instance signs with a random key of its own: what A signed
/// does not verify on B (the default for a single instance).
async fn without_a_shared_signing_secret_an_approval_id_verifies_only_where_it_was_made(
    spec: &Spec,
) {
    let (_a, b, message_id, approval) = asked_on_a(spec, None).await;
    let (status, text) = post_chat(&b, &approved(&message_id, &approval, "Paris")).await;
    assert_eq!(status, 403, "{text}");
}
