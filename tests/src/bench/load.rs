//! The load generator: `concurrency` virtual users, each on its own keep-alive HTTP/1.1
//! connection, post chat requests back to back until the phase's request budget or deadline is
//! used up, and time every stream: time to first token (TTFT: request written → first `data:`
//! carrying text), total time, events. A stream counts as completed only when it ended with the
//! path's end marker after exactly the expected number of text events; `verify` also checks the
//! exact event sequence and the reassembled text. With `history`, every turn is followed by the
//! `PUT` of the turn on top of the stored conversation (`kept`, as the UI does; whole for the
//! first turn), timed separately. A path taking
//! [`Body::UiMessages`] gets a fresh thread id on every request (`aisdk-{pid}-{phase}-{vu}-{n}`),
//! one taking [`Body::ChatSaved`] a fresh conversation id (`conv-…`, the same way).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::sse::{StreamCheck, Verdict};
use super::workload::{Body, Flavor, Workload};

/// A path under test: where to post and what it streams back.
#[derive(Debug, Clone)]
pub struct Target {
    /// Short name used in the results (`direct`, `lmchatkit`, …).
    pub name: String,
    /// Address of the server.
    pub addr: SocketAddr,
    /// Path of the chat route.
    pub path: String,
    /// What the stream looks like.
    pub flavor: Flavor,
    /// What the request looks like.
    pub body: Body,
    /// `Authorization` header value, if the path wants one.
    pub auth: Option<String>,
    /// Path prefix of `/api/conversations/{id}` for the history `PUT`s (lmchatkit only).
    pub history_prefix: Option<String>,
}

/// One measured phase.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// Virtual users (= open connections and concurrent streams).
    pub concurrency: usize,
    /// At most this many requests in all.
    pub max_requests: usize,
    /// No new request after this long.
    pub duration: Duration,
    /// A stream not finished after this long is a timeout.
    pub timeout: Duration,
    /// What the upstream streams.
    pub workload: Workload,
    /// Follow each turn with the `PUT` of the grown conversation.
    pub history: bool,
    /// Check the exact event sequence and text of every stream (slower; for the smoke).
    pub verify: bool,
    /// Spread the virtual users' connects over this long (for thousands of connections).
    pub ramp: Duration,
}

/// What a phase measured.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// TTFT of completed streams, ms.
    pub ttft_ms: Vec<f64>,
    /// Whole-stream time of completed streams, ms.
    pub total_ms: Vec<f64>,
    /// History `PUT` time, ms.
    pub put_ms: Vec<f64>,
    /// Streams started.
    pub requests: usize,
    /// Streams that completed correctly.
    pub completed: usize,
    /// `data:` events received in completed streams.
    pub events: u64,
    /// Failures by kind (`timeout`, `status 500`, `incomplete`, …).
    pub errors: BTreeMap<String, usize>,
    /// Wall time of the phase, s.
    pub elapsed_s: f64,
    /// Most streams open at the same time.
    pub max_open: usize,
}

/// Numbers the phases of this process, so history conversation ids never repeat.
static PHASES: AtomicUsize = AtomicUsize::new(0);

struct Shared {
    phase_no: usize,
    target: Target,
    phase: Phase,
    body: Bytes,
    issued: AtomicUsize,
    open: AtomicUsize,
    max_open: AtomicUsize,
    events: AtomicU64,
    deadline: Instant,
    /// Statuses whose first body was printed (one sample per status and phase).
    shown: std::sync::Mutex<Vec<u16>>,
}

/// Runs one phase against `target`.
pub async fn run(target: &Target, phase: Phase) -> Outcome {
    let start = Instant::now();
    let shared = Arc::new(Shared {
        phase_no: PHASES.fetch_add(1, Ordering::Relaxed),
        body: Bytes::from(target.body.render(&phase.workload, "")),
        target: target.clone(),
        phase,
        issued: AtomicUsize::new(0),
        open: AtomicUsize::new(0),
        max_open: AtomicUsize::new(0),
        events: AtomicU64::new(0),
        deadline: start + phase.ramp + phase.duration,
        shown: std::sync::Mutex::new(Vec::new()),
    });
    let mut tasks = Vec::with_capacity(phase.concurrency);
    for vu in 0..phase.concurrency {
        let shared = shared.clone();
        let delay = phase
            .ramp
            .mul_f64(vu as f64 / phase.concurrency.max(1) as f64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            virtual_user(vu, &shared).await
        }));
    }
    let mut out = Outcome::default();
    for t in tasks {
        let Ok(part) = t.await else { continue };
        out.ttft_ms.extend(part.ttft_ms);
        out.total_ms.extend(part.total_ms);
        out.put_ms.extend(part.put_ms);
        out.requests += part.requests;
        out.completed += part.completed;
        for (k, v) in part.errors {
            *out.errors.entry(k).or_default() += v;
        }
    }
    out.events = shared.events.load(Ordering::Relaxed);
    out.max_open = shared.max_open.load(Ordering::Relaxed);
    out.elapsed_s = start.elapsed().as_secs_f64();
    out
}

