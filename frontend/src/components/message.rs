//! One message bubble. User: text (escaped by the DOM) and attachments, edit-and-resend.
//! Assistant: the collapsible "Thinking" block, tool-call cards (and the cards and early views
//! of calls whose arguments still stream, see [`crate::components::tool_card`]), the Markdown answer (through
//! [`crate::markdown`] only), typing dots while waiting, the error with Retry, info cards, the
//! approval cards of pending calls, and a footer with time, a "Stopped" mark (a reply whose run
//! was stopped) or an "Interrupted" one (its run failed: the error is its tooltip, and the live
//! error with Retry is gone after a reload, the mark is not), usage, copy (Markdown / HTML) and regenerate. The footer's cost is the reply's `cost_usd` (absent, so not shown, when the model's
//! price is unknown). Tool messages are not bubbles (their results show in the cards). A message
//! with other versions (an edit kept the earlier text, a regenerate the earlier reply) shows
//! `‹ 2 / 3 ›` in its footer; stepping shows that version's branch below it.

use leptos::prelude::*;
use lmchatkit_protocol::{Approval, Content, ContentPart, Role};

use crate::components::approval::ApprovalCard;
use crate::components::attachments::RefChips;
use crate::components::input_request::{InputCard, TaskCard};
use crate::components::tool_card::{EarlyView, StreamingCard, ToolCard};
use crate::components::{copy_text, store, time_of};
use crate::markdown;
use crate::spend::{format_cost, usage_detail};
use crate::state::{Chat, UiMessage};
use crate::turn;

/// `‹ i / n ›`: the versions of the message `key`, when it has others; stepping makes that
/// version's branch the one shown (and stored as active).
#[component]
fn Versions(key: String, chat: Chat) -> impl IntoView {
    let store = store();
    let branches = chat.branches.clone();
    move || {
        let b = branches.with(|m| m.get(&key).cloned())?;
        let n = b.versions.len();
        let at = usize::try_from(b.current).unwrap_or(0);
        let step = {
            let chat = chat.clone();
            move |to: Option<usize>| {
                let Some(node) = to.and_then(|i| b.versions.get(i).copied()) else {
                    return;
                };
                let chat = chat.clone();
                leptos::task::spawn_local(crate::history::switch_version(store, chat, node));
            }
        };
        let (prev, next) = (step.clone(), step);
        Some(view! {
            <span class="lmck-versions" role="group" aria-label="Versions of this message">
                <button class="lmck-icon-btn lmck-version-prev" aria-label="Previous version"
                    title="Previous version"
                    disabled={move || at == 0 || store.busy.get()}
                    on:click={move |_| prev(at.checked_sub(1))}>"‹"</button>
                <span class="lmck-version-at">{format!("{} / {}", at + 1, n)}</span>
                <button class="lmck-icon-btn lmck-version-next" aria-label="Next version"
                    title="Next version"
                    disabled={move || at + 1 == n || store.busy.get()}
                    on:click={move |_| next(Some(at + 1))}>"›"</button>
            </span>
        })
    }
}

/// One message of the transcript.
#[component]
pub fn MessageView(ui: UiMessage, chat: Chat) -> impl IntoView {
    let (role, info, created) = ui
        .data
        .with_untracked(|d| (d.role, d.info.clone(), d.created_at));
    match (role, info) {
        (Role::Tool | Role::System, _) => ().into_any(),
        (_, Some(info)) => info_card(info).into_any(),
        (Role::User, None) => view! { <UserBubble ui chat created /> }.into_any(),
        (Role::Assistant, None) => view! { <AssistantBubble ui chat created /> }.into_any(),
    }
}

