//! A machine quiet enough for a timed assertion. The browser tests may run beside the other
//! test binaries (`scripts/test.sh` runs them after the others since 2026-12-07; a developer's
//! runs may overlap them), and Chromium's bursts of work would stretch a latency a test
//! asserts (a stop to another instance's upstream once took 180 ms beside them). So every browser
//! test holds [`shared`] while it runs, and a test that times something holds [`exclusive`]
//! around what it times: it waits for the browser tests under way to end, and none starts until
//! it is done.
//!
//! Two lock files in the temporary folder, locked with `flock(2)` (through `std::fs::File`), so
//! the rule holds across test binaries and processes: `gate`, taken by each side on its way in
//! and kept by an exclusive holder, so browser tests that keep coming cannot starve a timed
//! test; and `quiet`, shared by browser tests and exclusive for a timed one. A lock goes with
//! its holder's file, also when the process dies.
//!
//! `server/tests/it/quiet.rs` is the library's copy of [`exclusive`] (its tests cannot depend
//! on this crate); both name the same files.

use std::fs::{File, OpenOptions};

/// A held lock: released when dropped.
#[must_use = "the lock is released when this is dropped"]
pub struct Held {
    _files: Vec<File>,
}

fn lock_file(name: &str) -> File {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(std::env::temp_dir().join(format!("lmchatkit-tests-{name}.lock")))
        .expect("a lock file in the temporary folder")
}

/// Held by a browser test while it runs. Blocks while a timed test holds [`exclusive`].
pub fn shared() -> Held {
    let gate = lock_file("gate");
    gate.lock().expect("lock the gate");
    let quiet = lock_file("quiet");
    quiet.lock_shared().expect("share the quiet lock");
    drop(gate);
    Held {
        _files: vec![quiet],
    }
}

/// Held by a test around a latency it asserts: no browser test runs meanwhile.
pub fn exclusive() -> Held {
    let gate = lock_file("gate");
    gate.lock().expect("lock the gate");
    let quiet = lock_file("quiet");
    quiet.lock().expect("lock the quiet lock");
    Held {
        _files: vec![gate, quiet],
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn a_timed_test_waits_for_a_browser_test_and_holds_off_the_next() {
        let browser = super::shared();
        let timed_runs = Arc::new(AtomicBool::new(false));
        let timed = {
            let timed_runs = timed_runs.clone();
            std::thread::spawn(move || {
                let held = super::exclusive();
                timed_runs.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(200));
                timed_runs.store(false, Ordering::SeqCst);
                drop(held);
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !timed_runs.load(Ordering::SeqCst),
            "it waits for the browser test"
        );
        drop(browser);
        // Once the timed test is in, the next browser test waits for it to end.
        while !timed_runs.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let next = super::shared();
        assert!(
            !timed_runs.load(Ordering::SeqCst),
            "the next browser test waited"
        );
        drop(next);
        timed.join().unwrap();
    }
}
