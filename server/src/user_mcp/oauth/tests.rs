//! The parts of a sign-in that need no network: the state's checks (another principal, expiry,
//! single use, forgery), the refresh margin, the redirect URI, and what `Debug` shows.

use oauth2::{CsrfToken, PkceCodeVerifier};
use rmcp::transport::auth::{OAuthTokenResponse, StoredAuthorizationState, StoredCredentials};

use super::*;
use crate::mcp::OutboundPolicy;
use crate::mcp::oauth::Callback;
use crate::mcp::oauth::due;
use crate::secrets::sealing::{Keyring, SealingKey};
use crate::user_mcp::MemoryUserMcpStore;

fn user_mcp() -> UserMcp {
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    UserMcp::new(
        MemoryUserMcpStore::default(),
        keyring,
        OutboundPolicy::new(),
    )
}

/// Stores alice's server `docs` with a pending sign-in whose nonce is `nonce`; the state
/// token for it, as `principal` would carry it, expiring at `expires_at`.
async fn pending(um: &UserMcp, nonce: &str, expires_at: i64) -> String {
    let alice = Principal::new("alice");
    let mut record = UserMcpRecord::new("docs", "Docs", "https://docs.example/mcp", 1);
    let state = StoredAuthorizationState::new(
        &PkceCodeVerifier::new("v".repeat(43)),
        &CsrfToken::new("c".into()),
    );
    let client = Client {
        client_id: "client".into(),
        client_secret: None,
        redirect_uri: "http://localhost/chat/api/mcp/oauth/callback".into(),
        scopes: vec![],
        issuer: None,
    };
    let p = Pending {
        nonce: nonce.into(),
        expires_at,
        client,
        state,
    };
    record.oauth_pending = Some(
        um.seal_json(&p, &aad(&alice, "docs", "oauth-pending"))
            .unwrap(),
    );
    um.store.create(&alice, record).await.unwrap();
    state_token(um, "alice", nonce, expires_at)
}

fn state_token(um: &UserMcp, principal: &str, nonce: &str, expires_at: i64) -> String {
    let token = StateToken {
        principal: principal.into(),
        slug: "docs".into(),
        nonce: nonce.into(),
        expires_at,
    };
    um.seal_json(&token, STATE_AAD).unwrap()
}

fn callback(state: &str) -> Callback {
    Callback::parse(&format!("code=the-code&state={state}"))
}

fn later() -> i64 {
    now_ms() + 60_000
}

#[tokio::test]
async fn a_state_started_by_another_principal_is_refused_and_the_sign_in_stays() {
    let um = user_mcp();
    let state = pending(&um, "n1", later()).await;
    let bob = Principal::new("bob");
    let e = um
        .finish_sign_in(Some(&bob), callback(&state))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::OtherPrincipal), "{e}");
    assert_eq!(crate::ApiError::from(Failure::from(e)).status(), 403);
    let alice = Principal::new("alice");
    let record = um.store.get(&alice, "docs").await.unwrap().unwrap();
    assert!(
        record.oauth_pending.is_some(),
        "alice's sign-in is untouched"
    );
    // Without a session at all: 401.
    let e = um.finish_sign_in(None, callback(&state)).await.unwrap_err();
    assert_eq!(crate::ApiError::from(Failure::from(e)).status(), 401);
}

#[tokio::test]
async fn an_expired_a_forged_or_a_replaced_state_is_refused() {
    let um = user_mcp();
    let alice = Principal::new("alice");
    let state = pending(&um, "n1", now_ms() - 1).await;
    let e = um
        .finish_sign_in(Some(&alice), callback(&state))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Expired), "{e}");
    // Sealed by another key (or altered): unknown.
    let other = user_mcp();
    let forged = state_token(&other, "alice", "n1", later());
    let e = um
        .finish_sign_in(Some(&alice), callback(&forged))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::UnknownState), "{e}");
    let e = um
        .finish_sign_in(Some(&alice), callback("lmck1.k1.AAAA"))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::UnknownState), "{e}");
    // A nonce that is not the pending sign-in's (a newer one replaced it): unknown, and the
    // pending one stays.
    let um = user_mcp();
    pending(&um, "newer", later()).await;
    let older = state_token(&um, "alice", "older", later());
    let e = um
        .finish_sign_in(Some(&alice), callback(&older))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::UnknownState), "{e}");
    let record = um.store.get(&alice, "docs").await.unwrap().unwrap();
    assert!(record.oauth_pending.is_some());
    // No state at all: a bad callback.
    let e = um
        .finish_sign_in(Some(&alice), Callback::parse("code=x"))
        .await
        .unwrap_err();
    assert_eq!(crate::ApiError::from(Failure::from(e)).status(), 400);
}

