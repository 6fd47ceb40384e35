//! Header rows (name, value) for a server's credentials. Values are typed into password fields
//! and only ever sent: nothing shows them back, and the rows are dropped after saving.

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::servers::create_body;

/// One header row (its own signals, so typing re-renders nothing else).
#[derive(Clone, Copy)]
pub struct HeaderRow {
    id: u32,
    name: RwSignal<String>,
    value: RwSignal<String>,
}

impl HeaderRow {
    fn new(id: u32) -> Self {
        Self {
            id,
            name: RwSignal::new(String::new()),
            value: RwSignal::new(String::new()),
        }
    }
}

/// `(name, value)` of each row.
pub fn header_pairs(rows: &[HeaderRow]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (r.name.get_untracked(), r.value.get_untracked()))
        .collect()
}

/// The rows as the header map a create or patch carries (errors name the header, never a value).
pub fn header_map(rows: &[HeaderRow]) -> Result<BTreeMap<String, String>, String> {
    create_body("", "", "", &header_pairs(rows)).map(|b| b.headers)
}

/// The header rows, starting with one empty row, and a button adding more.
#[component]
pub fn HeaderFields(rows: RwSignal<Vec<HeaderRow>>) -> impl IntoView {
    let next = StoredValue::new(0u32);
    let add = move || {
        next.update_value(|n| *n += 1);
        let id = next.get_value();
        rows.update(|r| r.push(HeaderRow::new(id)));
    };
    // Rows belong to this mount: start afresh with one empty row.
    rows.set(Vec::new());
    add();
    view! {
        <fieldset class="lmck-headers">
            <legend class="lmck-label">"Headers, e.g. Authorization (stored encrypted; never shown again)"</legend>
            // Made again only when a row is added or removed (typing sets the row's own
            // signals); the fields are bound, so a row shown in another's place shows its own.
            {move || rows.get().into_iter().map(|row| view! {
                <div class="lmck-row lmck-header-row">
                    <input class="lmck-field lmck-header-name" placeholder="Name" autocomplete="off"
                        aria-label=format!("Header {} name", row.id) prop:value=move || row.name.get()
                        on:input=move |ev| row.name.set(event_target_value(&ev)) />
                    <input class="lmck-field lmck-header-value" type="password" placeholder="Value"
                        autocomplete="new-password" aria-label=format!("Header {} value", row.id)
                        prop:value=move || row.value.get()
                        on:input=move |ev| row.value.set(event_target_value(&ev)) />
                    <button type="button" class="lmck-icon-btn" aria-label=format!("Remove header {}", row.id)
                        on:click=move |_| rows.update(|r| r.retain(|o| o.id != row.id))>"✕"</button>
                </div>
            }).collect_view()}
            <button type="button" class="lmck-btn lmck-add-header" on:click=move |_| add()>"+ Header"</button>
        </fieldset>
    }
}
