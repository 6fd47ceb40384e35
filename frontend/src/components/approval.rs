//! The approval card of a pending tool call: Allow (focused, so Enter approves), Always Allow
//! (in this chat, for this browser session, or always, the user's choice) and Deny. "In this
//! chat" is saved with the conversation (`allowed_tools`: it survives a reload and shows in
//! other tabs); "this session" is kept in the tab's sessionStorage (it survives a reload of the
//! tab); "always" is the user's list on the server (`/api/tools/approvals`: every chat, every
//! browser), which a tool the operator denies ignores.
//!
//! The arguments show as the call has them (pretty JSON) when the service sent no hints. With
//! hints (what the tool's input schema says, [`lmchatkit_protocol::ArgumentHint`]) each
//! argument is a row: its name, "required" when the schema says so, its value, and the schema's
//! description; a required argument the call lacks shows as "missing", and one the schema does
//! not name says so, so nothing the tool gets is hidden. Texts from the schema are shown as
//! text, never as markup.

use leptos::html;
use leptos::prelude::*;
use lmchatkit_protocol::{Approval, ToolCall};
use serde_json::Value;

use crate::approvals::allow_always;
use crate::components::icon::mcp_icon;
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
            <p>"Allow " {mcp_icon("tool", &call.name)}<code>{call.name.clone()}</code> " to run?"</p>
            {argument_rows(&call)}
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

/// The call's arguments: one row each when the service sent the schema's hints, else the JSON.
fn argument_rows(call: &ToolCall) -> AnyView {
    let args = call.arguments.as_object();
    let (Some(args), false) = (args, call.hints.is_empty()) else {
        let json = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
        return view! { <pre class="lmck-tool-args">{json}</pre> }.into_any();
    };
    let named = |n: &str| call.hints.iter().any(|h| h.name == n);
    let mut rows: Vec<(String, Option<&Value>, Option<String>, bool)> = call
        .hints
        .iter()
        .filter(|h| h.required || args.contains_key(&h.name))
        .map(|h| {
            (
                h.name.clone(),
                args.get(&h.name),
                h.description.clone(),
                h.required,
            )
        })
        .collect();
    rows.extend(args.iter().filter(|(n, _)| !named(n)).map(|(n, v)| {
        (
            n.clone(),
            Some(v),
            Some("Not in the tool's schema.".to_owned()),
            false,
        )
    }));
    let rows = rows
        .into_iter()
        .map(|(name, value, description, required)| {
            let missing = value.is_none();
            let value = match value {
                Some(Value::String(s)) => s.clone(),
                Some(v) => serde_json::to_string(v).unwrap_or_default(),
                None => String::new(),
            };
            view! {
                <dt>
                    <code class="lmck-arg-name">{name}</code>
                    {required.then(|| view! { <span class="lmck-arg-required">"required"</span> })}
                </dt>
                <dd>
                    {if missing {
                        view! { <span class="lmck-arg-missing">"missing"</span> }.into_any()
                    } else {
                        view! { <pre class="lmck-arg-value">{value}</pre> }.into_any()
                    }}
                    {description.map(|d| view! { <p class="lmck-arg-hint">{d}</p> })}
                </dd>
            }
        })
        .collect_view();
    view! { <dl class="lmck-args">{rows}</dl> }.into_any()
}