impl Shared {
    /// The body of virtual user `vu`'s request `n`: the phase's one body, or a fresh thread's.
    fn body_for(&self, vu: usize, n: usize) -> Bytes {
        if !self.target.body.per_request() {
            return self.body.clone();
        }
        let kind = match self.target.body {
            Body::ChatSaved => "conv",
            _ => "aisdk",
        };
        let thread = format!("{kind}-{}-{}-{vu}-{n}", std::process::id(), self.phase_no);
        Bytes::from(self.target.body.render(&self.phase.workload, &thread))
    }
}

async fn connect(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {}", e.kind()))?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| "handshake".to_owned())?;
    tokio::spawn(conn);
    Ok(sender)
}

/// The conversation a virtual user grows with its turns; a new one every 10 turns.
struct Conversation {
    id: String,
    revision: u64,
    messages: Vec<serde_json::Value>,
}

async fn virtual_user(vu: usize, s: &Shared) -> Outcome {
    let mut out = Outcome::default();
    let mut sender: Option<SendRequest<Full<Bytes>>> = None;
    let mut conv = Conversation {
        id: String::new(),
        revision: 0,
        messages: Vec::new(),
    };
    let mut turn = 0usize;
    while Instant::now() < s.deadline
        && s.issued.fetch_add(1, Ordering::Relaxed) < s.phase.max_requests
    {
        out.requests += 1;
        if sender.as_ref().is_none_or(|x| x.is_closed()) {
            match connect(s.target.addr).await {
                Ok(c) => sender = Some(c),
                Err(e) => {
                    *out.errors.entry(e).or_default() += 1;
                    continue;
                }
            }
        }
        let tx = sender.as_mut().expect("connected");
        let body = s.body_for(vu, out.requests);
        let result = tokio::time::timeout(s.phase.timeout, one_stream(tx, s, body)).await;
        match result {
            Ok(Ok((ttft, total))) => {
                out.completed += 1;
                out.ttft_ms.push(ttft);
                out.total_ms.push(total);
            }
            Ok(Err(e)) => {
                *out.errors.entry(e).or_default() += 1;
                sender = None;
                continue;
            }
            Err(_) => {
                *out.errors.entry("timeout".into()).or_default() += 1;
                sender = None;
                continue;
            }
        }
        if let (true, Some(prefix)) = (s.phase.history, &s.target.history_prefix) {
            if turn.is_multiple_of(10) {
                conv = Conversation {
                    id: format!("bench-{}-{}-{vu}-{turn}", std::process::id(), s.phase_no),
                    revision: 0,
                    messages: Vec::new(),
                };
            }
            let tx = sender.as_mut().expect("connected");
            match put_turn(tx, s, prefix, &mut conv, turn).await {
                Ok(ms) => out.put_ms.push(ms),
                Err(e) => {
                    *out.errors.entry(e).or_default() += 1;
                    sender = None;
                }
            }
        }
        turn += 1;
    }
    out
}

