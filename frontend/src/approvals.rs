//! The service's approval policy in the UI. Each `tool_call` event carries the policy's
//! decision for this user (the server's, which already counts the user's stored "always
//! allow"): `allow` runs the call without the approval card, `deny` never reaches
//! `/api/tools/call` and answers the model with an error result saying the operator's policy
//! blocks it (the turn goes on), `ask` (or no decision, from an older service) asks unless the
//! tool is allowed in this chat or this session.
//!
//! A blocked call is marked [`Approval::Error`] without a result; the tool loop turns exactly
//! that (an error that never ran) into the blocked result, since a call that ran and failed
//! always has its result recorded together with the mark.
//!
//! "Always allow" for every chat is the server's list (`/api/tools/approvals`), read once at
//! start and replaced (whole) on each addition.

use std::collections::HashSet;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::ToolApprovals;

use crate::state::Store;

/// `list` with `name` added (once), in a stable order.
pub fn with_tool(list: &HashSet<String>, name: &str) -> Vec<String> {
    let mut out: Vec<String> = list.iter().cloned().collect();
    if !list.contains(name) {
        out.push(name.to_owned());
    }
    out.sort();
    out
}

/// Reads the user's "always allow" list from the service (nothing on failure: the server's
/// decisions count it anyway).
pub fn load(store: Store) {
    spawn_local(async move {
        if let Ok(list) = store.api().tool_approvals().await {
            store.always.set(list.always.into_iter().collect());
        }
    });
}

/// Allows `name` in every chat from now on: adds it to the server's list.
pub fn allow_always(store: Store, name: String) {
    let list = store.always.with_untracked(|s| with_tool(s, &name));
    store.always.update(|s| {
        s.insert(name);
    });
    spawn_local(async move {
        match store
            .api()
            .set_tool_approvals(&ToolApprovals::new(list))
            .await
        {
            Ok(saved) => store.always.set(saved.always.into_iter().collect()),
            Err(e) => store
                .notice
                .set(Some(format!("Could not save \"always allow\": {e}"))),
        }
    });
}

#[cfg(test)]
mod tests {
    use lmchatkit_protocol::{Approval, ToolDecision};

    use super::*;

    #[test]
    fn a_deny_is_blocked_even_when_the_chat_allows_the_tool() {
        assert_eq!(
            Approval::initial(Some(ToolDecision::Deny), true),
            Approval::Error
        );
        assert_eq!(
            Approval::initial(Some(ToolDecision::Deny), false),
            Approval::Error
        );
    }

    #[test]
    fn an_allow_runs_without_asking() {
        assert_eq!(
            Approval::initial(Some(ToolDecision::Allow), false),
            Approval::Approved
        );
    }

    #[test]
    fn an_ask_or_no_decision_asks_unless_allowed_here() {
        for d in [Some(ToolDecision::Ask), None] {
            assert_eq!(Approval::initial(d, false), Approval::Pending);
            assert_eq!(Approval::initial(d, true), Approval::Approved);
        }
    }

    #[test]
    fn the_always_list_grows_once_and_sorted() {
        let set: HashSet<String> = ["b".to_owned(), "a".to_owned()].into();
        assert_eq!(with_tool(&set, "c"), ["a", "b", "c"]);
        assert_eq!(with_tool(&set, "a"), ["a", "b"]);
    }
}
