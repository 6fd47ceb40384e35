//! A searchable, keyboard-driven single-choice list (↑/↓/Enter/Esc) for the start screen's
//! persona and model pickers.
//!
//! - Options may carry a group (a heading shown above the first option of each group: the
//!   model picker groups by provider) and may be disabled with a reason, shown as visible text
//!   and as the option's tooltip. A disabled option can be reached with ↑/↓ (so its reason is
//!   read) but never picked, by Enter or by click.
//! - The open list names its highlighted option in the input's `aria-activedescendant` and keeps
//!   it scrolled into view; option `i` (of the filtered list) has the id
//!   `lmck-combo-{label}-opt-{i}`.

use leptos::prelude::*;

use crate::components::menus::reveal_option;

/// One option of a [`Combo`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ComboOption {
    /// The value picked.
    pub id: String,
    /// The option's title.
    pub title: String,
    /// A muted subtitle.
    pub subtitle: String,
    /// Its group's heading (consecutive options of one group sit under one heading).
    pub group: Option<String>,
    /// Why it cannot be picked (then it is disabled).
    pub disabled: Option<String>,
}

impl ComboOption {
    /// An enabled option without a group.
    pub fn new(id: String, title: String, subtitle: String) -> Self {
        Self {
            id,
            title,
            subtitle,
            ..Self::default()
        }
    }

    fn matches(&self, q: &str) -> bool {
        let hay = [
            Some(&self.id),
            Some(&self.title),
            Some(&self.subtitle),
            self.group.as_ref(),
        ];
        q.is_empty()
            || hay
                .into_iter()
                .flatten()
                .any(|s| crate::text::lower(s).contains(q))
    }
}

/// A searchable single-choice list.
#[component]
pub fn Combo(
    label: &'static str,
    options: Signal<Vec<ComboOption>>,
    value: Signal<String>,
    on_select: Callback<String>,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let open = RwSignal::new(false);
    let active = RwSignal::new(0usize);
    let filtered = Signal::derive(move || {
        let q = crate::text::lower(&query.get());
        options
            .get()
            .into_iter()
            .filter(|o| o.matches(&q))
            .collect::<Vec<_>>()
    });
    let shown = move || {
        let v = value.get();
        options
            .with(|o| o.iter().find(|o| o.id == v).map(|o| o.title.clone()))
            .unwrap_or_default()
    };
    let pick = move |o: ComboOption| {
        if o.disabled.is_some() {
            return;
        }
        on_select.run(o.id);
        open.set(false);
        query.set(String::new());
    };
    let list_id = format!("lmck-combo-{}", crate::text::lower(label));
    let option_id = move |i: usize| format!("lmck-combo-{}-opt-{i}", crate::text::lower(label));
    Effect::new(move |_| {
        let n = filtered.with(Vec::len);
        if open.get() && n > 0 {
            reveal_option(option_id(active.get().min(n - 1)));
        }
    });
    // The highlighted option, named by the input's `aria-activedescendant` while the list is open.
    let active_option = move || {
        let n = filtered.with(Vec::len);
        (open.get() && n > 0).then(|| option_id(active.get().min(n - 1)))
    };
    let rows = move || {
        let list = filtered.get();
        let mut prev: Option<Option<String>> = None;
        list.into_iter()
            .enumerate()
            .map(|(i, o)| {
                let heading = (prev.as_ref() != Some(&o.group))
                    .then(|| o.group.clone())
                    .flatten()
                    .map(|g| view! { <li role="presentation" class="lmck-combo-group">{g}</li> });
                prev = Some(o.group.clone());
                let (reason, tip, off) =
                    (o.disabled.clone(), o.disabled.clone(), o.disabled.is_some());
                let picked = o.clone();
                view! {
                    {heading}
                    <li role="option" class="lmck-menu-item" data-id=o.id.clone() id=option_id(i)
                        class:lmck-selected=move || active.get() == i class:lmck-disabled=off
                        aria-disabled=off.then_some("true") title=tip
                        aria-selected=move || (active.get() == i).to_string()
                        on:mousedown=move |ev| { ev.prevent_default(); pick(picked.clone()); }>
                        <span class="lmck-menu-title">{o.title}</span>
                        <span class="lmck-muted">{o.subtitle}</span>
                        {reason.map(|r| view! { <span class="lmck-unavailable">{r}</span> })}
                    </li>
                }
            })
            .collect_view()
    };

    view! {
        <div class="lmck-combo">
            <label class="lmck-label">{label}
                <input class="lmck-field lmck-combo-input" type="text" role="combobox"
                    aria-expanded=move || open.get().to_string() aria-controls=list_id.clone() autocomplete="off"
                    aria-autocomplete="list" aria-activedescendant=active_option
                    placeholder=shown
                    prop:value=move || if open.get() { query.get() } else { shown() }
                    on:focus=move |_| { open.set(true); query.set(String::new()); active.set(0); }
                    on:blur=move |_| open.set(false)
                    on:input=move |ev| { query.set(event_target_value(&ev)); active.set(0); open.set(true); }
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                        let n = filtered.with_untracked(Vec::len);
                        match ev.key().as_str() {
                            "ArrowDown" if n > 0 => { ev.prevent_default(); open.set(true); active.update(|a| *a = (*a + 1) % n); }
                            "ArrowUp" if n > 0 => { ev.prevent_default(); active.update(|a| *a = (*a + n - 1) % n); }
                            "Enter" => {
                                ev.prevent_default();
                                if let Some(o) = filtered.with_untracked(|f| f.get(active.get_untracked()).cloned()) { pick(o); }
                            }
                            "Escape" => open.set(false),
                            _ => {}
                        }
                    } />
            </label>
            <Show when=move || open.get()>
                <ul class="lmck-menu lmck-combo-list" role="listbox" id=list_id.clone() aria-label=label>
                    {rows}
                </ul>
            </Show>
        </div>
    }
}
