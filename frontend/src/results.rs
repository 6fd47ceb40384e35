//! Which tool message answers which call.
//!
//! **A result belongs to the call of its own assistant message**: the tool messages that follow
//! an assistant message, up to the next user or assistant message (info cards do not count), answer
//! that message's calls, matched by call id among them only. Call ids are not unique across a chat:
//! providers number calls per response (`call_0`, `call_1`, … in every reply) and the demo model
//! used to say `demo_call_1` every time, so a lookup by id across the whole chat showed an earlier
//! call's result on a later call, skipped running it, and loaded the earlier call's view. Results
//! are therefore keyed by [`CallKey`] (the assistant message's id and the call id).

use std::collections::HashMap;

use lmchatkit_protocol::{Message, Role};

/// One call of one assistant message: (the message's id, the call's id).
pub type CallKey = (String, String);

/// The result of a call as a card shows it: (text, is_error).
pub type Shown = (String, bool);

/// Whether `m` ends the answers of the assistant message before it (a user message, or an
/// assistant message that is not an info card).
pub fn ends_answers(m: &Message) -> bool {
    m.info.is_none() && matches!(m.role, Role::User | Role::Assistant)
}

/// The tool message answering call `call_id` of the assistant message at index `at`.
pub fn answer_of<'a>(messages: &'a [Message], at: usize, call_id: &str) -> Option<&'a Message> {
    messages
        .iter()
        .skip(at + 1)
        .take_while(|m| !ends_answers(m))
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id))
}

/// Every answered call of `messages` (which carry their ids), keyed by [`CallKey`]. A tool
/// message with no assistant message before it, or whose id no call of that message has, is
/// left out.
pub fn link_results(messages: &[Message]) -> HashMap<CallKey, Shown> {
    let mut out = HashMap::new();
    for (at, m) in messages.iter().enumerate() {
        if m.role != Role::Assistant || m.info.is_some() {
            continue;
        }
        let Some(owner) = &m.id else { continue };
        for call in &m.tool_calls {
            if let Some(r) = answer_of(messages, at, &call.id) {
                let text = r.content.as_text().unwrap_or_default().to_owned();
                out.insert((owner.clone(), call.id.clone()), (text, r.is_error));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lmchatkit_protocol::ToolCall;
    use serde_json::json;

    fn asking(id: &str, call: &str) -> Message {
        Message::assistant("")
            .with_id(id)
            .with_tool_calls(vec![ToolCall::new(call, "get_weather", json!({}))])
    }

    fn key(owner: &str, call: &str) -> CallKey {
        (owner.into(), call.into())
    }

    #[test]
    fn two_replies_reusing_a_call_id_each_get_their_own_result() {
        let msgs = [
            Message::user("Oslo").with_id("u1"),
            asking("a1", "call_1"),
            Message::tool("call_1", "get_weather", "Oslo: sunny").with_id("t1"),
            Message::assistant("It is sunny.").with_id("a2"),
            Message::user("Paris").with_id("u2"),
            asking("a3", "call_1"),
            Message::tool("call_1", "get_weather", "Paris: rain").with_id("t2"),
        ];
        let r = link_results(&msgs);
        assert_eq!(r.len(), 2);
        assert_eq!(r[&key("a1", "call_1")].0, "Oslo: sunny");
        assert_eq!(r[&key("a3", "call_1")].0, "Paris: rain");
        assert_eq!(
            answer_of(&msgs, 5, "call_1").and_then(|m| m.id.as_deref()),
            Some("t2")
        );
    }

    #[test]
    fn a_later_call_is_unanswered_until_its_own_result_comes() {
        let msgs = [
            asking("a1", "call_1"),
            Message::tool("call_1", "get_weather", "Oslo: sunny"),
            Message::user("again"),
            asking("a2", "call_1"),
        ];
        assert!(answer_of(&msgs, 3, "call_1").is_none());
        assert!(!link_results(&msgs).contains_key(&key("a2", "call_1")));
    }

    #[test]
    fn info_cards_between_a_call_and_its_result_do_not_cut_it_off() {
        let mut card = Message::assistant("").with_id("i1");
        card.info = Some(json!({"title": "Available MCP Prompts"}));
        let mut err = Message::tool("c", "t", "boom");
        err.is_error = true;
        let msgs = [asking("a1", "c"), card, err];
        assert_eq!(
            link_results(&msgs).get(&key("a1", "c")),
            Some(&("boom".to_owned(), true))
        );
        assert!(ends_answers(&Message::user("u")));
        assert!(!ends_answers(&msgs[1]));
    }
}
