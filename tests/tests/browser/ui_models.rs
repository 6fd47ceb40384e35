//! The model menu and spend in headless Chromium (issue 15, the UI): a service whose menu has two
//! providers — `a` (configured: `a/m1`, a reasoning model with a 20-token context window, and
//! `a/m2`, with a 1000-token one; both priced) and `b` (not configured: `b/x`, "B_KEY is not
//! set") — over the mock upstream, which reports 11 prompt and 5 completion tokens per reply.
//!
//! Checked: the picker's provider groups, the disabled model with its reason (never selected,
//! not by default, not by Enter, not by click); the effort selector only for the reasoning model,
//! its value reaching the upstream and saved with the conversation (and changed in the edit
//! modal, which offers the same grouped menu); each reply's tokens and cost
//! (computed here from the prices set below); the header's total cost, the same as the server's
//! stored total; the context gauge, quiet at 1 % and warning at 80 %, whose button runs
//! `/compact`.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::time::Duration;

use lmchatkit::models::{Catalog, ModelSpec, Price};
use lmchatkit::protocol::Model;
use lmchatkit::store::MemoryStore;
use lmchatkit::{CompleteRequest, EventStream, Host, HostError, RequestContext, async_trait};
use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{Env, ONE_AT_A_TIME, first_stored, idle, setup_hosted};
use lmchatkit_tests::test_host::TestHost;
use serde_json::{Value, json};

/// USD per million tokens of `a/m1`: 11 prompt + 5 completion tokens cost
/// 11 × 100 / 1e6 + 5 × 200 / 1e6 = $0.0021.
const M1_PRICE: (f64, f64) = (100.0, 200.0);
/// Of `a/m2`: 11 × 1 / 1e6 + 5 × 2 / 1e6 = $0.000021.
const M2_PRICE: (f64, f64) = (1.0, 2.0);

/// The test host, listing `a/m1` and `a/m2` (labelled) as its models.
struct ProviderA(TestHost);

#[async_trait]
impl Host for ProviderA {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        let labelled = |id: &str, label: &str| Model {
            label: Some(label.into()),
            ..Model::new(id)
        };
        Ok(vec![
            labelled("a/m1", "Model One"),
            labelled("a/m2", "Model Two"),
        ])
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
}

fn catalog() -> Catalog {
    let price = |(i, o)| Price::new(i, o);
    Catalog::new()
        .with_provider("a", true, None)
        .with_provider("b", false, Some("B_KEY is not set".into()))
        .with_model(
            ModelSpec::new("a/m1")
                .with_reasoning(true)
                .with_context_window(20)
                .with_price(price(M1_PRICE)),
        )
        .unwrap()
        .with_model(
            ModelSpec::new("a/m2")
                .with_context_window(1000)
                .with_price(price(M2_PRICE)),
        )
        .unwrap()
        .with_model(ModelSpec::new("b/x").with_label("B Extra"))
        .unwrap()
}

async fn setup() -> Option<Env> {
    setup_hosted(ProviderA, |b| {
        b.history(MemoryStore::new()).model_catalog(catalog())
    })
    .await
}

/// The model combobox's shown value.
async fn shown_model(b: &Browser) -> Value {
    b.js("return document.querySelectorAll('.lmck-combo-input')[1].value;")
        .await
}

/// Picks a model by typing `query` into the model combobox and pressing Enter.
async fn pick_model(b: &Browser, query: &str) {
    b.wait_js(
        "the pickers",
        "return document.querySelectorAll('.lmck-combo-input').length === 2;",
    )
    .await;
    let input = b
        .client
        .find_all(fantoccini::Locator::Css(".lmck-combo-input"))
        .await
        .unwrap()
        .remove(1);
    input.click().await.unwrap();
    input.send_keys(query).await.unwrap();
    b.wait_text(".lmck-combo-list", query).await;
    input.send_keys("\u{E007}").await.unwrap();
    b.js("document.activeElement.blur(); return true;").await;
}

/// The chat completion requests the mock received.
fn upstream_requests(env: &Env) -> Vec<Value> {
    env.mock.observed.requests.lock().unwrap().clone()
}

