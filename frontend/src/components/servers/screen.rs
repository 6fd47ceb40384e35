//! The screen's state, shared by its panes: the servers as the service answered them, the pane
//! shown, a failure to show, the refresh under way and the server to focus.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{OAuthStatus, ToolReview, UserMcpServer};

use crate::state::Store;

/// What the dialog shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Pane {
    /// The servers.
    List,
    /// The add form.
    Add,
    /// The review of a refresh of the server with this slug.
    Review(String, ToolReview),
}

/// The dialog's state, shared by its panes (all `Copy` handles).
#[derive(Clone, Copy)]
pub struct Screen {
    store: Store,
    /// The servers (`None` while loading).
    pub servers: RwSignal<Option<Vec<UserMcpServer>>>,
    /// The pane shown.
    pub pane: RwSignal<Pane>,
    /// A failure to show above the list (loading, refreshing, switching, deleting).
    pub error: RwSignal<Option<String>>,
    /// The slug being refreshed.
    pub refreshing: RwSignal<Option<String>>,
    /// The server to focus when its row appears.
    pub focus: RwSignal<Option<String>>,
}

impl Screen {
    pub(super) fn new(store: Store, focus: Option<String>) -> Self {
        Self {
            store,
            servers: RwSignal::new(None),
            pane: RwSignal::new(Pane::List),
            error: RwSignal::new(None),
            refreshing: RwSignal::new(None),
            focus: RwSignal::new(focus),
        }
    }

    /// Reads the list again.
    pub fn reload(self) {
        spawn_local(async move {
            match self.store.api().user_mcp_servers().await {
                Ok(list) => self.servers.set(Some(list)),
                Err(e) => {
                    self.servers.set(Some(Vec::new()));
                    self.error.set(Some(format!(
                        "Could not load your servers: {}",
                        e.message()
                    )));
                }
            }
        });
    }

    /// Reads the list again quietly (the window got focus back): a failure is logged and
    /// leaves the list as it was.
    pub fn reread_list(self) {
        spawn_local(async move {
            match self.store.api().user_mcp_servers().await {
                Ok(list) => {
                    self.forget_sign_in_failure(&list);
                    self.servers.set(Some(list));
                }
                Err(e) => warn(&format!("re-reading your servers failed: {}", e.message())),
            }
        });
    }

    /// Reads the server `slug` again (a sign-in ended, a refresh failed), so its row shows what
    /// the service says now; a failure is logged and leaves the row as it was.
    pub fn reread(self, slug: String) {
        spawn_local(async move {
            match self.store.api().user_mcp_server(&slug).await {
                Ok(s) => {
                    self.forget_sign_in_failure(std::slice::from_ref(&s));
                    self.put(s);
                }
                Err(e) => warn(&format!("re-reading {slug} failed: {}", e.message())),
            }
        });
    }

    /// Drops the failure shown when a server that needed a sign-in is signed in in `fresh`
    /// (that failure was the refresh that found the sign-in missing).
    fn forget_sign_in_failure(self, fresh: &[UserMcpServer]) {
        let ended = self.servers.with_untracked(|l| {
            l.iter().flatten().any(|old| {
                old.oauth == OAuthStatus::SignInRequired
                    && fresh
                        .iter()
                        .any(|s| s.slug == old.slug && s.oauth == OAuthStatus::SignedIn)
            })
        });
        if ended {
            self.error.set(None);
        }
    }

    /// Puts a server as the service answered it into the list (replacing its old copy).
    pub fn put(self, s: UserMcpServer) {
        self.servers.update(|l| {
            let l = l.get_or_insert_default();
            match l.iter_mut().find(|o| o.slug == s.slug) {
                Some(o) => *o = s,
                None => l.push(s),
            }
        });
    }

    /// Drops a deleted server from the list.
    pub fn remove(self, slug: &str) {
        self.servers.update(|l| {
            if let Some(l) = l {
                l.retain(|s| s.slug != slug);
            }
        });
    }

    /// Shows `message` above the list (and goes back to it).
    pub fn fail(self, message: String) {
        self.error.set(Some(message));
    }

    /// Refreshes `slug` and shows its review (or the failure).
    pub fn refresh(self, slug: String) {
        self.error.set(None);
        self.refreshing.set(Some(slug.clone()));
        spawn_local(async move {
            let res = self.store.api().refresh_user_mcp_server(&slug).await;
            self.refreshing.set(None);
            match res {
                Ok(review) => self.pane.set(Pane::Review(slug, review)),
                Err(e) => {
                    self.focus.set(Some(slug.clone()));
                    self.pane.set(Pane::List);
                    self.fail(format!("Refreshing {slug} failed: {}", e.message()));
                    // The failure may have changed the server (a sign-in is now required).
                    self.reread(slug);
                }
            }
        });
    }

    /// Back to the list, focusing `slug`'s row when given.
    pub fn to_list(self, slug: Option<String>) {
        self.focus.set(slug);
        self.pane.set(Pane::List);
    }
}

/// Logs `message` to the browser's console (what the screen does not show).
pub(super) fn warn(message: &str) {
    web_sys::console::warn_1(&message.into());
}

/// The screen's state, provided by [`ServersDialog`](super::ServersDialog).
pub fn screen() -> Screen {
    expect_context::<Screen>()
}
