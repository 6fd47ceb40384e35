//! lmchatkit inside a `ServiceBuilder` stack: gzip compression that leaves SSE alone (tower-http's
//! default predicate skips `text/event-stream`, so events are never buffered), a timeout that
//! bounds the time to the response head only (streams are not cut), and no CORS layer — the chat
//! is same-origin by default. Run: `cargo run -p lmchatkit --example layers`.

use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use lmchatkit::llm::DemoModel;
use lmchatkit::{ChatService, Config};
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;
use tower_http::timeout::TimeoutLayer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chat = ChatService::new(Config::builder(DemoModel::new()).build()?);
    let svc = ServiceBuilder::new()
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            http::StatusCode::GATEWAY_TIMEOUT,
            Duration::from_secs(30),
        ))
        .service(chat);
    let listener = TcpListener::bind(std::env::var("ADDR").unwrap_or("127.0.0.1:0".into())).await?;
    println!("listening on http://{}/chat", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?; // small SSE frames must not wait for Nagle
        let svc = TowerToHyperService::new(svc.clone());
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