fn info_card(info: serde_json::Value) -> impl IntoView {
    let title = info["title"].as_str().unwrap_or("Info").to_owned();
    let items = info["items"].as_array().cloned().unwrap_or_default();
    let empty = items.is_empty();
    view! {
        <div class="lmck-info" role="note">
            <div class="lmck-info-title">{title}</div>
            {empty.then(|| view! { <p class="lmck-muted">"None available."</p> })}
            <ul class="lmck-info-items">
                {items.into_iter().map(|it| view! {
                    <li>
                        <code>{it["name"].as_str().unwrap_or_default().to_owned()}</code>
                        " " <span class="lmck-muted">{it["args"].as_str().unwrap_or_default().to_owned()}</span>
                        " " <span>{it["description"].as_str().unwrap_or_default().to_owned()}</span>
                    </li>
                }).collect_view()}
            </ul>
        </div>
    }
}

#[component]
fn UserBubble(ui: UiMessage, chat: Chat, created: Option<i64>) -> impl IntoView {
    let store = store();
    let editing = RwSignal::new(false);
    let edit_text = RwSignal::new(String::new());
    let data = ui.data.clone();
    let from_app = {
        let data = ui.data.clone();
        move || {
            data.with(|d| d.from_app.clone()).map(|app| view! {
            <div class="lmck-from-app">{format!("Sent by the {app} app (taken literally)")}</div>
        })
        }
    };
    let body = move || {
        data.with(|d| match &d.content {
            // An app's text is literal: no reference chips.
            Content::Text(t) if d.from_app.is_some() => view! {
                <div class="lmck-user-text">{t.clone()}</div>
            }.into_any(),
            Content::Text(t) => view! {
                <div class="lmck-user-text">{t.clone()}</div>
                <RefChips text=t.clone() />
            }.into_any(),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => view! { <div class="lmck-user-text">{text.clone()}</div> }.into_any(),
                    ContentPart::ImageUrl { image_url } if image_url.url.starts_with("data:image/") => {
                        view! { <img class="lmck-user-img" src=image_url.url.clone() alt="attached image" /> }.into_any()
                    }
                    ContentPart::File { file } => view! {
                        <div class="lmck-chip">{file.filename.clone().unwrap_or_else(|| "file".into())}</div>
                    }.into_any(),
                    _ => view! { <div class="lmck-chip">"attachment"</div> }.into_any(),
                })
                .collect_view()
                .into_any(),
        })
    };
    let text_now = {
        let data = ui.data.clone();
        move || data.with_untracked(|d| d.content.as_text().map(str::to_owned))
    };
    let key = ui.key.clone();
    let chat_v = chat.clone();
    let save = move || {
        let t = edit_text.get_untracked();
        if t.trim().is_empty() || store.busy.get_untracked() {
            return;
        }
        editing.set(false);
        turn::edit_and_resend(store, chat.clone(), key.clone(), t);
    };
    let save2 = save.clone();
    view! {
        <div class="lmck-msg lmck-user" data-key=ui.key.clone()>
            {from_app}
            <Show when=move || editing.get() fallback=body.clone()>
                <textarea class="lmck-edit" aria-label="Edit message" prop:value=move || edit_text.get()
                    on:input=move |ev| edit_text.set(event_target_value(&ev))
                    on:keydown={let save = save2.clone(); move |ev: leptos::ev::KeyboardEvent| {
                        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() { ev.prevent_default(); save(); }
                        if ev.key() == "Escape" { editing.set(false); }
                    }}></textarea>
                <div class="lmck-row">
                    <button class="lmck-btn lmck-primary" on:click={let save = save.clone(); move |_| save()}>"Save & resend"</button>
                    <button class="lmck-btn" on:click=move |_| editing.set(false)>"Cancel"</button>
                </div>
            </Show>
            <div class="lmck-meta">
                {created.map(time_of)}
                <Versions key=ui.key.clone() chat=chat_v />
                {move || text_now().map(|t| view! {
                    <button class="lmck-icon-btn" aria-label="Edit and resend" title="Edit and resend"
                        disabled=move || store.busy.get()
                        on:click=move |_| { edit_text.set(t.clone()); editing.set(true); }>"✎"</button>
                })}
            </div>
        </div>
    }
}

