//! The library's copy of `lmchatkit_tests::quiet::exclusive` (tests/src/quiet.rs says why the
//! browser tests and the timed ones take turns): the same two lock files, taken the same way.

use std::fs::{File, OpenOptions};

fn lock_file(name: &str) -> File {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(std::env::temp_dir().join(format!("lmchatkit-tests-{name}.lock")))
        .expect("a lock file in the temporary folder")
}

/// Held (both files) around a latency a test asserts: no browser test runs meanwhile.
pub async fn exclusive() -> (File, File) {
    tokio::task::spawn_blocking(|| {
        let gate = lock_file("gate");
        gate.lock().expect("lock the gate");
        let quiet = lock_file("quiet");
        quiet.lock().expect("lock the quiet lock");
        (gate, quiet)
    })
    .await
    .expect("the lock's thread")
}
