//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that speak only it
//! (`transport = "sse"`, [`McpServerConfig::sse`](super::McpServerConfig::sse)). rmcp has no
//! client for it; this one is an rmcp [`Transport`] on reqwest and the project's SSE parser
//! ([`crate::event_stream`]).
//!
//! The protocol: a `GET` of the server's URL opens an event stream; its first event, `endpoint`,
//! carries the URL to `POST` each client message to (the server's session is in it, usually as
//! a query parameter); every server message (answers, requests, notifications) arrives as a
//! `message` event on the stream, its data one JSON-RPC message.
//!
//! Decisions:
//! - **The endpoint stays on the stream's origin.** It is resolved against the stream's URL and
//!   refused when its scheme, host or port differ: the POSTs carry the configured headers and
//!   bearer token, which must not reach another host (the same rule as redirects,
//!   [`same_origin_redirects`](crate::secrets::same_origin_redirects), which this client also
//!   follows). An `endpoint` event after the first is ignored.
//! - **Bounded.** An event larger than [`MAX_EVENT`] ends the stream, and with it the
//!   connection (the hub reconnects as for any transport); an endpoint not received within
//!   [`ENDPOINT_TIMEOUT`] fails the connect.
//! - **Failures are visible.** A POST answered with anything but 2xx is an error of that send,
//!   which rmcp turns into the request's error; a `message` event that is not a JSON-RPC message
//!   is logged and skipped (one bad line does not cut the others off); the end of the stream
//!   ends the transport, and the hub marks the server disconnected.
//! - The stream is read by a task of its own, so messages keep arriving while a POST waits;
//!   the task ends when the transport is closed or dropped.

use std::time::Duration;

use http::HeaderMap;
use http::header::{ACCEPT, CONTENT_TYPE};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

use crate::event_stream::SseParser;

/// Largest event read off the stream (bytes); a larger one ends the connection.
pub(crate) const MAX_EVENT: usize = 8 << 20;
/// How long the server may take to name its endpoint once the stream is open.
pub(crate) const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// Messages read ahead of rmcp.
const BUFFER: usize = 64;

/// Why the transport failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseTransportError {
    /// The HTTP request failed.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with something else than expected.
    #[error("{0}")]
    Protocol(String),
}

