//! Where the operator's grants live: an [`OperatorGrantStore`] keeps one sealed string per
//! configured server name (what [`OperatorOAuth`](super::OperatorOAuth) sealed; a store never
//! sees a token). [`MemoryGrantStore`] keeps them for the process's life, [`FileGrantStore`] in
//! a JSON file (what the app uses, beside its key file).
//!
//! Decisions:
//! - **Not the users' store.** An operator's grant is the service's configuration, not a
//!   user's data: it belongs to a server of the configuration file, not to a row of a
//!   principal's registry, and it must exist when users' servers are off. Keeping it as a row
//!   of a reserved principal in [`UserMcpStore`](crate::user_mcp::UserMcpStore) would put it
//!   in every user's namespace of ids. So it has a store of its own, as small as a store can
//!   be: load and replace one value by name.
//! - **The file** is written whole to a temporary file beside it (mode 0600 on Unix) and
//!   renamed over it, so a crash leaves the old or the new file, never half of one. Instances
//!   that share one file (a shared volume) share the sign-in; each reads the file again before
//!   it uses or refreshes a grant.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;

/// Why a grant store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantStoreError {
    /// Reading or writing the backing storage failed.
    #[error("the operator's MCP sign-ins could not be read or written: {0}")]
    Io(String),
}

/// Keeps the operator's sealed grants, one per configured MCP server name.
#[async_trait]
pub trait OperatorGrantStore: Send + Sync + 'static {
    /// The sealed value stored for `server`, if any.
    async fn load(&self, server: &str) -> Result<Option<String>, GrantStoreError>;

    /// Replaces the value of `server` (`None` removes it).
    async fn store(&self, server: &str, sealed: Option<String>) -> Result<(), GrantStoreError>;
}

/// Keeps the grants in memory: a sign-in lasts until the process ends.
///
/// ```
/// use lmchatkit::mcp::{MemoryGrantStore, OperatorGrantStore};
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let store = MemoryGrantStore::default();
///     store.store("docs", Some("sealed".into())).await.unwrap();
///     assert_eq!(store.load("docs").await.unwrap().as_deref(), Some("sealed"));
///     assert_eq!(format!("{store:?}"), "MemoryGrantStore { servers: [\"docs\"] }");
/// });
/// ```
#[derive(Default)]
pub struct MemoryGrantStore {
    grants: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for MemoryGrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("MemoryGrantStore")
            .field("servers", &grants.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[async_trait]
impl OperatorGrantStore for MemoryGrantStore {
    async fn load(&self, server: &str) -> Result<Option<String>, GrantStoreError> {
        let grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
        Ok(grants.get(server).cloned())
    }

    async fn store(&self, server: &str, sealed: Option<String>) -> Result<(), GrantStoreError> {
        let mut grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
        match sealed {
            Some(s) => grants.insert(server.to_owned(), s),
            None => grants.remove(server),
        };
        Ok(())
    }
}

/// Keeps the grants in a JSON file (`{"server": "sealed", …}`), created on the first sign-in.
///
/// ```
/// use lmchatkit::mcp::{FileGrantStore, OperatorGrantStore};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("operator-mcp.json");
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     FileGrantStore::new(&path).store("docs", Some("sealed".into())).await.unwrap();
///     let again = FileGrantStore::new(&path);
///     assert_eq!(again.load("docs").await.unwrap().as_deref(), Some("sealed"));
///     assert_eq!(again.load("other").await.unwrap(), None);
/// });
/// ```
#[derive(Debug, Clone)]
pub struct FileGrantStore {
    path: PathBuf,
}

impl FileGrantStore {
    /// The store in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(path: &Path) -> Result<BTreeMap<String, String>, GrantStoreError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| GrantStoreError::Io(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(GrantStoreError::Io(format!("{}: {e}", path.display()))),
        }
    }

    fn write(path: &Path, grants: &BTreeMap<String, String>) -> Result<(), GrantStoreError> {
        let io = |e: std::io::Error| GrantStoreError::Io(format!("{}: {e}", path.display()));
        let json = serde_json::to_vec_pretty(grants)
            .map_err(|e| GrantStoreError::Io(format!("{}: {e}", path.display())))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            ".{name}.{}.tmp",
            hex::encode(rand::random::<[u8; 6]>())
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&tmp).and_then(|mut f| {
            std::io::Write::write_all(&mut f, &json)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        Ok(())
    }
}

#[async_trait]
impl OperatorGrantStore for FileGrantStore {
    async fn load(&self, server: &str) -> Result<Option<String>, GrantStoreError> {
        let path = self.path.clone();
        let server = server.to_owned();
        tokio::task::spawn_blocking(move || Ok(Self::read(&path)?.remove(&server)))
            .await
            .map_err(|e| GrantStoreError::Io(e.to_string()))?
    }

    async fn store(&self, server: &str, sealed: Option<String>) -> Result<(), GrantStoreError> {
        let path = self.path.clone();
        let server = server.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut grants = Self::read(&path)?;
            match sealed {
                Some(s) => grants.insert(server, s),
                None => grants.remove(&server),
            };
            Self::write(&path, &grants)
        })
        .await
        .map_err(|e| GrantStoreError::Io(e.to_string()))?
    }
}
