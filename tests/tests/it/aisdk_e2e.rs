//! The real AI SDK client (`ai@6.0.0`, whose chunk schemas are strict, and the newest 6.0.x),
//! an `AbstractChat` with `DefaultChatTransport` in node, against our `/api/aisdk/chat` on a real
//! hyper server, over the OpenAI backend and the mock upstream: text, reasoning, a tool the
//! policy allows (its input streamed into the client), the approval round trip, a denial, a deny
//! rule, a tampered approval, an upstream failure mid-reply, a stop of the run, a client that
//! leaves and resumes the run, and a reload that reads the thread back and validates it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::protocol::ToolDecision;
use lmchatkit::store::MemoryStore;
use lmchatkit::{ApprovalPolicy, ChatService, Config};
use lmchatkit_tests::aisdk::{AI_V7, AI_VERSIONS, available, drive};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use lmchatkit_tests::test_host::TestHost;
use serde_json::{Value, json};

struct Setup {
    mock: MockUpstream,
    server: Served,
}

async fn setup(policy: ApprovalPolicy) -> Setup {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url())
            .with_api_key("sk-test")
            .with_idle_timeout(Duration::from_millis(800)),
    );
    let config = Config::builder(TestHost(backend))
        .history(MemoryStore::new())
        .approval_policy(policy)
        .build()
        .unwrap();
    let server = serve(ChatService::new(config)).await;
    Setup { mock, server }
}

/// Runs `steps` through every pinned client version, each on its own thread id; `None` when
/// the harness is not installed (the test skips, or fails in CI).
async fn each_version(s: &Setup, scenario: Value) -> Option<Vec<(&'static str, Value)>> {
    if !available() {
        return None;
    }
    let api = s.server.url("/chat/api/aisdk/chat");
    let mut outs = Vec::new();
    for version in AI_VERSIONS {
        let chat_id = format!("thread-{version}");
        let text = scenario
            .to_string()
            .replace("{threads}", &s.server.url("/chat/api/aisdk/threads"))
            .replace("{chat}", &chat_id);
        let mut sc: Value = serde_json::from_str(&text).unwrap();
        sc["api"] = json!(api);
        sc["chatId"] = json!(chat_id);
        sc["body"] = json!({"model": "mock-small"});
        outs.push((version, drive(version, &sc).await));
    }
    Some(outs)
}

fn parts<'a>(message: &'a Value, kind: &str) -> Vec<&'a Value> {
    message["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == kind)
        .collect()
}

