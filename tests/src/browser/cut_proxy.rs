//! A TCP proxy on loopback in front of a served service, whose open connections a test cuts at
//! once: a network drop between the browser and the service (the browser loads the page through
//! the proxy, so every request of the page goes through it).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A running proxy; stops accepting when dropped (connections it holds are cut then too).
pub struct CutProxy {
    /// Where the browser connects.
    pub addr: SocketAddr,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut_all();
    }
}

impl CutProxy {
    /// Proxies 127.0.0.1 on a random port to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let held = conns.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let pipe = tokio::spawn(async move {
                    let Ok(mut upstream) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = upstream.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
                held.lock().unwrap().push(pipe.abort_handle());
            }
        });
        Self { addr, conns, task }
    }

    /// `http://127.0.0.1:N` + `path`, through the proxy.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Cuts every connection open now (both sides see it closed); answers how many were open.
    pub fn cut_all(&self) -> usize {
        let conns = std::mem::take(&mut *self.conns.lock().unwrap());
        let open = conns.iter().filter(|c| !c.is_finished()).count();
        for c in conns {
            c.abort();
        }
        open
    }
}
