//! Tools that ask the user for input (MCP elicitation) in headless Chromium: the form on the
//! call's card (typed fields, a required one checked, defaults), the answer reaching the tool and
//! the turn going on; the same request after a reload; a URL's consent card showing the whole URL
//! and its host; a decline reaching the tool; a call that runs as a task shown with its state,
//! polled to its result across a reload, and cancelled from its card; a running call's progress
//! as a bar on its card; a request asked through one instance answered in a tab of another.
//!
//! The host asks as an MCP hub does (`ToolResult::input_required`, then
//! `Host::call_tool_with_input`); the hub itself is tested against a real Python MCP server
//! (`tests/it/mcp_elicitation.rs`).

use lmchatkit::protocol::{
    InputAction, InputKind, InputQuestion, InputRequired, Model, TaskState, Tool, ToolResult,
    ToolTask,
};
use lmchatkit::store::MemoryStore;
use lmchatkit::{
    CompleteRequest, EventStream, Host, HostError, ProgressSink, RequestContext, Scope, ToolInput,
    ToolProgress, ToolSource, async_trait,
};
use lmchatkit_tests::browser::app::{Env, ONE_AT_A_TIME, idle, setup_hosted, start_chat};
use serde_json::{Value, json};

/// The test host plus two tools that ask: `book_table` (a form) and `sign_in` (a URL).
struct Asking<H>(H);

fn asks(key: &str, message: &str, kind: InputKind, state: &str) -> ToolResult {
    ToolResult {
        content: "waits for input".into(),
        input_required: Some(Box::new(InputRequired {
            questions: vec![InputQuestion {
                key: key.into(),
                message: message.into(),
                kind,
            }],
            request_state: Some(state.into()),
            ..InputRequired::default()
        })),
        ..ToolResult::default()
    }
}

/// A task `id` in `status`, polled every 100 ms.
fn a_task(id: &str, status: TaskState) -> ToolResult {
    ToolResult {
        content: "runs as a task".into(),
        task: Some(Box::new(ToolTask {
            status,
            status_message: None,
            poll_interval_ms: Some(100),
            ticket: None,
            task_id: id.into(),
        })),
        ..ToolResult::default()
    }
}

/// The task of `long_job` after `n` polls (its id counts them: the host keeps no state).
fn task_result(n: u32) -> ToolResult {
    ToolResult {
        content: "runs as a task".into(),
        task: Some(Box::new(ToolTask {
            status: TaskState::Working,
            status_message: Some(format!("poll {n}")),
            poll_interval_ms: Some(100),
            ticket: None,
            task_id: format!("job-{n}"),
        })),
        ..ToolResult::default()
    }
}

/// The asking host's chat (history in memory) with a new chat open, `message` sent and the call
/// it makes allowed; `None` when the bundle or browser is missing (`setup_hosted` said why).
async fn allowed_call(message: &str) -> Option<Env> {
    let env = setup_hosted(Asking, |c| c.history(MemoryStore::new())).await?;
    start_chat(&env.browser).await;
    env.browser.send_message(message).await;
    env.browser.click(".lmck-allow").await;
    Some(env)
}

