//! The model menu and what turns cost, through both protocols: a turn runs only on a configured
//! model of the caller's menu (a bare name resolves when one provider has it), the reasoning
//! effort is checked and reaches reasoning models only, `done` and the AI SDK metadata carry
//! the cost at the catalog's price, and stored conversations report the totals the store
//! computed.

use crate::support;

use std::sync::Arc;

use lmchatkit::models::{Catalog, ModelSpec, Price};
use lmchatkit::presets::StaticPersonas;
use lmchatkit::protocol::*;
use lmchatkit::store::{HistoryStore, MemoryStore};
use serde_json::{Value, json};
use support::*;

fn usage(prompt: u64, completion: u64) -> Usage {
    Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        total_tokens: Some(prompt + completion),
        ..Usage::default()
    }
}

/// Two providers the host serves (`a/think` reasons), a third the operator registered without
/// its key; `a/think` has a list price, `b/plain` none.
fn host() -> FakeHost {
    FakeHost {
        models: vec![
            Model::new("a/think"),
            Model::new("a/plain"),
            Model::new("b/plain"),
        ],
        events: vec![
            Event::delta("ok"),
            Event::done(FinishReason::Stop, Some(usage(1_234, 567))),
        ],
        ..FakeHost::default()
    }
}

fn catalog() -> Catalog {
    Catalog::new()
        .with_provider("a", true, None)
        .with_provider("b", true, None)
        .with_provider("off", false, Some("OFF_KEY is not set".into()))
        .with_model(
            ModelSpec::new("a/think")
                .with_reasoning(true)
                .with_context_window(1_000)
                .with_price(Price::new(3.0, 15.0)),
        )
        .unwrap()
        .with_model(ModelSpec::new("off/big").with_label("Big"))
        .unwrap()
}

struct Setup {
    svc: lmchatkit::ChatService,
    seen: Arc<std::sync::Mutex<Vec<lmchatkit::CompleteRequest>>>,
}

