//! One server in the list: name, slug, URL, whether credentials are set (never what they are),
//! its tool counts and stale tools, on/off, Refresh (→ review), replacing its headers, and
//! Delete (asked once more). The row reads its server from the screen's list by slug, and its
//! tool rows are made again only when the set of tools changes, so a change re-renders fields,
//! not rows, and keyboard focus stays where it was.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{CredentialsState, OAuthStatus, UserMcpServer, UserMcpServerPatch};

use crate::components::oauth_sign_in::OAuthSignIn;
use crate::components::servers::header_fields::{HeaderFields, HeaderRow, header_map};
use crate::components::servers::screen;
use crate::components::servers::tool_row::ToolRow;
use crate::components::store;
use crate::servers::{tool_counts, tools_summary};

/// The row of the server `slug`.
#[component]
pub fn ServerRow(slug: String) -> impl IntoView {
    let store = store();
    let screen = screen();
    let server: Memo<Option<UserMcpServer>> = {
        let slug = slug.clone();
        Memo::new(move |_| {
            screen
                .servers
                .with(|l| l.iter().flatten().find(|s| s.slug == slug).cloned())
        })
    };
    let field = move |f: fn(&UserMcpServer) -> String| {
        move || server.with(|s| s.as_ref().map(f).unwrap_or_default())
    };
    let focused = {
        let slug = slug.clone();
        move || screen.focus.with(|f| f.as_deref() == Some(slug.as_str()))
    };
    let refresh_ref = NodeRef::<html::Button>::new();
    let f2 = focused.clone();
    Effect::new(move |_| {
        if let Some(b) = refresh_ref.get().filter(|_| f2()) {
            let _ = b.focus();
            b.scroll_into_view();
        }
    });
    let stale = move || server.with(|s| s.as_ref().map(|s| tool_counts(s).2).unwrap_or(0));
    let enabled = move || server.with(|s| s.as_ref().is_some_and(|s| s.enabled));
    let patch = {
        let slug = slug.clone();
        move |p: UserMcpServerPatch| {
            let slug = slug.clone();
            spawn_local(async move {
                match store.api().patch_user_mcp_server(&slug, &p).await {
                    Ok(s) => screen.put(s),
                    Err(e) => {
                        screen.fail(format!("Changing {slug} failed: {}", e.message()));
                        screen.reload();
                    }
                }
            });
        }
    };
    let editing_headers = RwSignal::new(false);
    let header_rows = RwSignal::new(Vec::<HeaderRow>::new());
    let save_headers = {
        let patch = patch.clone();
        move || match header_map(&header_rows.get_untracked()) {
            Ok(map) => {
                let mut p = UserMcpServerPatch::default();
                p.headers = Some(map);
                patch(p);
                editing_headers.set(false);
                header_rows.set(Vec::new());
            }
            Err(e) => screen.fail(e),
        }
    };
    let confirming = RwSignal::new(false);
    let confirm_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = confirm_ref.get() {
            let _ = b.focus();
        }
    });
    let delete = {
        let slug = slug.clone();
        move || {
            let slug = slug.clone();
            confirming.set(false);
            spawn_local(async move {
                match store.api().delete_user_mcp_server(&slug).await {
                    Ok(()) => screen.remove(&slug),
                    Err(e) => screen.fail(format!("Deleting {slug} failed: {}", e.message())),
                }
            });
        }
    };
    let tool_names = Memo::new(move |_| {
        server.with(|s| {
            s.iter()
                .flat_map(|s| s.tools.iter().map(|t| t.name.clone()))
                .collect::<Vec<_>>()
        })
    });
    let (s_refresh, s_busy, s_label) = (slug.clone(), slug.clone(), slug.clone());
    let s_oauth = slug.clone();
    let busy = move || {
        screen
            .refreshing
            .with(|r| r.as_deref() == Some(s_busy.as_str()))
    };
    let busy2 = busy.clone();
    let patch_on = patch.clone();
    view! {
        <li class="lmck-server" class:lmck-current=focused data-slug=slug.clone()>
            <div class="lmck-server-head">
                <span class="lmck-server-name">{field(|s| s.name.clone())}</span>
                <code class="lmck-badge">{slug.clone()}</code>
                {move || (stale() > 0).then(|| view! {
                    <span class="lmck-badge lmck-badge-error lmck-stale">{format!("{} stale", stale())}</span>
                })}
            </div>
            <div class="lmck-muted lmck-server-url">{field(|s| s.url.clone())}</div>
            <div class="lmck-muted lmck-server-meta">
                <span class="lmck-credentials">{field(|s| format!("credentials: {}", match s.credentials {
                    CredentialsState::Set => "set",
                    CredentialsState::NotSet => "not set",
                }))}</span>
                " · "
                <span class="lmck-tool-counts">{field(tools_summary)}</span>
                {move || match server.with(|s| s.as_ref().map(|s| s.oauth)) {
                    Some(OAuthStatus::SignInRequired) => view! {
                        " · "
                        <span class="lmck-oauth-status">"sign-in required"</span>
                        <OAuthSignIn api=store.api() slug=s_oauth.clone() />
                    }.into_any(),
                    Some(OAuthStatus::SignedIn) => view! {
                        " · "
                        <span class="lmck-oauth-status">"signed in"</span>
                    }.into_any(),
                    _ => ().into_any(),
                }}
            </div>
            <div class="lmck-row">
                <label class="lmck-check">
                    <input type="checkbox" class="lmck-server-enabled" prop:checked=enabled
                        on:change=move |ev| {
                            let mut p = UserMcpServerPatch::default();
                            p.enabled = Some(event_target_checked(&ev));
                            patch_on(p);
                        } />
                    "Offered to the model"
                </label>
                <button class="lmck-btn lmck-refresh" node_ref=refresh_ref disabled=busy
                    aria-label=format!("Refresh {s_label}: review its tools")
                    on:click=move |_| screen.refresh(s_refresh.clone())>
                    {move || if busy2() { "Refreshing…" } else { "Refresh" }}
                </button>
                <button class="lmck-btn lmck-edit-headers" aria-expanded=move || editing_headers.get().to_string()
                    on:click=move |_| editing_headers.update(|e| *e = !*e)>"Replace headers"</button>
                <button class="lmck-btn lmck-server-delete" on:click=move |_| confirming.set(true)>"Delete"</button>
            </div>
            <Show when=move || editing_headers.get()>
                <HeaderFields rows=header_rows />
                <p class="lmck-muted">"Saving replaces every stored header; none removes them."</p>
                <div class="lmck-row">
                    <button class="lmck-btn lmck-primary lmck-save-headers" on:click={let s = save_headers.clone(); move |_| s()}>"Save headers"</button>
                    <button class="lmck-btn" on:click=move |_| editing_headers.set(false)>"Cancel"</button>
                </div>
            </Show>
            <Show when=move || confirming.get()>
                <div class="lmck-row" role="alertdialog" aria-label="Delete server">
                    <span>{field(|s| format!("Delete {}? Its tools leave your chats.", s.name))}</span>
                    <button class="lmck-btn lmck-danger lmck-confirm" node_ref=confirm_ref
                        on:click={let d = delete.clone(); move |_| d()}>"Delete"</button>
                    <button class="lmck-btn" on:click=move |_| confirming.set(false)>"Cancel"</button>
                </div>
            </Show>
            <ul class="lmck-server-tools" aria-label="Accepted tools">
                {move || tool_names.get().into_iter().map(|name| view! { <ToolRow server name /> }).collect_view()}
            </ul>
        </li>
    }
}
