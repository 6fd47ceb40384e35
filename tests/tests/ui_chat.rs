//! The chat UI in headless Chromium against the real service (history in memory, events on) and
//! the mock OpenAI upstream: streaming, tool approval and denial, reload restore and a second tab,
//! Stop, `<think>` splitting, the `/` and `@` menus, and XSS payloads that must not execute.
//! Screenshots of the main states go to `target/ui-screenshots/`.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lmchatkit::history::MemoryStore;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::protocol::{
    Model, Prompt, PromptMessage, PromptResult, Resource, ResourceResult, Role, Tool, ToolResult,
};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventStream, Host, HostError, RequestContext, ToolSource,
    async_trait,
};
use lmchatkit_tests::browser::{Browser, browser_expected, launch};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use serde_json::{Value, json};

/// Browser tests run one at a time (2 cores; one Chromium is plenty).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct TestHost(OpenAiBackend);

#[async_trait]
impl Host for TestHost {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.0.models(cx).await
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
    async fn list_tools(&self, _: &RequestContext) -> Result<Vec<Tool>, HostError> {
        Ok(vec![Tool::new("get_weather").with_description("Weather for a city").with_input_schema(
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        name: &str,
        args: Value,
    ) -> Result<ToolResult, HostError> {
        match (name, args["city"].as_str()) {
            ("get_weather", Some(city)) => Ok(ToolResult::text(format!("{city}: sunny, 21 °C"))),
            _ => Err(HostError::InvalidInput("city is required".into())),
        }
    }
    async fn tool_source(&self, _: &RequestContext, _: &str) -> ToolSource {
        ToolSource::Unscoped
    }
    async fn list_prompts(&self, _: &RequestContext) -> Result<Vec<Prompt>, HostError> {
        let greet = json!({"name": "greet", "description": "Greets someone",
            "arguments": [{"name": "who", "required": true}]});
        let pair = json!({"name": "pair", "description": "Two arguments",
            "arguments": [{"name": "first", "required": true}, {"name": "second"}]});
        Ok(vec![
            serde_json::from_value(greet).unwrap(),
            serde_json::from_value(pair).unwrap(),
        ])
    }
    async fn get_prompt(
        &self,
        _: &RequestContext,
        _: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        let content = match args.get("who") {
            Some(who) => format!("mirror-back greeting for {who}"),
            None => format!("mirror-back pair {args:?}"),
        };
        Ok(PromptResult {
            description: None,
            messages: vec![PromptMessage {
                role: Role::User,
                content,
            }],
        })
    }
    async fn list_resources(&self, _: &RequestContext) -> Result<Vec<Resource>, HostError> {
        let mut r = Resource::new("docs://readme");
        r.name = Some("Readme".into());
        Ok(vec![r])
    }
    async fn read_resource(
        &self,
        _: &RequestContext,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        Ok(
            serde_json::from_value(json!({"uri": uri, "text": "The readme says: pineapple."}))
                .unwrap(),
        )
    }
}

struct Env {
    mock: MockUpstream,
    server: Served,
    browser: Browser,
}

async fn setup() -> Option<Env> {
    setup_with(true).await
}

/// `server_history`: a memory store (server mode), else none (this tab's sessionStorage).
async fn setup_with(server_history: bool) -> Option<Env> {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"));
    let mut builder = Config::builder(TestHost(backend))
        .events(true)
        .file_upload(true);
    if server_history {
        builder = builder.history(MemoryStore::new());
    }
    let config = builder.build().unwrap();
    let server = serve(ChatService::new(config)).await;
    let loader = reqwest::get(server.url("/chat/assets/lmchatkit.js"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    if loader.contains("not built") {
        assert!(
            !browser_expected(),
            "the UI bundle is not built: run ./scripts/build-ui.sh"
        );
        eprintln!("SKIPPED: the UI bundle is not built (./scripts/build-ui.sh)");
        return None;
    }
    let browser = launch().await?;
    browser.client.goto(&server.url("/chat")).await.unwrap();
    Some(Env {
        mock,
        server,
        browser,
    })
}

/// From the start screen into an open chat.
async fn start_chat(b: &Browser) {
    b.wait_js("the model to be chosen", "const s = document.querySelector('.lmck-start button.lmck-start'); return !!s && !s.disabled;").await;
    b.click("button.lmck-start").await;
    b.wait_for(".lmck-transcript").await;
}

async fn idle(b: &Browser) {
    b.wait_js("the turn to end", "return !!document.querySelector('.lmck-send') && !document.querySelector('.lmck-streaming');").await;
}

async fn saved_messages(env: &Env) -> usize {
    let list: Value = reqwest::get(env.server.url("/chat/api/conversations"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let Some(id) = list
        .as_array()
        .and_then(|l| l.first())
        .and_then(|c| c["id"].as_str())
    else {
        return 0;
    };
    let conv: Value = reqwest::get(env.server.url(&format!("/chat/api/conversations/{id}")))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    conv["messages"].as_array().map_or(0, Vec::len)
}

async fn wait_saved(env: &Env, n: usize) {
    for _ in 0..200 {
        if saved_messages(env).await >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the conversation was never saved with {n} messages");
}

#[tokio::test]
async fn first_message_streams_and_renders() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.wait_js("the default persona", "const i = document.querySelector('.lmck-combo-input'); return !!i && i.value === 'Default';").await;
    b.screenshot("01-start-screen").await;
    start_chat(b).await;
    b.send_message("hello there").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    assert!(b.texts(".lmck-user").await.contains("hello there"));
    b.wait_text(".lmck-assistant .lmck-usage", "16 tokens")
        .await;
    b.wait_text(".lmck-title", "hello there").await;
    b.wait_text(".lmck-conv", "hello there").await;
    b.screenshot("02-first-reply").await;
    let focused = b.js("return document.activeElement && document.activeElement.classList.contains('lmck-input');").await;
    assert_eq!(
        focused,
        Value::Bool(true),
        "the composer has the focus after the turn"
    );
}

#[tokio::test]
async fn tool_call_is_approved_and_its_result_shows() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-approval", "get_weather").await;
    b.wait_text(".lmck-badge-pending", "pending").await;
    b.screenshot("03-approval").await;
    // Allow is focused: Enter approves.
    let focused = b.js("return document.activeElement && document.activeElement.classList.contains('lmck-allow');").await;
    assert_eq!(focused, Value::Bool(true), "Allow has the focus");
    b.click(".lmck-allow").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny, 21 °C").await;
    b.wait_text(".lmck-assistant .lmck-md", "The weather in Oslo is sunny.")
        .await;
    idle(b).await;
    b.wait_text(".lmck-badge-ok", "ok").await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no approval left"
    );
    b.screenshot("04-tool-result").await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    let tool_msg = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message sent");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("Oslo: sunny")
    );
}

#[tokio::test]
async fn deny_sends_the_deny_message() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("use the tool now").await;
    b.click(".lmck-approval .lmck-deny").await;
    b.wait_text(".lmck-badge-denied", "denied").await;
    idle(b).await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "the turn resumed once after the denial");
    let tool_msg = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message sent")
        .clone();
    assert!(tool_msg["content"].as_str().unwrap().starts_with(
        "The user denied this tool call. Do not attempt to call 'get_weather' again."
    ));
    b.wait_text(".lmck-tool-result", "The user denied this tool call")
        .await;
    b.screenshot("05-denied").await;
}

#[tokio::test]
async fn reload_restores_and_a_second_tab_sees_the_save() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("remember me").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    wait_saved(&env, 2).await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-user", "remember me").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    b.screenshot("06-after-reload").await;

    // A second tab opens the conversation from the sidebar and follows the first tab's saves.
    let first = b.client.window().await.unwrap();
    let second = b.client.new_window(true).await.unwrap();
    b.client.switch_to_window(second.handle).await.unwrap();
    b.client.goto(&env.server.url("/chat")).await.unwrap();
    b.wait_text(".lmck-conv", "remember me").await;
    b.click(".lmck-conv .lmck-conv-open").await;
    b.wait_text(".lmck-user", "remember me").await;
    let second = b.client.window().await.unwrap();
    b.client.switch_to_window(first).await.unwrap();
    b.send_message("and one more mirror-back").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: and one more")
        .await;
    idle(b).await;
    wait_saved(&env, 4).await;
    b.client.switch_to_window(second).await.unwrap();
    b.wait_text(".lmck-user", "and one more mirror-back").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: and one more")
        .await;
    b.screenshot("07-second-tab").await;
}

#[tokio::test]
async fn stop_keeps_the_partial_reply() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("go slow please").await;
    b.wait_text(".lmck-assistant .lmck-md", "t5").await;
    b.click(".lmck-stop").await;
    idle(b).await;
    let partial = b.texts(".lmck-assistant .lmck-md").await;
    assert!(
        partial.contains("t5") && !partial.contains("t1499"),
        "{partial}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        b.texts(".lmck-assistant .lmck-md").await,
        partial,
        "nothing streams after Stop"
    );
    assert!(
        b.texts(".lmck-msg-error").await.is_empty(),
        "Stop is not an error"
    );
    for _ in 0..100 {
        if env.mock.observed.dropped_early.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        env.mock.observed.dropped_early.load(Ordering::SeqCst) > 0,
        "the upstream request was cancelled"
    );
    wait_saved(&env, 2).await;
    b.screenshot("08-stopped").await;
}

