//! A custom `Host` in under 50 lines: a model that answers in reverse, mounted on hyper.
//! Run: `cargo run -p lmchatkit --example custom_host`, then open the printed URL.

use futures_util::stream;
use lmchatkit::protocol::{Event, FinishReason, Model};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventStream, Host, HostError, RequestContext, async_trait,
};

/// Replies with the user's last message, reversed, a word at a time.
struct Reverser;

#[async_trait]
impl Host for Reverser {
    async fn models(&self, _cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("reverser")])
    }

    fn complete(&self, _cx: &RequestContext, req: CompleteRequest) -> EventStream {
        let last = req
            .messages
            .last()
            .and_then(|m| m.content.as_text())
            .unwrap_or_default();
        let reversed: String = last.chars().rev().collect();
        let words: Vec<Event> = reversed.split_inclusive(' ').map(Event::delta).collect();
        let done = Event::done(FinishReason::Stop, None);
        Box::pin(stream::iter(words.into_iter().chain([done])))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let svc = ChatService::new(Config::builder(Reverser).prefix("/chat").build()?);
    serve(svc, "/chat").await
}

/// Serves `svc` on `$ADDR` (default: a free port on loopback) and prints its URL, one hyper
/// connection task per accepted connection, as in the `hyper` example.
async fn serve(svc: ChatService, prefix: &str) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;

    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}{prefix}", listener.local_addr()?);
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
