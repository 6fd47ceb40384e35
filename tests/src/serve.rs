//! Serves a `ChatService` on a real hyper server on loopback, as the standalone app does.

use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use lmchatkit::{ChatService, Principal};
use tokio::net::TcpListener;

/// A running server; aborted when dropped.
pub struct Served {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Served {
    /// `http://127.0.0.1:N` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

/// Serves `svc` on 127.0.0.1 with a random port (HTTP/1.1 and HTTP/2).
pub async fn serve(svc: ChatService) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    serve_on(listener, svc)
}

/// Serves `svc` on 127.0.0.1 with every request signed in as `principal`, as a host's auth
/// layer would put it into the request's extensions.
pub async fn serve_as(svc: ChatService, principal: Principal) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let svc = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<Incoming>| {
            req.extensions_mut().insert(principal.clone());
            req
        })
        .service(svc);
    serve_service(listener, svc)
}

/// Serves `svc` on a listener bound beforehand (e.g. when its port must be known first).
pub fn serve_on(listener: TcpListener, svc: ChatService) -> Served {
    serve_service(listener, svc)
}

fn serve_service<S>(listener: TcpListener, svc: S) -> Served
where
    S: tower::Service<http::Request<Incoming>, Response = http::Response<lmchatkit::ResponseBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: std::error::Error + Send + Sync + 'static,
{
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let svc = TowerToHyperService::new(svc.clone());
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Served { addr, task }
}

/// Serves `svc` on `$ADDR` (default 127.0.0.1 with a random port), prints
/// `listening on http://ADDR{prefix}` and serves until the process ends (for the examples).
pub async fn run_printing_url(svc: ChatService, prefix: &str) {
    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:0".into());
    let listener = TcpListener::bind(addr).await.expect("bind");
    println!(
        "listening on http://{}{prefix}",
        listener.local_addr().unwrap()
    );
    let _served = serve_on(listener, svc);
    std::future::pending::<()>().await;
}

/// The JSON of every `data:` line of an SSE body, in order (panics on one that is not JSON).
pub fn sse_data(body: &str) -> Vec<serde_json::Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("not JSON ({e}): {d}")))
        .collect()
}