#[tokio::test]
async fn the_picker_groups_models_by_provider_and_never_selects_the_unconfigured_one() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.wait_js(
        "the first usable model",
        "const i = document.querySelectorAll('.lmck-combo-input')[1]; return !!i && i.value === 'Model One';",
    )
    .await;
    let input = b
        .client
        .find_all(fantoccini::Locator::Css(".lmck-combo-input"))
        .await
        .unwrap()
        .remove(1);
    input.click().await.unwrap();
    b.wait_for(".lmck-combo-list li[data-id='b/x']").await;
    let list = b
        .js("return Array.from(document.querySelectorAll('#lmck-combo-model > li')).map(li => \
             li.classList.contains('lmck-combo-group') ? 'group ' + li.textContent : li.dataset.id);")
        .await;
    assert_eq!(list, json!(["group a", "a/m1", "a/m2", "group b", "b/x"]));
    let off = b
        .js("const li = document.querySelector(\"li[data-id='b/x']\"); \
             return [li.getAttribute('aria-disabled'), li.title, li.querySelector('.lmck-unavailable').textContent, \
                     document.querySelector(\"li[data-id='a/m1']\").hasAttribute('aria-disabled')];")
        .await;
    assert_eq!(
        off,
        json!(["true", "B_KEY is not set", "B_KEY is not set", false])
    );
    b.screenshot("models-picker").await;
    // A click on the disabled model picks nothing.
    b.click("li[data-id='b/x']").await;
    b.js("document.activeElement.blur(); return true;").await;
    assert_eq!(shown_model(b).await, json!("Model One"));
    // Nor does Enter on it.
    pick_model(b, "B Extra").await;
    assert_eq!(shown_model(b).await, json!("Model One"));
    // The effort selector is there for the reasoning model only.
    b.wait_for(".lmck-effort-select").await;
    pick_model(b, "Model Two").await;
    b.wait_js(
        "Model Two chosen",
        "return document.querySelectorAll('.lmck-combo-input')[1].value === 'Model Two' \
         && !document.querySelector('.lmck-effort-select');",
    )
    .await;
    pick_model(b, "Model One").await;
    b.wait_for(".lmck-effort-select").await;
    let efforts = b
        .js("return Array.from(document.querySelectorAll('.lmck-effort-select option')).map(o => o.value);")
        .await;
    assert_eq!(efforts, json!(["", "low", "medium", "high"]));
}

#[tokio::test]
async fn a_plain_model_reply_shows_its_cost_and_a_quiet_gauge_without_effort() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    pick_model(b, "Model Two").await;
    b.click("button.lmck-start").await;
    b.send_message("hello two").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    b.wait_text(".lmck-assistant .lmck-usage", "16 tokens")
        .await;
    assert_eq!(b.texts(".lmck-assistant .lmck-cost").await, "$0.000021");
    assert_eq!(b.texts(".lmck-header .lmck-total-cost").await, "$0.000021");
    assert_eq!(b.texts(".lmck-gauge-text").await, "16 / 1000 (1%)");
    let quiet = b
        .js("return [!!document.querySelector('.lmck-gauge-warn'), !!document.querySelector('.lmck-compact-btn')];")
        .await;
    assert_eq!(quiet, json!([false, false]));
    let reqs = upstream_requests(&env);
    let last = reqs.last().unwrap();
    assert_eq!(last["model"], "a/m2", "{last}");
    assert!(last.get("reasoning_effort").is_none(), "{last}");
}