#[tokio::test]
async fn model_xss_payloads_execute_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("show the xss-payload").await;
    b.wait_text(".lmck-assistant .lmck-md", "end-of-payloads")
        .await;
    idle(b).await;
    // Click every link the reply produced, then look for the canary.
    b.js("document.querySelectorAll('.lmck-md a').forEach(a => { try { a.click(); } catch (e) {} }); return true;").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let canary = b.js("return typeof window.__xss;").await;
    assert_eq!(canary, json!("undefined"), "a payload executed");
    let dangerous = b.js("const md = document.querySelector('.lmck-assistant .lmck-md'); return md.querySelectorAll('script, iframe, svg, [onerror], [onload], a[href^=\"javascript:\"], a[href^=\"data:\"]').length;").await;
    assert_eq!(dangerous, json!(0));
    b.screenshot("09-xss").await;
}

#[tokio::test]
async fn think_tags_split_across_deltas_go_to_the_thinking_block() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("inline-think please").await;
    b.wait_text(".lmck-assistant .lmck-md", "The answer is 42.")
        .await;
    idle(b).await;
    assert_eq!(b.texts(".lmck-thinking-text").await, "Pondering deeply");
    assert!(
        !b.texts(".lmck-assistant .lmck-md")
            .await
            .contains("Pondering")
    );
    b.send_message("think hard").await;
    b.wait_text(".lmck-assistant .lmck-md", "Thought it through.")
        .await;
    b.wait_text(".lmck-thinking-text", "Let me think.").await;
    b.screenshot("10-thinking").await;
}

