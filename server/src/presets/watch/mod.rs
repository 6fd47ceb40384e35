//! Shared machinery of the directory-backed presets ([`PersonaDir`](super::PersonaDir) and
//! [`CommandDir`](super::CommandDir)): listing the candidate files of a directory, the stable
//! file id, the loaded list behind a lock, and (feature `watch`) the debounced watcher.
//!
//! Decisions (where the Go package was silent or buggy):
//! - A missing or unreadable directory is an empty list plus a `tracing::warn!`, never an error.
//! - Only regular files (or symlinks to them) directly in the directory count; names starting
//!   with `_` (drafts) or `.` (hidden and editor temporary files) are skipped; the extension
//!   match is exact (`.toml`, `.md`).
//! - The debounce is trailing-edge: a reload runs once no relevant event arrived for
//!   [`DEBOUNCE`], or at the latest [`MAX_DELAY`] after the first event of a burst (so a file
//!   that is written continuously still shows up). `notify-debouncer-mini` is not used for this:
//!   it flushes each path separately once *that* path is quiet, so one burst over many files can
//!   come out as two batches. A raw `notify` watcher feeding one debounce thread gives exactly
//!   one reload per burst.
//! - `on_change` is called after a watcher-triggered reload only when the list actually changed
//!   (a `touch` or an unrelated file does not make every browser refetch).
//! - The watcher also watches the parent directory (best effort) and, while the directory is
//!   missing, checks for it every [`POLL_MISSING`]; a directory created, deleted, recreated or
//!   renamed into place after startup is picked up.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::OnChange;

/// How long a directory must stay quiet after a change before it is reloaded.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// The longest a reload waits while changes keep arriving.
pub const MAX_DELAY: Duration = Duration::from_secs(2);

/// How often a watcher checks whether a missing directory has appeared.
pub const POLL_MISSING: Duration = Duration::from_secs(1);

/// The stable id of a file-backed preset: the first 8 hex characters of the SHA-256 of
/// the file stem. It does not change when the display name inside the file changes, and it is
/// safe in URLs.
///
/// ```
/// let id = lmchatkit::presets::stable_id("coder");
/// assert_eq!(id.len(), 8);
/// assert_eq!(id, lmchatkit::presets::stable_id("coder"));
/// assert_ne!(id, lmchatkit::presets::stable_id("writer"));
/// ```
pub fn stable_id(stem: &str) -> String {
    let digest = Sha256::digest(stem.as_bytes());
    hex::encode(&digest[..4])
}

/// One candidate file of a presets directory.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub path: PathBuf,
    /// The file name (`coder.toml`).
    pub file_name: String,
    /// The file name without the extension (`coder`).
    pub stem: String,
}

/// The files directly in `dir` whose name ends in `.{ext}`, in file-name order, skipping
/// directories, drafts (`_*`), hidden files (`.*`) and names that are not UTF-8. A missing or
/// unreadable directory is logged and yields nothing.
pub(crate) fn list_files(dir: &Path, ext: &str) -> Vec<Candidate> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            tracing::warn!(dir = %dir.display(), error = %err, "presets directory is not readable; it is empty for now");
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                tracing::warn!(dir = %dir.display(), error = %err, "presets: cannot read a directory entry");
                continue;
            }
        };
        let path = entry.path();
        if path.extension() != Some(OsStr::new(ext)) {
            continue;
        }
        let Some(file_name) = entry.file_name().to_str().map(str::to_owned) else {
            tracing::warn!(file = %path.display(), "presets: skipping a file whose name is not UTF-8");
            continue;
        };
        if file_name.starts_with('_') || file_name.starts_with('.') {
            continue;
        }
        // `metadata` follows symlinks: a link to a file counts, a directory never does.
        match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => continue,
            Err(err) => {
                tracing::warn!(file = %path.display(), error = %err, "presets: skipping an unreadable file");
                continue;
            }
        }
        let stem = file_name[..file_name.len() - ext.len() - 1].to_owned();
        if stem.is_empty() {
            continue;
        }
        out.push(Candidate {
            path,
            file_name,
            stem,
        });
    }
    out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    out
}

/// Reads a candidate as UTF-8 text (a leading byte-order mark removed), logging failures.
pub(crate) fn read_text(file: &Candidate) -> Option<String> {
    match fs::read_to_string(&file.path) {
        Ok(text) => Some(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_owned(),
            None => text,
        }),
        Err(err) => {
            tracing::warn!(file = %file.path.display(), error = %err, "presets: skipping an unreadable file");
            None
        }
    }
}

/// Loads the whole list from a directory.
pub(crate) type Loader<T> = fn(&Path) -> Vec<T>;

/// The loaded list and how to load it again; shared with the watcher thread.
struct Shared<T> {
    dir: PathBuf,
    load: Loader<T>,
    items: RwLock<Vec<T>>,
    /// Serialises reloads so an older load never overwrites a newer one.
    reloading: Mutex<()>,
}

