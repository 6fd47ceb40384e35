//! The AI SDK harness checks itself against the AI SDK's own server (`streamText` +
//! `toUIMessageStreamResponse` over the mock upstream), so a failure in an lmchatkit AI SDK test
//! is about lmchatkit, not about the harness. Every test runs both pinned client versions.

use lmchatkit_tests::aisdk::{AI_VERSIONS, Relay, available, drive};
use lmchatkit_tests::mock_upstream::MockUpstream;
use serde_json::{Value, json};

/// Runs `scenario` (with the relay's `api` and the mock's model filled in) through every pinned
/// client version against the AI SDK's own server over the mock upstream; `None` when the
/// harness is not installed (the test skips).
async fn each_version(scenario: Value) -> Option<Vec<(&'static str, Value)>> {
    if !available() {
        return None;
    }
    let upstream = MockUpstream::start().await;
    let relay = Relay::start(&upstream.base_url()).await;
    // "{api}" in a step stands for the relay's chat URL
    let mut scenario: Value =
        serde_json::from_str(&scenario.to_string().replace("{api}", &relay.api)).expect("JSON");
    scenario["api"] = json!(relay.api);
    scenario["body"] = json!({"model": "mock-model"});
    let mut outs = Vec::new();
    for version in AI_VERSIONS {
        outs.push((version, drive(version, &scenario).await));
    }
    Some(outs)
}

fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect()
}

