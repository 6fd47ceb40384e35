//! One file per route family; [`crate::service`] holds the routing table.

pub(crate) mod app_proxy;
pub(crate) mod app_view;
pub(crate) mod assets;
pub(crate) mod catalog;
pub(crate) mod chat;
pub(crate) mod conversations;
pub(crate) mod csrf;
pub(crate) mod events;
pub(crate) mod prompts;
pub(crate) mod resources;
pub(crate) mod tools;
pub(crate) mod upload;
