//! Usage metadata, threads and the model menu as AI SDK apps see them
//! (`GET {prefix}/api/aisdk/threads[/{id}]`, `GET {prefix}/api/aisdk/models`).
//!
//! Decisions: keys are camelCase as the seed's `aichat` spells them; times are milliseconds
//! since the Unix epoch, as everywhere in our protocol; a cost is omitted (never `0`) when no
//! price is known.

use serde::{Deserialize, Serialize};

use super::message::UiMessage;
use crate::chat::Usage;
use crate::history::ConversationSummary;

/// Token counts of one assistant message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of the generated tokens, those spent reasoning; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Of the prompt tokens, those read from the provider's cache; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// What the last model call held in its context window (prompt plus output), when the
    /// message took several calls; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

/// The `metadata` our server puts on an assistant `UIMessage` (`message-metadata` chunk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiMessageMetadata {
    /// The model id that answered.
    pub model: String,
    /// Token counts.
    pub usage: UiUsage,
    /// Cost in US dollars; omitted when no price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// When the message was written, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The server-side run that wrote the message (`POST {prefix}/api/runs/{id}/stop` stops
    /// it); omitted when unknown. The `start` chunk carries it first, so a client can stop the
    /// run before the reply ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The reply was stopped before its end (`POST …/stop`); what it holds is what was written
    /// until then. Omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub stopped: bool,
    /// The reply's run failed before its end (the error the `error` chunk carried); what it
    /// holds is what was written until then. Omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// A thread in the list of `GET {prefix}/api/aisdk/threads`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    /// Thread id (our conversation id).
    pub id: String,
    /// Title.
    pub title: String,
    /// Creation time, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Time of the last change, in milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// Prompt tokens of every model call in the thread.
    pub total_input_tokens: u64,
    /// Generated tokens of every model call in the thread.
    pub total_output_tokens: u64,
    /// Cost of the thread in US dollars; omitted (never `0`) when no price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// What the last model call held (prompt plus output): how full the context window is;
    /// `0` when unknown.
    pub last_context_tokens: u64,
}

impl ThreadSummary {
    /// The entry of a stored conversation, with the totals the store keeps
    /// ([`ConversationTotals`](crate::ConversationTotals)).
    pub fn from_summary(c: &ConversationSummary) -> ThreadSummary {
        ThreadSummary {
            id: c.id.clone(),
            title: c.title.clone(),
            created_at: c.created_at,
            updated_at: c.updated_at,
            total_input_tokens: c.totals.total_input_tokens,
            total_output_tokens: c.totals.total_output_tokens,
            total_cost_usd: c.totals.total_cost_usd,
            last_context_tokens: c.totals.last_context_tokens.unwrap_or(0),
        }
    }
}

/// A whole thread, `GET {prefix}/api/aisdk/threads/{id}`: the summary's keys plus `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// The summary (its keys are flattened into the thread object).
    #[serde(flatten)]
    pub summary: ThreadSummary,
    /// The messages, oldest first.
    pub messages: Vec<UiMessage>,
}

/// One entry of `GET {prefix}/api/aisdk/models` (the seed's `ModelInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiSdkModelInfo {
    /// Model id, `provider/model`.
    pub id: String,
    /// The provider's name.
    pub provider: String,
    /// Menu label.
    pub label: String,
    /// The model honours `reasoningEffort`.
    pub reasoning: bool,
    /// The provider is configured (the model is selectable), not merely catalogued.
    pub configured: bool,
    /// Maximum context tokens (the denominator of a usage gauge); `0` when unknown.
    pub context_window: u64,
}

impl From<&UiUsage> for Usage {
    /// The same counts in our protocol's terms (input as prompt tokens).
    fn from(u: &UiUsage) -> Self {
        Usage {
            prompt_tokens: Some(u.input_tokens),
            completion_tokens: Some(u.output_tokens),
            total_tokens: Some(u.input_tokens + u.output_tokens),
            cached_prompt_tokens: u.cached_input_tokens,
            reasoning_tokens: u.reasoning_tokens,
            context_tokens: u.context_tokens,
        }
    }
}

impl From<&Usage> for UiUsage {
    /// The same counts as an AI SDK app reads them (what was not reported is `0`, or absent
    /// for the optional shares).
    fn from(u: &Usage) -> Self {
        UiUsage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
            reasoning_tokens: u.reasoning_tokens,
            cached_input_tokens: u.cached_prompt_tokens,
            context_tokens: u.context_tokens,
        }
    }
}
