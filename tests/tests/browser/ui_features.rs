//! More of the chat UI in headless Chromium (see `ui_chat.rs`): a stale save resolved by
//! re-applying the new messages (409), uploads by drop, edit-and-resend and regenerate, browser-mode
//! history in sessionStorage, the argument form of a multi-argument MCP prompt, an upstream
//! error shown in the bubble with Retry, a reply cut off by one kept and marked across a reload,
//! the host's set-up problems shown with their fixes, and MCP prompts' icons in the `/` menu.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::time::Duration;

use lmchatkit::host::{IconImage, IconOf};
use lmchatkit::protocol::{Model, Prompt, SetupProblem, Tool, ToolResult};
use lmchatkit::{
    CompleteRequest, EventStream, Host, HostError, RequestContext, Scope, ToolSource, async_trait,
};
use lmchatkit_tests::PNG;
use lmchatkit_tests::browser::app::{
    ONE_AT_A_TIME, first_stored, idle, setup, setup_configured, setup_hosted, setup_with,
    start_chat, wait_saved,
};
use serde_json::{Value, json};

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

/// A new chat with one question ("mirror-back first") and the mock's mirrored reply.
async fn first_exchange(b: &lmchatkit_tests::browser::Browser) {
    start_chat(b).await;
    b.send_message("mirror-back first").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: mirror-back first")
        .await;
    idle(b).await;
}

/// Edits the first user message to `text` and sends it; waits for the mock's mirrored reply.
async fn edit_first_message(b: &lmchatkit_tests::browser::Browser, text: &str) {
    b.click(".lmck-user .lmck-icon-btn[aria-label='Edit and resend']")
        .await;
    let edit = b.wait_for(".lmck-edit").await;
    edit.clear().await.unwrap();
    edit.send_keys(text).await.unwrap();
    edit.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-assistant .lmck-md", &format!("Mirror: {text}"))
        .await;
    idle(b).await;
}

#[tokio::test]
async fn edit_and_resend_then_regenerate() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    first_exchange(b).await;
    edit_first_message(b, "mirror-back second").await;
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

/// An edit and a regenerated reply keep the earlier versions: `‹ 2 / 2 ›` on each, stepping
/// back shows the first question with its own reply, a reload keeps the branch shown, and a
/// switch made elsewhere (another tab, through the API) is followed.
#[tokio::test]
async fn edits_and_regenerated_replies_are_versions_to_step_between_and_other_tabs_follow() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    first_exchange(b).await;
    assert!(b.texts(".lmck-version-at").await.is_empty(), "one version");
    edit_first_message(b, "mirror-back second").await;
    b.wait_text(".lmck-user .lmck-version-at", "2 / 2").await;
    b.click(".lmck-regenerate").await;
    b.wait_text(".lmck-assistant .lmck-version-at", "2 / 2")
        .await;
    b.screenshot("branches-versions").await;

    // Back to the first question: its own reply, and no versions of that reply.
    b.click(".lmck-user .lmck-version-prev").await;
    b.wait_text(".lmck-user .lmck-user-text", "mirror-back first")
        .await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: mirror-back first")
        .await;
    assert_eq!(b.texts(".lmck-user .lmck-version-at").await, "1 / 2");
    assert!(b.texts(".lmck-assistant .lmck-version-at").await.is_empty());

    // The branch shown is the stored one: a reload opens it.
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-user .lmck-user-text", "mirror-back first")
        .await;
    b.wait_text(".lmck-user .lmck-version-at", "1 / 2").await;

    // Another client switches back to the edit: this tab follows.
    let http = reqwest::Client::new();
    let conv = first_stored(&env).await.expect("stored");
    let id = conv["id"].as_str().unwrap();
    let url = env.server.url(&format!("/chat/api/conversations/{id}"));
    let edit_node = conv["branches"][0]["versions"][1].clone();
    let res = http
        .post(format!("{url}/branch"))
        .json(&json!({"node": edit_node}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    b.wait_text(".lmck-user .lmck-user-text", "mirror-back second")
        .await;
    b.wait_text(".lmck-user .lmck-version-at", "2 / 2").await;
    b.wait_text(".lmck-assistant .lmck-version-at", "2 / 2")
        .await;

    // Search finds the first question on the other branch; its hit opens that branch.
    b.fill(".lmck-search", "mirror-back first").await;
    b.wait_js(
        "a hit on the other branch",
        "return [...document.querySelectorAll('.lmck-search-snippet')].some((s) => s.textContent === 'mirror-back first');",
    )
    .await;
    b.js("[...document.querySelectorAll('.lmck-search-hit')] \
          .find((h) => h.querySelector('.lmck-search-snippet').textContent === 'mirror-back first') \
          .click(); return true;")
        .await;
    b.wait_text(".lmck-user .lmck-user-text", "mirror-back first")
        .await;
    b.wait_text(".lmck-user .lmck-version-at", "1 / 2").await;
    b.wait_js(
        "the message found is outlined",
        "return !!document.querySelector('.lmck-user.lmck-search-target');",
    )
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
    let banner = b
        .js("return document.querySelector('.lmck-demo-banner') === null;")
        .await;
    assert_eq!(
        banner,
        Value::Bool(true),
        "no demo banner with a real upstream"
    );
}

#[tokio::test]
async fn the_demo_model_is_announced_by_a_banner() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_configured(|b| b.demo(true)).await else {
        return;
    };
    env.browser
        .wait_text(".lmck-demo-banner", "built-in demo model")
        .await;
    env.browser
        .wait_text(".lmck-demo-banner", "OPENAI_BASE_URL")
        .await;
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

#[tokio::test]
async fn a_reply_cut_off_by_an_error_is_kept_and_still_marked_interrupted_after_a_reload() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    // Two deltas, then the upstream connection drops.
    b.send_message("please cut").await;
    b.wait_for(".lmck-msg-error").await;
    idle(b).await;
    b.wait_text(".lmck-assistant .lmck-interrupted", "Interrupted")
        .await;
    let partial = b.texts(".lmck-assistant .lmck-md").await;
    assert!(partial.contains("partial reply"), "{partial}");
    wait_saved(&env, 2).await;
    // Stored with the mark and the error.
    let stored = first_stored(&env).await.expect("a stored conversation");
    let reply = &stored["messages"][1];
    assert!(
        reply["failed"].as_str().is_some_and(|e| !e.is_empty()),
        "{reply}"
    );
    // After a reload the live error and its Retry are gone; the mark is not.
    b.client.refresh().await.unwrap();
    b.click(".lmck-conv").await;
    let mark = b
        .wait_text(".lmck-assistant .lmck-interrupted", "Interrupted")
        .await;
    assert_eq!(mark, "Interrupted");
    assert_eq!(b.texts(".lmck-assistant .lmck-md").await, partial);
    assert!(b.texts(".lmck-msg-error").await.is_empty());
    let title = b
        .js("return document.querySelector('.lmck-interrupted').title;")
        .await;
    assert!(
        title
            .as_str()
            .is_some_and(|t| t.contains("Cut off by an error")),
        "{title}"
    );
}

