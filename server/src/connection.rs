//! One accepted TCP connection served with hyper, as the `lmchatkit` app serves it: HTTP/1.1, or
//! HTTP/2 when the client opens with the HTTP/2 preface (prior knowledge, h2c).
//!
//! ```no_run
//! # async fn run(listener: tokio::net::TcpListener, svc: lmchatkit::ChatService) {
//! use lmchatkit::connection::{self, Connection};
//!
//! let settings = Connection::default();
//! while let Ok((stream, _)) = listener.accept().await {
//!     let (svc, settings) = (svc.clone(), settings.clone());
//!     tokio::spawn(async move { connection::serve(stream, svc, &settings, None).await });
//! }
//! # }
//! ```
//!
//! Decisions:
//! - **The protocol is chosen by peeking at the socket, not by reading it.** hyper-util's auto
//!   builder reads the first bytes itself and hands them to HTTP/1 as a first, short read; hyper
//!   then grows its 8 KiB read buffer to 16 KiB to read the rest of the head, and a connection
//!   keeps that buffer while its stream runs (16.4 KB per connection at 2,000 open streams,
//!   half the heap). Peeked bytes stay in the socket, so hyper's first read takes the whole
//!   head into 8 KiB.
//! - **What an open stream holds**, as heaptrack attributed the heap of 2,000 open native
//!   streams (2026-12-07; the upstream over HTTP/2, as in the bench's open-streams phase), about
//!   30 KiB each: hyper's read buffer, 8 KiB (allocated when hyper reads on after the request,
//!   for the next one or the close, and kept while the response streams), and its write buffer,
//!   8 KiB (reserved when the connection is served); neither size can be set in hyper 1.12. Then
//!   the connection's task, 2.3 KiB; the response's run, 3.4 KiB; the run's log and the other
//!   small allocations, about 8 KiB. An upstream over HTTP/1.1 adds, per stream, its client
//!   connection's read buffer (8.8 KiB) and hyper's dispatch channel (9 KiB: 32 request slots).
//!   Pages never written stay out of RSS, so RSS per stream is below the heap's figure (25.7
//!   KiB at 10,000 streams in the last full run).
//! - **Nothing reaches hyper before the first bytes do.** A client that sends nothing, or only
//!   the start of the HTTP/2 preface, within the header timeout is dropped.
//! - **Every connection runs on a timer**: an HTTP/1 request head must arrive within the header
//!   timeout, which also closes a kept-alive connection that goes quiet; an idle HTTP/2
//!   connection is pinged every [`Connection::keep_alive`] and closed when a ping is not
//!   answered within the larger of that and the header timeout.
//! - Nagle's algorithm is off by default ([`Connection::nodelay`]): with it, delayed ACKs hold
//!   small SSE frames for ~40 ms.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::Watcher;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpStream;

/// The first bytes of every HTTP/2 connection (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How long to wait before peeking again while the bytes so far could start the preface.
const PEEK_PAUSE: Duration = Duration::from_millis(5);

/// How [`serve`] serves a connection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Connection {
    /// How long a client may take to send its first bytes and each HTTP/1 request head.
    pub header_timeout: Duration,
    /// How often an idle HTTP/2 connection is pinged.
    pub keep_alive: Duration,
    /// Sets `TCP_NODELAY` on the socket.
    pub nodelay: bool,
}

impl Default for Connection {
    /// A 10 s header timeout, a ping every 20 s, `TCP_NODELAY` on.
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(20),
            nodelay: true,
        }
    }
}

impl Connection {
    /// With this header timeout.
    pub fn with_header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// With HTTP/2 pings this often.
    pub fn with_keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }

    /// With `TCP_NODELAY` on or off.
    pub fn with_nodelay(mut self, on: bool) -> Self {
        self.nodelay = on;
        self
    }
}

