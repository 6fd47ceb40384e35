//! The approval card of a pending tool call: Allow (focused, so Enter approves), Always Allow
//! (in this chat, for this browser session, or always, the user's choice) and Deny. "In this
//! chat" is saved with the conversation (`allowed_tools`: it survives a reload and shows in
//! other tabs); "this session" is kept in the tab's sessionStorage (it survives a reload of the
//! tab); "always" is the user's list on the server (`/api/tools/approvals`: every chat, every
//! browser), which a tool the operator denies ignores.

use leptos::html;
use leptos::prelude::*;
use lmchatkit_protocol::{Approval, ToolCall};

use crate::approvals::allow_always;
use crate::components::store;
use crate::state::{Chat, UiMessage};
use crate::turn::decide;

/// Asks whether `call` may run.
#[component]
pub fn ApprovalCard(call: ToolCall, chat: Chat, ui: UiMessage) -> impl IntoView {
    let store = store();
    let allow_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = allow_ref.get() {
            let _ = b.focus();
        }
    });
    let scope = RwSignal::new("chat".to_owned());
    let args = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    let act = {
        let (chat, ui, id, name) = (chat.clone(), ui.clone(), call.id.clone(), call.name.clone());
        move |approval: Approval, always: bool| {
            if always {
                match scope.get_untracked().as_str() {
                    "session" => store.allow_for_session([name.clone()]),
                    "always" => allow_always(store, name.clone()),
                    _ => chat.allowed.update(|s| {
                        s.insert(name.clone());
                    }),
                }
            }
            decide(store, chat.clone(), ui.clone(), id.clone(), approval);
        }
    };
    let (a1, a2, a3) = (act.clone(), act.clone(), act);
    view! {
        <div class="lmck-approval" role="group" aria-label=format!("Approve the tool call {}", call.name)>
            <p>"Allow " <code>{call.name.clone()}</code> " to run?"</p>
            <pre class="lmck-tool-args">{args}</pre>
            <div class="lmck-approval-actions">
                <button class="lmck-btn lmck-primary lmck-allow" node_ref=allow_ref
                    on:click=move |_| a1(Approval::Approved, false)>"Allow"</button>
                <button class="lmck-btn lmck-always" on:click=move |_| a2(Approval::Approved, true)>"Always allow"</button>
                <select class="lmck-select" aria-label="Always allow scope"
                    on:change=move |ev| scope.set(event_target_value(&ev))>
                    <option value="chat" selected=true>"in this chat"</option>
                    <option value="session">"this session"</option>
                    <option value="always">"always"</option>
                </select>
                <button class="lmck-btn lmck-danger lmck-deny" on:click=move |_| a3(Approval::Denied, false)>"Deny"</button>
            </div>
        </div>
    }
}
