//! A small front server for browser tests that need more than the service alone: it serves a
//! host page embedding the UI in floating-window mode (`/host.html`), records the `Last-Event-ID`
//! of every `GET /chat/api/events`, what every conversation `PUT` carried and every asset
//! requested, and can end the open event streams on demand (as a proxy or a restarting instance
//! would) or fail the next requests for the UI's wasm chunks (as a flaky network would), without
//! restarting anything. Everything else goes to the service unchanged.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lmchatkit::ChatService;
use tokio::net::TcpListener;

use crate::browser::app::bundle_built;
use crate::browser::{Browser, launch};
use crate::mock_upstream::MockUpstream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The host page: some content of its own, the floating mount element and the stable loader.
pub const HOST_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
     <title>Host page</title>\
     <script type=\"module\" src=\"/chat/assets/lmchatkit.js\"></script></head>\
     <body style=\"margin: 24px\"><h1 id=\"host-heading\">The host's own page</h1>\
     <p id=\"host-text\">Content the chat window floats over.</p>\
     <div data-lmchatkit data-prefix=\"/chat\" data-mode=\"floating\"></div></body></html>\n";

/// One conversation `PUT` the front passed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavePut {
    /// The path's conversation id.
    pub id: String,
    /// The body's `kept` count, if any.
    pub kept: Option<u64>,
    /// How many messages the body carried.
    pub messages: usize,
    /// The service's answer.
    pub status: u16,
}

/// What the front saw and can do.
#[derive(Default)]
pub struct Probe {
    /// `Last-Event-ID` of each `GET /chat/api/events`, in order (`None`: header absent).
    pub event_requests: Mutex<Vec<Option<String>>>,
    /// Every conversation `PUT`, in the order answered.
    pub saves: Mutex<Vec<SavePut>>,
    /// Every `GET /chat/assets/<name>`: the name and the status answered, in order.
    pub assets: Mutex<Vec<(String, u16)>>,
    cut: Mutex<Option<tokio::sync::watch::Sender<u64>>>,
    fail_parts: AtomicUsize,
    /// Only parts whose name starts with this fail (`None`: any part).
    fail_only: Mutex<Option<String>>,
}

/// Whether an asset is one of the UI's wasm chunks (`split_<part>-<hash>.wasm`,
/// `chunk_<n>-<hash>.wasm`), which the UI loads the first time a part is shown.
pub fn is_ui_part(name: &str) -> bool {
    (name.starts_with("split_") || name.starts_with("chunk_")) && name.ends_with(".wasm")
}

impl Probe {
    /// Ends every event stream open now (new ones are not affected).
    pub fn cut_event_streams(&self) {
        if let Some(tx) = self.cut.lock().unwrap().as_ref() {
            tx.send_modify(|n| *n += 1);
        }
    }

    /// The `Last-Event-ID` headers seen so far.
    pub fn event_requests(&self) -> Vec<Option<String>> {
        self.event_requests.lock().unwrap().clone()
    }

    /// The conversation `PUT`s seen so far.
    pub fn saves(&self) -> Vec<SavePut> {
        self.saves.lock().unwrap().clone()
    }

    /// The assets requested so far, with the status each was answered.
    pub fn assets(&self) -> Vec<(String, u16)> {
        self.assets.lock().unwrap().clone()
    }

    /// Answers the next `n` requests for a wasm chunk ([`is_ui_part`]) 503.
    pub fn fail_next_parts(&self, n: usize) {
        *self.fail_only.lock().unwrap() = None;
        self.fail_parts.store(n, Ordering::SeqCst);
    }

    /// The statuses answered to requests for the part `split_<part>-…`, in order.
    pub fn part_statuses(&self, part: &str) -> Vec<u16> {
        let prefix = format!("split_{part}-");
        self.assets()
            .into_iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .map(|(_, status)| status)
            .collect()
    }

    /// Answers the next `n` requests for the part `split_<part>-…` 503 (other parts load).
    pub fn fail_next_of(&self, part: &str, n: usize) {
        *self.fail_only.lock().unwrap() = Some(format!("split_{part}-"));
        self.fail_parts.store(n, Ordering::SeqCst);
    }
}

