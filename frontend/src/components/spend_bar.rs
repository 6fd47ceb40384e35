//! The conversation header's spend: the thread's tokens and cost, and the context gauge of the
//! chat's model (see [`crate::spend`] for the rules). The totals are
//! [`ConversationTotals::of`] the open chat's messages, what the server's store computes on
//! each save. The gauge is a native `<meter>` (no inline style, which the page's CSP forbids);
//! from [`CONTEXT_WARN_PERCENT`](crate::spend::CONTEXT_WARN_PERCENT) on it is marked as a
//! warning and offers a button that runs `/compact` ([`compact_open_chat`]).

use leptos::prelude::*;
use lmchatkit_protocol::{ConversationTotals, Message};

use crate::actions::compact_open_chat;
use crate::components::store;
use crate::spend::{Gauge, format_cost, gauge};

/// The open chat's totals and context gauge (nothing on the start screen).
#[component]
pub fn SpendBar() -> impl IntoView {
    let store = store();
    let totals = Memo::new(move |_| {
        store.chat.with(|c| {
            c.as_ref().map(|c| {
                // Only what the totals read is copied: a streaming delta re-runs this cheaply.
                c.messages.with(|ms| {
                    let msgs: Vec<Message> = ms.iter().map(|m| m.data.with(spend_of)).collect();
                    ConversationTotals::of(&msgs)
                })
            })
        })
    });
    let window = Memo::new(move |_| {
        let id = store.chat.with(|c| c.as_ref().map(|c| c.model.get()))?;
        store.model(&id)?.context_window
    });
    let tokens = move || {
        totals
            .get()
            .map(|t| t.total_input_tokens + t.total_output_tokens)
            .filter(|n| *n > 0)
    };
    let cost = move || totals.get().and_then(|t| t.total_cost_usd);
    let meter = move || {
        gauge(
            totals.get().and_then(|t| t.last_context_tokens),
            window.get(),
        )
    };
    view! {
        {move || tokens().map(|t| view! {
            <span class="lmck-usage lmck-usage-total" title="tokens used in this conversation (prompts + replies)">
                {format!("Σ {t} tokens")}</span>
        })}
        {move || cost().map(|c| view! {
            <span class="lmck-usage lmck-total-cost" title="what this conversation cost at the models' list prices">
                {format_cost(c)}</span>
        })}
        {move || meter().map(|g| view! { <ContextGauge g /> })}
    }
}

/// The part of a message the totals read (role, usage, cost).
fn spend_of(m: &Message) -> Message {
    let mut out = Message::assistant("");
    out.role = m.role;
    out.usage = m.usage;
    out.cost_usd = m.cost_usd;
    out
}

/// The gauge itself, with the compact button when it warns.
#[component]
fn ContextGauge(g: Gauge) -> impl IntoView {
    let store = store();
    let label = format!("Context window: {} of {} tokens used", g.used, g.window);
    let tip = label.clone();
    // The meter turns from its good colour to its bad one where the gauge warns.
    let high = g.meter_high();
    let (max, value) = (g.window.to_string(), g.used.to_string());
    view! {
        <span class="lmck-gauge" class:lmck-gauge-warn=g.warn title=tip>
            <meter class="lmck-gauge-meter" min="0" max=max value=value
                low=high.clone() high=high optimum="0" aria-label=label></meter>
            <span class="lmck-gauge-text">{format!("{} / {} ({}%)", g.used, g.window, g.percent)}</span>
            {g.warn.then(|| view! {
                <button class="lmck-btn lmck-compact-btn" disabled=move || store.busy.get()
                    title="The context window is nearly full: summarize the conversation (/compact)"
                    on:click=move |_| compact_open_chat(store)>"Compact"</button>
            })}
        </span>
    }
}