#[tokio::test]
async fn an_upstream_error_shows_in_the_bubble_with_retry() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please fail500").await;
    let err = b.wait_text(".lmck-msg-error", "mock exploded").await;
    assert!(!err.is_empty());
    idle(b).await;
    b.screenshot("16-error").await;
    let before = env.mock.observed.requests.lock().unwrap().len();
    b.click(".lmck-retry").await;
    for _ in 0..100 {
        if env.mock.observed.requests.lock().unwrap().len() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        env.mock.observed.requests.lock().unwrap().len(),
        before + 1,
        "Retry posts again"
    );
    b.wait_text(".lmck-msg-error", "mock exploded").await;
    idle(b).await;
    // The failed bubble was replaced, not stacked.
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-assistant').length;")
            .await,
        json!(1)
    );
}

#[tokio::test]
async fn keyboard_picker_and_dark_theme() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.wait_js(
        "the pickers",
        "return document.querySelectorAll('.lmck-combo-input').length === 2;",
    )
    .await;
    let model = b
        .client
        .find_all(fantoccini::Locator::Css(".lmck-combo-input"))
        .await
        .unwrap()
        .remove(1);
    model.click().await.unwrap();
    model.send_keys("large").await.unwrap();
    b.wait_text(".lmck-combo-list", "mock-large").await;
    model.send_keys("\u{E007}").await.unwrap();
    b.js("document.activeElement.blur(); return true;").await;
    b.wait_js(
        "mock-large chosen",
        "return document.querySelectorAll('.lmck-combo-input')[1].value === 'mock-large';",
    )
    .await;
    b.click("button.lmck-start").await;
    b.send_message("hello large").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    assert_eq!(reqs.last().unwrap()["model"], "mock-large");
    // System → light → dark.
    b.click(".lmck-theme").await;
    b.click(".lmck-theme").await;
    b.wait_js(
        "dark theme",
        "return document.querySelector('.lmck-app').classList.contains('lmck-dark');",
    )
    .await;
    let bg = b
        .js("return getComputedStyle(document.querySelector('.lmck-app')).backgroundColor;")
        .await;
    assert_eq!(bg, json!("rgb(13, 17, 23)"));
    b.screenshot("17-dark").await;
}

/// A host with a set-up problem whose text carries markup, as an upstream's error body may.
struct WithProblem<H>(H);