#[async_trait]
impl<H: Host> Host for Asking<H> {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.0.models(cx).await
    }
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.0.complete(cx, req)
    }
    async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        let mut tools = self.0.list_tools(scope).await?;
        tools.push(Tool::new("book_table"));
        tools.push(Tool::new("sign_in"));
        tools.push(Tool::new("long_job"));
        tools.push(Tool::new("counter"));
        tools.push(Tool::new("ask_task"));
        Ok(tools)
    }
    async fn call_tool(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
    ) -> Result<ToolResult, HostError> {
        match name {
            "book_table" => Ok(asks(
                "who",
                "Who is the table for? <b>not bold</b>",
                InputKind::Form {
                    schema: json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "title": "Name", "description": "Who books"},
                            "seats": {"type": "integer", "title": "Seats", "minimum": 1, "default": 2},
                            "vip": {"type": "boolean", "title": "VIP"},
                            "size": {"type": "string", "title": "Table", "enum": ["small", "large"]}
                        },
                        "required": ["name"]
                    }),
                },
                "book",
            )),
            "sign_in" => Ok(asks(
                "login",
                "Sign in to the booking service",
                InputKind::Url {
                    url: "https://auth.example.com/start?session=abc".into(),
                    host: String::new(),
                },
                "signin",
            )),
            "long_job" => Ok(task_result(0)),
            "ask_task" => Ok(a_task("ask-0", TaskState::Working)),
            "counter" => {
                // Reports progress as an MCP server does, through the call's sink.
                let sink = scope.cx().extensions().get::<ProgressSink>().cloned();
                for i in 1..=3u32 {
                    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
                    if let Some(s) = &sink {
                        let mut p = ToolProgress::new(f64::from(i));
                        p.total = Some(3.0);
                        p.message = Some(format!("counted {i}"));
                        (s.0)(p);
                    }
                }
                Ok(ToolResult::text("counted to 3"))
            }
            _ => self.0.call_tool(scope, name, arguments).await,
        }
    }
    async fn poll_tool_task(
        &self,
        _: &Scope,
        _: &str,
        task_id: &str,
        cancel: bool,
    ) -> Result<ToolResult, HostError> {
        if cancel {
            return Ok(ToolResult::error("the task was cancelled"));
        }
        if task_id == "ask-0" {
            // The task asks the user from inside.
            let mut r = a_task("ask-1", TaskState::InputRequired);
            r.input_required = asks(
                "who",
                "Who runs the job?",
                InputKind::Form {
                    schema: json!({"type": "object", "properties": {"name": {"type": "string"}},
                                   "required": ["name"]}),
                },
                "",
            )
            .input_required;
            return Ok(r);
        }
        if let Some(name) = task_id.strip_prefix("ask-done-") {
            return Ok(ToolResult::text(format!("hello {name}")));
        }
        let n: u32 = task_id.trim_start_matches("job-").parse().unwrap_or(0) + 1;
        // Done at the 40th poll (4 s at 100 ms): time to reload in the middle.
        Ok(if n >= 40 {
            ToolResult::text("job done")
        } else {
            task_result(n)
        })
    }
    async fn call_tool_with_input(
        &self,
        _: &Scope,
        name: &str,
        _: Value,
        input: ToolInput,
    ) -> Result<ToolResult, HostError> {
        if input.task_id.as_deref() == Some("ask-1") {
            // The answer reaches the task, which goes on.
            let name = input.answers["who"]
                .content
                .as_ref()
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            return Ok(a_task(&format!("ask-done-{name}"), TaskState::Working));
        }
        let (key, answer) = input
            .answers
            .iter()
            .next()
            .ok_or_else(|| HostError::InvalidInput("no answer".into()))?;
        let text = match answer.action {
            InputAction::Accept => format!(
                "{name} {key} accepted (state {}): {}",
                input.request_state.as_deref().unwrap_or(""),
                serde_json::to_string(&answer.content).unwrap_or_default()
            ),
            other => format!("{name} {key}: the user chose {other:?}"),
        };
        Ok(ToolResult::text(text))
    }
    async fn tool_source(&self, cx: &RequestContext, name: &str) -> ToolSource {
        self.0.tool_source(cx, name).await
    }
}

