//! The `/` and `@` autocomplete menus above the composer: built-ins, file commands and MCP
//! prompts (with their icons and argument hints), then resources and templates. Keyboard handling lives in the
//! composer; this renders the list as a listbox and reports clicks.
//!
//! Accessibility: the list is `#`[`MENU_ID`]; option `i` is [`option_id`]`(i)`, which the composer's
//! textarea names in `aria-activedescendant` while the menu is open (focus stays in the textarea);
//! the selected option is kept scrolled into view ([`reveal_option`]).

use leptos::prelude::*;

use crate::commands::{
    SlashItem, SlashKind, at_query, resource_insert, resource_matches, slash_matches,
};
use crate::components::icon::mcp_icon;
use crate::state::Store;
use lmchatkit_protocol::Prompt;

/// The `id` of the menu's listbox (the composer's `aria-controls`).
pub const MENU_ID: &str = "lmck-menu";

/// The `id` of menu option `i` (the composer's `aria-activedescendant` while it is selected).
pub fn option_id(i: usize) -> String {
    format!("{MENU_ID}-opt-{i}")
}

/// Scrolls the option with `id` into view within its (scrolling) list, once the DOM is updated:
/// ↑/↓ may move the selection past the visible part of a long list.
pub fn reveal_option(id: String) {
    request_animation_frame(move || {
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(&id))
        {
            let opts = web_sys::ScrollIntoViewOptions::new();
            opts.set_block(web_sys::ScrollLogicalPosition::Nearest);
            el.scroll_into_view_with_scroll_into_view_options(&opts);
        }
    });
}

/// One entry of either menu.
#[derive(Debug, Clone, PartialEq)]
pub enum MenuItem {
    /// A `/` entry.
    Slash(SlashItem),
    /// An `@` entry: (text to insert, label, is template).
    Resource(String, String, bool),
}

/// The menu entries for the current draft.
pub fn items_for(store: Store, draft: &str) -> Vec<MenuItem> {
    if draft.starts_with('/') {
        return store
            .commands
            .with(|c| store.prompts.with(|p| slash_matches(draft, c, p)))
            .into_iter()
            .map(MenuItem::Slash)
            .collect();
    }
    if let Some(q) = at_query(draft) {
        return store.resources.with(|rs| {
            resource_matches(q, rs)
                .into_iter()
                .map(|r| {
                    MenuItem::Resource(
                        resource_insert(r),
                        r.name.clone().unwrap_or_default(),
                        r.template,
                    )
                })
                .collect()
        });
    }
    Vec::new()
}

/// The open menu.
#[component]
pub fn Menu(
    items: Signal<Vec<MenuItem>>,
    selected: RwSignal<usize>,
    on_pick: Callback<MenuItem>,
) -> impl IntoView {
    Effect::new(move |_| {
        let n = items.with(Vec::len);
        if n > 0 {
            reveal_option(option_id(selected.get().min(n - 1)));
        }
    });
    view! {
        <Show when=move || items.with(|i| !i.is_empty())>
            <ul class="lmck-menu" role="listbox" aria-label="Suggestions" id=MENU_ID>
                {move || items.get().into_iter().enumerate().map(|(i, item)| {
                    let it = item.clone();
                    // A prompt with an icon (its own or its server's) shows it.
                    let icon = match &item {
                        MenuItem::Slash(SlashItem { kind: SlashKind::Prompt(p), .. }) if p.icon => {
                            mcp_icon("prompt", &p.name)
                        }
                        _ => None,
                    };
                    let (title, detail, badge) = match &item {
                        MenuItem::Slash(s) => (
                            format!("/{}", s.name),
                            format!("{} {}", s.hint, s.description),
                            match s.kind { SlashKind::Builtin => "built-in", SlashKind::File(_) => "command", SlashKind::Prompt(_) => "prompt" },
                        ),
                        MenuItem::Resource(uri, name, t) => (format!("@{uri}"), name.clone(), if *t { "template" } else { "resource" }),
                    };
                    view! {
                        <li role="option" class="lmck-menu-item" id=option_id(i) class:lmck-selected=move || selected.get() == i
                            aria-selected=move || (selected.get() == i).to_string()
                            on:mousedown=move |ev| { ev.prevent_default(); on_pick.run(it.clone()); }>
                            {icon}
                            <span class="lmck-menu-title">{title}</span>
                            <span class="lmck-badge">{badge}</span>
                            <span class="lmck-muted">{detail}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </Show>
    }
}

/// Quotes a prompt argument value for a `/name key="value"` line.
pub fn quote_arg(v: &str) -> String {
    if v.contains('"') {
        format!("'{v}'")
    } else {
        format!("\"{v}\"")
    }
}

/// A small form for an MCP prompt with several arguments; `on_done` gets the `/name k="v"` line,
/// or `None` when cancelled.
#[component]
pub fn PromptForm(prompt: Prompt, on_done: Callback<Option<String>>) -> impl IntoView {
    let values = RwSignal::new(vec![String::new(); prompt.arguments.len()]);
    let args = prompt.arguments.clone();
    let name = prompt.name.clone();
    let missing = {
        let args = args.clone();
        move || {
            values.with(|v| {
                args.iter()
                    .zip(v)
                    .any(|(a, v)| a.required && v.trim().is_empty())
            })
        }
    };
    let submit = {
        let (args, name, missing) = (args.clone(), name.clone(), missing.clone());
        move || {
            if missing() {
                return;
            }
            let mut line = format!("/{name}");
            values.with_untracked(|v| {
                for (a, v) in args.iter().zip(v) {
                    if !v.trim().is_empty() {
                        line.push_str(&format!(" {}={}", a.name, quote_arg(v.trim())));
                    }
                }
            });
            on_done.run(Some(line));
        }
    };
    let submit2 = submit.clone();
    view! {
        <form class="lmck-prompt-form" aria-label=format!("Arguments of /{}", prompt.name)
            on:submit=move |ev| { ev.prevent_default(); submit(); }
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { on_done.run(None) }>
            <div class="lmck-info-title">{format!("/{}", prompt.name)}</div>
            {args.iter().enumerate().map(|(i, a)| view! {
                <label class="lmck-label">{format!("{}{}", a.name, if a.required { " *" } else { "" })}
                    <input class="lmck-field" name=a.name.clone() placeholder=a.description.clone().unwrap_or_default()
                        on:input=move |ev| values.update(|v| v[i] = event_target_value(&ev)) />
                </label>
            }).collect_view()}
            <div class="lmck-row">
                <button type="submit" class="lmck-btn lmck-primary" disabled=missing
                    on:click=move |ev| { ev.prevent_default(); submit2(); }>"Send"</button>
                <button type="button" class="lmck-btn" on:click=move |_| on_done.run(None)>"Cancel"</button>
            </div>
        </form>
    }
}
