//! Who may use the app: the token (as local notebook servers do it) and the trusted user header
//! behind an authenticating proxy, against the real binary.

use crate::support;

use serde_json::json;
use support::*;

/// `http://127.0.0.1:PORT` of a printed URL.
fn origin_of(url: &str) -> String {
    let rest = url.trim_start_matches("http://");
    format!("http://{}", rest.split('/').next().unwrap())
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Listening beyond loopback, the app makes up a token; the printed URL carries it once, it
/// becomes an `HttpOnly`, `SameSite=Strict` cookie, and nothing answers without it. Before, a
/// page the user visited could drive the app from anywhere that reached it.
#[tokio::test]
async fn listening_beyond_loopback_needs_the_printed_token() {
    let app = start(&["--no-demo", "--listen", "0.0.0.0:0"], &[]);
    let (page, token) = app
        .url
        .split_once("?token=")
        .unwrap_or_else(|| panic!("the printed URL carries the token: {}", app.url));
    assert!(token.len() >= 32, "a token of 128 bits or more: {token:?}");
    let base = origin_of(&app.url);
    let api = format!("{base}/chat/api/conversations");
    let client = no_redirects();

    for url in [
        &api,
        &format!("{base}/chat"),
        &format!("{base}/chat/assets/lmchatkit.js"),
    ] {
        let res = client.get(url).send().await.unwrap();
        assert_eq!(res.status(), 401, "{url} without the token");
        let body: serde_json::Value = res.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    }
    let res = client
        .post(format!("{base}/chat/api/tools/call"))
        .json(&json!({"name": "x", "arguments": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let wrong = client
        .get(&api)
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let wrong = client
        .get(format!("{page}?token=nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    // The printed URL: a cookie, and a redirect to the same page without the token.
    let res = client.get(&app.url).send().await.unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/chat");
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/chat"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let pair = cookie.split(';').next().unwrap().to_owned();
    assert!(pair.ends_with(token), "the cookie holds the token: {pair}");

    let res = client
        .get(&api)
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client
        .get(format!("{base}/chat"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client.get(&api).bearer_auth(token).send().await.unwrap();
    assert_eq!(res.status(), 200, "a bearer header works for scripts");

    // The cookie does not open the app under a foreign host name (DNS rebinding), GET or POST.
    let port = base.rsplit(':').next().unwrap();
    let foreign = format!("rebind.example:{port}");
    for post in [false, true] {
        let req = if post {
            client
                .put(format!("{base}/chat/api/conversations/c1"))
                .json(&json!({"id": "c1", "title": "t", "messages": []}))
        } else {
            client.get(&api)
        };
        let res = req
            .header("host", &foreign)
            .header("origin", format!("http://{foreign}"))
            .header("cookie", &pair)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "post: {post}");
    }
}

/// `--auth-token` sets the token; it works on loopback too.
#[tokio::test]
async fn an_auth_token_can_be_given_and_then_is_required() {
    let app = start(
        &["--no-demo", "--auth-token", "correct-horse-battery-staple"],
        &[],
    );
    assert!(
        app.url.ends_with("?token=correct-horse-battery-staple"),
        "{}",
        app.url
    );
    let api = format!("{}/chat/api/models", origin_of(&app.url));
    let client = no_redirects();
    assert_eq!(client.get(&api).send().await.unwrap().status(), 401);
    let res = client
        .get(&api)
        .bearer_auth("correct-horse-battery-staple")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// Loopback without `--auth-token` stays as it was: the host-name and origin checks guard it.
#[tokio::test]
async fn loopback_without_a_token_needs_none() {
    let app = start(&["--no-demo"], &[]);
    assert!(!app.url.contains("token"), "{}", app.url);
    let (status, _) = get(&format!("{}/api/models", app.url)).await;
    assert_eq!(status, 200);
}

async fn as_user(method: reqwest::Method, url: &str, user: Option<&str>) -> (u16, String) {
    let mut req = http_client().request(method.clone(), url);
    if method == reqwest::Method::PUT {
        req = req.json(&json!({"id": "mine", "title": format!("{user:?}'s"), "messages": []}));
    }
    if let Some(user) = user {
        req = req.header("x-forwarded-user", user);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// Behind an authenticating proxy: the principal comes from the configured header, each user
/// has their own history, and a request without the header is 401.
#[tokio::test]
async fn a_trusted_user_header_gives_each_user_their_own_history() {
    let app = start(
        &[
            "--no-demo",
            "--trusted-user-header",
            "X-Forwarded-User",
            "--trusted-proxy",
            "127.0.0.1",
        ],
        &[],
    );
    let list = format!("{}/api/conversations", app.url);
    let one = format!("{}/api/conversations/mine", app.url);
    assert_eq!(as_user(reqwest::Method::GET, &list, None).await.0, 401);
    assert_eq!(
        as_user(reqwest::Method::PUT, &one, Some("alice")).await.0,
        200
    );
    let (status, alice) = as_user(reqwest::Method::GET, &list, Some("alice")).await;
    assert_eq!(status, 200);
    assert!(alice.contains("mine"), "{alice}");
    let (status, bob) = as_user(reqwest::Method::GET, &list, Some("bob")).await;
    assert_eq!(status, 200);
    assert!(!bob.contains("mine"), "bob sees alice's chat: {bob}");
    assert_eq!(
        as_user(reqwest::Method::GET, &one, Some("bob")).await.0,
        404
    );
}

/// The header is honoured only from the proxy's addresses: anyone else who can reach the app
/// is refused, header or not.
#[tokio::test]
async fn a_trusted_user_header_from_elsewhere_is_refused() {
    let app = start(
        &[
            "--no-demo",
            "--trusted-user-header",
            "X-Forwarded-User",
            "--trusted-proxy",
            "10.9.9.0/24",
        ],
        &[],
    );
    let list = format!("{}/api/conversations", app.url);
    let (status, body) = as_user(reqwest::Method::GET, &list, Some("alice")).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("proxy"), "{body}");
    assert_eq!(as_user(reqwest::Method::GET, &list, None).await.0, 403);
}

/// MCP server states (names, errors) are the operator's business: with `--operator`, only that
/// principal sees them in `/api/config`.
#[tokio::test]
async fn only_the_operator_sees_mcp_statuses() {
    let app = start(
        &[
            "--no-demo",
            "--no-demo-mcp=false",
            "--trusted-user-header",
            "X-Forwarded-User",
            "--operator",
            "alice",
        ],
        &[],
    );
    let config = format!("{}/api/config", app.url);
    let mcp = |body: &str| -> usize {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        v["mcp"].as_array().map_or(0, Vec::len)
    };
    let (status, alice) = as_user(reqwest::Method::GET, &config, Some("alice")).await;
    assert_eq!(status, 200);
    assert_eq!(mcp(&alice), 1, "the operator sees the demo server: {alice}");
    let (status, bob) = as_user(reqwest::Method::GET, &config, Some("bob")).await;
    assert_eq!(status, 200);
    assert_eq!(mcp(&bob), 0, "another user sees no statuses: {bob}");
}

/// Both ways of saying who the user is at once is a mistake the app refuses to start with.
#[test]
fn a_token_and_a_trusted_header_together_are_refused() {
    let out = command(
        &["--auth-token", "t", "--trusted-user-header", "X-User"],
        &[],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--trusted-user-header"), "{err}");
}

/// A server with `oauth = true` waits for the operator: only they see the sign-in page (others
/// get a 404), it lists the server as needing a sign-in, and the sign-ins will be kept beside
/// the key file.
#[tokio::test]
async fn only_the_operator_sees_the_oauth_sign_in_page() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lmchatkit.toml");
    let key = dir.path().join("user-mcp.key");
    std::fs::write(
        &config,
        format!(
            "[user_mcp]\nkey_file = \"{}\"\n\n[[mcp.servers]]\nname = \"docs\"\n\
             url = \"http://127.0.0.1:9/mcp\"\noauth = true\n",
            key.display()
        ),
    )
    .unwrap();
    let app = start(
        &[
            "--no-demo",
            "--config",
            config.to_str().unwrap(),
            "--trusted-user-header",
            "X-Forwarded-User",
            "--operator",
            "alice",
        ],
        &[],
    );
    let page = format!("{}/mcp/operator", app.url);
    let (status, body) = as_user(reqwest::Method::GET, &page, Some("alice")).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("data-server=\"docs\" data-status=\"sign-in-required\""),
        "{body}"
    );
    let (status, body) = as_user(reqwest::Method::GET, &page, Some("bob")).await;
    assert_eq!(status, 404, "{body}");
    assert!(key.exists(), "the key file seals the sign-ins");
    assert!(
        !dir.path().join("operator-mcp.json").exists(),
        "nothing signed in yet"
    );
}
