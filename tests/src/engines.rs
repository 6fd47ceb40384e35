//! The PostgreSQL and Redis on the machine (127.0.0.1:5432, trust auth, database `test`;
//! 127.0.0.1:6379), for the tests of several app instances: each test gets a schema and a key
//! prefix of its own, dropped when it ends, so tests running at once never share state.
//!
//! A test that needs them and cannot reach them skips with a note, unless `CI` is set (CI
//! machines run both), where it fails: a broken setup must not pass silently.

use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The machine's PostgreSQL, as `psql` and the app take it.
pub const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The machine's Redis.
pub const REDIS: &str = "redis://127.0.0.1:6379";

/// Whether a TCP connection to `addr` opens; `false` prints why the test skips (or panics
/// under `CI`).
fn reachable(what: &str, addr: &str) -> bool {
    let ok = addr
        .parse()
        .ok()
        .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok())
        .is_some();
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is not reachable at {addr} (CI machines run it)"
        );
        eprintln!("SKIPPED: {what} is not reachable at {addr}");
    }
    ok
}

/// A lower-case name part no other test of any process has at the same time.
fn random_suffix() -> String {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::UNIX_EPOCH
        .elapsed()
        .map_or(0, |d| d.as_nanos());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}_{:x}_{n}", std::process::id())
}

/// A PostgreSQL schema of one test (dropped with everything in it when dropped).
pub struct Schema {
    pub name: String,
}

impl Schema {
    /// The database URL whose connections use only this schema.
    pub fn url(&self) -> String {
        format!("{POSTGRES}?options=-csearch_path%3D{}", self.name)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = psql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
    }
}

fn psql(sql: &str) -> Result<(), String> {
    let out = Command::new("psql")
        .args([POSTGRES, "-v", "ON_ERROR_STOP=1", "-qc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A fresh schema, or `None` (with a note) where PostgreSQL is not reachable outside CI.
pub fn schema() -> Option<Schema> {
    if !reachable("PostgreSQL", "127.0.0.1:5432") {
        return None;
    }
    let name = format!("lmck_test_{}", random_suffix());
    psql(&format!("CREATE SCHEMA {name}")).unwrap_or_else(|e| panic!("creating {name}: {e}"));
    Some(Schema { name })
}

/// A Redis key prefix of one test (its keys are deleted when dropped).
pub struct Prefix {
    pub prefix: String,
}

impl Drop for Prefix {
    fn drop(&mut self) {
        // Scan and delete in Redis itself: no key list travels to the test.
        let script = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do \
                      redis.call('DEL', k) n = n + 1 end return n";
        let _ = Command::new("redis-cli")
            .args(["-u", REDIS, "EVAL", script, "0", &self.prefix])
            .output();
    }
}

/// A fresh key prefix, or `None` (with a note) where Redis is not reachable outside CI.
pub fn redis_prefix() -> Option<Prefix> {
    if !reachable("Redis", "127.0.0.1:6379") {
        return None;
    }
    Some(Prefix {
        prefix: format!("lmck-test-{}:", random_suffix()),
    })
}

/// A TCP gate on loopback in front of a server (PostgreSQL in the tests): closed, it cuts every
/// connection through it and drops new ones as they come, which is what clients see of a
/// restart; opened again, connections pass as before.
pub struct Gate {
    /// Where clients connect.
    pub addr: std::net::SocketAddr,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Gate {
    /// An open gate on a free port in front of `target` (`host:port`).
    pub async fn start(target: &str) -> Self {
        use std::sync::atomic::AtomicBool;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the gate");
        let addr = listener.local_addr().expect("the gate's address");
        let open = std::sync::Arc::new(AtomicBool::new(true));
        let conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>> =
            std::sync::Arc::default();
        let (is_open, held, target) = (open.clone(), conns.clone(), target.to_owned());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                if !is_open.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees its connection closed
                }
                let target = target.clone();
                let pipe = tokio::spawn(async move {
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
                held.lock().unwrap().push(pipe.abort_handle());
            }
        });
        Self {
            addr,
            open,
            conns,
            task,
        }
    }

    /// `url` with the address `127.0.0.1:5432` replaced by the gate's.
    pub fn url(&self, url: &str) -> String {
        url.replace("127.0.0.1:5432", &self.addr.to_string())
    }

    /// Cuts every connection open now and drops new ones until [`Gate::open`].
    pub fn close(&self) {
        self.open.store(false, Ordering::SeqCst);
        for c in std::mem::take(&mut *self.conns.lock().unwrap()) {
            c.abort();
        }
    }

    /// Lets connections through again.
    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
        self.close();
    }
}