async fn one_stream(
    tx: &mut SendRequest<Full<Bytes>>,
    s: &Shared,
    body: Bytes,
) -> Result<(f64, f64), String> {
    let mut req = http::Request::post(&s.target.path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    if let Some(a) = &s.target.auth {
        req = req.header("authorization", a);
    }
    let req = req.body(Full::new(body)).unwrap();
    tx.ready()
        .await
        .map_err(|_| "connection closed".to_owned())?;
    let t0 = Instant::now();
    let res = tx.send_request(req).await.map_err(|_| "send".to_owned())?;
    if !res.status().is_success() {
        let status = res.status();
        let first = s.shown.lock().is_ok_and(|mut shown| {
            !shown.contains(&status.as_u16()) && {
                shown.push(status.as_u16());
                true
            }
        });
        if first {
            // What the server said, once per status and phase: the count alone hides the cause.
            let body = tokio::time::timeout(Duration::from_secs(2), res.into_body().collect())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            eprintln!("{}: status {} ({text})", s.target.name, status.as_u16());
        }
        return Err(format!("status {}", status.as_u16()));
    }
    let open = s.open.fetch_add(1, Ordering::Relaxed) + 1;
    s.max_open.fetch_max(open, Ordering::Relaxed);
    let _closing = OnDrop(&s.open);
    let mut check = StreamCheck::new(s.target.flavor, s.phase.workload, s.phase.verify);
    let mut ttft = None;
    let mut body = res.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| "body error".to_owned())?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        if check.feed(data) && ttft.is_none() {
            ttft = Some(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    let total = t0.elapsed().as_secs_f64() * 1e3;
    match check.finish() {
        Verdict::Ok { events } => {
            s.events.fetch_add(events, Ordering::Relaxed);
            Ok((ttft.unwrap_or(total), total))
        }
        Verdict::Bad(why) => Err(why),
    }
}

struct OnDrop<'a>(&'a AtomicUsize);

impl Drop for OnDrop<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn put_turn(
    tx: &mut SendRequest<Full<Bytes>>,
    s: &Shared,
    prefix: &str,
    conv: &mut Conversation,
    turn: usize,
) -> Result<f64, String> {
    let now = 1_700_000_000_000i64 + turn as i64;
    conv.messages.push(serde_json::json!({"id": format!("u{turn}"), "role": "user", "content": s.phase.workload.prompt(), "created_at": now}));
    conv.messages.push(serde_json::json!({"id": format!("a{turn}"), "role": "assistant", "content": s.phase.workload.reply(), "created_at": now}));
    // As the UI saves: the first save creates the conversation whole, later ones keep the
    // stored messages and carry the turn.
    let body = match conv.revision {
        0 => serde_json::json!({"id": conv.id, "title": "bench", "model": "mock-small",
            "revision": 0, "messages": conv.messages}),
        base => {
            let kept = conv.messages.len() - 2;
            serde_json::json!({"id": conv.id, "title": "bench", "model": "mock-small",
                "revision": base, "kept": kept, "messages": conv.messages[kept..]})
        }
    };
    let req = http::Request::put(format!("{prefix}/{}", conv.id))
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    tx.ready()
        .await
        .map_err(|_| "put: connection closed".to_owned())?;
    let t0 = Instant::now();
    let res = tx
        .send_request(req)
        .await
        .map_err(|_| "put: send".to_owned())?;
    let status = res.status();
    let bytes = res
        .into_body()
        .collect()
        .await
        .map_err(|_| "put: body".to_owned())?
        .to_bytes();
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if !status.is_success() {
        return Err(format!("put: status {}", status.as_u16()));
    }
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| "put: json")?;
    conv.revision = v["revision"].as_u64().ok_or("put: no revision")?;
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use lmchatkit::host::Principal;
    use lmchatkit::store::{HistoryStore, SqliteStore};

    use super::*;

    #[tokio::test]
    async fn every_request_of_the_ai_sdk_route_completes_and_saves_a_thread_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("relay.db");
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mock = super::super::mock::serve(any).await.unwrap();
        let upstream = format!("http://{mock}/v1");
        let addr = super::super::relay::serve(
            any,
            &upstream,
            super::super::relay::Storage::Sqlite(&db),
            false,
            true,
        )
        .await
        .unwrap();
        let target = Target {
            name: "lmchatkit-aisdk".into(),
            addr,
            path: "/chat/api/aisdk/chat".into(),
            flavor: Flavor::AiSdk,
            body: Body::UiMessages,
            auth: None,
            history_prefix: None,
        };
        let phase = Phase {
            concurrency: 2,
            max_requests: 6,
            duration: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            workload: Workload::default(),
            history: false,
            verify: true,
            ramp: Duration::ZERO,
        };
        let o = run(&target, phase).await;
        assert_eq!((o.completed, o.requests), (6, 6), "{:?}", o.errors);
        // The route writes each thread before its `[DONE]`: six requests, six threads.
        let store = SqliteStore::open(&db).unwrap();
        let threads = store.list(&Principal::anonymous()).await.unwrap();
        assert_eq!(threads.len(), 6, "{threads:?}");
    }
}
