//! The review of a refresh: new tools (description, the server's suggested approval), changed
//! ones (the accepted description against the new one, a note when the input schema changed),
//! tools gone upstream (offered for removal; a rename is one gone and one new, as the server
//! says), and the unchanged ones by name. The user ticks what to accept and picks an approval
//! per tool; Accept posts the hashes shown. A 409 (another refresh came between) says so and
//! offers to refresh again.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ToolReview, UserToolApproval};

use crate::components::servers::screen;
use crate::components::servers::tool_row::ApprovalSelect;
use crate::components::store;
use crate::servers::{Offer, accept_body, offers};

/// One offered tool's choices.
#[derive(Clone)]
struct Choice {
    offer: Offer,
    ticked: RwSignal<bool>,
    approval: RwSignal<UserToolApproval>,
}

/// The review of `slug`'s refresh.
#[component]
pub fn ReviewPane(slug: String, review: ToolReview) -> impl IntoView {
    let store = store();
    let screen = screen();
    let choices: Vec<Choice> = offers(&review)
        .into_iter()
        .map(|offer| Choice {
            ticked: RwSignal::new(false),
            approval: RwSignal::new(offer.approval),
            offer,
        })
        .collect();
    let removals: Vec<(String, RwSignal<bool>)> = review
        .removed
        .iter()
        .map(|t| (t.name.clone(), RwSignal::new(true)))
        .collect();
    let error = RwSignal::new(None::<String>);
    let conflict = RwSignal::new(false);
    let saving = RwSignal::new(false);
    let picked = StoredValue::new((choices.clone(), removals.clone()));
    let anything = move || {
        picked
            .with_value(|(c, r)| c.iter().any(|c| c.ticked.get()) || r.iter().any(|(_, t)| t.get()))
    };
    let all_ticked = move || picked.with_value(|(c, _)| c.iter().all(|c| c.ticked.get()));
    let accept = {
        let slug = slug.clone();
        move || {
            let body = picked.with_value(|(c, r)| {
                let chosen: Vec<_> = c
                    .iter()
                    .filter(|c| c.ticked.get_untracked())
                    .map(|c| (c.offer.clone(), c.approval.get_untracked()))
                    .collect();
                let remove = r
                    .iter()
                    .filter(|(_, t)| t.get_untracked())
                    .map(|(n, _)| n.clone())
                    .collect();
                accept_body(&chosen, remove)
            });
            let slug = slug.clone();
            saving.set(true);
            spawn_local(async move {
                let res = store.api().accept_user_mcp_tools(&slug, &body).await;
                saving.set(false);
                match res {
                    Ok(s) => {
                        screen.put(s);
                        screen.to_list(Some(slug));
                    }
                    Err(e) => {
                        conflict.set(e.is_conflict());
                        error.set(Some(e.message()));
                    }
                }
            });
        }
    };
    let n_added = review.added.len();
    let offer_view = move |c: &Choice, kind: &'static str, body: AnyView| {
        let (ticked, approval, name) = (c.ticked, c.approval, c.offer.name.clone());
        view! {
            <li class="lmck-review-tool" data-tool=name.clone() data-kind=kind>
                <label class="lmck-check">
                    <input type="checkbox" class="lmck-review-tick" prop:checked=move || ticked.get()
                        on:change=move |ev| ticked.set(event_target_checked(&ev)) />
                    <code class="lmck-tool-name">{name.clone()}</code>
                </label>
                <ApprovalSelect value=approval label=format!("Approval of {name}")
                    on_change=Callback::new(move |a| approval.set(a)) />
                {body}
            </li>
        }
    };
    let added = review
        .added
        .iter()
        .zip(&choices)
        .map(|(t, c)| {
            let body = view! { <p class="lmck-muted lmck-tool-desc">{t.description.clone()}</p> }
                .into_any();
            offer_view(c, "added", body)
        })
        .collect_view();
    let changed = review.changed.iter().zip(&choices[n_added..]).map(|(t, c)| {
        let body = view! {
            <div class="lmck-tool-desc lmck-review-diff">
                {match t.description_changed {
                    true => view! {
                        <div class="lmck-tool-label">"Accepted description"</div>
                        <p class="lmck-review-old">{t.accepted.description.clone()}</p>
                        <div class="lmck-tool-label">"Now"</div>
                        <p class="lmck-review-new">{t.upstream.description.clone()}</p>
                    }.into_any(),
                    false => view! { <p class="lmck-muted">{t.upstream.description.clone()}</p> }.into_any(),
                }}
                {t.schema_changed.then(|| view! {
                    <details class="lmck-review-schema">
                        <summary class="lmck-error">"Its input schema changed."</summary>
                        <pre class="lmck-tool-args">{serde_json::to_string_pretty(&t.upstream.input_schema).unwrap_or_default()}</pre>
                    </details>
                })}
            </div>
        }.into_any();
        offer_view(c, "changed", body)
    }).collect_view();
    let removed = removals.iter().map(|(name, ticked)| {
        let ticked = *ticked;
        view! {
            <li class="lmck-review-tool" data-tool=name.clone() data-kind="removed">
                <label class="lmck-check">
                    <input type="checkbox" class="lmck-review-remove" prop:checked=move || ticked.get()
                        on:change=move |ev| ticked.set(event_target_checked(&ev)) />
                    "Remove " <code class="lmck-tool-name">{name.clone()}</code>
                    " (no longer listed by the server)"
                </label>
            </li>
        }
    }).collect_view();
    let nothing = choices.is_empty() && removals.is_empty();
    let rename_hint = n_added > 0 && !review.removed.is_empty();
    let section = |title: &'static str, show: bool, items: AnyView| {
        show.then(move || {
            view! {
                <div class="lmck-tool-label">{title}</div>
                <ul class="lmck-review-list">{items}</ul>
            }
        })
    };
    let refresh_slug = slug.clone();
    let title = format!("Review the tools of {slug}");
    let label = title.clone();
    view! {
        <section class="lmck-review" aria-label=label>
            <h3 class="lmck-info-title">{title}</h3>
            {match nothing {
                true => view! { <p class="lmck-review-none">"Nothing to review: the server lists the tools you accepted."</p> }.into_any(),
                false => view! { <p class="lmck-muted">"Tick the tools the model may use. Nothing changes until you accept."</p> }.into_any(),
            }}
            {rename_hint.then(|| view! { <p class="lmck-muted">"A renamed tool shows as one removed and one new."</p> })}
            {section("New", n_added > 0, added.into_any())}
            {section("Changed", !review.changed.is_empty(), changed.into_any())}
            {section("Gone", !review.removed.is_empty(), removed.into_any())}
            {(!review.unchanged.is_empty()).then(|| view! {
                <p class="lmck-muted lmck-review-unchanged">{format!("Unchanged: {}", review.unchanged.join(", "))}</p>
            })}
            {move || error.get().map(|e| view! { <p class="lmck-error lmck-form-error" role="alert">{e}</p> })}
            <div class="lmck-row">
                <Show when=move || !conflict.get() fallback=move || {
                    let s = refresh_slug.clone();
                    view! { <button class="lmck-btn lmck-primary lmck-refresh-again" on:click=move |_| screen.refresh(s.clone())>"Refresh again"</button> }
                }>
                    <button class="lmck-btn lmck-primary lmck-accept" disabled=move || saving.get() || !anything()
                        on:click={let a = accept.clone(); move |_| a()}>"Accept"</button>
                </Show>
                {(!choices.is_empty()).then(|| view! {
                    <button class="lmck-btn lmck-tick-all" on:click=move |_| {
                        let on = !all_ticked();
                        picked.with_value(|(c, _)| c.iter().for_each(|c| c.ticked.set(on)));
                    }>{move || if all_ticked() { "Untick all" } else { "Tick all" }}</button>
                })}
                <button class="lmck-btn lmck-review-back" on:click=move |_| screen.to_list(Some(slug.clone()))>"Back"</button>
            </div>
        </section>
    }
}