fn text_of(message: &Value) -> String {
    parts(message, "text")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

fn tool_part(message: &Value) -> &Value {
    parts(message, "dynamic-tool")
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no tool part in {message}"))
}

fn ok(version: &str, step: &Value) {
    assert_eq!(step["status"], "ready", "{version}: {step}");
    assert_eq!(step["error"], Value::Null, "{version}: {step}");
    assert_eq!(step.get("timeout"), None, "{version}: {step}");
}

#[tokio::test]
async fn a_text_reply_with_its_usage_reaches_both_client_versions() {
    let s = setup(ApprovalPolicy::default()).await;
    let Some(outs) = each_version(&s, json!({"steps": [{"send": "hello"}]})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        ok(version, step);
        let reply = &step["messages"][1];
        assert_eq!(text_of(reply), "Hello from the mock model.", "{version}");
        assert_eq!(reply["metadata"]["model"], "mock-small", "{version}");
        assert_eq!(
            reply["metadata"]["usage"],
            json!({"inputTokens": 11, "outputTokens": 5}),
            "{version}"
        );
        let r = &step["responses"][0];
        assert_eq!(r["headers"]["x-vercel-ai-ui-message-stream"], "v1");
    }
}

#[tokio::test]
async fn a_reasoning_reply_shows_its_reasoning_part() {
    let s = setup(ApprovalPolicy::default()).await;
    let Some(outs) = each_version(&s, json!({"steps": [{"send": "think"}]})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        ok(version, step);
        let reply = &step["messages"][1];
        assert_eq!(
            parts(reply, "reasoning")[0]["text"],
            "Let me think.",
            "{version}"
        );
        assert_eq!(text_of(reply), "Thought it through.", "{version}");
    }
}

/// A tool the policy allows runs on the server within one reply, and the client sees its
/// input grow while the model writes it (the part in `input-streaming`, its input the
/// client's own parse of the streamed text), from one `tool-input-delta` per piece the
/// upstream sent, then the complete input.
#[tokio::test]
async fn a_tool_the_policy_allows_streams_its_input_into_the_client_and_runs_within_one_reply() {
    let s = setup(ApprovalPolicy::new(ToolDecision::Allow)).await;
    let Some(outs) = each_version(&s, json!({"steps": [{"send": "use the tool"}]})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        ok(version, step);
        let reply = &step["messages"][1];
        let part = tool_part(reply);
        assert_eq!(part["toolName"], "get_weather", "{version}");
        assert_eq!(part["state"], "output-available", "{version}: {part}");
        assert_eq!(part["input"], json!({"city": "Oslo"}), "{version}");
        assert_eq!(part["output"], "Oslo: sunny, 21 °C", "{version}");
        assert_eq!(text_of(reply), "The weather in Oslo is sunny.", "{version}");
        assert_eq!(step["responses"].as_array().map(Vec::len), Some(1));

        let body = step["responses"][0]["body"].as_str().unwrap_or_default();
        let deltas: Vec<Value> = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|c| c["type"] == "tool-input-delta")
            .map(|c| c["inputTextDelta"].clone())
            .collect();
        assert_eq!(
            deltas,
            [json!("{\"ci"), json!("ty\": \"Os"), json!("lo\"}")],
            "{version}: the upstream's pieces"
        );
        let seen: Vec<&Value> = step["streamingInputs"]
            .as_array()
            .unwrap_or_else(|| panic!("{version}: {step}"))
            .iter()
            .filter(|s| s["toolCallId"] == "call_1")
            .map(|s| &s["input"])
            .collect();
        assert!(
            seen.contains(&&json!({"city": "Os"})),
            "{version}: the input while it streamed: {seen:?}"
        );
        assert_eq!(
            seen.last(),
            Some(&&json!({"city": "Oslo"})),
            "{version}: the last piece completes the text: {seen:?}"
        );
    }
}

#[tokio::test]
async fn an_approval_round_trip_runs_the_call_after_the_user_says_yes() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps = json!([{"send": "use the tool"}, {"approve": true}]);
    let Some(outs) = each_version(&s, json!({"autoSendApprovals": true, "steps": steps})).await
    else {
        return;
    };
    for (version, out) in outs {
        let asked = &out["steps"][0];
        ok(version, asked);
        assert_eq!(
            tool_part(&asked["messages"][1])["state"],
            "approval-requested"
        );
        let approved = &out["steps"][1];
        ok(version, approved);
        let messages = approved["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            2,
            "{version}: one assistant message: {approved}"
        );
        let part = tool_part(&messages[1]);
        assert_eq!(part["state"], "output-available", "{version}: {part}");
        assert_eq!(part["output"], "Oslo: sunny, 21 °C", "{version}");
        assert_eq!(part["approval"]["approved"], true, "{version}");
        assert_eq!(
            text_of(&messages[1]),
            "The weather in Oslo is sunny.",
            "{version}"
        );
        assert_eq!(
            approved["responses"].as_array().map(Vec::len),
            Some(1),
            "{version}: exactly one automatic re-post"
        );
    }
}

#[tokio::test]
async fn a_denial_is_shown_and_the_model_is_told_with_the_reason() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps = json!([{"send": "use the tool"}, {"approve": false, "reason": "not today"}]);
    let Some(outs) = each_version(&s, json!({"autoSendApprovals": true, "steps": steps})).await
    else {
        return;
    };
    for (version, out) in outs {
        let denied = &out["steps"][1];
        ok(version, denied);
        let part = tool_part(&denied["messages"][1]);
        assert_eq!(part["state"], "output-denied", "{version}: {part}");
        assert_eq!(part["approval"]["reason"], "not today", "{version}");
    }
    let requests = s.mock.observed.requests.lock().unwrap();
    let last = requests.last().unwrap();
    let told = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool");
    assert!(
        told.and_then(|m| m["content"].as_str())
            .is_some_and(|c| c.contains("not today")),
        "the model reads the user's reason: {last}"
    );
}

