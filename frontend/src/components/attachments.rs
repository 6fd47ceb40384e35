//! Attachment chips above the composer (image thumbnails or a file name, with a remove button)
//! and the upload of picked, dropped or pasted files through `POST /api/upload` (only when the
//! server enables uploads). Upload errors are shown, not swallowed.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::store;
use crate::state::Store;

/// Uploads files and adds them as attachments.
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
    if !any {
        return;
    }
    spawn_local(async move {
        match store.api().upload(form).await {
            Ok(r) => store.attachments.update(|a| a.extend(r.files)),
            Err(e) => store.notice.set(Some(format!("Upload failed ({e})."))),
        }
    });
}

/// Whether uploads are enabled by the server.
pub fn uploads_enabled(store: Store) -> bool {
    store.config.with(|c| {
        c.as_ref()
            .and_then(|r| r.as_ref().ok())
            .is_some_and(|c| c.file_upload)
    })
}

/// The chips of the pending attachments.
#[component]
pub fn Attachments() -> impl IntoView {
    let store = store();
    view! {
        <Show when=move || store.attachments.with(|a| !a.is_empty())>
            <div class="lmck-chips">
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
