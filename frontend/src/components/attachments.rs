//! Attachment chips above the composer (image thumbnails or a file name, with a remove button)
//! and the upload of picked, dropped or pasted files through `POST /api/upload` (only when the
//! server enables uploads). Upload errors are shown, not swallowed. An `@` reference's chip is
//! read as soon as it appears (`turn::sync_refs`) and says so if the resource cannot be read,
//! before the message goes.

use leptos::prelude::*;

use crate::components::store;
use crate::state::{RefRead, Store};

/// Uploads files and adds them as attachments ([`crate::turn::upload`]: the upload is part of
/// the turn's code).
pub fn upload(store: Store, files: web_sys::FileList) {
    let Ok(form) = web_sys::FormData::new() else {
        return;
    };
    let mut any = false;
    for i in 0..files.length() {
        if let Some(f) = files.get(i) {
            let _ = form.append_with_blob_and_filename("file", &f, &f.name());
            any = true;
        }
    }
    if any {
        crate::turn::upload(store, form);
    }
}

/// Whether uploads are enabled by the server.
pub fn uploads_enabled(store: Store) -> bool {
    store.config.with(|c| {
        c.as_ref()
            .and_then(|r| r.as_ref().ok())
            .is_some_and(|c| c.file_upload)
    })
}

/// A resource's display name: its listed name, else the URI.
fn resource_label(store: crate::state::Store, uri: &str) -> String {
    store
        .resources
        .with_untracked(|rs| {
            rs.iter()
                .find(|r| r.uri == uri)
                .and_then(|r| r.name.clone())
        })
        .unwrap_or_else(|| uri.to_owned())
}

/// Chips for the `@` resource references of a sent message (its text keeps the `@uri`).
#[component]
pub fn RefChips(text: String) -> impl IntoView {
    let store = store();
    let refs: Vec<String> = crate::commands::resource_refs(&text)
        .into_iter()
        .map(str::to_owned)
        .collect();
    (!refs.is_empty()).then(|| {
        view! {
            <div class="lmck-chips lmck-ref-chips">
                {refs.into_iter().map(|uri| view! {
                    <span class="lmck-chip lmck-ref-chip" title=uri.clone()>"@ " {resource_label(store, &uri)}</span>
                }).collect_view()}
            </div>
        }
    })
}

/// The chips of the pending attachments: `@` resource references in the draft (removing one
/// removes its `@uri` from the text) and uploaded files (images as thumbnails).
#[component]
pub fn Attachments() -> impl IntoView {
    let store = store();
    let refs = Memo::new(move |_| {
        store.draft.with(|d| {
            crate::commands::resource_refs(d)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
    });
    // Each reference is read when it appears (the seed's pending tray); one that goes is
    // forgotten, so picking it again reads it again (`turn::sync_refs`).
    // Nothing to do (and no chunk to load) while there are none and none were read.
    Effect::new(move |_| {
        let current = refs.get();
        if !current.is_empty() || store.ref_reads.with_untracked(|m| !m.is_empty()) {
            crate::turn::sync_refs(store, current);
        }
    });
    view! {
        <Show when=move || store.attachments.with(|a| !a.is_empty()) || refs.with(|r| !r.is_empty())>
            <div class="lmck-chips">
                {move || refs.get().into_iter().map(|uri| {
                    let label = resource_label(store, &uri);
                    let u = uri.clone();
                    let read = store.ref_reads.with(|m| m.get(&uri).cloned());
                    let (class, title, note) = match read {
                        Some(RefRead::Failed(why)) => (
                            "lmck-chip lmck-ref-chip lmck-ref-failed",
                            format!("{uri}: could not be read: {why}"),
                            Some(why),
                        ),
                        Some(RefRead::Read) => ("lmck-chip lmck-ref-chip lmck-ref-read", uri.clone(), None),
                        _ => ("lmck-chip lmck-ref-chip lmck-ref-reading", uri.clone(), None),
                    };
                    view! {
                        <span class=class title=title>
                            <span class="lmck-chip-name">"@ " {label.clone()}</span>
                            {note.map(|why| view! { <span class="lmck-ref-error" role="alert">{format!("could not be read: {why}")}</span> })}
                            <button class="lmck-icon-btn" aria-label=format!("Remove {label}")
                                on:click=move |_| store.draft.update(|d| *d = crate::commands::remove_ref(d, &u))>"✕"</button>
                        </span>
                    }
                }).collect_view()}
                {move || store.attachments.get().into_iter().enumerate().map(|(i, f)| {
                    let thumb = f.mime_type.starts_with("image/") && f.data_url.starts_with("data:image/");
                    view! {
                        <span class="lmck-chip">
                            {thumb.then(|| view! { <img class="lmck-thumb" src=f.data_url.clone() alt="" /> })}
                            <span class="lmck-chip-name">{f.name.clone()}</span>
                            <button class="lmck-icon-btn" aria-label=format!("Remove {}", f.name)
                                on:click=move |_| store.attachments.update(|a| { if i < a.len() { a.remove(i); } })>"✕"</button>
                        </span>
                    }
                }).collect_view()}
            </div>
        </Show>
    }
}
