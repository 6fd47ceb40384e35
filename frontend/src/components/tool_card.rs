//! A tool-call card: icon and name, status badge (running/ok/pending/denied/error), pretty arguments and
//! the result (red for errors and denials), flagged when the call was refused because the
//! user's own tool changed on its server ([`StaleNote`]). The result and the view are those of the tool
//! messages answering the card's own assistant message (call ids repeat across replies).
//!
//! While the model streams a call's arguments, [`StreamingCard`] stands in for its card (the
//! name, a `streaming` badge and the text so far), and a call to a tool with an MCP App view
//! gets its view at once ([`EarlyView`]): the view follows the arguments
//! (`tool-input-partial`, throttled by the bridge), then the complete input, then the result
//! or the cancellation, in one frame from the first piece on. Its card then shows no view of
//! its own.

use leptos::prelude::*;
use lmchatkit_protocol::{Approval, Message, ToolCall};
use serde_json::Value;

use crate::apps::frame::{ViewCall, ViewFeed, app_view, call_tool_result, early_app_view};
use crate::apps::partial::heal;
use crate::components::icon::mcp_icon;
use crate::components::servers::stale::{StaleNote, stale_server};
use crate::lazy::{Shell, lazily};
use crate::results::{CallKey, ends_answers};
use crate::state::{Chat, StreamedCall, UiMessage};

/// The tool message answering call `call_id` of the assistant message `owner` (its key), when
/// it came: the messages after it until the next turn (tracks the message list, not each
/// message).
fn answer(msgs: &[UiMessage], owner: &str, call_id: &str) -> Option<Message> {
    let at = msgs.iter().position(|m| m.key == owner)?;
    msgs[at + 1..]
        .iter()
        .map(|m| m.data.clone())
        .take_while(|d| d.with_untracked(|d| !ends_answers(d)))
        .find_map(|d| {
            d.with_untracked(|d| (d.tool_call_id.as_deref() == Some(call_id)).then(|| d.clone()))
        })
}

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
/// come from that message's answers only (see [`crate::results`]). With `early_view` the call's
/// view was opened while it streamed ([`EarlyView`]): the card mounts none.
#[component]
pub fn ToolCard(
    call: ToolCall,
    owner: String,
    chat: Chat,
    #[prop(optional)] early_view: bool,
) -> impl IntoView {
    let key: CallKey = (owner, call.id.clone());
    let progress = {
        let (progress, key) = (chat.progress.clone(), key.clone());
        move || progress.with(|m| m.get(&key).cloned())
    };
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
            if early_view {
                return None;
            }
            let d = msgs.with(|ms| answer(ms, &owner, &call.id))?;
            let uri = d.ui.as_ref()?.resource_uri.clone()?;
            let text = d.content.as_text().unwrap_or_default();
            Some(ViewCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                uri,
                arguments: call.arguments.clone(),
                result: call_tool_result(text, d.is_error, d.structured_content.as_ref()),
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
            {move || progress().map(|p| {
                let label = p.message.clone().unwrap_or_else(|| match p.total {
                    Some(t) => format!("{} of {}", p.progress, t),
                    None => format!("{}", p.progress),
                });
                view! {
                    <div class="lmck-tool-progress">
                        <progress aria-label="Progress of the tool call"
                            value=p.progress.to_string()
                            max=p.total.map(|t| t.to_string())></progress>
                        <span class="lmck-tool-progress-text">{label}</span>
                    </div>
                }
            })}
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

/// The card of a call whose arguments are still streaming: its name, a `streaming` badge and
/// the arguments' text so far.
#[component]
pub fn StreamingCard(call: StreamedCall) -> impl IntoView {
    view! {
        <details class="lmck-tool lmck-tool-streaming" open=true data-call-id=call.id.clone()>
            <summary>
                {mcp_icon("tool", &call.name)}
                <code class="lmck-tool-name">{call.name.clone()}</code>
                <span class="lmck-badge lmck-badge-running">"streaming"</span>
            </summary>
            <div class="lmck-tool-label">"Arguments"</div>
            <pre class="lmck-tool-args">{call.text}</pre>
        </details>
    }
}

/// What a call cut off before its arguments were complete tells its view.
const CUT_OFF: &str = "the reply ended before the call's arguments were complete";

/// The view of call `id` of `ui` (the assistant message), opened at its first streamed piece
/// (its tool has the view `uri`): fed the healed arguments as they grow, the complete input
/// when its `tool_call` came, then the result, or a cancellation when the user denied the call
/// or the reply ended without it.
#[component]
pub fn EarlyView(
    id: String,
    tool: String,
    uri: String,
    ui: UiMessage,
    chat: Chat,
) -> impl IntoView {
    let partial = {
        let (streamed, id) = (ui.streamed.clone(), id.clone());
        Memo::new(move |_| {
            streamed
                .with(|s| s.iter().find(|c| c.id == id).map(|c| heal(&c.text)))
                .flatten()
                .filter(Value::is_object)
        })
    };
    let call = {
        let (data, id) = (ui.data.clone(), id.clone());
        Memo::new(move |_| data.with(|d| d.tool_calls.iter().find(|c| c.id == id).cloned()))
    };
    let input = Memo::new(move |_| call.with(|c| c.as_ref().map(|c| c.arguments.clone())));
    let outcome = {
        let (streamed, msgs, owner, id) = (
            ui.streamed.clone(),
            chat.messages.clone(),
            ui.key.clone(),
            id.clone(),
        );
        Memo::new(move |_| {
            if streamed.with(|s| s.iter().any(|c| c.id == id && c.cut)) {
                return Some(Err(CUT_OFF.to_owned()));
            }
            let approval = call.with(|c| c.as_ref().and_then(|c| c.approval));
            let answer = msgs.with(|ms| answer(ms, &owner, &id))?;
            if approval == Some(Approval::Denied) {
                return Some(Err("the user denied the call".to_owned()));
            }
            let text = answer.content.as_text().unwrap_or_default();
            Some(Ok(call_tool_result(
                text,
                answer.is_error,
                answer.structured_content.as_ref(),
            )))
        })
    };
    let feed = ViewFeed {
        partial: partial.into(),
        input: input.into(),
        outcome: outcome.into(),
    };
    let call = ViewCall {
        call_id: id,
        tool,
        uri,
        arguments: Value::Null,
        result: Value::Null,
    };
    lazily(Shell::Inline, move || {
        early_app_view(call.clone(), feed, chat.clone())
    })
}