#[tokio::test]
async fn slash_prompt_and_at_resource() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("/gr").await.unwrap();
    b.wait_text(".lmck-menu", "/greet").await;
    b.screenshot("11-slash-menu").await;
    input.send_keys("\u{E007}").await.unwrap(); // picks /greet (takes an argument)
    b.wait_js(
        "the draft to be /greet",
        "return document.querySelector('.lmck-input').value === '/greet ';",
    )
    .await;
    input.send_keys("Ada\u{E007}").await.unwrap();
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Mirror: mirror-back greeting for Ada",
    )
    .await;
    idle(b).await;
    input.send_keys("mirror-back see @doc").await.unwrap();
    b.wait_text(".lmck-menu", "@docs://readme").await;
    input.send_keys("\u{E004}").await.unwrap(); // Tab picks
    b.wait_js(
        "the resource inserted",
        "return document.querySelector('.lmck-input').value === 'mirror-back see @docs://readme ';",
    )
    .await;
    input.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-assistant .lmck-md", "pineapple").await;
    idle(b).await;
    b.send_message("/list-prompts").await;
    b.wait_text(".lmck-info", "Available MCP Prompts").await;
    b.wait_text(".lmck-info", "/greet who*").await;
}

#[tokio::test]
async fn narrow_layout_uses_a_drawer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.client.set_window_size(360, 740).await.unwrap();
    start_chat(b).await;
    b.send_message("hello small screen").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    let overflow = b
        .js("return document.documentElement.scrollWidth <= window.innerWidth;")
        .await;
    assert_eq!(
        overflow,
        Value::Bool(true),
        "no horizontal scroll at 360 px"
    );
    b.screenshot("12-narrow").await;
    b.click(".lmck-menu-btn").await;
    b.wait_js("the drawer to open", "const r = document.querySelector('.lmck-sidebar').getBoundingClientRect(); return r.left >= -1 && r.right > 100;").await;
    b.screenshot("13-narrow-drawer").await;
}

