//! Each user's own MCP servers through the routes: CRUD per principal, another principal's
//! server is a 404, bad input is a 4xx JSON, the outbound policy refuses SSRF targets, and no
//! answer ever carries a credential.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::Principal;
use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::store::SqliteStore;
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp, UserMcpStore};
use serde_json::{Value, json};
use support::{FakeHost, Reply, config, send, service};

const CANARY: &str = "canary-7f3a9c1e-do-not-leak";
const BASE: &str = "/chat/api/mcp/servers";

fn keyring() -> Keyring {
    Keyring::new(SealingKey::generate("k1").unwrap())
}

fn svc_with(user_mcp: UserMcp) -> lmchatkit::ChatService {
    service(config(FakeHost::default()).user_mcp(user_mcp))
}

fn svc() -> lmchatkit::ChatService {
    svc_with(UserMcp::new(
        MemoryUserMcpStore::default(),
        keyring(),
        OutboundPolicy::new(),
    ))
}

fn req(method: &str, uri: &str, who: Option<&str>, body: Option<&Value>) -> Request<Full<Bytes>> {
    let mut b = Request::builder().method(method).uri(uri);
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    let bytes = body
        .map(|v| serde_json::to_vec(v).unwrap())
        .unwrap_or_default();
    let mut r = b.body(Full::new(Bytes::from(bytes))).unwrap();
    if let Some(who) = who {
        r.extensions_mut().insert(Principal::new(who));
    }
    r
}

async fn call(
    svc: &lmchatkit::ChatService,
    method: &str,
    uri: &str,
    who: &str,
    body: Option<Value>,
) -> Reply {
    send(svc, req(method, uri, Some(who), body.as_ref())).await
}

fn docs_body() -> Value {
    json!({"name": "Docs", "slug": "docs", "url": "https://mcp.example.com/mcp",
           "headers": {"Authorization": format!("Bearer {CANARY}"), "X-Api-Key": CANARY}})
}

#[tokio::test]
async fn a_user_creates_lists_reads_changes_and_deletes_their_server() {
    let svc = svc();
    let r = call(&svc, "POST", BASE, "alice", Some(docs_body())).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(created["slug"], "docs");
    assert_eq!(created["name"], "Docs");
    assert_eq!(created["transport"], "streamable_http");
    assert_eq!(created["credentials"], "set");
    assert_eq!(created["enabled"], true);
    assert_eq!(created["tools"], json!([]));
    assert!(created.get("headers").is_none());

    let list = call(&svc, "GET", BASE, "alice", None).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.json(), json!([created]));
    let one = call(&svc, "GET", &format!("{BASE}/docs"), "alice", None).await;
    assert_eq!(one.json(), created);

    let r = call(
        &svc,
        "PATCH",
        &format!("{BASE}/docs"),
        "alice",
        Some(json!({"name": "My docs", "enabled": false, "headers": {}})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["name"], "My docs");
    assert_eq!(r.json()["enabled"], false);
    assert_eq!(
        r.json()["credentials"],
        "not set",
        "headers: {{}} removes them"
    );
    assert_eq!(r.json()["created_at"], created["created_at"]);

    let r = call(&svc, "DELETE", &format!("{BASE}/docs"), "alice", None).await;
    assert_eq!(r.status, 204);
    let r = call(&svc, "GET", &format!("{BASE}/docs"), "alice", None).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        call(&svc, "GET", BASE, "alice", None).await.json(),
        json!([])
    );
}

#[tokio::test]
async fn another_principals_server_is_a_404_for_every_route() {
    let svc = svc();
    assert_eq!(
        call(&svc, "POST", BASE, "alice", Some(docs_body()))
            .await
            .status,
        201
    );
    assert_eq!(call(&svc, "GET", BASE, "bob", None).await.json(), json!([]));
    let one = format!("{BASE}/docs");
    for (method, uri, body) in [
        ("GET", one.clone(), None),
        ("PATCH", one.clone(), Some(json!({"name": "mine now"}))),
        ("DELETE", one.clone(), None),
        ("POST", format!("{one}/refresh"), None),
        ("POST", format!("{one}/accept"), Some(json!({"tools": []}))),
        ("POST", format!("{one}/oauth"), None),
    ] {
        let r = call(&svc, method, &uri, "bob", body).await;
        assert_eq!(r.status, 404, "{method} {uri}: {}", r.text());
        assert_eq!(r.error(), "no MCP server \"docs\"");
    }
    // Bob may use the same slug; alice's server is unchanged.
    assert_eq!(
        call(&svc, "POST", BASE, "bob", Some(docs_body()))
            .await
            .status,
        201
    );
    let alices = call(&svc, "GET", &one, "alice", None).await.json();
    assert_eq!(alices["name"], "Docs");
}

