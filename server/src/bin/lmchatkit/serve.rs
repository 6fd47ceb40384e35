//! Serving one listener until shutdown. Written for reuse: a second listener (e.g. a sandbox
//! origin) is one more `serve` call with a clone of the same stop signal.

use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use lmchatkit::ChatService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long open connections (streams) may finish after shutdown was asked for.
pub const DRAIN: Duration = Duration::from_secs(10);

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
pub async fn serve(listener: TcpListener, svc: ChatService, mut stop: watch::Receiver<bool>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        tokio::select! {
            conn = listener.accept() => {
                let Ok((stream, _)) = conn else { continue };
                // Without it, Nagle + delayed ACK hold small SSE frames for ~40 ms.
                let _ = stream.set_nodelay(true);
                let svc = TowerToHyperService::new(svc.clone());
                let conn = auto::Builder::new(TokioExecutor::new())
                    .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                    .into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
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
