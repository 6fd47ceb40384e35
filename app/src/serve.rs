//! Serving one listener until shutdown. Written for reuse: a second listener (e.g. a sandbox
//! origin) is one more `serve` call with a clone of the same stop signal.
//!
//! Each connection is served by `lmchatkit::connection::serve` (HTTP/1.1 or h2c, on a timer:
//! a request head must arrive within `--header-timeout`, 10 s by default).
//! An accept that fails (out of file descriptors) is logged and retried after a pause instead
//! of spinning; the stream cap (`descriptors`) keeps streams from getting there.

use std::time::Duration;

use lmchatkit::ChatService;
use lmchatkit::connection::{self, Connection};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::GateLayer;

/// How long open connections (streams) may finish after shutdown was asked for.
pub const DRAIN: Duration = Duration::from_secs(10);
/// How long accepting pauses after it failed (e.g. out of file descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

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
    let settings = Connection::default().with_header_timeout(header_timeout);
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
                let svc = gate.for_peer(svc.clone(), peer);
                let (settings, watcher) = (settings.clone(), graceful.watcher());
                tokio::spawn(async move {
                    connection::serve(stream, svc, &settings, Some(watcher)).await;
                });
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
