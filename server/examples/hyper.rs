//! Mounting lmchatkit on hyper with no framework: the service gets the full path and strips its
//! prefix itself. Run: `cargo run -p lmchatkit --example hyper`.

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use lmchatkit::llm::DemoModel;
use lmchatkit::{ChatService, Config};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let svc = ChatService::new(Config::builder(DemoModel::new()).prefix("/chat").build()?);
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