/// A connected HTTP+SSE transport: POSTs to the endpoint, messages from the stream.
pub(crate) struct SseClientTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream at `url` with `client` (which should follow redirects only within the
/// origin) and `headers` (sent with the stream's GET and every POST), and waits for the
/// server's endpoint.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
) -> Result<SseClientTransport, SseTransportError> {
    let url = reqwest::Url::parse(url)
        .map_err(|e| SseTransportError::Protocol(format!("invalid URL: {e}")))?;
    let res = client
        .get(url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await?;
    let status = res.status();
    if !status.is_success() {
        return Err(SseTransportError::Protocol(format!(
            "the event stream answered {status}"
        )));
    }
    let kind = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !kind.starts_with("text/event-stream") {
        return Err(SseTransportError::Protocol(format!(
            "the server answered {kind:?}, not an event stream: does it speak the HTTP+SSE \
             transport (Streamable HTTP servers are `url` without `transport = \"sse\"`)?"
        )));
    }
    // The stream's own URL after redirects: the endpoint is relative to it.
    let base = res.url().clone();
    let (tx, incoming) = mpsc::channel(BUFFER);
    let (endpoint_tx, endpoint_rx) = oneshot::channel();
    let reader = tokio::spawn(read_stream(res, tx, endpoint_tx));
    let endpoint = match tokio::time::timeout(ENDPOINT_TIMEOUT, endpoint_rx).await {
        Ok(Ok(e)) => e,
        Ok(Err(_)) => {
            reader.abort();
            return Err(SseTransportError::Protocol(
                "the event stream ended before the server named its endpoint".into(),
            ));
        }
        Err(_) => {
            reader.abort();
            return Err(SseTransportError::Protocol(format!(
                "the server named no endpoint within {ENDPOINT_TIMEOUT:?}"
            )));
        }
    };
    let endpoint = match endpoint_on_origin(&base, &endpoint) {
        Ok(e) => e,
        Err(e) => {
            reader.abort();
            return Err(e);
        }
    };
    Ok(SseClientTransport {
        client,
        endpoint,
        headers,
        incoming,
        reader,
    })
}

/// The endpoint a server named, resolved against the stream's URL; refused unless it is on the
/// stream's origin.
pub(crate) fn endpoint_on_origin(
    base: &reqwest::Url,
    named: &str,
) -> Result<reqwest::Url, SseTransportError> {
    let url = base.join(named.trim()).map_err(|e| {
        SseTransportError::Protocol(format!("the server named an invalid endpoint: {e}"))
    })?;
    if url.origin() != base.origin() {
        return Err(SseTransportError::Protocol(format!(
            "the server named an endpoint on another origin ({}, the stream is on {}): not used, \
             the configured headers stay on the server's origin",
            url.origin().ascii_serialization(),
            base.origin().ascii_serialization()
        )));
    }
    Ok(url)
}

/// Reads the stream: the first `endpoint` event's data goes to `endpoint`, every `message`
/// event's JSON-RPC message to `tx`. Ends with the stream, at an error, or when `tx` is closed.
async fn read_stream(
    mut res: reqwest::Response,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    endpoint: oneshot::Sender<String>,
) {
    let mut parser = SseParser::new(MAX_EVENT);
    let mut endpoint = Some(endpoint);
    loop {
        let chunk = match res.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("MCP event stream ended: {e}");
                return;
            }
        };
        parser.push(&chunk);
        while let Some(event) = parser.next_event() {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("MCP event stream refused: {e}");
                    return;
                }
            };
            match event.event {
                "endpoint" => {
                    if let Some(tell) = endpoint.take() {
                        let _ = tell.send(event.data.to_owned());
                    }
                }
                "message" => match serde_json::from_str(event.data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!("MCP server sent a message that is not JSON-RPC: {e}"),
                },
                _ => {}
            }
        }
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseTransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (client, url, headers) = (
            self.client.clone(),
            self.endpoint.clone(),
            self.headers.clone(),
        );
        async move {
            let body = serde_json::to_vec(&item)
                .map_err(|e| SseTransportError::Protocol(format!("cannot encode: {e}")))?;
            let res = client
                .post(url)
                .headers(headers)
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await?;
            let status = res.status();
            if status.is_success() {
                Ok(())
            } else {
                let text = res.text().await.unwrap_or_default();
                let text: String = text.chars().take(200).collect();
                Err(SseTransportError::Protocol(format!(
                    "the server answered a message with {status}: {text}"
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> reqwest::Url {
        reqwest::Url::parse(s).unwrap()
    }

    #[test]
    fn an_endpoint_resolves_against_the_stream_and_stays_on_its_origin() {
        let base = url("http://127.0.0.1:8000/sse");
        assert_eq!(
            endpoint_on_origin(&base, "/messages/?session_id=ab12")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8000/messages/?session_id=ab12"
        );
        assert_eq!(
            endpoint_on_origin(&base, "messages?sessionId=1")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8000/messages?sessionId=1"
        );
        assert_eq!(
            endpoint_on_origin(&base, "http://127.0.0.1:8000/m")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8000/m"
        );
        for elsewhere in [
            "http://evil.example/messages",
            "//evil.example/messages",
            "https://127.0.0.1:8000/m",
            "http://127.0.0.1:8001/m",
            "http://localhost:8000/m",
        ] {
            let e = endpoint_on_origin(&base, elsewhere)
                .unwrap_err()
                .to_string();
            assert!(e.contains("another origin"), "{elsewhere}: {e}");
        }
    }
}