/// A form on the card: filled, a required field checked first, sent; the tool gets typed values
/// and the turn goes on. A reload while the request waits shows it again.
#[tokio::test]
async fn a_tools_form_is_filled_on_its_card_survives_a_reload_and_its_answer_reaches_the_tool() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_hosted(Asking, |c| c.history(MemoryStore::new())).await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("call tool book_table {\"day\": \"monday\"}")
        .await;
    b.click(".lmck-allow").await;
    b.wait_for(".lmck-input-request").await;
    let message = b.texts(".lmck-input-request .lmck-input-message").await;
    assert_eq!(
        message, "Who is the table for? <b>not bold</b>",
        "the server's text is text, not markup"
    );
    idle(b).await;

    // A reload while it waits asks again.
    b.client.refresh().await.unwrap();
    b.wait_for(".lmck-input-request").await;
    let seats = b
        .js("return document.querySelector('.lmck-input-request input[name=seats]').value;")
        .await;
    assert_eq!(seats, json!("2"), "the default fills the field");
    assert_eq!(
        b.js("return !!document.querySelector('.lmck-input-request select[name=size]');")
            .await,
        json!(true)
    );

    let violations = b.axe_violations().await;
    assert!(violations.is_empty(), "accessibility: {violations:?}");
    b.screenshot("20-input-form").await;

    // Submit without the required name: named, nothing sent.
    b.click(".lmck-input-submit").await;
    b.wait_text(".lmck-input-problem", "Name is required").await;
    b.fill(".lmck-input-request input[name=name]", "Ada").await;
    b.js(
        "const s = document.querySelector('.lmck-input-request select[name=size]'); \
          s.value = 'large'; s.dispatchEvent(new Event('change', {bubbles: true})); return 1;",
    )
    .await;
    b.click(".lmck-input-request input[name=vip]").await;
    b.click(".lmck-input-submit").await;
    let result = b
        .wait_text(".lmck-tool-result", "book_table who accepted (state book)")
        .await;
    assert!(
        result.contains(r#""name":"Ada""#)
            && result.contains(r#""seats":2"#)
            && result.contains(r#""size":"large""#)
            && result.contains(r#""vip":true"#),
        "typed values: {result}"
    );
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Tool said: book_table who accepted",
    )
    .await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-input-request').length;")
            .await,
        json!(0),
        "answered: the card is gone"
    );
    idle(b).await;
    b.screenshot("20-input-form-answered").await;
}

/// A URL request shows the whole URL and its host and opens nothing by itself; a decline
/// reaches the tool.
#[tokio::test]
async fn a_url_request_shows_the_url_and_its_host_and_a_decline_reaches_the_tool() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool sign_in").await else {
        return;
    };
    let b = &env.browser;
    b.wait_for(".lmck-input-url").await;
    assert_eq!(
        b.texts(".lmck-input-full-url").await,
        "https://auth.example.com/start?session=abc"
    );
    assert_eq!(b.texts(".lmck-input-host").await, "auth.example.com");
    let windows = b.client.windows().await.unwrap().len();
    assert_eq!(windows, 1, "nothing opened before the user's click");
    b.screenshot("21-input-url-consent").await;
    b.click(".lmck-input-decline").await;
    b.wait_text(".lmck-tool-result", "sign_in login: the user chose Decline")
        .await;
    idle(b).await;
}

/// A call that runs as a task shows its state while the tab polls it; a reload in the middle
/// polls on; its result comes and the turn goes on. Another one is cancelled from its card.
#[tokio::test]
async fn a_task_shows_its_state_is_polled_across_a_reload_and_cancels_from_its_card() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool long_job").await else {
        return;
    };
    let b = &env.browser;
    b.wait_text(".lmck-task .lmck-task-message", "poll").await;
    assert_eq!(b.texts(".lmck-task-state").await, "running");
    b.screenshot("22-task-running").await;
    b.wait_text(".lmck-task .lmck-task-message", "poll 5").await;
    b.client.refresh().await.unwrap();
    // The reloaded tab shows the task polling on, or its result when the job ended while the
    // page reloaded (one run alone found no task card after the reload: the job was done).
    b.wait_js(
        "the task or its result after the reload",
        "return !!document.querySelector('.lmck-task') || !!document.querySelector('.lmck-tool-result');",
    )
    .await;
    b.wait_text(".lmck-tool-result", "job done").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: job done")
        .await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-task').length;")
            .await,
        json!(0)
    );
    idle(b).await;

    b.send_message("call tool long_job").await;
    b.click(".lmck-allow").await;
    b.wait_for(".lmck-task-cancel").await;
    b.click(".lmck-task-cancel").await;
    b.wait_text(".lmck-tool-result", "the task was cancelled")
        .await;
    idle(b).await;
}

/// A task's poll that the network loses (as a reload cuts the tab's requests short, or a blip
/// does) is not the task's result: the task runs on at the server, so the tab polls on and the
/// task's own result comes. (CI once recorded "network error: Failed to fetch" as the result of
/// a task polled across a reload, and saved it.)
#[tokio::test]
async fn a_task_poll_lost_on_the_network_polls_on_to_the_tasks_own_result() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool long_job").await else {
        return;
    };
    let b = &env.browser;
    b.wait_text(".lmck-task .lmck-task-message", "poll 2").await;
    // The tab's next three task polls fail as a lost connection does (fetch rejects with a
    // TypeError); everything else goes through.
    b.js("window.__dropped = 0; const fetch0 = window.fetch; \
          window.fetch = async function (input, init) { \
            if (input instanceof Request && window.__dropped < 3 && input.url.endsWith('/api/tools/call')) { \
              const body = await input.clone().text(); \
              if (body.includes('\"task\":{')) { window.__dropped += 1; throw new TypeError('Failed to fetch'); } \
            } \
            return fetch0.apply(this, arguments); \
          }; return true;")
        .await;
    b.wait_text(".lmck-tool-result", "job done").await;
    assert_eq!(b.js("return window.__dropped;").await, json!(3));
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: job done")
        .await;
    assert!(
        !b.texts(".lmck-tool-result").await.contains("[error]"),
        "no lost poll shows as the call's result"
    );
    idle(b).await;
}

