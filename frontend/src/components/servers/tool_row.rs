//! One accepted tool of a server: its name and accepted description, a stale flag, on/off and
//! the approval (always allow / ask each time / never). A change accepts the tool again with
//! its accepted hash, which keeps the definition and takes the settings.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{AcceptedTool, UserMcpServer, UserToolApproval};

use crate::components::servers::screen;
use crate::components::store;
use crate::servers::{APPROVALS, approval_label, approval_of, approval_value, settings_body};

/// A select of the three approvals.
#[component]
pub fn ApprovalSelect(
    /// The approval shown.
    #[prop(into)]
    value: Signal<UserToolApproval>,
    /// Its accessible name.
    label: String,
    /// Called with the approval picked.
    on_change: Callback<UserToolApproval>,
) -> impl IntoView {
    view! {
        <select class="lmck-select lmck-approval-select" aria-label=label
            prop:value=move || approval_value(value.get())
            on:change=move |ev| on_change.run(approval_of(&event_target_value(&ev)))>
            {APPROVALS.into_iter().map(|a| view! {
                <option value=approval_value(a) selected=move || value.get() == a>{approval_label(a)}</option>
            }).collect_view()}
        </select>
    }
}

/// The accepted tool `name` of `server`.
#[component]
pub fn ToolRow(server: Memo<Option<UserMcpServer>>, name: String) -> impl IntoView {
    let store = store();
    let screen = screen();
    let tool: Memo<Option<AcceptedTool>> = {
        let name = name.clone();
        Memo::new(move |_| {
            server.with(|s| {
                s.as_ref()
                    .and_then(|s| s.tools.iter().find(|t| t.name == name).cloned())
            })
        })
    };
    let enabled = move || tool.with(|t| t.as_ref().is_some_and(|t| t.enabled));
    let stale = move || tool.with(|t| t.as_ref().is_some_and(|t| t.stale));
    let approval =
        Signal::derive(move || tool.with(|t| t.as_ref().map(|t| t.approval).unwrap_or_default()));
    let set = move |enabled: bool, approval: UserToolApproval| {
        let (Some(t), Some(slug)) = (
            tool.get_untracked(),
            server.with_untracked(|s| s.as_ref().map(|s| s.slug.clone())),
        ) else {
            return;
        };
        let body = settings_body(&t, enabled, approval);
        spawn_local(async move {
            match store.api().accept_user_mcp_tools(&slug, &body).await {
                Ok(s) => screen.put(s),
                Err(e) => {
                    screen.fail(format!("Changing {} failed: {}", t.name, e.message()));
                    screen.reload();
                }
            }
        });
    };
    let description = move || {
        tool.with(|t| {
            t.as_ref()
                .map(|t| t.description.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <li class="lmck-server-tool" data-tool=name.clone() class:lmck-stale-tool=stale>
            <code class="lmck-tool-name">{name.clone()}</code>
            {move || stale().then(|| view! {
                <span class="lmck-badge lmck-badge-error lmck-stale"
                    title="It changed on its server: refresh to review it">"stale"</span>
            })}
            <label class="lmck-check">
                <input type="checkbox" class="lmck-tool-enabled" prop:checked=enabled
                    on:change=move |ev| set(event_target_checked(&ev), approval.get_untracked()) />
                "on"
            </label>
            <ApprovalSelect value=approval label=format!("Approval of {name}")
                on_change=Callback::new(move |a| set(tool.with_untracked(|t| t.as_ref().is_some_and(|t| t.enabled)), a)) />
            <span class="lmck-muted lmck-tool-desc">{description}</span>
        </li>
    }
}