#[tokio::test]
async fn a_state_works_once_even_when_the_authorization_server_said_no() {
    let um = user_mcp();
    let alice = Principal::new("alice");
    let state = pending(&um, "n1", later()).await;
    let denied = Callback::parse(&format!(
        "error=access_denied&error_description=the+user+said+no&state={state}"
    ));
    let e = um.finish_sign_in(Some(&alice), denied).await.unwrap_err();
    assert!(
        matches!(&e, OAuthError::Refused(m) if m.contains("access_denied") && m.contains("the user said no")),
        "{e}"
    );
    let record = um.store.get(&alice, "docs").await.unwrap().unwrap();
    assert!(record.oauth_pending.is_none(), "consumed");
    let e = um
        .finish_sign_in(Some(&alice), callback(&state))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::UnknownState), "{e}");
}

fn credentials(expires_in: Option<u64>, received_at: u64) -> StoredCredentials {
    let mut token = serde_json::json!({"access_token": "a", "token_type": "bearer"});
    if let Some(s) = expires_in {
        token["expires_in"] = s.into();
    }
    let token: OAuthTokenResponse = serde_json::from_value(token).unwrap();
    StoredCredentials::new("client".into(), Some(token), vec![], Some(received_at))
}

#[test]
fn a_token_is_refreshed_when_less_than_a_minute_or_half_its_life_is_left() {
    let at = 1_000;
    assert!(!due(&credentials(Some(3600), at), at + 3539));
    assert!(due(&credentials(Some(3600), at), at + 3540));
    assert!(!due(&credentials(Some(2), at), at));
    assert!(due(&credentials(Some(2), at), at + 1));
    assert!(due(&credentials(Some(2), at), at + 100));
    assert!(
        !due(&credentials(None, at), at + 100_000),
        "no lifetime: used as is"
    );
}

fn parts(headers: &[(&str, &str)]) -> ::http::request::Parts {
    let mut b = ::http::Request::post("/chat/api/mcp/servers/docs/oauth");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

#[test]
fn the_redirect_uri_follows_the_pages_origin_or_the_host() {
    let uri = |h: &[(&str, &str)]| redirect_uri(&parts(h), "/chat").unwrap();
    assert_eq!(
        uri(&[
            ("host", "chat.example.com"),
            ("origin", "https://chat.example.com")
        ]),
        "https://chat.example.com/chat/api/mcp/oauth/callback"
    );
    assert_eq!(
        uri(&[("host", "chat.example.com")]),
        "https://chat.example.com/chat/api/mcp/oauth/callback"
    );
    assert_eq!(
        uri(&[("host", "127.0.0.1:8080")]),
        "http://127.0.0.1:8080/chat/api/mcp/oauth/callback"
    );
    assert_eq!(
        uri(&[
            ("host", "localhost:3000"),
            ("origin", "http://localhost:3000")
        ]),
        "http://localhost:3000/chat/api/mcp/oauth/callback"
    );
    // An allowed other origin does not move the callback off this host.
    assert_eq!(
        uri(&[("host", "[::1]:9"), ("origin", "https://embedder.example")]),
        "http://[::1]:9/chat/api/mcp/oauth/callback"
    );
    assert!(redirect_uri(&parts(&[("host", "a b")]), "/chat").is_err());
}

#[test]
fn debug_of_a_record_never_shows_the_grant_or_the_pending_sign_in() {
    let mut r = UserMcpRecord::new("docs", "Docs", "https://docs.example/mcp", 1);
    r.oauth = Some("lmck1.k1.GRANT-CANARY".into());
    r.oauth_pending = Some("lmck1.k1.PENDING-CANARY".into());
    r.oauth_status = lmchatkit_protocol::OAuthStatus::SignedIn;
    let shown = format!("{r:?}");
    assert!(!shown.contains("CANARY"), "{shown}");
    assert!(shown.contains("SignedIn"), "{shown}");
    assert_eq!(r.to_wire().oauth, lmchatkit_protocol::OAuthStatus::SignedIn);
}