fn tool_part(message: &Value) -> &Value {
    message["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .find(|p| p["type"] == "tool-get_weather")
        .unwrap_or_else(|| panic!("no tool part in {message}"))
}

#[tokio::test]
async fn a_text_reply_reaches_the_chat_of_both_client_versions() {
    let scenario = json!({"chatId": "c1", "steps": [{"send": "hello"}]});
    let Some(outs) = each_version(scenario).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        assert_eq!(step["status"], "ready", "{version}: {step}");
        assert_eq!(step["error"], Value::Null, "{version}: {step}");
        let messages = step["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2, "{version}: {step}");
        assert_eq!(text_of(&messages[0]), "hello", "{version}");
        assert_eq!(messages[1]["role"], "assistant", "{version}");
        assert_eq!(
            text_of(&messages[1]),
            "Hello from the mock model.",
            "{version}"
        );
        let responses = step["responses"].as_array().expect("responses");
        assert_eq!(responses.len(), 1, "{version}: {step}");
        let r = &responses[0];
        assert_eq!(r["method"], "POST", "{version}");
        assert_eq!(r["status"], 200, "{version}");
        assert_eq!(
            r["headers"]["x-vercel-ai-ui-message-stream"], "v1",
            "{version}"
        );
        assert!(
            r["body"]
                .as_str()
                .is_some_and(|b| b.ends_with("data: [DONE]\n\n")),
            "{version}: the recorded body is the whole stream: {r}"
        );
        assert_eq!(r["requestBody"]["trigger"], "submit-message", "{version}");
        assert_eq!(r["requestBody"]["id"], "c1", "{version}");
    }
}

#[tokio::test]
async fn a_stopped_send_ends_ready_with_the_exchange_recorded_as_aborted() {
    // (stopAfterMs is the same stop on a timer; the text trigger keeps this test exact under load)
    let steps = json!([{"send": "slow", "stopAfterText": "t2 "}, {"resume": true}]);
    let Some(outs) = each_version(json!({"steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        let stopped = &out["steps"][0];
        assert_eq!(stopped["status"], "ready", "{version}: {stopped}");
        assert_eq!(stopped.get("timeout"), None, "{version}: {stopped}");
        let r = &stopped["responses"][0];
        assert!(r["error"].is_string(), "{version}: not aborted: {r}");
        assert!(
            r["body"].as_str().is_some_and(|b| b.contains("text-delta")),
            "{version}: the body up to the stop is kept: {r}"
        );
        let assistant = &stopped["messages"][1];
        assert!(
            text_of(assistant).starts_with("t0 t1 t2 "),
            "{version}: {assistant}"
        );
        // the relay has nothing to resume: 204, and the chat stays ready
        let resumed = &out["steps"][1];
        assert_eq!(
            resumed["responses"][0]["status"], 204,
            "{version}: {resumed}"
        );
        assert_eq!(resumed["status"], "ready", "{version}: {resumed}");
    }
}

#[tokio::test]
async fn a_stalled_step_times_out_and_the_driver_goes_on() {
    // The stalled step alone has a short timeout (800 ms): the next one has the default, so a
    // loaded machine cannot time it out too (with 800 ms for every step, a whole CI run once
    // left the second step without its reply).
    let steps = json!([{"send": "stall", "timeoutMs": 800}, {"send": "hello"}]);
    let Some(outs) = each_version(json!({"steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        assert_eq!(out["steps"][0]["timeout"], true, "{version}: {out}");
        assert_eq!(out["steps"][1]["status"], "ready", "{version}: {out}");
        assert_eq!(
            text_of(&out["steps"][1]["messages"][3]),
            "Hello from the mock model.",
            "{version}"
        );
    }
}

#[tokio::test]
async fn a_thread_that_is_not_ui_messages_fails_validation() {
    // the relay has no thread route: a 404 with no messages is what validation must reject
    let steps = json!([{"loadThread": "{api}/threads/t1"}]);
    let Some(outs) = each_version(json!({"steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        let step = &out["steps"][0];
        assert_eq!(step["validation"]["ok"], false, "{version}: {step}");
        assert!(step["validation"]["error"].is_string(), "{version}");
        assert_eq!(step["responses"][0]["status"], 404, "{version}");
    }
}

#[tokio::test]
async fn an_approved_tool_call_runs_and_the_reply_continues_in_the_same_message() {
    let steps = json!([{"send": "use the tool"}, {"approve": true, "reason": "fine"}]);
    let Some(outs) = each_version(json!({"autoSendApprovals": true, "steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        let asked = &out["steps"][0];
        assert_eq!(asked["status"], "ready", "{version}: {asked}");
        let part = tool_part(&asked["messages"][1]);
        assert_eq!(part["state"], "approval-requested", "{version}: {part}");
        assert_eq!(part["input"], json!({"city": "Oslo"}), "{version}");

        let approved = &out["steps"][1];
        assert_eq!(approved["status"], "ready", "{version}: {approved}");
        assert_eq!(approved["approvalIds"].as_array().map(Vec::len), Some(1));
        let messages = approved["messages"].as_array().expect("messages");
        assert_eq!(
            messages.len(),
            2,
            "{version}: one assistant message: {approved}"
        );
        let part = tool_part(&messages[1]);
        assert_eq!(part["state"], "output-available", "{version}: {part}");
        assert_eq!(part["output"], json!({"city": "Oslo", "forecast": "sunny"}));
        assert_eq!(part["approval"]["approved"], true, "{version}");
        assert_eq!(
            text_of(&messages[1]),
            "The weather in Oslo is sunny.",
            "{version}"
        );
        // exactly one automatic re-post, naming the assistant message it continues
        let reposts = approved["responses"].as_array().expect("responses");
        assert_eq!(reposts.len(), 1, "{version}: {approved}");
        let body = &reposts[0]["requestBody"];
        assert_eq!(body["trigger"], "submit-message", "{version}");
        assert_eq!(body["messageId"], messages[1]["id"], "{version}");
    }
}

#[tokio::test]
async fn the_ai_sdk_server_runs_a_tampered_input_which_is_the_attack_to_refuse() {
    let steps = json!([
        {"send": "use the tool"},
        {"tamperInput": {"city": "Bergen"}},
        {"approve": true},
    ]);
    let Some(outs) = each_version(json!({"autoSendApprovals": true, "steps": steps})).await else {
        return;
    };
    for (version, out) in outs {
        let tampered = &out["steps"][1];
        assert_eq!(tampered["responses"], json!([]), "{version}: no request");
        let approved = &out["steps"][2];
        let sent = &approved["responses"][0]["requestBody"]["messages"][1];
        assert_eq!(
            tool_part(sent)["input"],
            json!({"city": "Bergen"}),
            "{version}"
        );
        let part = tool_part(&approved["messages"][1]);
        assert_eq!(
            part["output"],
            json!({"city": "Bergen", "forecast": "sunny"}),
            "{version}: the AI SDK's own server trusts the client's copy"
        );
    }
}