#[component]
fn AssistantBubble(ui: UiMessage, chat: Chat, created: Option<i64>) -> impl IntoView {
    let store = store();
    let d = ui.data.clone();
    let thinking = Memo::new(move |_| d.with(|d| d.thinking.clone().unwrap_or_default()));
    let d = ui.data.clone();
    let calls = Memo::new(move |_| d.with(|d| d.tool_calls.clone()));
    let d = ui.data.clone();
    let usage = Memo::new(move |_| d.with(|d| d.usage));
    let d = ui.data.clone();
    let cost = Memo::new(move |_| d.with(|d| d.cost_usd));
    let d = ui.data.clone();
    let has_text = Memo::new(move |_| d.with(|d| !d.content.is_empty()));
    let d = ui.data.clone();
    let stopped = Memo::new(move |_| d.with(|d| d.stopped));
    let d = ui.data.clone();
    let failed = Memo::new(move |_| d.with(|d| d.failed.clone()));
    let (streaming, html, error) = (ui.streaming.clone(), ui.html.clone(), ui.error.clone());
    let (s1, s2, s3) = (streaming.clone(), streaming.clone(), streaming.clone());
    let err2 = error.clone();
    let (cards_chat, owner) = (chat.clone(), ui.key.clone());
    let streamed = ui.streamed.clone();
    let cards_streamed = streamed.clone();
    // The calls still streaming (no complete call yet, not cut off).
    let streaming_cards = {
        let streamed = streamed.clone();
        move || {
            let done: Vec<String> = calls.with(|c| c.iter().map(|c| c.id.clone()).collect());
            streamed.with(|s| {
                s.iter()
                    .filter(|c| !c.cut && !done.contains(&c.id))
                    .cloned()
                    .map(|call| view! { <StreamingCard call /> })
                    .collect_view()
            })
        }
    };
    // The views opened while their calls streamed: (call id, tool, view).
    let early = {
        let streamed = streamed.clone();
        Memo::new(move |_| {
            streamed.with(|s| {
                s.iter()
                    .filter_map(|c| Some((c.id.clone(), c.name.clone(), c.view.clone()?)))
                    .collect::<Vec<_>>()
            })
        })
    };
    let (early_ui, early_chat) = (ui.clone(), chat.clone());
    let approvals = {
        let (chat, ui) = (chat.clone(), ui.clone());
        move || {
            calls
                .get()
                .into_iter()
                .filter(|c| {
                    c.approval == Some(Approval::Pending)
                        || c.input_request.is_some()
                        || c.task.is_some()
                })
                .map(|c| {
                    if c.input_request.is_some() {
                        view! { <InputCard call=c chat=chat.clone() ui=ui.clone() /> }.into_any()
                    } else if c.task.is_some() {
                        view! { <TaskCard call=c chat=chat.clone() ui=ui.clone() /> }.into_any()
                    } else {
                        view! { <ApprovalCard call=c chat=chat.clone() ui=ui.clone() /> }.into_any()
                    }
                })
                .collect_view()
        }
    };
    let retry = {
        let (chat, key) = (chat.clone(), ui.key.clone());
        move |_| turn::retry(store, chat.clone(), key.clone())
    };
    let is_last = {
        let (msgs, key) = (chat.messages.clone(), ui.key.clone());
        move || {
            msgs.with(|ms| {
                ms.iter()
                    .rev()
                    .find(|m| m.data.with(|d| d.role == Role::Assistant))
                    .is_some_and(|m| m.key == key)
            })
        }
    };
    let copy_md = {
        let d = ui.data.clone();
        move |_| copy_text(d.with_untracked(|d| d.content.as_text().unwrap_or_default().to_owned()))
    };
    let copy_html = {
        let d = ui.data.clone();
        move |_| {
            copy_text(
                d.with_untracked(|d| markdown::render(d.content.as_text().unwrap_or_default())),
            )
        }
    };
    let regen_chat = chat.clone();
    let versions_chat = chat.clone();
    // Diagrams are drawn once the reply has finished (`diagrams` says why), and again in a new
    // theme; after the HTML is in the page (a frame later).
    let md = NodeRef::<leptos::html::Div>::new();
    {
        let (html, streaming) = (html.clone(), streaming.clone());
        let prefix = store.api.with_value(|a| a.prefix().to_owned());
        Effect::new(move |_| {
            // While the reply streams, only `streaming` is tracked: the HTML is not scanned on
            // every delta.
            if streaming.get() {
                return;
            }
            let theme = store.theme.get();
            if !html.with(|h| h.contains("lmck-diagram")) {
                return;
            }
            let prefix = prefix.clone();
            request_animation_frame(move || {
                if let Some(el) = md.get_untracked() {
                    crate::components::diagrams::mount(&el, &prefix, theme);
                }
            });
        });
    }
    // The HTML, in the page: a streamed reply's block by block, only its blocks that changed
    // replaced (`show_html`); any other as a whole (as a conversation opens, by the element's
    // own `inner_html`, which is cheaper than an effect for each of its messages).
    let blockwise = {
        let layout = ui.layout.clone();
        Memo::new(move |_| layout.with(|l| !l.is_empty()))
    };
    let whole_html = html.clone();
    {
        let (html, layout) = (html.clone(), ui.layout.clone());
        Effect::new(move |shown: Option<Vec<Shown>>| {
            let el = md.get();
            let spans = layout.get_untracked();
            match el {
                Some(el) if !spans.is_empty() => {
                    html.with(|h| show_html(&el, h, &spans, shown.unwrap_or_default()))
                }
                _ => Vec::new(),
            }
        });
    }
    view! {
        <div class="lmck-msg lmck-assistant" class:lmck-streaming=move || s1.get() data-key=ui.key.clone()
            aria-busy=move || s2.get().to_string()>
            <Show when=move || !thinking.get().is_empty()>
                <details class="lmck-thinking" prop:open={let s3 = s3.clone(); move || s3.get()}>
                    <summary>"Thinking"</summary>
                    <pre class="lmck-thinking-text">{move || thinking.get()}</pre>
                </details>
            </Show>
            {move || calls.get().into_iter().map(|c| {
                let early_view = cards_streamed.with_untracked(|s| s.iter().any(|x| x.id == c.id && x.view.is_some()));
                view! { <ToolCard call=c owner=owner.clone() chat=cards_chat.clone() early_view /> }
            }).collect_view()}
            {streaming_cards}
            <For each=move || early.get() key=|e| e.0.clone()
                children=move |(id, tool, uri)| view! { <EarlyView id tool uri ui=early_ui.clone() chat=early_chat.clone() /> } />
            {move || if blockwise.get() {
                view! { <div class="lmck-md" node_ref=md></div> }.into_any()
            } else {
                let html = whole_html.clone();
                view! { <div class="lmck-md" node_ref=md inner_html=move || html.get()></div> }.into_any()
            }}
            {
                let streaming = streaming.clone();
                move || (streaming.get() && !has_text.get() && thinking.with(String::is_empty)).then(|| view! {
                    <div class="lmck-typing" role="status"><span></span><span></span><span></span>
                        <span class="lmck-sr">"The assistant is typing…"</span></div>
                })
            }
            {move || error.get().map(|e| view! {
                <div class="lmck-msg-error" role="alert">
                    <span>{e}</span>
                    <button class="lmck-btn lmck-retry" on:click=retry.clone()>"Retry"</button>
                </div>
            })}
            {approvals}
            <div class="lmck-meta">
                {created.map(time_of)}
                <Versions key=ui.key.clone() chat=versions_chat />
                <Show when=move || stopped.get()>
                    <span class="lmck-stopped" title="Stopped before the model finished: the reply is what came until then">"Stopped"</span>
                </Show>
                {move || failed.get().map(|e| view! {
                    <span class="lmck-stopped lmck-interrupted"
                        title=format!("Cut off by an error before the model finished ({e}): the reply is what came until then")>
                        "Interrupted"</span>
                })}
                {move || usage.get().map(|u| view! {
                    <span class="lmck-usage" title=usage_detail(&u)>
                        {format!("{} tokens", u.tokens())}
                    </span>
                })}
                {move || cost.get().map(|c| view! {
                    <span class="lmck-usage lmck-cost" title="what this reply cost at the model's list price">
                        {format_cost(c)}
                    </span>
                })}
                <Show when=move || has_text.get() && !err2.with(Option::is_some)>
                    <button class="lmck-icon-btn" title="Copy as Markdown" on:click=copy_md.clone()>"Copy MD"</button>
                    <button class="lmck-icon-btn" title="Copy as HTML" on:click=copy_html.clone()>"Copy HTML"</button>
                </Show>
                <Show when={let is_last = is_last.clone(); move || is_last() && !store.busy.get()}>
                    <button class="lmck-icon-btn lmck-regenerate" title="Regenerate" aria-label="Regenerate the reply"
                        on:click={let c = regen_chat.clone(); move |_| turn::regenerate(store, c.clone())}>"↻"</button>
                </Show>
            </div>
        </div>
    }
}

