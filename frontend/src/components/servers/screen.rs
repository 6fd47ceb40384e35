//! The screen's state, shared by its panes: the servers as the service answered them, the pane
//! shown, a failure to show, the refresh under way and the server to focus.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ToolReview, UserMcpServer};

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

/// The screen's state, provided by [`ServersDialog`].
pub fn screen() -> Screen {
    expect_context::<Screen>()
}
