//! What needs no network: when the metadata document is the client id, what it says, the
//! sealing's associated data, and what `Debug` shows.

use rmcp::transport::auth::AuthorizationMetadata;

use super::operator::{Token, aad};
use super::*;
use crate::mcp::{McpHub, McpServerConfig, MemoryGrantStore, OperatorGrantStore, OperatorOAuth};
use crate::secrets::sealing::{Keyring, SealingKey};

fn metadata(issuer: &str, cimd: Option<bool>) -> AuthorizationMetadata {
    let mut m = AuthorizationMetadata::default();
    m.issuer = Some(issuer.into());
    if let Some(b) = cimd {
        m.additional_fields.insert(
            "client_id_metadata_document_supported".into(),
            serde_json::Value::Bool(b),
        );
    }
    m
}

#[test]
fn the_document_is_the_client_id_only_where_the_authorization_server_takes_and_can_fetch_it() {
    let doc = "https://chat.example.com/chat/oauth/client-metadata.json";
    let local = "http://127.0.0.1:8080/chat/oauth/client-metadata.json";
    assert!(takes_cimd(&metadata("https://as.example", Some(true)), doc));
    assert!(!takes_cimd(
        &metadata("https://as.example", Some(false)),
        doc
    ));
    assert!(!takes_cimd(&metadata("https://as.example", None), doc));
    // A loopback document only for an authorization server on the same machine.
    assert!(takes_cimd(
        &metadata("http://localhost:9000", Some(true)),
        local
    ));
    assert!(!takes_cimd(
        &metadata("https://as.example", Some(true)),
        local
    ));
    assert!(!takes_cimd(
        &metadata("http://localhost:9000", Some(true)),
        "http://chat.example.com/chat/oauth/client-metadata.json"
    ));
}

#[test]
fn the_document_names_itself_the_callbacks_and_a_public_client() {
    let doc = client_metadata(
        "https://chat.example.com",
        "/chat",
        &[OPERATOR_CALLBACK_PATH, "/api/mcp/oauth/callback"],
    );
    assert_eq!(
        doc["client_id"],
        "https://chat.example.com/chat/oauth/client-metadata.json"
    );
    assert_eq!(
        doc["redirect_uris"],
        serde_json::json!([
            "https://chat.example.com/chat/mcp/operator/callback",
            "https://chat.example.com/chat/api/mcp/oauth/callback"
        ])
    );
    assert_eq!(doc["token_endpoint_auth_method"], "none");
    assert_eq!(doc["application_type"], "web");
    assert_eq!(
        doc["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(doc["client_name"], CLIENT_NAME);
}

#[tokio::test]
async fn a_users_sealed_grant_never_opens_as_the_operators() {
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    let store = std::sync::Arc::new(MemoryGrantStore::default());
    struct Shared(std::sync::Arc<MemoryGrantStore>);
    #[async_trait::async_trait]
    impl OperatorGrantStore for Shared {
        async fn load(&self, s: &str) -> Result<Option<String>, GrantStoreError> {
            self.0.load(s).await
        }
        async fn store(&self, s: &str, v: Option<String>) -> Result<(), GrantStoreError> {
            self.0.store(s, v).await
        }
    }
    let oauth = OperatorOAuth::new(keyring.clone(), Shared(store.clone()));
    let _hub = McpHub::new(vec![
        McpServerConfig::http("docs", "https://docs.example/mcp").with_oauth(),
    ])
    .with_oauth(oauth.clone());
    // What a user's grant of a server `docs` would be, and the operator's for another server.
    let record = serde_json::json!({"url": "https://docs.example/mcp"}).to_string();
    for other in [
        b"alice/docs/oauth".to_vec(),
        b"alice/docs/oauth-pending".to_vec(),
        aad("other"),
    ] {
        store
            .store("docs", Some(keyring.seal(record.as_bytes(), &other)))
            .await
            .unwrap();
        assert!(!oauth.is_signed_in("docs").await);
        assert!(oauth.token("docs", None).await.unwrap().is_none());
    }
    // The operator's associated data cannot be a user's: theirs end in a slug or `/oauth…`.
    assert!(String::from_utf8(aad("docs")).unwrap().ends_with("#grant"));
}

#[test]
fn debug_never_shows_a_token() {
    let t = Token {
        access: "at-DEBUG-CANARY".into(),
        due_at: Some(1),
    };
    let shown = format!("{t:?}");
    assert!(!shown.contains("CANARY"), "{shown}");
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    let oauth = OperatorOAuth::new(keyring, MemoryGrantStore::default());
    assert!(format!("{oauth:?}").contains("k1"));
}

#[test]
fn a_callback_says_the_authorization_servers_refusal_without_urls_or_controls() {
    let c = Callback::parse(
        "state=s&error=access_denied&error_description=no%0Away%20https%3A%2F%2Fx.example%2F%3Fcode%3Dsecret",
    );
    let said = c.refusal().unwrap();
    assert!(
        said.starts_with("access_denied (noway https://x.example/"),
        "{said}"
    );
    assert!(!said.contains("secret"), "{said}");
    assert!(Callback::parse("code=c&state=s").refusal().is_none());
}
