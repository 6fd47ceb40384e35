//! Conversion between AI SDK `UIMessage`s and our [`Message`]s, lossless both ways for what
//! both represent, and keeping the rest (in [`Message::aisdk`]) so a thread round-trips
//! exactly: `to_ui_messages(&to_messages(x)) == x`, also after storing the messages as JSON.
//!
//! What the model sees ([`to_messages`]):
//! - A user (or system) message is one [`Message`]: one text part becomes [`Content::Text`],
//!   anything else [`Content::Parts`] (text, `image_url` for `image/*` files, `file` with
//!   `file_data`/`filename` for other files).
//! - An assistant message is split at its `step-start` parts into one assistant message per
//!   step (its reasoning as `thinking`, its texts concatenated as `content`, its tool parts as
//!   `tool_calls` with the input as `arguments`), each followed by one [`Role::Tool`] message
//!   per tool part with an outcome: `output-available` gives the output as text (a JSON string
//!   as it is, other JSON serialized), `output-error` an error with the `errorText`,
//!   `output-denied` an error telling the model the user declined ([`denied_text`]).
//!   `approval-requested` / `approval-responded` map onto [`ToolCall::approval`] (`Pending`,
//!   `Approved`, `Denied`); such calls have no tool message yet.
//! - Ids: the first message carries the `UIMessage` id; the others get `{id}~1`, `{id}~2`, …
//!   (distinct, deterministic: our UI keys rows by id) and name the `UIMessage` in
//!   [`AiSdkExtra::of`].
//! - Our [`UiMessageMetadata`] on an assistant message also fills [`Message::usage`] of its last
//!   step and [`Message::created_at`] of its first, so thread totals and our UI's footers work.
//!
//! Back ([`to_ui_messages`]): messages carrying [`Message::aisdk`] regroup exactly; where the
//! model-facing fields were edited since, they win over the stored layout. Messages written
//! by our own UI (no `aisdk`) convert too: a user message is a `UIMessage`; consecutive
//! assistant and tool messages after it group into one assistant `UIMessage` (the first's id),
//! one step per assistant message, with `dynamic-tool` parts. Info cards (UI-only) are left
//! out.
//!
//! [`AiSdkExtra::of`]: super::AiSdkExtra::of
//! [`UiMessageMetadata`]: super::UiMessageMetadata

mod back;
mod forward;

pub use back::to_ui_messages;
pub use forward::to_messages;

#[allow(unused_imports)] // rustdoc links
use crate::chat::{Content, Message, Role, ToolCall};

/// The tool result the model reads when the user declined a call of `tool`, with the user's
/// reason when one was given.
///
/// ```
/// use lmchatkit_protocol::ui_stream::denied_text;
/// assert!(denied_text("fs__rm", Some("not now")).ends_with("Their reason: not now"));
/// ```
pub fn denied_text(tool: &str, reason: Option<&str>) -> String {
    let mut s = format!(
        "The user declined this call of '{tool}', so it did not run. Do not call it again \
         unless the user asks; continue without it or ask how to proceed."
    );
    if let Some(r) = reason.map(str::trim).filter(|r| !r.is_empty()) {
        s.push_str(" Their reason: ");
        s.push_str(r);
    }
    s
}
