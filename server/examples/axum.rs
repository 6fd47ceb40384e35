//! Mounting lmchatkit in an axum app with `nest_service`, beside the host's own routes, behind a
//! tower-http auth layer that puts the caller's `Principal` into the request, and a trace layer.
//! Run: `cargo run -p lmchatkit --example axum`.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use axum::serve::ListenerExt;
use http::{Request, Response, StatusCode};
use lmchatkit::llm::DemoModel;
use lmchatkit::store::MemoryStore;
use lmchatkit::{ChatService, Config, Principal};
use tower_http::auth::AsyncRequireAuthorizationLayer;
use tower_http::trace::TraceLayer;

/// A stand-in for real authentication: the user named in `X-User` (401 without one). A real
/// app would check a session cookie or a bearer token here.
async fn authenticate(mut req: Request<Body>) -> Result<Request<Body>, Response<Body>> {
    let user = req
        .headers()
        .get("x-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match user {
        Some(user) if !user.is_empty() => {
            req.extensions_mut().insert(Principal::new(user));
            Ok(req)
        }
        _ => Err(Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .body(Body::from("who are you?"))
            .unwrap()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chat = ChatService::new(
        Config::builder(DemoModel::new())
            .prefix("/chat")
            .history(MemoryStore::new())
            .require_principal(true)
            .build()?,
    );
    let app = Router::new()
        .route("/", get(|| async { "the host's own home page" }))
        .nest_service("/chat", chat)
        .layer(AsyncRequireAuthorizationLayer::new(authenticate))
        .layer(TraceLayer::new_for_http());
    let listener =
        tokio::net::TcpListener::bind(std::env::var("ADDR").unwrap_or("127.0.0.1:0".into()))
            .await?;
    println!("listening on http://{}/chat", listener.local_addr()?);
    // Small SSE frames must not wait for Nagle's algorithm.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}
