use std::sync::Arc;

use async_trait::async_trait;
use lmchatkit_protocol::ToolDecision::{self, Allow, Ask, Deny};
use serde_json::{Value, json};

use super::policy::glob_matches;
use super::*;
use crate::access::Role;
use crate::host::{Principal, RequestContext};

fn scope(who: &str) -> Scope {
    Scope::model(RequestContext::new(Principal::new(who)))
}

fn decide_sync(p: &ApprovalPolicy, tool: &str) -> ToolDecision {
    p.decide(&scope("alice"), tool, &Value::Null)
}

#[test]
fn globs_match_whole_names_with_star_and_question_mark() {
    for (glob, name) in [
        ("server__*", "server__read"),
        ("server__*", "server__"),
        ("*__delete_*", "fs__delete_file"),
        ("*", ""),
        ("*", "anything"),
        ("a?c", "abc"),
        ("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaab"),
        ("exact", "exact"),
        ("ü?", "üß"),
    ] {
        assert!(glob_matches(glob, name), "{glob} should match {name}");
    }
    for (glob, name) in [
        ("server__*", "other__read"),
        ("server__*", "xserver__read"),
        ("exact", "exactly"),
        ("exact", "inexact"),
        ("a?c", "ac"),
        ("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaa"),
        ("", "x"),
        ("[ab]", "a"),
    ] {
        assert!(!glob_matches(glob, name), "{glob} should not match {name}");
    }
}

#[test]
fn a_deny_beats_an_ask_beats_an_allow_whatever_the_order() {
    let forwards = ApprovalPolicy::new(Allow)
        .allow("fs__*")
        .ask("fs__write*")
        .deny("*__delete*");
    let backwards = ApprovalPolicy::new(Allow)
        .deny("*__delete*")
        .ask("fs__write*")
        .allow("fs__*");
    for p in [forwards, backwards] {
        assert_eq!(decide_sync(&p, "fs__read"), Allow);
        assert_eq!(decide_sync(&p, "fs__write_file"), Ask);
        assert_eq!(decide_sync(&p, "fs__delete_file"), Deny);
    }
}

#[test]
fn the_default_applies_only_when_no_rule_matches() {
    let p = ApprovalPolicy::new(Deny).allow("demo__*");
    assert_eq!(decide_sync(&p, "demo__echo"), Allow);
    assert_eq!(decide_sync(&p, "web__fetch"), Deny);
    assert_eq!(decide_sync(&ApprovalPolicy::default(), "x"), Ask);
    assert_eq!(ApprovalPolicy::default().default_decision(), Ask);
}

#[test]
fn the_check_joins_the_rules_by_precedence() {
    let ask_big = |_: &Scope, _: &str, input: &Value| {
        input["size"]
            .as_u64()
            .map(|n| if n > 10 { Ask } else { Allow })
    };
    let p = ApprovalPolicy::new(Deny)
        .allow("a")
        .deny("b")
        .with_check(ask_big);
    let s = scope("alice");
    // The check raises an allow rule to ask, but never lowers a deny rule.
    assert_eq!(p.decide(&s, "a", &json!({"size": 99})), Ask);
    assert_eq!(p.decide(&s, "a", &json!({"size": 1})), Allow);
    assert_eq!(p.decide(&s, "b", &json!({"size": 1})), Deny);
    // Without a matching rule the check's answer wins over the default; no opinion: default.
    assert_eq!(p.decide(&s, "c", &json!({"size": 1})), Allow);
    assert_eq!(p.decide(&s, "c", &json!({})), Deny);
}

#[test]
fn the_check_sees_the_scope() {
    let p = ApprovalPolicy::new(Allow).with_check(|scope: &Scope, _: &str, _: &Value| {
        (scope.principal().id() == "guest").then_some(Deny)
    });
    assert_eq!(p.decide(&scope("guest"), "x", &Value::Null), Deny);
    assert_eq!(p.decide(&scope("alice"), "x", &Value::Null), Allow);
    assert_eq!(scope("x").role(), Role::Model);
}