#[tokio::test]
async fn a_stale_save_reapplies_the_new_messages_on_top_of_the_stored_copy() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("slow conflict test").await;
    b.wait_text(".lmck-assistant .lmck-md", "t3").await;
    wait_saved(&env, 1).await;
    // Another client appends a message meanwhile (this tab is busy, so it does not reload).
    let http = reqwest::Client::new();
    let list: Value = http
        .get(env.server.url("/chat/api/conversations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let url = env.server.url(&format!("/chat/api/conversations/{id}"));
    let mut conv: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
    conv["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "ext-1", "role": "user", "content": "from elsewhere"}));
    let res = http.put(&url).json(&conv).send().await.unwrap();
    assert_eq!(res.status(), 200);
    b.click(".lmck-stop").await;
    idle(b).await;
    // This tab's save got a 409 and re-applied its reply on top of the stored copy.
    let mut roles = Vec::new();
    for _ in 0..100 {
        let conv: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
        roles = conv["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_owned(),
                    m["content"].to_string(),
                )
            })
            .collect::<Vec<_>>();
        if roles.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(roles.len(), 3, "{roles:?}");
    assert_eq!(roles[0].0, "user");
    assert!(roles[1].1.contains("from elsewhere"), "{roles:?}");
    assert_eq!(roles[2].0, "assistant");
    assert!(roles[2].1.contains("t3"), "{roles:?}");
    b.wait_text(".lmck-user", "from elsewhere").await;
    let list: Value = http
        .get(env.server.url("/chat/api/conversations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "no conflict copy was needed"
    );
}

#[tokio::test]
async fn dropped_text_file_is_uploaded_and_sent_as_utf8() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.wait_for(".lmck-attach").await;
    b.js("const dt = new DataTransfer(); dt.items.add(new File(['kiwi \\u2713 \\u00fcn\\u00efcode'], 'notes.txt', {type: 'text/plain'})); \
          document.querySelector('.lmck-input').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})); return true;").await;
    b.wait_text(".lmck-chips .lmck-chip-name", "notes.txt")
        .await;
    b.screenshot("14-attachment").await;
    b.send_message("mirror-back the file").await;
    b.wait_text(".lmck-assistant .lmck-md", "File notes.txt:")
        .await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "kiwi \u{2713} \u{fc}n\u{ef}code",
    )
    .await;
    assert!(
        b.texts(".lmck-chips").await.is_empty(),
        "the chips are cleared after sending"
    );
}

#[tokio::test]
async fn edit_and_resend_then_regenerate() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("mirror-back first").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: mirror-back first")
        .await;
    idle(b).await;
    b.click(".lmck-user .lmck-icon-btn").await;
    let edit = b.wait_for(".lmck-edit").await;
    edit.clear().await.unwrap();
    edit.send_keys("mirror-back second").await.unwrap();
    edit.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: mirror-back second")
        .await;
    idle(b).await;
    assert_eq!(
        b.texts(".lmck-user .lmck-user-text").await,
        "mirror-back second"
    );
    assert!(!b.texts(".lmck-assistant .lmck-md").await.contains("first"));
    let before = env.mock.observed.requests.lock().unwrap().len();
    b.click(".lmck-regenerate").await;
    b.wait_js("a new request", "return true;").await;
    for _ in 0..100 {
        if env.mock.observed.requests.lock().unwrap().len() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(env.mock.observed.requests.lock().unwrap().len(), before + 1);
    idle(b).await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-assistant').length;")
            .await,
        json!(1)
    );
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: mirror-back second")
        .await;
}

#[tokio::test]
async fn browser_mode_keeps_history_in_session_storage() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_with(false).await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("kept in this tab").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    b.wait_text(".lmck-conv", "kept in this tab").await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-user", "kept in this tab").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    let stored = b
        .js("return sessionStorage.getItem('lmchatkit:conversations');")
        .await;
    assert!(stored.as_str().unwrap().contains("kept in this tab"));
}

#[tokio::test]
async fn prompt_with_several_arguments_opens_a_form() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("/pa").await.unwrap();
    b.wait_text(".lmck-menu", "/pair").await;
    input.send_keys("\u{E007}").await.unwrap();
    let first = b.wait_for(".lmck-prompt-form input[name=first]").await;
    first.send_keys("one two").await.unwrap();
    b.wait_for(".lmck-prompt-form input[name=second]")
        .await
        .send_keys("three")
        .await
        .unwrap();
    b.screenshot("15-prompt-form").await;
    b.click(".lmck-prompt-form button[type=submit]").await;
    b.wait_text(".lmck-user", "/pair first=\"one two\" second=\"three\"")
        .await;
    idle(b).await;
}