#[tokio::test]
async fn the_anonymous_user_and_a_service_without_the_feature_get_no_registry() {
    let svc = svc();
    let r = send(&svc, req("GET", BASE, None, None)).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.error(), "your own MCP servers need a signed-in user");
    let r = send(&svc, req("POST", &format!("{BASE}/docs/oauth"), None, None)).await;
    assert_eq!(r.status, 401, "starting a sign-in needs a user");
    let off = service(config(FakeHost::default()));
    for (m, uri) in [
        ("GET", BASE.to_string()),
        ("POST", BASE.into()),
        ("GET", format!("{BASE}/docs")),
        ("POST", format!("{BASE}/docs/oauth")),
        ("GET", "/chat/api/mcp/oauth/callback?code=c&state=s".into()),
    ] {
        let r = call(&off, m, &uri, "alice", Some(json!({}))).await;
        assert_eq!(
            (r.status.as_u16(), r.error()),
            (404, "not found".into()),
            "{m} {uri}"
        );
    }
}

#[tokio::test]
async fn config_offers_the_feature_to_signed_in_users_of_a_service_that_has_it_only() {
    let user_mcp = |svc: &lmchatkit::ChatService, who: Option<&str>| {
        let r = req("GET", "/chat/api/config", who, None);
        let svc = svc.clone();
        async move { send(&svc, r).await.json()["user_mcp"].clone() }
    };
    let svc = svc();
    assert_eq!(user_mcp(&svc, Some("alice")).await, json!(true));
    assert_eq!(
        user_mcp(&svc, None).await,
        json!(false),
        "anonymous: 401 there"
    );
    let off = service(config(FakeHost::default()));
    assert_eq!(user_mcp(&off, Some("alice")).await, json!(false));
}

#[tokio::test]
async fn bad_slugs_urls_headers_and_duplicates_are_4xx_json_naming_the_problem() {
    let svc = svc();
    let create = |body: Value| {
        let svc = svc.clone();
        async move { call(&svc, "POST", BASE, "alice", Some(body)).await }
    };
    let url = "https://mcp.example.com/mcp";
    for (body, status, needle) in [
        (json!({"slug": "Bad Slug", "url": url}), 400, "invalid slug"),
        (json!({"slug": "", "url": url}), 400, "invalid slug"),
        (
            json!({"slug": "ok", "url": "not a url"}),
            400,
            "not an http(s) URL",
        ),
        (
            json!({"slug": "ok", "url": "ftp://x.example/"}),
            400,
            "not an http(s) URL",
        ),
        (
            json!({"slug": "ok", "url": url, "transport": "stdio"}),
            400,
            "stdio",
        ),
        (
            json!({"slug": "ok", "url": url, "command": "sh"}),
            400,
            "command",
        ),
        (
            json!({"slug": "ok", "url": url, "headers": {"Mcp-Session-Id": CANARY}}),
            400,
            "set by the transport",
        ),
        (
            json!({"slug": "ok", "url": url, "headers": {"X-Key": format!("a\n{CANARY}")}}),
            400,
            "X-Key",
        ),
        (
            json!({"slug": "ok", "url": url, "name": "x".repeat(101)}),
            400,
            "name must be",
        ),
        (json!({"url": url}), 400, "slug"),
    ] {
        let r = create(body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.text());
        assert!(r.error().contains(needle), "{body}: {}", r.error());
        assert!(!r.text().contains(CANARY), "{}", r.text());
    }
    assert_eq!(create(docs_body()).await.status, 201);
    let r = create(docs_body()).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.error(), "a server with the slug \"docs\" exists already");
    let r = call(
        &svc,
        "PATCH",
        &format!("{BASE}/docs"),
        "alice",
        Some(json!({"slug": "other"})),
    )
    .await;
    assert_eq!(r.status, 400, "the slug cannot change: {}", r.text());
    let r = call(
        &svc,
        "PATCH",
        &format!("{BASE}/docs"),
        "alice",
        Some(json!({"url": "http://mcp.example.com/"})),
    )
    .await;
    assert_eq!(r.status, 400);
    let r = call(&svc, "POST", &format!("{BASE}/docs/explode"), "alice", None).await;
    assert_eq!(r.status, 404);
    let r = send(&svc, req("POST", BASE, Some("alice"), None)).await;
    assert!(r.status.is_client_error(), "{}", r.status);
}

