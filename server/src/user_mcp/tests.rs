//! Validation, sealing and `Debug` of the user MCP parts.

use std::collections::BTreeMap;

use super::*;
use crate::secrets::sealing::SealingKey;

fn um() -> UserMcp {
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    UserMcp::new(
        MemoryUserMcpStore::default(),
        keyring,
        OutboundPolicy::new(),
    )
}

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn slugs_follow_the_pattern() {
    for ok in ["a", "0", "docs", "my_tools-2", &"a".repeat(32)] {
        assert!(check_slug(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "-a",
        "_a",
        "A",
        "a b",
        "a/b",
        "é",
        &"a".repeat(33),
        "a.b",
    ] {
        let e = check_slug(bad).unwrap_err();
        assert!(matches!(e, Failure::Invalid(_)), "{bad}");
    }
}

#[test]
fn headers_are_checked_without_naming_their_values() {
    assert!(
        check_headers(&headers(&[
            ("Authorization", "Bearer x"),
            ("X-Api-Key", "k")
        ]))
        .is_ok()
    );
    for (name, value) in [
        ("Mcp-Session-Id", "s"),
        ("accept", "x"),
        ("Host", "evil"),
        ("mcp-param-x", "1"),
        ("bad name", "v"),
        ("X-Key", "line\nbreak-canary"),
        ("X-Key", "  "),
    ] {
        let e = check_headers(&headers(&[(name, value)])).unwrap_err();
        assert!(matches!(e, Failure::Invalid(_)), "{name}");
        assert!(!e.to_string().contains("canary"), "{e}");
    }
    let dup = headers(&[("X-Key", "a"), ("x-key", "b")]);
    assert!(check_headers(&dup).is_err());
    let many: BTreeMap<String, String> = (0..=MAX_HEADERS)
        .map(|i| (format!("x-{i}"), "v".into()))
        .collect();
    assert!(check_headers(&many).is_err());
    let long = headers(&[("x", &"v".repeat(MAX_HEADER_BYTES))]);
    assert!(check_headers(&long).is_err());
}

#[test]
fn sealed_headers_open_only_for_their_principal_and_slug() {
    let um = um();
    let alice = Principal::new("alice");
    let h = headers(&[("Authorization", "Bearer canary-s3cret")]);
    let sealed = um.seal_headers(&alice, "docs", &h).unwrap().unwrap();
    assert!(!sealed.contains("canary"));
    let mut rec = UserMcpRecord::new("docs", "Docs", "https://d.example/", 0);
    rec.credentials = Some(sealed.clone());
    assert_eq!(um.open_headers(&alice, &rec).unwrap(), h);
    assert!(
        um.open_headers(&Principal::new("bob"), &rec).is_err(),
        "another principal"
    );
    rec.slug = "other".into();
    assert!(um.open_headers(&alice, &rec).is_err(), "another server");
    // "alice/x" + "docs" and "alice" + "x/docs" cannot meet: slugs have no '/'.
    assert!(check_slug("x/docs").is_err());
    assert_eq!(
        um.seal_headers(&alice, "docs", &BTreeMap::new()).unwrap(),
        None
    );
}

#[test]
fn debug_of_a_record_and_of_the_parts_never_shows_credentials() {
    let um = um();
    let alice = Principal::new("alice");
    let sealed = um
        .seal_headers(&alice, "docs", &headers(&[("X-Api-Key", "canary")]))
        .unwrap();
    let mut rec = UserMcpRecord::new("docs", "Docs", "https://u:pw@d.example/mcp?token=t", 0);
    rec.credentials = sealed.clone();
    let shown = format!("{rec:?} {um:?}");
    assert!(!shown.contains(sealed.as_deref().unwrap()), "{shown}");
    assert!(
        !shown.contains("pw") && !shown.contains("token=t"),
        "{shown}"
    );
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[test]
fn answers_say_whether_credentials_are_set_and_nothing_more() {
    let mut rec = UserMcpRecord::new("docs", "Docs", "https://d.example/", 0);
    assert_eq!(
        rec.to_wire().credentials,
        lmchatkit_protocol::CredentialsState::NotSet
    );
    rec.credentials = Some("lmck1.k1.abc".into());
    let wire = serde_json::to_string(&rec.to_wire()).unwrap();
    assert!(
        wire.contains(r#""credentials":"set""#) && !wire.contains("lmck1"),
        "{wire}"
    );
}
