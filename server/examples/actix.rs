//! Mounting lmchatkit in actix-web through a small adapter: the actix request becomes an
//! `http::Request` for the tower service, and the service's body is streamed back frame by frame
//! (so SSE streams; nothing is buffered). actix uses http 0.2 types, hence the conversions.
//! Run: `cargo run -p lmchatkit --example actix`.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyDataStream, Full};
use lmchatkit::llm::DemoModel;
use lmchatkit::{ChatService, Config};
use tower::ServiceExt;

/// Forwards one actix request to the chat service and streams its answer back.
async fn forward(req: HttpRequest, body: web::Bytes, chat: web::Data<ChatService>) -> HttpResponse {
    let mut builder = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    // actix's payload is not `Send`; chat bodies are bounded JSON, so it is read up front.
    let Ok(request) = builder.body(Full::new(Bytes::from(body.to_vec()))) else {
        return HttpResponse::BadRequest().finish();
    };
    let Ok(response) = chat.get_ref().clone().oneshot(request).await;
    let (parts, body) = response.into_parts();
    let status = actix_web::http::StatusCode::from_u16(parts.status.as_u16()).unwrap_or_default();
    let mut out = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        out.append_header((name.as_str(), value.as_bytes()));
    }
    out.streaming(BodyDataStream::new(body).map(|chunk| chunk.map_err(std::io::Error::other)))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let chat = ChatService::new(
        Config::builder(DemoModel::new())
            .build()
            .expect("valid config"),
    );
    let addr = std::env::var("ADDR").unwrap_or("127.0.0.1:0".into());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(chat.clone()))
            .default_service(web::to(forward))
    })
    .workers(1)
    .bind(addr)?;
    println!("listening on http://{}/chat", server.addrs()[0]);
    server.run().await
}