/// Which protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Serves `stream` with `service` until the client or the service ends it, or, when `graceful`
/// is given, until that shutdown signal has let the open requests finish. Connection errors
/// are logged at debug level: they are the client's doing (a reset, a bad head).
pub async fn serve<S, B>(
    stream: TcpStream,
    service: S,
    settings: &Connection,
    graceful: Option<Watcher>,
) where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if settings.nodelay
        && let Err(e) = stream.set_nodelay(true)
    {
        tracing::debug!(error = %e, "could not turn Nagle's algorithm off");
    }
    let protocol = match tokio::time::timeout(settings.header_timeout, protocol(&stream)).await {
        Ok(Ok(Some(p))) => p,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "reading a connection's first bytes failed");
            return;
        }
        Err(_) => {
            tracing::debug!("a connection sent no request within the header timeout");
            return;
        }
    };
    let io = TokioIo::new(stream);
    let service = TowerToHyperService::new(service);
    let ended = match protocol {
        Protocol::Http1 => {
            let mut builder = hyper::server::conn::http1::Builder::new();
            // Without a timer hyper applies no timeout at all: a client that never finishes
            // its request head would hold the connection forever.
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(settings.header_timeout);
            let conn = builder.serve_connection(io, service);
            match graceful {
                Some(w) => w.watch(conn).await,
                None => conn.await,
            }
        }
        Protocol::Http2 => {
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .keep_alive_interval(Some(settings.keep_alive))
                .keep_alive_timeout(settings.header_timeout.max(settings.keep_alive));
            let conn = builder.serve_connection(io, service);
            match graceful {
                Some(w) => w.watch(conn).await,
                None => conn.await,
            }
        }
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// The protocol the first bytes in `stream` announce, peeked (left in the socket); `None` when
/// the client closed without sending any.
async fn protocol(stream: &TcpStream) -> std::io::Result<Option<Protocol>> {
    let mut first = [0u8; PREFACE.len()];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Ok(None);
        }
        if first[..n] != PREFACE[..n] {
            return Ok(Some(Protocol::Http1));
        }
        if n == PREFACE.len() {
            return Ok(Some(Protocol::Http2));
        }
        // The start of the preface so far: a peek would return the same bytes at once.
        tokio::time::sleep(PEEK_PAUSE).await;
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::net::SocketAddr;

    use http_body_util::Full;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A server answering every request `200 ok` with `settings`; its address.
    async fn server(settings: Connection) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let svc = tower::service_fn(|_: Request<Incoming>| async {
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let settings = settings.clone();
                tokio::spawn(async move { serve(stream, svc, &settings, None).await });
            }
        });
        addr
    }

    /// Writes `parts` with a pause between them, then reads until the server has sent `want`
    /// bytes or closed; what it sent.
    async fn exchange(addr: SocketAddr, parts: &[&[u8]], want: usize) -> Vec<u8> {
        let mut client = TcpStream::connect(addr).await.expect("connected");
        for part in parts {
            client.write_all(part).await.expect("written");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while got.len() < want {
            let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await;
            match read.expect("the server answers or closes in time") {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        got
    }

    /// An empty HTTP/2 SETTINGS frame.
    const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

    fn is_http2_settings(reply: &[u8]) -> bool {
        // A frame header: 24-bit length, then the type (4 = SETTINGS), flags 0, stream 0.
        reply.len() >= 9 && reply[3] == 4 && reply[4] == 0 && reply[5..9] == [0; 4]
    }

    #[tokio::test]
    async fn an_http1_request_is_answered_over_http1() {
        let addr = server(Connection::default()).await;
        let reply = exchange(addr, &[b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"], 12).await;
        assert!(reply.starts_with(b"HTTP/1.1 200"), "{reply:?}");
    }

    #[tokio::test]
    async fn a_head_sent_a_byte_at_a_time_is_still_http1_when_it_starts_like_the_preface() {
        let addr = server(Connection::default()).await;
        // "P" and "PR" could start the HTTP/2 preface; "PRO" cannot.
        let parts: [&[u8]; 4] = [b"P", b"R", b"OPFIND", b" / HTTP/1.1\r\nhost: x\r\n\r\n"];
        let reply = exchange(addr, &parts, 12).await;
        assert!(reply.starts_with(b"HTTP/1.1 "), "{reply:?}");
    }

    #[tokio::test]
    async fn a_client_opening_with_the_preface_is_served_http2_even_when_it_arrives_in_pieces() {
        let addr = server(Connection::default()).await;
        let reply = exchange(
            addr,
            &[b"PRI * HTTP/2.0\r\n", b"\r\nSM\r\n\r\n", SETTINGS],
            9,
        )
        .await;
        assert!(is_http2_settings(&reply), "{reply:?}");
    }

    #[tokio::test]
    async fn a_client_that_stops_inside_the_preface_is_dropped_after_the_header_timeout() {
        let settings = Connection::default().with_header_timeout(Duration::from_millis(200));
        let addr = server(settings).await;
        let started = std::time::Instant::now();
        let reply = exchange(addr, &[b"PRI * HTTP"], 1).await;
        assert!(reply.is_empty(), "{reply:?}");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}
