//! Test helpers: captured log output, and (feature `watch`) a callback counter that waits
//! with a deadline, never a fixed long sleep.

use std::io;
use std::sync::{Arc, Mutex};

/// Never any thread's default; registered only so that `tracing`'s process-wide callsite
/// interest cache is computed over several dispatchers and answers "sometimes". Without it a
/// sibling test thread with no subscriber can be the first to hit a `warn!` and cache it as
/// "never" for the whole process, and a capture would miss the event (a known flake).
struct Anchor;

impl tracing::Subscriber for Anchor {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

static ANCHORS: std::sync::OnceLock<[tracing::Dispatch; 2]> = std::sync::OnceLock::new();

/// Runs `f` with a `tracing` subscriber that captures WARN and above; returns the output.
pub(crate) fn capture_warnings(f: impl FnOnce()) -> String {
    capture_logs(tracing::Level::WARN, f)
}

/// Runs `f` with a `tracing` subscriber that captures `level` and above (spans too, as the
/// context of each line); returns the output.
pub(crate) fn capture_logs(level: tracing::Level, f: impl FnOnce()) -> String {
    capture_with(
        |writer| {
            tracing_subscriber::fmt()
                .with_max_level(level)
                .with_ansi(false)
                .with_writer(writer)
                .finish()
        },
        f,
    )
}

/// Where a captured subscriber writes: one buffer, shared by every line.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Runs `f` with the subscriber `make` builds around a capturing writer (behind the same
/// anchors as [`capture_logs`]); returns what it wrote.
pub(crate) fn capture_with<S>(make: impl FnOnce(Captured) -> S, f: impl FnOnce()) -> String
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    ANCHORS.get_or_init(|| {
        [
            tracing::Dispatch::new(Anchor),
            tracing::Dispatch::new(Anchor),
        ]
    });
    let buf = Captured::default();
    tracing::subscriber::with_default(make(buf.clone()), f);
    let out = buf.0.lock().unwrap().clone();
    String::from_utf8(out).unwrap()
}

#[cfg(feature = "watch")]
pub(crate) use counter::Counter;

#[cfg(feature = "watch")]
mod counter {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use crate::presets::{DEBOUNCE, OnChange};

    /// Counts `on_change` calls.
    #[derive(Clone, Default)]
    pub(crate) struct Counter(Arc<AtomicUsize>);

    impl Counter {
        pub(crate) fn callback(&self) -> OnChange {
            let count = self.0.clone();
            Arc::new(move || {
                count.fetch_add(1, Ordering::SeqCst);
            })
        }

        pub(crate) fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }

        /// Polls until the count reaches `n` (panics after 10 s or when it overshoots).
        pub(crate) fn wait_for(&self, n: usize) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.get() < n {
                assert!(
                    Instant::now() < deadline,
                    "on_change fired {} times, expected {n}",
                    self.get()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(self.get(), n, "on_change fired too often");
        }

        /// Checks that no further call arrives within a few debounce periods.
        pub(crate) fn assert_stays(&self, n: usize) {
            let deadline = Instant::now() + DEBOUNCE * 3;
            while Instant::now() < deadline {
                assert_eq!(self.get(), n, "on_change fired again");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