#[tokio::test]
async fn a_deny_rule_never_runs_the_tool() {
    let s = setup(ApprovalPolicy::new(ToolDecision::Allow).deny("get_*")).await;
    let Some(outs) = each_version(&s, json!({"steps": [{"send": "use the tool"}]})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        ok(version, step);
        let part = tool_part(&step["messages"][1]);
        assert_eq!(part["state"], "output-error", "{version}: {part}");
        assert!(
            part["errorText"]
                .as_str()
                .unwrap()
                .contains("operator's policy blocks"),
            "{version}: {part}"
        );
    }
}

#[tokio::test]
async fn a_tampered_approval_is_refused_and_nothing_runs() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps = json!([
        {"send": "use the tool"},
        {"tamperInput": {"city": "Bergen"}},
        {"approve": true},
    ]);
    let Some(outs) = each_version(&s, json!({"autoSendApprovals": true, "steps": steps})).await
    else {
        return;
    };
    for (version, out) in outs {
        let approved = &out["steps"][2];
        assert_eq!(approved["status"], "error", "{version}: {approved}");
        assert!(
            approved["error"]
                .as_str()
                .unwrap_or("")
                .contains("does not match the call"),
            "{version}: {approved}"
        );
        assert_eq!(approved["responses"][0]["status"], 403, "{version}");
    }
    // One model call per version (the one that asked); the tampered re-posts reached no model.
    assert_eq!(
        s.mock.observed.requests.lock().unwrap().len(),
        AI_VERSIONS.len()
    );
}

#[tokio::test]
async fn an_upstream_failure_mid_reply_sets_the_error_and_keeps_the_partial_text() {
    let s = setup(ApprovalPolicy::default()).await;
    let Some(outs) = each_version(&s, json!({"steps": [{"send": "cut"}]})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        assert_eq!(step["status"], "error", "{version}: {step}");
        assert!(step["error"].is_string(), "{version}: {step}");
        assert_eq!(text_of(&step["messages"][1]), "partial reply", "{version}");
    }
}

