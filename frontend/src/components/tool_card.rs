//! A tool-call card: icon and name, status badge (running/ok/pending/denied/error), pretty arguments and
//! the result (red for errors and denials), flagged when the call was refused because the
//! user's own tool changed on its server ([`StaleNote`]). The result and the view are those of the tool
//! messages answering the card's own assistant message (call ids repeat across replies).

use leptos::prelude::*;
use lmchatkit_protocol::{Approval, ToolCall};

use crate::apps::frame::{ViewCall, app_view, call_tool_result};
use crate::components::icon::mcp_icon;
use crate::components::servers::stale::{StaleNote, stale_server};
use crate::lazy::{Shell, lazily};
use crate::results::{CallKey, ends_answers};
use crate::state::Chat;

/// The status word of a call.
pub fn status_of(call: &ToolCall, running: bool, result: Option<&(String, bool)>) -> &'static str {
    if running {
        return "running";
    }
    if call.input_request.is_some() && result.is_none() {
        return "input";
    }
    match (call.approval, result) {
        (Some(Approval::Denied), _) => "denied",
        (Some(Approval::Error), _) | (_, Some((_, true))) => "error",
        (Some(Approval::Pending), _) => "pending",
        (_, Some(_)) => "ok",
        _ => "approved",
    }
}

/// One tool call of the assistant message `owner` (its id): its result, and the view to mount,
/// come from that message's answers only (see [`crate::results`]).
#[component]
pub fn ToolCard(call: ToolCall, owner: String, chat: Chat) -> impl IntoView {
    let key: CallKey = (owner, call.id.clone());
    let args = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    let results = chat.results.clone();
    let running = chat.running.clone();
    let (k2, k3) = (key.clone(), key.clone());
    let status = {
        let call = call.clone();
        let results = results.clone();
        move || {
            let r = results.with(|r| r.get(&k2).cloned());
            status_of(&call, running.with(|s| s.contains(&k3)), r.as_ref())
        }
    };
    let status2 = status.clone();
    let result = {
        let key = key.clone();
        move || results.with(|r| r.get(&key).cloned())
    };
    // The answering tool message's `ui` (a view to mount); only a new message can change it.
    let view_call = {
        let (msgs, call, owner) = (chat.messages.clone(), call.clone(), key.0);
        Memo::new(move |_| {
            msgs.with(|ms| {
                let at = ms.iter().position(|m| m.key == owner)?;
                ms[at + 1..]
                    .iter()
                    .map(|m| m.data.clone())
                    .take_while(|d| d.with_untracked(|d| !ends_answers(d)))
                    .find_map(|d| {
                        d.with_untracked(|d| {
                            if d.tool_call_id.as_deref() != Some(call.id.as_str()) {
                                return None;
                            }
                            let uri = d.ui.as_ref()?.resource_uri.clone()?;
                            let text = d.content.as_text().unwrap_or_default();
                            Some(ViewCall {
                                call_id: call.id.clone(),
                                tool: call.name.clone(),
                                uri,
                                arguments: call.arguments.clone(),
                                result: call_tool_result(
                                    text,
                                    d.is_error,
                                    d.structured_content.as_ref(),
                                ),
                            })
                        })
                    })
            })
        })
    };
    let frame_chat = chat.clone();
    view! {
        <details class="lmck-tool" open=true data-call-id=call.id.clone()>
            <summary>
                {mcp_icon("tool", &call.name)}
                <code class="lmck-tool-name">{call.name.clone()}</code>
                <span class=move || format!("lmck-badge lmck-badge-{}", status())>{status2}</span>
            </summary>
            <div class="lmck-tool-label">"Arguments"</div>
            <pre class="lmck-tool-args">{args}</pre>
            {move || result().map(|(text, err)| {
                let stale = stale_server(&text, err);
                view! {
                    <div class="lmck-tool-label">"Result"</div>
                    <pre class="lmck-tool-result" class:lmck-error=err>{text}</pre>
                    {stale.map(|slug| view! { <StaleNote slug /> })}
                }
            })}
        </details>
        {move || view_call.get().map(|vc| {
            let chat = frame_chat.clone();
            lazily(Shell::Inline, move || app_view(vc.clone(), chat.clone()))
        })}
    }
}