#[tokio::test]
async fn ssrf_targets_are_refused_unless_the_operator_allows_the_host() {
    let svc = svc();
    for (url, needle) in [
        ("https://127.0.0.1/mcp", "loopback"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::ffff:127.0.0.1]/mcp", "loopback"),
        ("https://10.0.0.5/mcp", "private"),
        ("https://0x7f000001/mcp", "loopback"),
        ("http://mcp.example.com/mcp", "must use https"),
        ("http://127.0.0.1:8080/mcp", "must use https"),
        (
            "https://user:pw@mcp.example.com/mcp",
            "credentials in headers",
        ),
    ] {
        let r = call(
            &svc,
            "POST",
            BASE,
            "alice",
            Some(json!({"slug": "s", "url": url})),
        )
        .await;
        assert_eq!(r.status, 400, "{url}: {}", r.text());
        assert!(
            r.error().starts_with("url refused: "),
            "{url}: {}",
            r.error()
        );
        assert!(r.error().contains(needle), "{url}: {}", r.error());
    }
    // A name that resolves to loopback passes the URL check, and is refused where the
    // connection is made.
    let r = call(
        &svc,
        "POST",
        BASE,
        "alice",
        Some(json!({"slug": "local", "url": "https://localhost:9/mcp"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = call(
        &svc,
        "POST",
        &format!("{BASE}/local/refresh"),
        "alice",
        None,
    )
    .await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("loopback"), "{}", r.error());

    // The operator's allowed host may use http and a loopback address.
    let allowed = svc_with(UserMcp::new(
        MemoryUserMcpStore::default(),
        keyring(),
        OutboundPolicy::new().with_allowed_host("127.0.0.1"),
    ));
    let r = call(
        &allowed,
        "POST",
        BASE,
        "alice",
        Some(json!({"slug": "s", "url": "http://127.0.0.1:9/mcp"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = call(
        &allowed,
        "POST",
        BASE,
        "alice",
        Some(json!({"slug": "t", "url": "https://169.254.169.254/"})),
    )
    .await;
    assert_eq!(r.status, 400);
}

/// Creates with a canary credential, then reads every route's answer: the canary, the sealed
/// value and the header names' values never appear.
#[tokio::test]
async fn no_route_answers_with_a_credential() {
    let store = std::sync::Arc::new(MemoryUserMcpStore::default());
    let svc = svc_with(UserMcp::new_arc(
        store.clone(),
        keyring(),
        OutboundPolicy::new(),
    ));
    let one = format!("{BASE}/docs");
    let mut bodies = vec![call(&svc, "POST", BASE, "alice", Some(docs_body())).await];
    let sealed = store
        .get(&Principal::new("alice"), "docs")
        .await
        .unwrap()
        .unwrap()
        .credentials
        .unwrap();
    assert!(!sealed.contains(CANARY), "sealed at rest");
    bodies.push(call(&svc, "GET", BASE, "alice", None).await);
    bodies.push(call(&svc, "GET", &one, "alice", None).await);
    bodies.push(call(&svc, "PATCH", &one, "alice", Some(json!({"name": "n"}))).await);
    bodies.push(
        call(
            &svc,
            "PATCH",
            &one,
            "alice",
            Some(json!({"headers": {"Authorization": format!("Bearer {CANARY}")}})),
        )
        .await,
    );
    bodies.push(call(&svc, "POST", &format!("{one}/refresh"), "alice", None).await);
    bodies.push(
        call(
            &svc,
            "POST",
            &format!("{one}/accept"),
            "alice",
            Some(json!({"tools": []})),
        )
        .await,
    );
    bodies.push(call(&svc, "GET", &one, "bob", None).await);
    bodies.push(call(&svc, "POST", BASE, "alice", Some(docs_body())).await);
    bodies.push(call(&svc, "DELETE", &one, "alice", None).await);
    for r in &bodies {
        let text = r.text();
        assert!(!text.contains(CANARY), "{}: {text}", r.status);
        assert!(!text.contains(&sealed), "{}: {text}", r.status);
        assert!(!text.contains("lmck1."), "{}: {text}", r.status);
    }
    assert_eq!(bodies[1].json()[0]["credentials"], "set");
}

#[tokio::test]
async fn the_registry_lives_in_the_history_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let store = std::sync::Arc::new(SqliteStore::open(&path).unwrap());
    let svc = svc_with(UserMcp::new_arc(store, keyring(), OutboundPolicy::new()));
    assert_eq!(
        call(&svc, "POST", BASE, "alice", Some(docs_body()))
            .await
            .status,
        201
    );
    drop(svc);
    let raw = std::fs::read(&path).unwrap();
    let wal = std::fs::read(dir.path().join("history.db-wal")).unwrap_or_default();
    let needle = CANARY.as_bytes();
    for bytes in [&raw, &wal] {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "plain credential on disk"
        );
    }
    let reopened = SqliteStore::open(&path).unwrap();
    let rec = reopened
        .get(&Principal::new("alice"), "docs")
        .await
        .unwrap()
        .unwrap();
    assert!(rec.credentials.unwrap().starts_with("lmck1.k1."));
}

/// A store holding alice's server `docs` with the accepted tool `rm` (stored approval
/// `always`), and a service over it with `policy`.
async fn with_accepted_rm(policy: lmchatkit::ApprovalPolicy) -> lmchatkit::ChatService {
    use lmchatkit::protocol::{AcceptedTool, UserToolApproval};
    use lmchatkit::user_mcp::{UserMcpRecord, snapshot};
    let store = std::sync::Arc::new(MemoryUserMcpStore::default());
    let mut rec = UserMcpRecord::new("docs", "Docs", "https://localhost:9/mcp", 0);
    let reviewed = snapshot::reviewed("rm", "Removes", json!({"type": "object"}), None, None);
    rec.tools = vec![AcceptedTool::from_review(
        &reviewed,
        true,
        UserToolApproval::Always,
    )];
    store.create(&Principal::new("alice"), rec).await.unwrap();
    let um = UserMcp::new_arc(store, keyring(), OutboundPolicy::new());
    service(
        config(FakeHost::default())
            .user_mcp(um)
            .approval_policy(policy),
    )
}

#[tokio::test]
async fn the_operators_deny_beats_a_users_stored_always() {
    use lmchatkit::protocol::ToolDecision;
    let call_rm = json!({"name": "docs__rm", "arguments": {}});
    let svc =
        with_accepted_rm(lmchatkit::ApprovalPolicy::new(ToolDecision::Ask).deny("*__rm")).await;
    let r = call(
        &svc,
        "POST",
        "/chat/api/tools/call",
        "alice",
        Some(call_rm.clone()),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.error().contains("blocked by the operator's policy"),
        "{}",
        r.error()
    );
    // Without the deny, the call passes the policy and goes out (to a refused address here).
    let svc = with_accepted_rm(lmchatkit::ApprovalPolicy::new(ToolDecision::Ask)).await;
    let r = call(
        &svc,
        "POST",
        "/chat/api/tools/call",
        "alice",
        Some(call_rm.clone()),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["is_error"], true);
    assert!(
        r.json()["content"].as_str().unwrap().contains("loopback"),
        "{}",
        r.text()
    );
    // Bob has no such tool.
    let r = call(&svc, "POST", "/chat/api/tools/call", "bob", Some(call_rm)).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn presets_are_seeded_once_per_user_disabled_and_without_tools() {
    let store = std::sync::Arc::new(MemoryUserMcpStore::default());
    let presets = [
        lmchatkit::user_mcp::UserMcpPreset::new("docs", "https://mcp.example.com/mcp")
            .with_name("Docs search"),
        lmchatkit::user_mcp::UserMcpPreset::new("wiki", "https://wiki.example.com/mcp"),
    ];
    let um = || {
        UserMcp::new_arc(store.clone(), keyring(), OutboundPolicy::new())
            .with_presets(presets.clone())
            .unwrap()
    };
    // Bob had a server called "wiki" of his own before the operator offered one.
    let own = json!({"slug": "wiki", "url": "https://bob.example.com/mcp"});
    let plain = svc_with(UserMcp::new_arc(
        store.clone(),
        keyring(),
        OutboundPolicy::new(),
    ));
    assert_eq!(
        call(&plain, "POST", BASE, "bob", Some(own)).await.status,
        201
    );

    let svc = svc_with(um());
    let listed = call(&svc, "GET", BASE, "alice", None).await.json();
    let presets_seen: Vec<(String, String, bool, bool, usize)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["slug"].as_str().unwrap().to_owned(),
                s["name"].as_str().unwrap().to_owned(),
                s["enabled"].as_bool().unwrap(),
                s["preset"].as_bool().unwrap_or(false),
                s["tools"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        presets_seen,
        [
            ("docs".into(), "Docs search".into(), false, true, 0),
            ("wiki".into(), "wiki".into(), false, true, 0),
        ]
    );

    // Seeding again (this service, a second instance, racing requests) adds nothing.
    let second = svc_with(um());
    let docs = format!("{BASE}/docs");
    let (a, b) = tokio::join!(
        call(&second, "GET", BASE, "alice", None),
        call(&svc, "GET", &docs, "alice", None)
    );
    assert_eq!((a.status.as_u16(), b.status.as_u16()), (200, 200));
    assert_eq!(a.json().as_array().unwrap().len(), 2);
    let stored = store.list(&Principal::new("alice")).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|r| r.revision == 1 && !r.enabled));

    // Bob keeps his own "wiki" and gets the other preset.
    let bobs = call(&second, "GET", BASE, "bob", None).await.json();
    let wiki = bobs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slug"] == "wiki")
        .unwrap();
    assert_eq!(wiki["url"], "https://bob.example.com/mcp");
    assert!(wiki.get("preset").is_none(), "{wiki}");
    assert_eq!(bobs.as_array().unwrap().len(), 2);
    let r = call(&second, "DELETE", &format!("{BASE}/wiki"), "bob", None).await;
    assert_eq!(r.status, 204, "his own server is his to delete");

    // A preset is the user's to enable and name, not to delete or repoint.
    let r = call(
        &svc,
        "PATCH",
        &docs,
        "alice",
        Some(json!({"enabled": true, "name": "D"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = call(
        &svc,
        "PATCH",
        &docs,
        "alice",
        Some(json!({"url": "https://evil.example.com/mcp"})),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"].as_str().unwrap().contains("preset"),
        "{}",
        r.text()
    );
    let r = call(&svc, "DELETE", &docs, "alice", None).await;
    assert_eq!(r.status, 409);
    assert!(
        r.json()["error"].as_str().unwrap().contains("disable it"),
        "{}",
        r.text()
    );
    let kept = store
        .get(&Principal::new("alice"), "docs")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.url.as_str(), kept.enabled),
        ("https://mcp.example.com/mcp", true)
    );
}

#[tokio::test]
async fn presets_pass_the_outbound_policy() {
    let um = UserMcp::new(
        MemoryUserMcpStore::default(),
        keyring(),
        OutboundPolicy::new(),
    );
    for (slug, url) in [
        ("meta", "https://169.254.169.254/latest"),
        ("local", "https://127.0.0.1/mcp"),
        ("plain", "http://mcp.example.com/mcp"),
        ("Bad Slug", "https://mcp.example.com/mcp"),
    ] {
        let err = um
            .clone()
            .with_presets([lmchatkit::user_mcp::UserMcpPreset::new(slug, url)])
            .unwrap_err();
        assert_eq!(err.slug, slug, "{err}");
    }
    let twice = [
        lmchatkit::user_mcp::UserMcpPreset::new("a", "https://a.example.com/"),
        lmchatkit::user_mcp::UserMcpPreset::new("a", "https://b.example.com/"),
    ];
    assert!(um.with_presets(twice).unwrap_err().reason.contains("twice"));
}