#[test]
fn the_seed_mappings_behave_as_in_go() {
    // `RequireApprovalFor: []string{"fs__write"}`: those ask, everything else runs.
    let list = ["fs__write"]
        .iter()
        .fold(ApprovalPolicy::new(Allow), |p, t| p.ask(*t));
    assert_eq!(decide_sync(&list, "fs__write"), Ask);
    assert_eq!(decide_sync(&list, "fs__read"), Allow);
    // `ApprovalPolicy: func(name, input) bool` (true = needs approval).
    let f = |name: &str, _: &Value| name.contains("write");
    let func = ApprovalPolicy::new(Allow)
        .with_check(move |_, t, i| Some(if f(t, i) { Ask } else { Allow }));
    assert_eq!(decide_sync(&func, "fs__write"), Ask);
    assert_eq!(decide_sync(&func, "fs__read"), Allow);
}

#[test]
fn debug_shows_rules_but_not_the_closure() {
    let p = ApprovalPolicy::new(Ask)
        .deny("x__*")
        .with_check(|_, _, _| None);
    let s = format!("{p:?}");
    assert!(s.contains("x__*") && s.contains("Deny") && s.contains("check: true"));
    assert_eq!(p.rules().collect::<Vec<_>>(), [("x__*", Deny)]);
}

fn approvals(policy: ApprovalPolicy) -> Approvals {
    Approvals::new(policy, None)
}

#[tokio::test]
async fn a_stored_always_turns_ask_into_allow() {
    let a = approvals(ApprovalPolicy::new(Ask));
    let s = scope("alice");
    assert_eq!(decide(&a, &s, "demo__echo", &Value::Null).await, Ask);
    a.store
        .set_always(&s.principal(), vec!["demo__echo".into()])
        .await
        .unwrap();
    assert_eq!(decide(&a, &s, "demo__echo", &Value::Null).await, Allow);
    assert_eq!(decide(&a, &s, "demo__other", &Value::Null).await, Ask);
    // Only for that principal.
    assert_eq!(
        decide(&a, &scope("bob"), "demo__echo", &Value::Null).await,
        Ask
    );
}

#[tokio::test]
async fn a_deny_rule_beats_a_stored_always() {
    let a = approvals(ApprovalPolicy::new(Ask).deny("*__rm"));
    let s = scope("alice");
    a.store
        .set_always(&s.principal(), vec!["fs__rm".into()])
        .await
        .unwrap();
    assert_eq!(decide(&a, &s, "fs__rm", &Value::Null).await, Deny);
    assert!(
        check_not_denied(&a, &s, "fs__rm", &Value::Null)
            .await
            .is_err()
    );
    assert!(
        check_not_denied(&a, &s, "fs__ls", &Value::Null)
            .await
            .is_ok()
    );
}

struct Broken;

#[async_trait]
impl ApprovalStore for Broken {
    async fn always(&self, _: &Principal) -> Result<Vec<String>, ApprovalStoreError> {
        Err(ApprovalStoreError::Storage("disk on fire".into()))
    }
    async fn set_always(&self, _: &Principal, _: Vec<String>) -> Result<(), ApprovalStoreError> {
        Err(ApprovalStoreError::Storage("disk on fire".into()))
    }
}

#[tokio::test]
async fn a_failing_store_asks_and_leaves_allow_and_deny_alone() {
    let a = Approvals::new(
        ApprovalPolicy::new(Ask).allow("ok").deny("no"),
        Some(Arc::new(Broken)),
    );
    let s = scope("alice");
    assert_eq!(decide(&a, &s, "other", &Value::Null).await, Ask);
    assert_eq!(decide(&a, &s, "ok", &Value::Null).await, Allow);
    assert_eq!(decide(&a, &s, "no", &Value::Null).await, Deny);
}

#[test]
fn a_put_list_is_trimmed_deduplicated_and_capped() {
    let got = clean_list(vec![
        " a ".into(),
        "".into(),
        "b".into(),
        "a".into(),
        "  ".into(),
    ])
    .unwrap();
    assert_eq!(got, ["a", "b"]);
    let many: Vec<String> = (0..=MAX_ALWAYS).map(|i| format!("t{i}")).collect();
    assert!(clean_list(many.clone()).is_err());
    assert_eq!(
        clean_list(many[..MAX_ALWAYS].to_vec()).unwrap().len(),
        MAX_ALWAYS
    );
    // Repeats do not count towards the cap.
    assert_eq!(clean_list(vec!["x".into(); 5000]).unwrap(), ["x"]);
    assert!(clean_list(vec!["x".repeat(MAX_TOOL_NAME_CHARS + 1)]).is_err());
    assert!(clean_list(vec!["x".repeat(MAX_TOOL_NAME_CHARS)]).is_ok());
    assert!(clean_list(vec!["a\nb".into()]).is_err());
}