fn setup(host: FakeHost) -> Setup {
    let seen = host.seen.clone();
    let mut persona = Persona {
        id: "thinks-low".into(),
        name: "Low effort".into(),
        ..Persona::default()
    };
    persona
        .params
        .insert(REASONING_EFFORT_PARAM.into(), json!("low"));
    let svc = service(
        config(host)
            .model_catalog(catalog())
            .personas(StaticPersonas(vec![persona]))
            .history(MemoryStore::new()),
    );
    Setup { svc, seen }
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn aisdk(model: &str) -> Value {
    json!({"id": "t1", "model": model, "trigger": "submit-message",
           "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})
}

#[tokio::test]
async fn the_menu_lists_the_hosts_models_with_their_facts_then_the_unconfigured_providers() {
    let s = setup(host());
    let r = send(&s.svc, get("/chat/api/models")).await;
    assert_eq!(r.status, 200);
    let menu: Vec<Model> = serde_json::from_value(r.json()).unwrap();
    let ids: Vec<&str> = menu.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["a/think", "a/plain", "b/plain", "off/big"]);
    assert!(menu[0].reasoning && menu[0].configured);
    assert_eq!(menu[0].context_window, Some(1_000));
    assert_eq!(menu[0].provider.as_deref(), Some("a"));
    let off = &menu[3];
    assert!(!off.configured);
    assert_eq!(
        off.unavailable_reason.as_deref(),
        Some("OFF_KEY is not set")
    );
    assert_eq!(off.label.as_deref(), Some("Big"));

    let r = send(&s.svc, get("/chat/api/aisdk/models")).await;
    let configured: Vec<(String, bool)> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["configured"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(configured[3], ("off/big".to_owned(), false));
    assert!(configured[..3].iter().all(|(_, c)| *c));
}

#[tokio::test]
async fn a_turn_on_an_unknown_model_is_a_400_naming_the_menu_on_both_protocols() {
    let s = setup(host());
    for (path, body) in [
        ("/chat/api/chat", chat("gpt-9")),
        ("/chat/api/aisdk/chat", aisdk("gpt-9")),
    ] {
        let r = send(&s.svc, post(path, &body)).await;
        assert_eq!(r.status, 400, "{path}");
        assert_eq!(
            r.error(),
            r#"unknown model "gpt-9"; the model menu: a/think, a/plain, b/plain, off/big"#,
            "{path}"
        );
    }
    assert!(s.seen.lock().unwrap().is_empty(), "nothing went upstream");
}

#[tokio::test]
async fn a_turn_on_an_unconfigured_providers_model_is_refused_with_the_reason() {
    let s = setup(host());
    for (path, body) in [
        ("/chat/api/chat", chat("off/big")),
        ("/chat/api/aisdk/chat", aisdk("big")),
    ] {
        let r = send(&s.svc, post(path, &body)).await;
        assert_eq!(r.status, 400, "{path}");
        assert_eq!(
            r.error(),
            r#"model "off/big" is not available: OFF_KEY is not set"#,
            "{path}"
        );
    }
    assert!(s.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_bare_name_resolves_when_one_provider_has_it_and_is_ambiguous_otherwise() {
    let s = setup(host());
    let r = send(&s.svc, post("/chat/api/chat", &chat("think"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(s.seen.lock().unwrap()[0].model, "a/think");
    let r = send(&s.svc, post("/chat/api/chat", &chat("plain"))).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.error(),
        r#"model "plain" is offered by several providers; choose one of: a/plain, b/plain"#
    );
}

#[tokio::test]
async fn the_effort_is_checked_and_reaches_reasoning_models_only() {
    let s = setup(host());
    for bad in [json!("extreme"), json!(3), json!({"level": "high"})] {
        let mut b = chat("a/think");
        b["params"] = json!({"reasoning_effort": bad});
        let r = send(&s.svc, post("/chat/api/chat", &b)).await;
        assert_eq!(r.status, 400, "{bad}");
        assert!(r.error().contains("low, medium, high"), "{}", r.error());
    }
    for model in ["a/think", "a/plain"] {
        let mut b = chat(model);
        b["params"] = json!({"reasoning_effort": "high"});
        assert_eq!(send(&s.svc, post("/chat/api/chat", &b)).await.status, 200);
    }
    // A persona's default applies when the request names none.
    let mut b = chat("a/think");
    b["persona_id"] = json!("thinks-low");
    assert_eq!(send(&s.svc, post("/chat/api/chat", &b)).await.status, 200);

    let seen = s.seen.lock().unwrap();
    let effort = |i: usize| seen[i].params.get(REASONING_EFFORT_PARAM).cloned();
    assert_eq!(effort(0), Some(json!("high")));
    assert_eq!(
        effort(1),
        None,
        "a model that does not reason never gets it"
    );
    assert_eq!(effort(2), Some(json!("low")));
}

#[tokio::test]
async fn done_carries_the_cost_at_the_models_price_and_none_when_the_price_is_unknown() {
    let s = setup(host());
    let r = send(&s.svc, post("/chat/api/chat", &chat("a/think"))).await;
    let done = r.sse().pop().unwrap();
    // 1,234 in at $3/M and 567 out at $15/M.
    assert_eq!(done["cost_usd"], json!(0.012207));
    assert_eq!(done["usage"]["prompt_tokens"], 1_234);

    let r = send(&s.svc, post("/chat/api/chat", &chat("b/plain"))).await;
    let done = r.sse().pop().unwrap();
    assert_eq!(done["type"], "done");
    assert!(done.get("cost_usd").is_none(), "{done}");
}

#[tokio::test]
async fn the_ai_sdk_metadata_carries_the_cost_and_the_thread_keeps_it() {
    let s = setup(host());
    let r = send(&s.svc, post("/chat/api/aisdk/chat", &aisdk("a/think"))).await;
    assert_eq!(r.status, 200);
    let meta = r
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .find(|c| c["type"] == "message-metadata")
        .unwrap();
    assert_eq!(meta["messageMetadata"]["costUsd"], json!(0.012207));
    assert_eq!(meta["messageMetadata"]["model"], "a/think");

    let threads = send(&s.svc, get("/chat/api/aisdk/threads")).await.json();
    assert_eq!(threads[0]["totalCostUsd"], json!(0.012207));
    assert_eq!(threads[0]["totalInputTokens"], 1_234);
    assert_eq!(threads[0]["lastContextTokens"], 1_801);
    let stored = send(&s.svc, get("/chat/api/conversations/t1")).await.json();
    assert_eq!(stored["total_cost_usd"], json!(0.012207));
    assert_eq!(stored["messages"][1]["cost_usd"], json!(0.012207));
}

#[tokio::test]
async fn a_saved_conversation_reports_the_totals_of_its_messages_not_the_bodys() {
    let store = Arc::new(MemoryStore::new());
    let svc = service(config(host()).history_arc(store.clone() as Arc<dyn HistoryStore>));
    let reply = |p, c, cost: Option<f64>| {
        let mut m = json!({"role": "assistant", "content": "a", "usage": usage(p, c)});
        if let Some(cost) = cost {
            m["cost_usd"] = json!(cost);
        }
        m
    };
    let body = json!({"id": "c1", "title": "T", "revision": 0, "total_cost_usd": 42.0,
        "messages": [{"role": "user", "content": "q"}, reply(100, 10, Some(0.5)),
                     {"role": "user", "content": "q"}, reply(200, 20, None)]});
    let r = send(&svc, put("/chat/api/conversations/c1", &body)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let got = send(&svc, get("/chat/api/conversations/c1")).await.json();
    for (key, want) in [
        ("total_input_tokens", json!(300)),
        ("total_output_tokens", json!(30)),
        ("total_cost_usd", json!(0.5)),
        ("last_context_tokens", json!(220)),
    ] {
        assert_eq!(got[key], want, "{key}");
    }
    let list = send(&svc, get("/chat/api/conversations")).await.json();
    assert_eq!(list[0]["total_cost_usd"], json!(0.5));
    assert_eq!(list[0]["last_context_tokens"], json!(220));
}
