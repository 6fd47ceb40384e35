//! Presets: servers the operator offers every user (the app's `[[user_mcp.presets]]`).
//!
//! Decisions:
//! - **Seeded, not shared.** A preset becomes an ordinary record in each principal's registry
//!   the first time that principal uses the user MCP routes: disabled, with no credentials and
//!   no tool definitions. Nothing of it reaches a turn until the user refreshes, reviews and
//!   accepts its tools and enables it, as for a server they added themselves.
//! - **Idempotent.** Seeding creates only the presets whose slug the principal does not have,
//!   and a racing second seeding loses on the store's duplicate check; a principal already
//!   seeded in this process is not looked at again.
//! - **The operator's URL.** A record is the preset while its slug and URL are the preset's.
//!   It cannot be deleted (disable it instead: a deleted preset would come back at the next
//!   seeding) and its URL cannot change; its name, headers, tools and approvals are the user's.
//!   A user's own server that had the slug first stays theirs.
//! - Preset URLs pass the outbound policy when the presets are set
//!   ([`UserMcp::with_presets`]), and again on every refresh like any URL.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::{UserMcp, UserMcpRecord, UserMcpStoreError, check_slug, now_ms};
use crate::error::Failure;
use crate::host::Principal;
use crate::mcp::OutboundPolicy;

/// A server the operator offers every user.
///
/// ```
/// use lmchatkit::user_mcp::UserMcpPreset;
/// let docs = UserMcpPreset::new("docs", "https://mcp.example.com/mcp").with_name("Docs search");
/// assert_eq!(docs.name, "Docs search");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserMcpPreset {
    /// The slug (the tool namespace) each user's copy gets.
    pub slug: String,
    /// The display name (default: the slug).
    pub name: String,
    /// The endpoint (Streamable HTTP).
    pub url: String,
}

impl UserMcpPreset {
    /// A preset named after its slug.
    pub fn new(slug: impl Into<String>, url: impl Into<String>) -> Self {
        let slug = slug.into();
        Self {
            name: slug.clone(),
            slug,
            url: url.into(),
        }
    }

    /// The display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Checks the slug, the name and the URL (against `policy`); the preset with its name
    /// trimmed and its URL normalised.
    ///
    /// ```
    /// use lmchatkit::mcp::OutboundPolicy;
    /// use lmchatkit::user_mcp::UserMcpPreset;
    /// let policy = OutboundPolicy::new();
    /// assert!(UserMcpPreset::new("docs", "https://mcp.example.com/mcp").check(&policy).is_ok());
    /// let err = UserMcpPreset::new("meta", "https://169.254.169.254/").check(&policy).unwrap_err();
    /// assert!(err.to_string().starts_with("user MCP preset \"meta\": url refused"));
    /// ```
    pub fn check(mut self, policy: &OutboundPolicy) -> Result<Self, PresetError> {
        let refuse = |reason: String| PresetError {
            slug: self.slug.clone(),
            reason,
        };
        check_slug(&self.slug).map_err(|e| refuse(e.to_string()))?;
        let name = super::check_name(&self.name).map_err(|e| refuse(e.to_string()))?;
        let url = super::check_url(policy, &self.url).map_err(|e| refuse(e.to_string()))?;
        (self.name, self.url) = (name, url);
        Ok(self)
    }
}

/// A preset that [`UserMcp::with_presets`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("user MCP preset {slug:?}: {reason}")]
#[non_exhaustive]
pub struct PresetError {
    /// The preset's slug.
    pub slug: String,
    /// Why.
    pub reason: String,
}

/// The presets and which principals this process has seeded.
#[derive(Default)]
pub(crate) struct Presets {
    list: Vec<UserMcpPreset>,
    seeded: Mutex<HashSet<String>>,
}

impl UserMcp {
    /// Offers these servers to every user (see the module docs of `presets`): checked here
    /// (slug, name, the outbound policy on the URL, no two with one slug).
    ///
    /// ```
    /// use lmchatkit::mcp::OutboundPolicy;
    /// use lmchatkit::secrets::sealing::{Keyring, SealingKey};
    /// use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp, UserMcpPreset};
    ///
    /// let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    /// let um = UserMcp::new(MemoryUserMcpStore::default(), keyring, OutboundPolicy::new());
    /// let ok = um.clone().with_presets([UserMcpPreset::new("docs", "https://mcp.example.com/mcp")]);
    /// assert!(ok.is_ok());
    /// let refused = um.with_presets([UserMcpPreset::new("meta", "https://169.254.169.254/")]);
    /// assert!(refused.unwrap_err().to_string().contains("meta"));
    /// ```
    pub fn with_presets(
        mut self,
        presets: impl IntoIterator<Item = UserMcpPreset>,
    ) -> Result<Self, PresetError> {
        let mut list: Vec<UserMcpPreset> = Vec::new();
        for p in presets {
            if list.iter().any(|q| q.slug == p.slug) {
                return Err(PresetError {
                    slug: p.slug,
                    reason: "the slug is given twice".into(),
                });
            }
            list.push(p.check(&self.policy)?);
        }
        self.presets = Arc::new(Presets {
            list,
            seeded: Mutex::default(),
        });
        Ok(self)
    }

    /// Whether `record` is one of the operator's presets (same slug and URL).
    pub(crate) fn is_preset(&self, record: &UserMcpRecord) -> bool {
        self.presets
            .list
            .iter()
            .any(|p| p.slug == record.slug && p.url == record.url)
    }

    /// Adds the presets `principal` lacks to their registry, disabled and without tools.
    pub(crate) async fn seed_presets(&self, principal: &Principal) -> Result<(), Failure> {
        let presets = &self.presets;
        if presets.list.is_empty() || presets.seeded().contains(principal.id()) {
            return Ok(());
        }
        let have: HashSet<String> = self
            .store
            .list(principal)
            .await?
            .into_iter()
            .map(|r| r.slug)
            .collect();
        for p in presets.list.iter().filter(|p| !have.contains(&p.slug)) {
            let mut record = UserMcpRecord::new(&p.slug, &p.name, &p.url, now_ms());
            record.enabled = false;
            match self.store.create(principal, record).await {
                Ok(()) => {
                    tracing::info!(principal = principal.id(), slug = %p.slug, "user MCP preset seeded");
                }
                // Another request seeded it first.
                Err(UserMcpStoreError::Duplicate(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        presets.seeded().insert(principal.id().to_owned());
        Ok(())
    }
}

impl Presets {
    fn seeded(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.seeded.lock().unwrap_or_else(|p| p.into_inner())
    }
}