#[async_trait]
impl<H: Host> Host for WithProblem<H> {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.0.models(cx).await
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
    fn setup_problems(&self) -> Vec<SetupProblem> {
        vec![SetupProblem::new(
            "provider claude",
            "listing models at http://127.0.0.1:9/models failed: <img src=x onerror=\"window.__pwned=1\">",
            "set `base_url` to http://127.0.0.1:9/v1",
        )]
    }
}

/// The operator sees the problem, what happened and the fix above the chat; the problem's
/// markup stays text.
#[tokio::test]
async fn a_setup_problem_is_shown_with_its_fix_as_text() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_hosted(WithProblem, |c| c).await else {
        return;
    };
    let b = &env.browser;
    let text = b
        .wait_text(".lmck-setup-problems", "1 set-up problem to fix")
        .await;
    for part in [
        "provider claude",
        "<img src=x onerror=",
        "Fix: set `base_url` to http://127.0.0.1:9/v1",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
    let injected = b
        .js("return [document.querySelectorAll('.lmck-setup-problems img').length, window.__pwned || 0];")
        .await;
    assert_eq!(injected, json!([0, 0]), "the markup was not rendered");
    // The chat works beside it.
    start_chat(b).await;
    b.send_message("hello").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
}

/// The test host with icons: its tool `get_weather` has one, and of two more prompts `sketch`
/// has one and `skim` none, though the list promises it (the image must hide itself).
struct WithIcons<H>(H);

#[async_trait]
impl<H: Host> Host for WithIcons<H> {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.0.models(cx).await
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
    async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        self.0.list_tools(scope).await
    }
    async fn call_tool(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
    ) -> Result<ToolResult, HostError> {
        self.0.call_tool(scope, name, arguments).await
    }
    async fn tool_source(&self, cx: &RequestContext, name: &str) -> ToolSource {
        self.0.tool_source(cx, name).await
    }
    async fn list_prompts(&self, scope: &Scope) -> Result<Vec<Prompt>, HostError> {
        let mut prompts = self.0.list_prompts(scope).await?;
        for name in ["sketch", "skim"] {
            prompts.push(Prompt {
                name: name.into(),
                description: Some(format!("The {name} prompt")),
                icon: true,
                ..Prompt::default()
            });
        }
        Ok(prompts)
    }
    async fn icon(
        &self,
        _: &Scope,
        of: IconOf,
        name: &str,
    ) -> Result<Option<IconImage>, HostError> {
        let has = matches!(
            (of, name),
            (IconOf::Prompt, "sketch") | (IconOf::Tool, "get_weather")
        );
        Ok(has
            .then(|| IconImage::new("image/png", PNG.to_vec()).ok())
            .flatten())
    }
}

/// The `/` menu shows a prompt's icon, loaded from the service's own origin, with its alt
/// text; a prompt whose icon does not load shows none.
#[tokio::test]
async fn the_prompt_menu_shows_icons_from_the_service_and_hides_missing_ones() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_hosted(WithIcons, |c| c).await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("/sk").await.unwrap();
    b.wait_text(".lmck-menu", "/skim").await;
    b.wait_js(
        "the sketch icon to load",
        "const i = document.querySelector('.lmck-menu img[alt=\"prompt icon: sketch\"]'); \
         return !!i && i.complete && i.naturalWidth === 1;",
    )
    .await;
    let src = b
        .js("return document.querySelector('.lmck-menu img[alt=\"prompt icon: sketch\"]').src;")
        .await;
    assert_eq!(
        src,
        json!(env.server.url("/chat/api/icons/prompt/sketch")),
        "the icon comes from the service"
    );
    b.wait_js(
        "the missing icon to hide",
        "const i = document.querySelector('.lmck-menu img[alt=\"prompt icon: skim\"]'); \
         return !!i && i.hidden && i.getBoundingClientRect().width === 0;",
    )
    .await;
    b.screenshot("18-prompt-icons").await;
}

/// The approval prompt and the tool card show the tool's icon, from the service's own origin.
#[tokio::test]
async fn a_tool_card_and_its_approval_show_the_tools_icon() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_hosted(WithIcons, |c| c).await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    let loaded = |scope: &str| {
        format!(
            "const i = document.querySelector('{scope} img[alt=\"tool icon: get_weather\"]'); \
             return !!i && i.complete && i.naturalWidth === 1 && i.getBoundingClientRect().width === 16;"
        )
    };
    b.wait_js("the icon on the approval", &loaded(".lmck-approval"))
        .await;
    b.wait_js("the icon on the tool card", &loaded(".lmck-tool summary"))
        .await;
    let src = b
        .js("return document.querySelector('.lmck-tool summary img.lmck-icon').src;")
        .await;
    assert_eq!(
        src,
        json!(env.server.url("/chat/api/icons/tool/get_weather"))
    );
    b.click(".lmck-allow").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny, 21 °C").await;
    idle(b).await;
    b.screenshot("19-tool-icon").await;
}
