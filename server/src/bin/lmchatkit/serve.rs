//! Serving one listener until shutdown. Written for reuse: a second listener (e.g. a sandbox
//! origin) is one more `serve` call with a clone of the same stop signal.
//!
//! Every connection runs on a timer: a request head (HTTP/1) must arrive within the header
//! timeout (`--header-timeout`, 10 s by default), which also closes a kept-alive connection
//! that goes quiet, and an idle HTTP/2 connection is pinged and closed when it does not answer.
//! An accept that fails (out of file descriptors) is logged and retried after a pause instead
//! of spinning; the stream cap (`descriptors`) keeps streams from getting there.

use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use hyper_util::service::TowerToHyperService;
use lmchatkit::ChatService;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::{GateLayer, Gated};

/// How long open connections (streams) may finish after shutdown was asked for.
pub const DRAIN: Duration = Duration::from_secs(10);
/// How long accepting pauses after it failed (e.g. out of file descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// HTTP/2 pings on an idle connection; one unanswered within the timeout closes it.
const KEEP_ALIVE: Duration = Duration::from_secs(20);

/// A stop signal: becomes `true` on SIGINT/SIGTERM. Clone the receiver for each listener.
pub fn stop_on_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = tx.send(true);
    });
    rx
}

/// Accepts connections until `stop` turns true, then lets open ones finish for up to [`DRAIN`].
pub async fn serve(
    listener: TcpListener,
    svc: ChatService,
    gate: GateLayer,
    mut stop: watch::Receiver<bool>,
    header_timeout: Duration,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut pause = false;
    loop {
        if std::mem::take(&mut pause) {
            tokio::time::sleep(ACCEPT_PAUSE).await;
        }
        tokio::select! {
            conn = listener.accept() => {
                let (stream, peer) = match conn {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors (EMFILE) or memory: the listener stays readable, so
                        // accepting again at once would spin. Pause; streams ending free some.
                        tracing::warn!(error = %e, "accepting a connection failed; pausing");
                        pause = true;
                        continue;
                    }
                };
                // Without it, Nagle + delayed ACK hold small SSE frames for ~40 ms.
                let _ = stream.set_nodelay(true);
                let svc = gate.for_peer(svc.clone(), peer);
                tokio::spawn(connection(stream, svc, graceful.watcher(), header_timeout));
            }
            // An error means the sender is gone: stop as well.
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    tracing::info!(
        "shutting down; waiting up to {} s for open streams",
        DRAIN.as_secs()
    );
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}

/// Serves one connection. The protocol is detected from the first bytes, so a client that
/// sends none within the header timeout is dropped before hyper ever sees it.
async fn connection(
    stream: tokio::net::TcpStream,
    svc: Gated<ChatService>,
    graceful: Watcher,
    header_timeout: Duration,
) {
    let mut first = [0u8; 1];
    match tokio::time::timeout(header_timeout, stream.peek(&mut first)).await {
        Ok(Ok(n)) if n > 0 => {}
        _ => return,
    }
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Without a timer hyper applies no timeout at all: a client that never finishes its
    // request head would hold the connection forever.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(KEEP_ALIVE))
        .keep_alive_timeout(header_timeout.max(KEEP_ALIVE));
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(svc))
        .into_owned();
    if let Err(e) = graceful.watch(conn).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} },
            Err(e) => {
                tracing::warn!(error = %e, "no SIGTERM handler; stopping on Ctrl-C only");
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