/// The front server; aborted when dropped.
pub struct Front {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it saw.
    pub probe: Arc<Probe>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Front {
    /// `http://127.0.0.1:N` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

/// Serves `svc` (mounted at `/chat`) behind the front on a random loopback port.
pub async fn serve_front(svc: ChatService) -> Front {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().unwrap();
    let (tx, _) = tokio::sync::watch::channel(0u64);
    let probe = Arc::new(Probe {
        cut: Mutex::new(Some(tx)),
        ..Probe::default()
    });
    let p = probe.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (svc, probe) = (svc.clone(), p.clone());
            let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (svc, probe) = (svc.clone(), probe.clone());
                async move { Ok::<_, Infallible>(route(svc, probe, req).await) }
            });
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    Front { addr, probe, task }
}

async fn route(svc: ChatService, probe: Arc<Probe>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() == "/host.html" {
        let mut res = Response::new(
            Full::new(Bytes::from_static(HOST_PAGE.as_bytes()))
                .map_err(|e| match e {})
                .boxed_unsync(),
        );
        res.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        return res;
    }
    if req.method() == http::Method::PUT
        && let Some(id) = req.uri().path().strip_prefix("/chat/api/conversations/")
    {
        let id = id.to_owned();
        let (parts, body) = req.into_parts();
        let bytes = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let mut svc = svc;
        let req = Request::from_parts(parts, Full::new(bytes));
        let Ok(res) = tower::Service::call(&mut svc, req).await;
        probe.saves.lock().unwrap().push(SavePut {
            id,
            kept: v["kept"].as_u64(),
            messages: v["messages"].as_array().map_or(0, Vec::len),
            status: res.status().as_u16(),
        });
        return res.map(|b| b.map_err(Into::<BoxError>::into).boxed_unsync());
    }
    if req.method() == http::Method::GET
        && let Some(name) = req.uri().path().strip_prefix("/chat/assets/")
    {
        let name = name.to_owned();
        let only = probe.fail_only.lock().unwrap().clone();
        let fail = is_ui_part(&name)
            && only.is_none_or(|p| name.starts_with(&p))
            && probe
                .fail_parts
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        let res = if fail {
            let mut res = Response::new(
                Full::new(Bytes::from_static(b"unavailable"))
                    .map_err(|e| match e {})
                    .boxed_unsync(),
            );
            *res.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            res
        } else {
            let mut svc = svc;
            let Ok(res) = tower::Service::call(&mut svc, req).await;
            res.map(|b| b.map_err(Into::<BoxError>::into).boxed_unsync())
        };
        probe
            .assets
            .lock()
            .unwrap()
            .push((name, res.status().as_u16()));
        return res;
    }
    let events = req.uri().path() == "/chat/api/events";
    let mut cut = None;
    if events {
        let last = req
            .headers()
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        probe.event_requests.lock().unwrap().push(last);
        if let Some(tx) = probe.cut.lock().unwrap().as_ref() {
            let mut rx = tx.subscribe();
            rx.borrow_and_update();
            cut = Some(rx);
        }
    }
    let mut svc = svc;
    let Ok(res) = tower::Service::call(&mut svc, req).await;
    let Some(mut rx) = cut else {
        return res.map(|b| b.map_err(Into::<BoxError>::into).boxed_unsync());
    };
    let (parts, body) = res.into_parts();
    let until = async move {
        let _ = rx.changed().await;
    };
    let frames = BodyStream::new(body).take_until(Box::pin(until));
    let body = StreamBody::new(frames).map_err(Into::<BoxError>::into);
    Response::from_parts(parts, body.boxed_unsync())
}

/// A running service (memory history, events and uploads on) behind the [`Front`], with a browser that has
/// not navigated anywhere yet; `None` when the test must be skipped (no browser or no bundle).
pub struct FrontEnv {
    /// The mock upstream.
    pub mock: MockUpstream,
    /// The front (and through it the service at `/chat`).
    pub front: Front,
    /// The browser.
    pub browser: Browser,
}

/// Starts a [`FrontEnv`]. Hold [`crate::browser::app::ONE_AT_A_TIME`] while using it.
pub async fn setup_front() -> Option<FrontEnv> {
    let mock = MockUpstream::start().await;
    let backend = lmchatkit::llm::openai::OpenAiBackend::new(
        lmchatkit::llm::openai::OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"),
    );
    let config = lmchatkit::Config::builder(crate::test_host::TestHost(backend))
        .events(true)
        .file_upload(true)
        .history(lmchatkit::store::MemoryStore::new())
        .build()
        .unwrap();
    let front = serve_front(ChatService::new(config)).await;
    if !bundle_built(&front.url("/chat/assets/lmchatkit.js")).await {
        return None;
    }
    let browser = launch().await?;
    Some(FrontEnv {
        mock,
        front,
        browser,
    })
}