#[tokio::test]
async fn a_stop_of_the_run_drops_the_upstream_request_and_the_partial_reply_is_kept_stopped() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps = json!([{"send": "slow", "stopAfterText": "t2 ", "stopRun": true}]);
    let Some(outs) = each_version(&s, json!({"steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        let stopped = &out["steps"][0];
        ok(version, stopped);
        assert_eq!(stopped["stopAnswer"]["status"], 200, "{version}: {stopped}");
        assert_eq!(
            stopped["stopAnswer"]["body"]["status"], "stopped",
            "{version}"
        );
        let reply = &stopped["messages"][1];
        assert!(text_of(reply).starts_with("t0 t1 t2 "), "{version}");
        assert_eq!(reply["metadata"]["stopped"], true, "{version}: {reply}");
        // The stop is answered once the run has ended, so the thread already holds the
        // partial reply, marked stopped, exactly as the client built it.
        let url = s
            .server
            .url(&format!("/chat/api/aisdk/threads/thread-{version}"));
        let thread: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(thread["messages"][1], *reply, "{version}");
    }
    assert_eq!(
        s.mock.observed.dropped_early.load(Ordering::SeqCst),
        AI_VERSIONS.len()
    );
}

#[tokio::test]
async fn a_client_that_leaves_and_reloads_resumes_the_reply_where_it_runs() {
    let s = setup(ApprovalPolicy::default()).await;
    // The client leaves mid-reply (its fetch aborted, as a closed tab's is); the reloaded page
    // reads the thread and resumes the run.
    let steps = json!([
        {"send": "paced", "stopAfterText": "p2 "},
        {"loadThread": "{threads}/{chat}", "adopt": true},
        {"resume": true},
    ]);
    let Some(outs) = each_version(&s, json!({"steps": steps})).await else {
        return;
    };
    let whole: String = (0..100).map(|i| format!("p{i} ")).collect();
    for (version, out) in outs {
        let loaded = &out["steps"][1];
        assert_eq!(loaded["validation"]["ok"], true, "{version}: {loaded}");
        let roles: Vec<&Value> = loaded["thread"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["role"])
            .collect();
        assert_eq!(
            roles,
            [&json!("user")],
            "{version}: the reply in progress is left out"
        );
        let resumed = &out["steps"][2];
        ok(version, resumed);
        let messages = resumed["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "{version}: {resumed}");
        assert_eq!(text_of(&messages[1]), whole, "{version}: every token once");
        let url = s
            .server
            .url(&format!("/chat/api/aisdk/threads/thread-{version}"));
        let thread: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(thread["messages"][1], messages[1], "{version}");
    }
    assert_eq!(s.mock.observed.dropped_early.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_reload_reads_the_thread_back_and_it_passes_validate_ui_messages() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps = json!([
        {"send": "use the tool"},
        {"approve": true},
        {"loadThread": "{threads}/{chat}", "adopt": true},
        {"send": "hello"},
    ]);
    let Some(outs) = each_version(&s, json!({"autoSendApprovals": true, "steps": steps})).await
    else {
        return;
    };
    for (version, out) in outs {
        let before = &out["steps"][1]["messages"];
        let loaded = &out["steps"][2];
        assert_eq!(loaded["validation"]["ok"], true, "{version}: {loaded}");
        let thread = &loaded["thread"];
        assert_eq!(
            thread["messages"], *before,
            "{version}: the thread is what the chat showed"
        );
        assert_eq!(thread["totalInputTokens"], 11, "{version}");
        // Going on after the reload works as in the same tab.
        let next = &out["steps"][3];
        ok(version, next);
        assert_eq!(
            next["messages"].as_array().map(Vec::len),
            Some(4),
            "{version}"
        );
    }
}

/// `regenerate()` makes a new version of the reply: the chat and the thread show the active
/// path (the new reply), and the stored conversation keeps the first reply as its other version.
#[tokio::test]
async fn a_regenerated_reply_is_a_new_version_and_the_thread_is_the_active_path() {
    let s = setup(ApprovalPolicy::default()).await;
    let steps =
        json!([{"send": "hello"}, {"regenerate": true}, {"loadThread": "{threads}/{chat}"}]);
    let Some(outs) = each_version(&s, json!({"steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        ok(version, &out["steps"][1]);
        let first = &out["steps"][0]["messages"];
        let again = &out["steps"][1]["messages"];
        assert_eq!(
            again.as_array().map(Vec::len),
            Some(2),
            "{version}: {again}"
        );
        assert_ne!(first[1]["id"], again[1]["id"], "{version}: a new reply");
        let thread = &out["steps"][2]["thread"];
        assert_eq!(
            thread["messages"], *again,
            "{version}: the thread is the active path"
        );
        let conv: Value = reqwest::get(
            s.server
                .url(&format!("/chat/api/conversations/thread-{version}")),
        )
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        let branch = &conv["branches"][0];
        assert_eq!(branch["index"], 1, "{version}: {conv}");
        assert_eq!(
            branch["versions"].as_array().map(Vec::len),
            Some(2),
            "{version}"
        );
        assert_eq!(branch["current"], 1, "{version}");
    }
}

#[tokio::test]
async fn a_v7_client_that_asks_sees_the_policys_automatic_approval_and_no_other_client_does() {
    let s = setup(ApprovalPolicy::new(ToolDecision::Allow)).await;
    if !available() {
        return;
    }
    let api = s.server.url("/chat/api/aisdk/chat");
    // ai@6.0.0 (strict chunk schemas) and ai@7 without the header get the v6 stream.
    for (version, asks) in [(AI_V7, true), ("6.0.0", false), (AI_V7, false)] {
        let chat_id = format!("auto-{version}-{asks}");
        let thread = s.server.url(&format!("/chat/api/aisdk/threads/{chat_id}"));
        let mut sc = json!({"api": api, "chatId": chat_id, "body": {"model": "mock-small"},
            "steps": [{"send": "use the tool"}, {"loadThread": thread}]});
        if asks {
            sc["headers"] = json!({"x-lmchatkit-ai-sdk": "7"});
        }
        let out = drive(version, &sc).await;
        let step = &out["steps"][0];
        ok(version, step);
        let part = tool_part(&step["messages"][1]);
        assert_eq!(part["state"], "output-available", "{version}: {part}");
        assert_eq!(part["output"], "Oslo: sunny, 21 °C", "{version}");
        let body = step["responses"][0]["body"].as_str().unwrap_or_default();
        if asks {
            assert_eq!(part["approval"]["isAutomatic"], true, "{part}");
            assert_eq!(part["approval"]["approved"], true, "{part}");
            assert!(
                body.contains(r#""type":"tool-approval-response""#),
                "{body}"
            );
        } else {
            assert_eq!(part.get("approval"), None, "{version}: {part}");
            for v7_only in ["isAutomatic", "tool-approval-response"] {
                assert!(!body.contains(v7_only), "{version}: {v7_only} in {body}");
            }
        }
        // The thread reads back as that client showed it, and validates in it.
        let loaded = &out["steps"][1];
        assert_eq!(loaded["validation"]["ok"], true, "{version}: {loaded}");
        assert_eq!(
            loaded["thread"]["messages"][1]["parts"], step["messages"][1]["parts"],
            "{version}"
        );
    }
}

/// A chat `POST` of `body` by a client that asks for the v7 stream; its response, a 200.
async fn post_as_v7(http: &reqwest::Client, api: &str, body: &Value) -> reqwest::Response {
    let res = http
        .post(api)
        .header("x-lmchatkit-ai-sdk", "7")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res
}

#[tokio::test]
async fn a_v6_client_resuming_a_run_a_v7_client_started_gets_no_v7_chunk() {
    let s = setup(ApprovalPolicy::new(ToolDecision::Allow)).await;
    let api = s.server.url("/chat/api/aisdk/chat");
    // The tool call, then a 2 s paced reply: the run is still writing when the second tab comes.
    let body = json!({"id": "shared-run", "model": "mock-small", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "use the tool paced"}]}
    ]});
    let http = reqwest::Client::new();
    let mut started = post_as_v7(&http, &api, &body).await;
    let mut v7_body = String::new();
    while !v7_body.contains("tool-output-available") {
        let chunk = started.chunk().await.unwrap().expect("the stream goes on");
        v7_body.push_str(&String::from_utf8_lossy(&chunk));
    }
    // Another tab follows the same run without asking for v7: replayed from the run's start.
    let followed = http
        .get(format!("{api}/shared-run/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(followed.status(), 200, "the run is still writing");
    let v6_body = followed.text().await.unwrap();
    while let Some(chunk) = started.chunk().await.unwrap() {
        v7_body.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(v7_body.contains(r#""isAutomatic":true"#), "{v7_body}");
    assert!(v7_body.contains("tool-approval-response"), "{v7_body}");
    for v7_only in ["isAutomatic", "tool-approval-response"] {
        assert!(!v6_body.contains(v7_only), "{v7_only} in {v6_body}");
    }
    // The rest is the same stream: the tool's output and the whole reply.
    assert!(v6_body.contains("Oslo: sunny"), "{v6_body}");
    assert!(v6_body.contains("p99"), "{v6_body}");
}

#[tokio::test]
async fn messages_with_v7_parts_are_accepted_and_kept_and_a_v6_reader_gets_them_left_out() {
    let s = setup(ApprovalPolicy::default()).await;
    let api = s.server.url("/chat/api/aisdk/chat");
    let custom = json!({"type": "custom", "kind": "app.note", "note": "kept"});
    let body = json!({"id": "v7-parts", "model": "mock-small", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}, custom]}
    ]});
    let http = reqwest::Client::new();
    let stream = post_as_v7(&http, &api, &body).await.text().await.unwrap();
    assert!(stream.contains(r#""type":"finish""#), "{stream}");
    let url = s.server.url("/chat/api/aisdk/threads/v7-parts");
    let read = |v7: bool| {
        let mut get = http.get(&url);
        if v7 {
            get = get.header("x-lmchatkit-ai-sdk", "7");
        }
        async move { get.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let for_v7 = read(true).await;
    assert_eq!(
        for_v7["messages"][0]["parts"],
        json!([{"type": "text", "text": "hello"}, custom])
    );
    let for_v6 = read(false).await;
    assert_eq!(
        for_v6["messages"][0]["parts"],
        json!([{"type": "text", "text": "hello"}])
    );
    // What each real client reads back passes its own validateUIMessages.
    if !available() {
        return;
    }
    for (version, headers) in [
        ("6.0.0", json!({})),
        (AI_V7, json!({"x-lmchatkit-ai-sdk": "7"})),
    ] {
        let sc = json!({"api": api, "chatId": "v7-parts", "headers": headers,
            "steps": [{"loadThread": url}]});
        let out = drive(version, &sc).await;
        let loaded = &out["steps"][0];
        assert_eq!(loaded["validation"]["ok"], true, "{version}: {loaded}");
    }
}