/// A call the host refuses shows the host's words on its card. The service reported them in
/// the call's stream after it had answered, so they are not called a network error (the card
/// once read "network error: tool … is not recognized").
#[tokio::test]
async fn a_call_the_host_refuses_shows_its_words_on_the_card_not_a_network_error() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool get_weather {}").await else {
        return;
    };
    let b = &env.browser;
    let text = b.wait_text(".lmck-tool-result", "city is required").await;
    assert!(!text.contains("network"), "{text}");
    idle(b).await;
}

/// A running call's progress reports show as a bar with the server's message on its card, and
/// go once the result is in.
#[tokio::test]
async fn a_running_calls_progress_shows_on_its_card_until_its_result() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool counter").await else {
        return;
    };
    let b = &env.browser;
    b.wait_text(".lmck-tool-progress-text", "counted").await;
    let value = b
        .js("const p = document.querySelector('.lmck-tool-progress progress'); return [p.value, p.max];")
        .await;
    assert!(
        value[0].as_f64().is_some_and(|v| (1.0..=3.0).contains(&v)) && value[1] == json!(3),
        "{value}"
    );
    b.screenshot("23-tool-progress").await;
    b.wait_text(".lmck-tool-result", "counted to 3").await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-tool-progress').length;")
            .await,
        json!(0),
        "the bar goes with the result"
    );
    idle(b).await;
}

/// A task that asks the user from inside shows the form on its call; the answer reaches the
/// task, which goes on to its result.
#[tokio::test]
async fn a_task_that_asks_shows_its_form_and_goes_on_with_the_answer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = allowed_call("call tool ask_task").await else {
        return;
    };
    let b = &env.browser;
    b.wait_text(
        ".lmck-input-request .lmck-input-message",
        "Who runs the job?",
    )
    .await;
    b.fill(".lmck-input-request input[name=name]", "Ada").await;
    b.click(".lmck-input-submit").await;
    b.wait_text(".lmck-tool-result", "hello Ada").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: hello Ada")
        .await;
    idle(b).await;
}

/// A request for input asked through instance A is answered in a tab of instance B (the same
/// history store and signing secret): B takes A's ticket, and the turn goes on through B.
#[tokio::test]
async fn a_request_asked_through_one_instance_is_answered_in_a_tab_of_another() {
    use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
    use lmchatkit::{ChatService, Config};
    use lmchatkit_tests::test_host::TestHost;
    const SECRET: &[u8] = b"two-instances-secret-0123456789abcdef";
    let _one = ONE_AT_A_TIME.lock().await;
    let store: std::sync::Arc<dyn lmchatkit::store::HistoryStore> =
        std::sync::Arc::new(MemoryStore::new());
    let for_a = store.clone();
    let Some(env) =
        setup_hosted(Asking, move |c| c.history_arc(for_a).signing_secret(SECRET)).await
    else {
        return;
    };
    let backend =
        OpenAiBackend::new(OpenAiConfig::new(env.mock.base_url()).with_api_key("sk-test"));
    let config = Config::builder(Asking(TestHost(backend)))
        .events(true)
        .history_arc(store)
        .signing_secret(SECRET)
        .build()
        .unwrap();
    let b_instance = lmchatkit_tests::serve::serve(ChatService::new(config)).await;
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("call tool book_table {\"day\": \"friday\"}")
        .await;
    b.click(".lmck-allow").await;
    b.wait_for(".lmck-input-request").await;
    idle(b).await;

    b.client.goto(&b_instance.url("/chat")).await.unwrap();
    b.wait_text(".lmck-conv", "call tool book_table").await;
    b.click(".lmck-conv .lmck-conv-open").await;
    b.wait_for(".lmck-input-request").await;
    b.fill(".lmck-input-request input[name=name]", "Lin").await;
    b.click(".lmck-input-submit").await;
    b.wait_text(".lmck-tool-result", "book_table who accepted (state book)")
        .await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Tool said: book_table who accepted",
    )
    .await;
    idle(b).await;
}
