//! A custom `Host` in under 50 lines: a model that answers in reverse, mounted on hyper.
//! Run: `cargo run -p lmchatkit-tests --example custom_host`, then open the printed URL.

use futures_util::stream;
use lmchatkit::protocol::{Event, FinishReason, Model};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventStream, Host, HostError, RequestContext, async_trait,
};

/// Replies with the user's last message, reversed, a word at a time.
struct Reverser;

#[async_trait]
impl Host for Reverser {
    async fn models(&self, _cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("reverser")])
    }

    fn complete(&self, _cx: &RequestContext, req: CompleteRequest) -> EventStream {
        let last = req
            .messages
            .last()
            .and_then(|m| m.content.as_text())
            .unwrap_or_default();
        let reversed: String = last.chars().rev().collect();
        let words: Vec<Event> = reversed.split_inclusive(' ').map(Event::delta).collect();
        let done = Event::done(FinishReason::Stop, None);
        Box::pin(stream::iter(words.into_iter().chain([done])))
    }
}

#[tokio::main]
async fn main() {
    let svc = ChatService::new(Config::builder(Reverser).build().expect("valid config"));
    lmchatkit_tests::serve::run_printing_url(svc, "/chat").await;
}
