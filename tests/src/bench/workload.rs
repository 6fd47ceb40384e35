//! The workload every path streams: how many tokens, how fast, how big. It travels inside the
//! last user message (`bench tokens=50 interval_us=0 first_us=0 chunk=4`), so it passes
//! unchanged through every relay (ours, the AI SDK, LiteLLM) to the mock upstream. Each path
//! takes it in its own request shape ([`Body`]).

use std::time::Duration;

/// What the mock upstream streams for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Workload {
    /// Text deltas per reply.
    pub tokens: u32,
    /// Delay before the first delta.
    #[serde(rename = "first_token_delay_us")]
    pub first_us: u64,
    /// Delay between deltas (0: as fast as the socket takes them).
    #[serde(rename = "token_interval_us")]
    pub interval_us: u64,
    /// Characters of text per delta.
    #[serde(rename = "chunk_chars")]
    pub chunk: u32,
}

impl Default for Workload {
    fn default() -> Self {
        Self {
            tokens: 50,
            first_us: 0,
            interval_us: 0,
            chunk: 4,
        }
    }
}

impl Workload {
    /// The user message that asks the mock for this workload.
    pub fn prompt(&self) -> String {
        format!(
            "bench tokens={} first_us={} interval_us={} chunk={}",
            self.tokens, self.first_us, self.interval_us, self.chunk
        )
    }

    /// Reads a workload back from a prompt; missing keys keep `base`'s values.
    pub fn parse(text: &str, base: Workload) -> Workload {
        let mut w = base;
        for kv in text.split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Ok(n) = v.parse::<u64>() else { continue };
            match k {
                "tokens" => w.tokens = n as u32,
                "first_us" => w.first_us = n,
                "interval_us" => w.interval_us = n,
                "chunk" => w.chunk = n.max(1) as u32,
                _ => {}
            }
        }
        w
    }

    /// Delay before the first delta.
    pub fn first_delay(&self) -> Duration {
        Duration::from_micros(self.first_us)
    }

    /// Delay between deltas.
    pub fn interval(&self) -> Duration {
        Duration::from_micros(self.interval_us)
    }

    /// The text of delta `i`: exactly `chunk` ASCII characters, no JSON escaping needed.
    pub fn token_text(&self, i: u32) -> String {
        let mut s = format!("t{i}");
        let n = self.chunk as usize;
        if s.len() >= n {
            s.truncate(n.saturating_sub(1));
        }
        while s.len() < n {
            s.push(' ');
        }
        s
    }

    /// The whole reply, as a client assembles it.
    pub fn reply(&self) -> String {
        (0..self.tokens).map(|i| self.token_text(i)).collect()
    }
}

/// The event format a path streams, which says what a token and the end of a stream look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// OpenAI `chat.completion.chunk`s ending with `[DONE]` (the mock, the echo, LiteLLM).
    OpenAi,
    /// lmchatkit events: `delta`… then `done`.
    Lmchatkit,
    /// AI SDK UI message stream: `text-delta`… then `finish`, `[DONE]`.
    AiSdk,
}

/// The request body a path takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `{model, stream: true, messages}` (the mock, the echo, LiteLLM).
    OpenAi,
    /// `{model, messages}` of `{role, content}` messages (lmchatkit's `/api/chat`, the AI SDK
    /// relay, which hands them to `streamText`).
    Chat,
    /// What the AI SDK's `DefaultChatTransport` posts: `{id, messages, trigger, model}` with one
    /// user `UIMessage` of one text part (lmchatkit's `/api/aisdk/chat`). `id` is the thread the
    /// server saves, so every request names a fresh one, as a new chat does.
    UiMessages,
    /// [`Body::Chat`] naming a fresh conversation (`conversation_id`) on every request, so the
    /// service saves the reply into its history store as the run goes (the shared-engines
    /// comparison of [`super::engines`]).
    ChatSaved,
}

impl Body {
    /// The body a path streaming `flavor` takes unless told otherwise.
    pub fn of(flavor: Flavor) -> Self {
        match flavor {
            Flavor::OpenAi => Body::OpenAi,
            Flavor::Lmchatkit | Flavor::AiSdk => Body::Chat,
        }
    }

    /// Whether each request needs a body of its own (a fresh thread id).
    pub fn per_request(self) -> bool {
        matches!(self, Body::UiMessages | Body::ChatSaved)
    }

    /// The JSON body asking for `w`; `thread` is the chat id of [`Body::UiMessages`] and the
    /// conversation id of [`Body::ChatSaved`] (ignored by the others).
    pub fn render(self, w: &Workload, thread: &str) -> String {
        let prompt = w.prompt();
        match self {
            Body::OpenAi => serde_json::json!({"model": "mock-small", "stream": true,
                "messages": [{"role": "user", "content": prompt}]}),
            Body::Chat => serde_json::json!({"model": "mock-small",
                "messages": [{"role": "user", "content": prompt}]}),
            Body::ChatSaved => serde_json::json!({"model": "mock-small",
                "messages": [{"role": "user", "content": prompt}], "conversation_id": thread}),
            Body::UiMessages => serde_json::json!({"id": thread, "trigger": "submit-message",
                "model": "mock-small", "messages": [{"id": "u1", "role": "user",
                "parts": [{"type": "text", "text": prompt}]}]}),
        }
        .to_string()
    }
}