impl<T: Clone + PartialEq> Shared<T> {
    fn reload(&self) -> bool {
        let _guard = self
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let fresh = (self.load)(&self.dir);
        let mut items = self.items.write().unwrap_or_else(PoisonError::into_inner);
        if *items == fresh {
            false
        } else {
            *items = fresh;
            true
        }
    }
}

/// A directory-backed list: loaded eagerly, reloadable, and (feature `watch`) watched.
pub(crate) struct WatchedDir<T> {
    shared: Arc<Shared<T>>,
    #[cfg(feature = "watch")]
    watcher: Option<imp::DirWatcher>,
}

impl<T> std::fmt::Debug for WatchedDir<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchedDir")
            .field("dir", &self.shared.dir)
            .field("watching", &self.is_watching())
            .finish()
    }
}

impl<T> WatchedDir<T> {
    /// The directory (made absolute).
    pub(crate) fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// True while a watcher is running.
    pub(crate) fn is_watching(&self) -> bool {
        #[cfg(feature = "watch")]
        {
            self.watcher.is_some()
        }
        #[cfg(not(feature = "watch"))]
        {
            false
        }
    }
}

impl<T: Clone + PartialEq + Send + Sync + 'static> WatchedDir<T> {
    /// Loads `dir` now and, with feature `watch`, starts watching it (`on_change` is optional).
    /// `interesting` says which file names can change the list (`*.toml`, `*.md`).
    pub(crate) fn open(
        dir: PathBuf,
        load: Loader<T>,
        interesting: fn(&Path) -> bool,
        on_change: Option<OnChange>,
    ) -> Self {
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let items = load(&dir);
        let shared = Arc::new(Shared {
            dir,
            load,
            items: RwLock::new(items),
            reloading: Mutex::new(()),
        });
        #[cfg(feature = "watch")]
        {
            let weak = Arc::downgrade(&shared);
            let reload: imp::Reload = Arc::new(move || {
                weak.upgrade()
                    .is_some_and(|shared: Arc<Shared<T>>| shared.reload())
            });
            let watcher =
                imp::DirWatcher::start(shared.dir.clone(), interesting, reload, on_change);
            if watcher.is_some() {
                // A change between the first load and the watch being in place would be lost.
                shared.reload();
            }
            Self { shared, watcher }
        }
        #[cfg(not(feature = "watch"))]
        {
            let _ = (interesting, on_change);
            Self { shared }
        }
    }

    /// A copy of the current list.
    pub(crate) fn items(&self) -> Vec<T> {
        self.shared
            .items
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Loads the directory again; true when the list changed.
    pub(crate) fn reload(&self) -> bool {
        self.shared.reload()
    }
}

#[cfg(feature = "watch")]
mod imp {
    //! The watcher thread: raw `notify` events in, one reload per quiet period out.

    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::mpsc::{self, RecvTimeoutError};
    use std::time::Instant;

    use notify::event::{AccessKind, AccessMode};
    use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

    use super::{DEBOUNCE, MAX_DELAY, OnChange, POLL_MISSING};

    /// Reloads the list; true when it changed (false as well once the directory is gone).
    pub(super) type Reload = Arc<dyn Fn() -> bool + Send + Sync>;

    enum Msg {
        Fs(notify::Result<Event>),
        Stop,
    }

    /// Owns the watcher thread; dropping it stops the thread (which then drops the `notify`
    /// watcher). The thread is not joined, so a reload already running may still finish.
    pub(super) struct DirWatcher {
        stop: mpsc::Sender<Msg>,
    }

    impl Drop for DirWatcher {
        fn drop(&mut self) {
            let _ = self.stop.send(Msg::Stop);
        }
    }

    impl DirWatcher {
        pub(super) fn start(
            dir: PathBuf,
            interesting: fn(&Path) -> bool,
            reload: Reload,
            on_change: Option<OnChange>,
        ) -> Option<Self> {
            let (tx, rx) = mpsc::channel();
            let events = tx.clone();
            let watcher = match notify::recommended_watcher(move |res| {
                let _ = events.send(Msg::Fs(res));
            }) {
                Ok(watcher) => watcher,
                Err(err) => {
                    tracing::warn!(dir = %dir.display(), error = %err, "presets: cannot start a file watcher; live reload is off");
                    return None;
                }
            };
            let mut state = Loop {
                watcher,
                dir,
                interesting,
                dir_watched: false,
                watch_warned: false,
                reload,
                on_change,
            };
            if let Some(parent) = state.dir.parent()
                && parent.is_dir()
                && let Err(err) = state.watcher.watch(parent, RecursiveMode::NonRecursive)
            {
                tracing::debug!(dir = %parent.display(), error = %err, "presets: cannot watch the parent directory");
            }
            // Without the directory, the thread polls for it (and the parent watch may see it).
            let _ = state.ensure_dir_watch(false);
            let spawned = std::thread::Builder::new()
                .name("lmchatkit-presets-watch".into())
                .spawn(move || state.run(rx));
            match spawned {
                Ok(_) => Some(Self { stop: tx }),
                Err(err) => {
                    tracing::warn!(error = %err, "presets: cannot start the watcher thread; live reload is off");
                    None
                }
            }
        }
    }

