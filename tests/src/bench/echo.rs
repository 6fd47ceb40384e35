//! The bare hyper SSE echo: the practical limit of a relay. Every request is forwarded to the
//! upstream with a pooled keep-alive client and the upstream's bytes are streamed back
//! unchanged — no parsing, no re-encoding. Whatever a real relay costs beyond this is its own.

use std::net::SocketAddr;

use bytes::Bytes;
use http::Uri;
use http_body_util::{BodyExt, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = BoxBody<Bytes, hyper::Error>;

/// Serves the echo on `addr`, relaying to `upstream` (`http://host:port`); returns the address.
pub async fn serve(addr: SocketAddr, upstream: String) -> std::io::Result<SocketAddr> {
    let listener = super::sys::listen(addr)?;
    let addr = listener.local_addr()?;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build(connector);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let (client, upstream) = (client.clone(), upstream.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                    let (client, upstream) = (client.clone(), upstream.clone());
                    async move {
                        let (mut parts, body) = req.into_parts();
                        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                        parts.uri = format!("{upstream}{path}").parse::<Uri>().unwrap();
                        parts.headers.remove(http::header::HOST);
                        let up = http::Request::from_parts(parts, body.boxed());
                        let res = client.request(up).await.map_err(std::io::Error::other)?;
                        Ok::<_, std::io::Error>(res.map(BodyExt::boxed))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(addr)
}