/// What one `data:` payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Carries visible text.
    Token,
    /// Ends the stream successfully.
    End,
    /// Reports an error.
    Error,
    /// Anything else (role chunks, `start`, usage, …).
    Other,
}

impl Flavor {
    /// Classifies one `data:` payload by prefix or substring, without parsing the JSON.
    pub fn classify(self, data: &[u8]) -> Kind {
        match self {
            Flavor::OpenAi => {
                if data == b"[DONE]" {
                    Kind::End
                } else if openai_has_text(data) {
                    Kind::Token
                } else if data.starts_with(b"{\"error\"") {
                    Kind::Error
                } else {
                    Kind::Other
                }
            }
            Flavor::Lmchatkit => {
                if data.starts_with(b"{\"type\":\"delta\"") {
                    Kind::Token
                } else if data.starts_with(b"{\"type\":\"done\"") {
                    Kind::End
                } else if data.starts_with(b"{\"type\":\"error\"") {
                    Kind::Error
                } else {
                    Kind::Other
                }
            }
            Flavor::AiSdk => {
                if data.starts_with(b"{\"type\":\"text-delta\"") {
                    Kind::Token
                } else if data == b"[DONE]" {
                    Kind::End
                } else if data.starts_with(b"{\"type\":\"error\"") {
                    Kind::Error
                } else {
                    Kind::Other
                }
            }
        }
    }
}

/// Whether an OpenAI chunk carries non-empty `"content"` text (compact or Python-style
/// `"content": "…"` spacing).
fn openai_has_text(data: &[u8]) -> bool {
    const KEY: &[u8] = b"\"content\":";
    let Some(at) = data.windows(KEY.len()).position(|w| w == KEY) else {
        return false;
    };
    let rest = &data[at + KEY.len()..];
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    rest.first() == Some(&b'"') && rest.get(1).is_some_and(|&c| c != b'"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_round_trips_and_tokens_have_the_chunk_size() {
        let w = Workload {
            tokens: 7,
            first_us: 3,
            interval_us: 5,
            chunk: 3,
        };
        assert_eq!(Workload::parse(&w.prompt(), Workload::default()), w);
        assert!((0..7).all(|i| w.token_text(i).len() == 3));
        assert_eq!(w.reply().len(), 21);
    }

    #[test]
    fn classifies_each_flavor() {
        let k = Flavor::Lmchatkit.classify(br#"{"type":"delta","delta":"x"}"#);
        assert_eq!(k, Kind::Token);
        let k = Flavor::OpenAi.classify(br#"{"choices":[{"delta":{"content":""}}]}"#);
        assert_eq!(k, Kind::Other);
        let k = Flavor::OpenAi.classify(br#"{"choices": [{"delta": {"content": "hi"}}]}"#);
        assert_eq!(k, Kind::Token);
        assert_eq!(Flavor::AiSdk.classify(b"[DONE]"), Kind::End);
    }

    #[test]
    fn the_ai_sdk_route_gets_what_default_chat_transport_posts_for_the_given_thread() {
        let w = Workload::default();
        let v: serde_json::Value =
            serde_json::from_str(&Body::UiMessages.render(&w, "aisdk-7")).unwrap();
        assert_eq!(v["id"], "aisdk-7");
        assert_eq!(v["trigger"], "submit-message");
        assert_eq!(v["model"], "mock-small");
        let m = &v["messages"][0];
        assert_eq!(
            (m["id"].as_str(), m["role"].as_str()),
            (Some("u1"), Some("user"))
        );
        assert_eq!(m["parts"][0]["type"], "text");
        assert_eq!(m["parts"][0]["text"], w.prompt());
        assert!(Body::UiMessages.per_request());
    }

    #[test]
    fn the_other_paths_keep_one_body_in_their_own_shape() {
        let w = Workload::default();
        let chat: serde_json::Value =
            serde_json::from_str(&Body::of(Flavor::AiSdk).render(&w, "x")).unwrap();
        assert_eq!(chat["messages"][0]["content"], w.prompt());
        assert!(chat.get("stream").is_none() && chat.get("id").is_none());
        let openai: serde_json::Value =
            serde_json::from_str(&Body::of(Flavor::OpenAi).render(&w, "x")).unwrap();
        assert_eq!(openai["stream"], true);
        assert!(!Body::Chat.per_request() && !Body::OpenAi.per_request());
    }
}
