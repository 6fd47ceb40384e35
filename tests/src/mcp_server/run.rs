//! Ways to run the test server (stdio, in-process pipe, Streamable HTTP on loopback) and to
//! find the npm servers the tests use.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::TestServer;

/// `(authorization, x-test)` headers of the requests an [`HttpTestServer`] received.
pub type SeenHeaders = Arc<Mutex<Vec<(Option<String>, Option<String>)>>>;

/// Serves one server on stdin/stdout until the client goes away.
pub async fn serve_stdio() -> std::io::Result<()> {
    let svc = TestServer::new()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    let _ = svc.waiting().await;
    Ok(())
}

/// A test server on the other end of an in-process pipe, fresh per call: a connector for
/// `McpServerConfig::in_process`. The returned server task ends when the client side closes.
pub fn duplex_connector() -> impl Fn() -> tokio::io::DuplexStream + Send + Sync + 'static {
    let server = TestServer::new();
    move || {
        let (client, srv) = tokio::io::duplex(1 << 20);
        let server = server.clone();
        tokio::spawn(async move {
            if let Ok(running) = server.serve(srv).await {
                let _ = running.waiting().await;
            }
        });
        client
    }
}

/// A Streamable HTTP server on 127.0.0.1 (random port) at `/mcp`; aborted when dropped.
pub struct HttpTestServer {
    /// The bound address.
    pub addr: SocketAddr,
    /// `(authorization, x-test)` headers of every request received.
    pub headers: SeenHeaders,
    /// The `Mcp-Method` header of every request that had one (`tools/list`, …).
    pub methods: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpTestServer {
    /// `http://127.0.0.1:N/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for HttpTestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the test server over Streamable HTTP on loopback.
pub async fn serve_http() -> HttpTestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().unwrap();
    let server = TestServer::new();
    let svc: StreamableHttpService<TestServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(server.clone()),
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    let headers = SeenHeaders::default();
    let methods = Arc::<Mutex<Vec<String>>>::default();
    let (seen, seen_methods) = (headers.clone(), methods.clone());
    let svc = tower::ServiceBuilder::new()
        .map_request(move |req: http::Request<hyper::body::Incoming>| {
            let h = |n: &str| {
                req.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            seen.lock().unwrap().push((h("authorization"), h("x-test")));
            if let Some(m) = h("mcp-method") {
                seen_methods.lock().unwrap().push(m);
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
    HttpTestServer {
        addr,
        headers,
        methods,
        task,
    }
}

/// A Streamable HTTP "server" on 127.0.0.1 that takes connections and requests and never
/// answers: its URL and the task holding them (abort it, or let the runtime end, to close).
pub async fn serve_hanging() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (url, task)
}

/// A binary of the npm MCP servers installed by `scripts/setup-test.sh` (in
/// `.tools/mcp/node_modules/.bin/`, or `$LMCHATKIT_MCP_TOOLS/node_modules/.bin/`), or `None`
/// with a note on stderr when it is missing (`cargo test` alone never downloads anything; see
/// [`crate::installed::installed`], which fails instead under `LMCHATKIT_EXPECT_MCP=1`).
pub fn npm_bin(name: &str) -> Option<std::path::PathBuf> {
    npm_file(&format!(".bin/{name}"))
}

/// A file of the npm packages installed by `scripts/setup-test.sh`, by its path below
/// `node_modules/` (e.g. an example script of a package), or `None` with a note like
/// [`npm_bin`].
pub fn npm_file(path: &str) -> Option<std::path::PathBuf> {
    let root = std::env::var_os("LMCHATKIT_MCP_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/mcp"));
    let file = root.join("node_modules").join(path);
    crate::installed::installed(&file).then_some(file)
}

/// The Python of `.tools/py/` (or `$LMCHATKIT_PY_TOOLS`), where `scripts/setup-test.sh`
/// installs the `mcp` package of `tests/python/requirements.txt`, or `None` with a note like
/// [`npm_bin`].
pub fn python_bin() -> Option<std::path::PathBuf> {
    let root = std::env::var_os("LMCHATKIT_PY_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/py"));
    let file = root.join("bin/python");
    crate::installed::installed(&file).then_some(file)
}

/// A TCP port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
