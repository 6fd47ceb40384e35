//! The behaviour every [`UserMcpStore`] must show, for store authors' tests (feature
//! `test-support`): scoping by principal, unique slugs, checked-and-set updates, and a record
//! that reads back as written (sealed credentials, accepted tools, the pending review).

use lmchatkit_protocol::{AcceptedTool, ReviewedTool, UserToolApproval};
use serde_json::json;

use crate::host::Principal;
use crate::store::{UserMcpRecord, UserMcpStore, UserMcpStoreError};

fn record(slug: &str) -> UserMcpRecord {
    UserMcpRecord::new(
        slug,
        slug.to_uppercase(),
        format!("https://{slug}.example/mcp"),
        10,
    )
}

/// Runs the suite against `store`, which must start empty. Panics on the first failure.
pub async fn run(store: &dyn UserMcpStore) {
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    assert!(store.list(&alice).await.unwrap().is_empty(), "starts empty");

    // Create and read back, every field.
    let mut docs = record("docs");
    docs.credentials = Some("lmck1.k1.sealed".into());
    docs.enabled = false;
    let reviewed = ReviewedTool::new(
        "search",
        "Searches",
        json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        "sha256:1",
        UserToolApproval::Always,
    );
    let mut accepted = AcceptedTool::from_review(&reviewed, true, UserToolApproval::Never);
    accepted.stale = true;
    docs.tools = vec![accepted];
    docs.pending = vec![reviewed];
    docs.oauth_status = lmchatkit_protocol::OAuthStatus::SignedIn;
    docs.oauth = Some("lmck1.k1.grant".into());
    docs.oauth_pending = Some("lmck1.k1.pending".into());
    store.create(&alice, docs.clone()).await.unwrap();
    let got = store.get(&alice, "docs").await.unwrap().expect("created");
    assert_eq!(got.revision, 1, "a new record is revision 1");
    assert_eq!(
        UserMcpRecord {
            revision: 0,
            ..got.clone()
        },
        docs,
        "reads back as written"
    );

    // Scoped by principal: bob sees nothing of alice's and may use the same slug.
    assert!(store.get(&bob, "docs").await.unwrap().is_none());
    assert!(store.list(&bob).await.unwrap().is_empty());
    assert!(!store.delete(&bob, "docs").await.unwrap());
    let mut bobs = got.clone();
    bobs.name = "Bob's".into();
    assert!(
        !store.update(&bob, bobs).await.unwrap(),
        "bob cannot update alice's server"
    );
    store.create(&bob, record("docs")).await.unwrap();
    assert_eq!(
        store.get(&alice, "docs").await.unwrap().unwrap().name,
        "DOCS"
    );

    // Unique slugs per principal.
    assert_eq!(
        store.create(&alice, record("docs")).await,
        Err(UserMcpStoreError::Duplicate("docs".into()))
    );

    // Listed by slug.
    store.create(&alice, record("b-tools")).await.unwrap();
    store.create(&alice, record("zeta")).await.unwrap();
    let slugs: Vec<String> = store
        .list(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.slug)
        .collect();
    assert_eq!(slugs, ["b-tools", "docs", "zeta"]);

    // Checked-and-set updates.
    let mut first = store.get(&alice, "docs").await.unwrap().unwrap();
    let mut second = first.clone();
    first.name = "First".into();
    first.credentials = None;
    first.oauth = None;
    first.oauth_pending = None;
    first.oauth_status = lmchatkit_protocol::OAuthStatus::SignInRequired;
    first.updated_at = 20;
    assert!(store.update(&alice, first).await.unwrap());
    let now = store.get(&alice, "docs").await.unwrap().unwrap();
    assert_eq!(
        (now.name.as_str(), now.revision, now.updated_at),
        ("First", 2, 20)
    );
    assert_eq!(now.credentials, None, "credentials can be removed");
    assert_eq!(
        (
            now.oauth.as_deref(),
            now.oauth_pending.as_deref(),
            now.oauth_status
        ),
        (None, None, lmchatkit_protocol::OAuthStatus::SignInRequired),
        "a grant can be removed"
    );
    assert_eq!(now.created_at, 10, "created_at stays");
    second.name = "Second".into();
    assert_eq!(
        store.update(&alice, second).await,
        Err(UserMcpStoreError::Conflict("docs".into())),
        "a write from a stale read is refused"
    );
    assert_eq!(
        store.get(&alice, "docs").await.unwrap().unwrap().name,
        "First"
    );
    assert!(
        !store.update(&alice, record("ghost")).await.unwrap(),
        "no such server"
    );

    // Delete.
    assert!(store.delete(&alice, "docs").await.unwrap());
    assert!(!store.delete(&alice, "docs").await.unwrap());
    assert!(store.get(&alice, "docs").await.unwrap().is_none());
    assert!(
        store.get(&bob, "docs").await.unwrap().is_some(),
        "bob's stays"
    );
}