/// A block of a streaming reply as the page shows it: its key and revision, and how many
/// top-level nodes its HTML made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shown {
    key: u64,
    rev: u64,
    nodes: u32,
}

/// Shows `html` in `el`, which shows the blocks `shown` (as this function left it). With the
/// blocks' `spans` (a streaming reply's), the blocks shown already and unchanged (same key
/// and revision, in the same place) stay as they are and only the rest is parsed and put in
/// their place; without them (or when they do not add up to `html`) `html` replaces the whole
/// content. Returns what is shown now.
///
/// Why: replacing the whole HTML on every animation frame costs the parse and layout of the
/// whole reply each time. Measured in Chromium streaming a 48 KB Markdown reply with a turn
/// for the browser between 8 ms slices (`crate::timer::Slice`): with the whole HTML each frame,
/// 93-184 tasks over 50 ms (the longest 186-198 ms) and 13-23 s until the reply was shown
/// whole; block by block, 0-3 tasks over 50 ms and 1.07-1.26 s.
fn show_html(
    el: &web_sys::HtmlDivElement,
    html: &str,
    spans: &[crate::state::BlockSpan],
    shown: Vec<Shown>,
) -> Vec<Shown> {
    use wasm_bindgen::JsCast;
    let whole = |el: &web_sys::HtmlDivElement| {
        el.set_inner_html(html);
        Vec::new()
    };
    if spans.is_empty() || spans.iter().map(|s| s.len).sum::<usize>() != html.len() {
        return whole(el);
    }
    let keep = shown
        .iter()
        .zip(spans)
        .take_while(|(a, b)| a.key == b.key && a.rev == b.rev)
        .count();
    let kept_nodes: u32 = shown[..keep].iter().map(|s| s.nodes).sum();
    let children = el.child_nodes();
    if children.length() < kept_nodes {
        // Something else changed the content: show it whole.
        return whole(el);
    }
    while children.length() > kept_nodes {
        match el.last_child() {
            Some(last) => {
                let _ = el.remove_child(&last);
            }
            None => break,
        }
    }
    let Some(template) = el
        .owner_document()
        .and_then(|d| d.create_element("template").ok())
        .and_then(|t| t.dyn_into::<web_sys::HtmlTemplateElement>().ok())
    else {
        return whole(el);
    };
    let mut out = shown;
    out.truncate(keep);
    let mut at: usize = spans[..keep].iter().map(|s| s.len).sum();
    for span in &spans[keep..] {
        let Some(part) = html.get(at..at + span.len) else {
            return whole(el);
        };
        at += span.len;
        template.set_inner_html(part);
        let content = template.content();
        let nodes = content.child_nodes().length();
        if el.append_child(&content).is_err() {
            return whole(el);
        }
        out.push(Shown {
            key: span.key,
            rev: span.rev,
            nodes,
        });
    }
    out
}