    struct Loop {
        watcher: RecommendedWatcher,
        dir: PathBuf,
        interesting: fn(&Path) -> bool,
        dir_watched: bool,
        /// The failure to watch the directory was logged already.
        watch_warned: bool,
        reload: Reload,
        on_change: Option<OnChange>,
    }

    impl Loop {
        fn run(mut self, rx: mpsc::Receiver<Msg>) {
            // (first event of the pending burst, latest event of it)
            let mut pending: Option<(Instant, Instant)> = None;
            // An event touched the directory itself: re-establish its watch before reloading.
            let mut dir_touched = false;
            loop {
                let timeout = match pending {
                    Some((first, last)) => Some(
                        (last + DEBOUNCE)
                            .min(first + MAX_DELAY)
                            .saturating_duration_since(Instant::now()),
                    ),
                    None if !self.dir_watched => Some(POLL_MISSING),
                    None => None,
                };
                let msg = match timeout {
                    Some(timeout) => rx.recv_timeout(timeout),
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match msg {
                    Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Ok(Msg::Fs(Err(err))) => {
                        tracing::warn!(dir = %self.dir.display(), error = %err, "presets: file watcher error");
                    }
                    Ok(Msg::Fs(Ok(event))) => {
                        let (relevant, touches_dir) = self.classify(&event);
                        dir_touched |= touches_dir;
                        if relevant || touches_dir {
                            let now = Instant::now();
                            pending = Some((pending.map_or(now, |(first, _)| first), now));
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if pending.is_none() {
                            // Polling for a missing directory.
                            if self.dir.is_dir() && self.ensure_dir_watch(true) {
                                self.reload_and_notify();
                            }
                            continue;
                        }
                        pending = None;
                        let _ = self.ensure_dir_watch(std::mem::take(&mut dir_touched));
                        self.reload_and_notify();
                    }
                }
            }
        }

        /// (an entry of the directory that can change the list, the directory itself)
        fn classify(&self, event: &Event) -> (bool, bool) {
            if let EventKind::Access(kind) = event.kind
                && kind != AccessKind::Close(AccessMode::Write)
            {
                // Opening and reading (our own reloads included) changes nothing.
                return (false, false);
            }
            let mut relevant = false;
            let mut touches_dir = false;
            for path in &event.paths {
                if path == &self.dir {
                    touches_dir = true;
                } else if path.parent() == Some(self.dir.as_path()) && (self.interesting)(path) {
                    relevant = true;
                }
            }
            (relevant, touches_dir)
        }

        /// Watches the directory if it exists; `renew` drops a possibly stale watch first (the
        /// directory was deleted, recreated or renamed). True when the directory is watched.
        fn ensure_dir_watch(&mut self, renew: bool) -> bool {
            if renew && self.dir_watched {
                let _ = self.watcher.unwatch(&self.dir);
                self.dir_watched = false;
            }
            if self.dir_watched || !self.dir.is_dir() {
                return self.dir_watched;
            }
            match self.watcher.watch(&self.dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.dir_watched = true;
                    self.watch_warned = false;
                }
                Err(err) if !self.watch_warned => {
                    self.watch_warned = true;
                    tracing::warn!(dir = %self.dir.display(), error = %err, "presets: cannot watch the directory; retrying every second");
                }
                Err(_) => {}
            }
            self.dir_watched
        }

        fn reload_and_notify(&self) {
            if (self.reload)() {
                tracing::debug!(dir = %self.dir.display(), "presets reloaded");
                if let Some(on_change) = &self.on_change {
                    on_change();
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support;

/// The methods [`PersonaDir`](super::PersonaDir) and [`CommandDir`](super::CommandDir) share,
/// for a struct whose field `dir` is a [`WatchedDir`] (written once here, not once per kind).
macro_rules! watched_dir_methods {
    () => {
        /// Loads the directory again now (without waiting for the watcher, or without the `watch`
        /// feature). Returns true when the list changed. Does not call `on_change`.
        pub fn reload(&self) -> bool {
            self.dir.reload()
        }

        /// The directory, made absolute.
        pub fn dir(&self) -> &Path {
            self.dir.dir()
        }

        /// True while a watcher runs (feature `watch`, and the watcher could start).
        pub fn is_watching(&self) -> bool {
            self.dir.is_watching()
        }
    };
}
pub(super) use watched_dir_methods;