#[tokio::test]
async fn the_chosen_effort_reaches_the_upstream_and_the_full_gauge_offers_compact() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.wait_js(
        "the reasoning model",
        "const i = document.querySelectorAll('.lmck-combo-input')[1]; return !!i && i.value === 'Model One' && !!document.querySelector('.lmck-effort-select');",
    )
    .await;
    b.js(
        "const s = document.querySelector('.lmck-effort-select'); s.value = 'high'; \
          s.dispatchEvent(new Event('change', {bubbles: true})); return true;",
    )
    .await;
    b.screenshot("models-effort").await;
    b.click("button.lmck-start").await;
    b.send_message("first question").await;
    b.wait_text(".lmck-assistant .lmck-usage", "16 tokens")
        .await;
    idle(b).await;
    let reqs = upstream_requests(&env);
    assert_eq!(reqs.last().unwrap()["reasoning_effort"], "high");
    assert_eq!(b.texts(".lmck-assistant .lmck-cost").await, "$0.0021");
    b.send_message("second question").await;
    b.wait_js(
        "the second reply",
        "return document.querySelectorAll('.lmck-assistant .lmck-cost').length === 2;",
    )
    .await;
    idle(b).await;
    assert_eq!(
        b.texts(".lmck-assistant .lmck-cost").await,
        "$0.0021\n$0.0021"
    );
    b.wait_text(".lmck-header .lmck-total-cost", "$0.0042")
        .await;
    b.wait_text(".lmck-header .lmck-usage-total", "Σ 32 tokens")
        .await;
    // The effort is saved with the conversation, and the stored totals agree with the header.
    let mut stored = Value::Null;
    for _ in 0..100 {
        stored = first_stored(&env).await.unwrap_or_default();
        if stored["messages"].as_array().is_some_and(|m| m.len() == 4) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stored["params"]["reasoning_effort"], "high", "{stored}");
    let total = stored["total_cost_usd"].as_f64().unwrap();
    assert!((total - 0.0042).abs() < 1e-12, "{stored}");
    assert_eq!(stored["last_context_tokens"], 16, "{stored}");
    // 16 of 20 tokens: the gauge warns and offers /compact.
    assert_eq!(b.texts(".lmck-gauge-text").await, "16 / 20 (80%)");
    b.wait_for(".lmck-gauge.lmck-gauge-warn").await;
    b.screenshot("models-header-gauge").await;
    // The edit modal offers the same grouped menu and the effort; lowering it is saved and used.
    let id = stored["id"].as_str().unwrap().to_owned();
    b.click(&format!(".lmck-conv[data-id='{id}'] button[title=Edit]"))
        .await;
    b.wait_for(".lmck-modal .lmck-effort-select").await;
    let modal = b
        .js("const m = document.querySelector('.lmck-modal'); \
             return [Array.from(m.querySelectorAll('optgroup')).map(g => g.label), \
                     m.querySelector(\"option[value='b/x']\").disabled, \
                     m.querySelector(\"option[value='b/x']\").textContent, \
                     m.querySelector('.lmck-effort-select').value];")
        .await;
    assert_eq!(
        modal,
        json!([["a", "b"], true, "B Extra — B_KEY is not set", "high"])
    );
    b.js(
        "const s = document.querySelector('.lmck-modal .lmck-effort-select'); s.value = 'low'; \
          s.dispatchEvent(new Event('change', {bubbles: true})); return true;",
    )
    .await;
    b.click(".lmck-modal .lmck-primary").await;
    for _ in 0..100 {
        stored = first_stored(&env).await.unwrap_or_default();
        if stored["params"]["reasoning_effort"] == "low" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stored["params"]["reasoning_effort"], "low", "{stored}");
    let before = upstream_requests(&env).len();
    b.click(".lmck-compact-btn").await;
    b.wait_text(".lmck-info", "Conversation Compacted").await;
    idle(b).await;
    let reqs = upstream_requests(&env);
    assert_eq!(reqs.len(), before + 1, "one summary request");
    let compact = reqs.last().unwrap();
    assert!(compact.get("tools").is_none(), "{compact}");
    assert_eq!(compact["reasoning_effort"], "low", "{compact}");
    // The summary keeps what the thread cost, plus its own call (11 in, 5 out: $0.0021), and
    // the context starts afresh from the summary's 5 tokens.
    b.wait_text(".lmck-header .lmck-total-cost", "$0.0063")
        .await;
    b.wait_text(".lmck-gauge-text", "5 / 20 (25%)").await;
    assert!(
        b.js("return !document.querySelector('.lmck-gauge-warn');")
            .await
            .as_bool()
            .unwrap()
    );
    let mut stored = first_stored(&env).await.unwrap_or_default();
    for _ in 0..100 {
        if stored["last_context_tokens"] == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        stored = first_stored(&env).await.unwrap_or_default();
    }
    assert_eq!(stored["last_context_tokens"], 5, "{stored}");
    let total = stored["total_cost_usd"].as_f64().unwrap();
    assert!((total - 0.0063).abs() < 1e-12, "{stored}");
}
