//! The access layer's scope reaches the host: a host that answers per principal behind
//! `StandardHost`, and the MCP hub sharing servers out per principal, both through the routes.

use crate::support;

use std::sync::{Arc, Mutex};

use http::Request;
use http_body_util::Full;
use lmchatkit::mcp::{McpHub, demo_server_config};
use lmchatkit::protocol::*;
use lmchatkit::standard_host::StandardHost;
use lmchatkit::{
    CompleteRequest, Config, EventStream, Host, HostError, Principal, RequestContext, Scope,
    ToolSource, async_trait,
};
use serde_json::{Value, json};
use support::{get, post, send, service};

/// An LLM host whose tools depend on who asks; it records the tools of every completion.
#[derive(Default)]
struct PerPrincipal {
    seen: Arc<Mutex<Vec<Vec<String>>>>,
}

#[async_trait]
impl Host for PerPrincipal {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("m")])
    }
    fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
        let names = req.tools.iter().map(|t| t.name.clone()).collect();
        self.seen.lock().unwrap().push(names);
        Box::pin(futures_util::stream::iter([Event::done(
            FinishReason::Stop,
            None,
        )]))
    }
    async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        Ok(vec![Tool::new(format!(
            "notes_of_{}",
            scope.principal().id()
        ))])
    }
    async fn call_tool(
        &self,
        scope: &Scope,
        name: &str,
        _: Value,
    ) -> Result<ToolResult, HostError> {
        Ok(ToolResult::text(format!(
            "{name} for {}",
            scope.principal().id()
        )))
    }
    async fn tool_source(&self, _: &RequestContext, _: &str) -> ToolSource {
        ToolSource::Unscoped
    }
}

/// `req` sent as `who` (what a host's auth layer does).
fn as_user(who: &str, mut req: Request<Full<bytes::Bytes>>) -> Request<Full<bytes::Bytes>> {
    req.extensions_mut().insert(Principal::new(who));
    req
}

fn call(name: &str) -> Request<Full<bytes::Bytes>> {
    post(
        "/chat/api/tools/call",
        &json!({"name": name, "arguments": {}}),
    )
}

#[tokio::test]
async fn a_host_behind_standard_host_answers_per_principal() {
    let llm = PerPrincipal::default();
    let seen = llm.seen.clone();
    let svc = service(Config::builder(StandardHost::new(llm)));

    let r = send(&svc, as_user("alice", call("notes_of_alice"))).await;
    assert_eq!(r.json(), json!({"content": "notes_of_alice for alice"}));
    // Bob's scope has no such tool: refused before the host is asked to run it.
    let r = send(&svc, as_user("bob", call("notes_of_alice"))).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (403, "tool \"notes_of_alice\" is not recognized".to_owned())
    );

    let turn = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    send(&svc, as_user("bob", post("/chat/api/chat", &turn))).await;
    send(&svc, as_user("alice", post("/chat/api/chat", &turn))).await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            vec!["notes_of_bob".to_owned()],
            vec!["notes_of_alice".to_owned()]
        ]
    );
}

/// Two copies of the demo MCP server, `a` for alice and `b` for bob.
fn shared_out_hub() -> McpHub {
    let mut a = demo_server_config();
    a.name = "a".into();
    let mut b = demo_server_config();
    b.name = "b".into();
    McpHub::new(vec![a, b]).with_server_filter(|who, server| {
        matches!((who.id(), server), ("alice", "a") | ("bob", "b"))
    })
}

#[tokio::test]
async fn the_hub_answers_each_principal_from_their_servers_only() {
    let hub = shared_out_hub();
    let svc = service(Config::builder(
        StandardHost::new(PerPrincipal::default()).with_mcp(hub.clone()),
    ));

    let r = send(&svc, as_user("alice", call("a__current_time"))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["is_error"].is_null(), "{}", r.text());
    let r = send(&svc, as_user("alice", call("b__current_time"))).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (403, "tool \"b__current_time\" is not recognized".to_owned())
    );
    let r = send(&svc, as_user("bob", call("b__current_time"))).await;
    assert_eq!(r.status, 200, "{}", r.text());

    assert_eq!(prompt_names(&svc, "alice").await, ["a__explain"]);
    assert_eq!(prompt_names(&svc, "bob").await, ["b__explain"]);
    assert!(prompt_names(&svc, "mallory").await.is_empty());

    // A view of `a` (mounted by alice's tool) cannot read through `b`.
    let read = |who, via| {
        as_user(
            who,
            post(
                "/chat/api/resources/read",
                &json!({"uri": lmchatkit::mcp::DEMO_VIEW_URI, "via": via}),
            ),
        )
    };
    assert_eq!(send(&svc, read("alice", "a__show_clock")).await.status, 200);
    assert_eq!(send(&svc, read("alice", "b__show_clock")).await.status, 403);
    hub.shutdown().await;
}

async fn prompt_names(svc: &lmchatkit::ChatService, who: &str) -> Vec<String> {
    let r = send(svc, as_user(who, get("/chat/api/prompts"))).await;
    r.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A URI that no server lists is never sent to the servers in turn: the hub refuses it. Before
/// the access layer, the hub asked each server and returned the first answer.
#[tokio::test]
async fn the_hub_reads_only_what_a_server_lists() {
    let hub = McpHub::new(vec![demo_server_config()]);
    let listed = hub
        .read_resource(&Scope::default(), "demo://lmchatkit/about.txt")
        .await;
    assert!(listed.is_ok(), "{listed:?}");
    let unlisted = hub
        .read_resource(&Scope::default(), "demo://lmchatkit/secret.txt")
        .await;
    assert_eq!(
        unlisted,
        Err(HostError::NotFound(
            "no server offers the resource \"demo://lmchatkit/secret.txt\"".into()
        ))
    );
    hub.shutdown().await;
}

/// `@uri` of an unlisted resource becomes an error part; the listed one is read.
#[tokio::test]
async fn an_unlisted_reference_is_an_error_part() {
    let llm = Recorder::default();
    let seen = llm.seen.clone();
    let hub = McpHub::new(vec![demo_server_config()]);
    let svc = service(Config::builder(
        StandardHost::new(llm).with_mcp(hub.clone()),
    ));
    let turn = json!({"model": "m", "messages": [{"role": "user",
        "content": "@demo://lmchatkit/about.txt and @demo://lmchatkit/secret.txt"}]});
    send(&svc, post("/chat/api/chat", &turn)).await;
    let content = seen.lock().unwrap().pop().unwrap();
    let parts = serde_json::to_value(&content).unwrap();
    let texts: Vec<&str> = parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(
        texts[0].starts_with("Resource demo://lmchatkit/about.txt:"),
        "{texts:?}"
    );
    assert_eq!(
        texts[1],
        "[error: could not read resource demo://lmchatkit/secret.txt: no server offers the resource \"demo://lmchatkit/secret.txt\"]"
    );
    hub.shutdown().await;
}

/// Records the latest user message's content of each completion.
#[derive(Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Content>>>,
}

#[async_trait]
impl Host for Recorder {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("m")])
    }
    fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
        if let Some(m) = req.messages.last() {
            self.seen.lock().unwrap().push(m.content.clone());
        }
        Box::pin(futures_util::stream::iter([Event::done(
            FinishReason::Stop,
            None,
        )]))
    }
}
