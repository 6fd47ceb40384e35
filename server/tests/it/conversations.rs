//! `/api/conversations`: CRUD, the revision write model (409 with the current copy), principal
//! scoping, and the conversation events other tabs receive.

use crate::support;

use std::time::Duration;

use http::Request;
use http_body_util::{BodyExt, Full};
use lmchatkit::Principal;
use lmchatkit::store::MemoryStore;
use serde_json::json;
use support::*;
use tower::ServiceExt;

fn svc() -> lmchatkit::ChatService {
    service(config(FakeHost::default()).history(MemoryStore::new()))
}

fn conv(revision: u64, messages: serde_json::Value) -> serde_json::Value {
    json!({"id": "ignored", "title": "T", "persona_id": "default", "model": "m", "revision": revision, "messages": messages})
}

#[tokio::test]
async fn crud_round_trip() {
    let s = svc();
    assert_eq!(send(&s, get("/chat/api/conversations")).await.text(), "[]");
    let msgs = json!([{"role": "system", "content": "never stored"}, {"id": "m1", "role": "user", "content": "hi"}]);
    let r = send(&s, put("/chat/api/conversations/c-1", &conv(0, msgs))).await;
    assert_eq!(r.json(), json!({"ok": true, "revision": 1}));
    let r = send(&s, get("/chat/api/conversations/c-1")).await;
    let got = r.json();
    assert_eq!(
        (got["id"].as_str(), got["revision"].as_u64()),
        (Some("c-1"), Some(1))
    );
    assert_eq!(
        got["messages"],
        json!([{"id": "m1", "role": "user", "content": "hi"}])
    );
    let list = send(&s, get("/chat/api/conversations")).await.json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert!(list[0].get("messages").is_none());

    let patch = |body| {
        with_json(
            "PATCH",
            "/chat/api/conversations/c-1",
            serde_json::to_vec(&body).unwrap(),
        )
    };
    let r = send(
        &s,
        patch(json!({"title": "  Renamed ", "params": {"temperature": 0.5}})),
    )
    .await;
    assert_eq!(r.json(), json!({"ok": true, "revision": 2}));
    let got = send(&s, get("/chat/api/conversations/c-1")).await.json();
    assert_eq!(
        (got["title"].as_str(), got["params"]["temperature"].as_f64()),
        (Some("Renamed"), Some(0.5))
    );
    assert_eq!(send(&s, patch(json!({"title": " "}))).await.status, 400);

    let del = Request::delete("/chat/api/conversations/c-1")
        .body(Full::default())
        .unwrap();
    let r = send(&s, del).await;
    assert_eq!((r.status.as_u16(), r.body.len()), (204, 0));
    assert_eq!(
        send(&s, get("/chat/api/conversations/c-1")).await.status,
        404
    );
    let del = Request::delete("/chat/api/conversations/c-1")
        .body(Full::default())
        .unwrap();
    assert_eq!(send(&s, del).await.status, 404);
}

#[tokio::test]
async fn stale_revision_gets_409_with_the_current_copy() {
    let s = svc();
    send(
        &s,
        put(
            "/chat/api/conversations/c-2",
            &conv(0, json!([{"id": "a", "role": "user", "content": "1"}])),
        ),
    )
    .await;
    let r = send(&s, put("/chat/api/conversations/c-2", &conv(1, json!([{"id": "a", "role": "user", "content": "1"}, {"id": "b", "role": "assistant", "content": "2"}])))).await;
    assert_eq!(r.json()["revision"], 2);
    // Another tab still at revision 1 appends something else.
    let r = send(&s, put("/chat/api/conversations/c-2", &conv(1, json!([{"id": "a", "role": "user", "content": "1"}, {"id": "x", "role": "user", "content": "other"}])))).await;
    assert_eq!(r.status, 409);
    let body = r.json();
    assert_eq!(body["revision"], 2);
    assert_eq!(body["conversation"]["messages"][1]["id"], "b");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("changed elsewhere")
    );
    // Creating over an existing id is a conflict too.
    assert_eq!(
        send(&s, put("/chat/api/conversations/c-2", &conv(0, json!([]))))
            .await
            .status,
        409
    );
}

#[tokio::test]
async fn a_put_that_keeps_stored_messages_carries_only_the_new_ones() {
    let s = svc();
    let url = "/chat/api/conversations/c-3";
    let first = json!([{"id": "a", "role": "user", "content": "1"}, {"id": "b", "role": "assistant", "content": "2"}]);
    assert_eq!(
        send(&s, put(url, &conv(0, first))).await.json()["revision"],
        1
    );
    let mut turn = conv(1, json!([{"id": "c", "role": "user", "content": "3"}]));
    turn["kept"] = json!(2);
    assert_eq!(
        send(&s, put(url, &turn)).await.json(),
        json!({"ok": true, "revision": 2})
    );
    let got = send(&s, get(url)).await.json();
    let ids: Vec<&str> = got["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(got.get("kept").is_none(), "a GET never says what was kept");

    // Keeping more than is stored: 409 with the current copy.
    let mut wrong = conv(2, json!([]));
    wrong["kept"] = json!(4);
    let r = send(&s, put(url, &wrong)).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["conversation"]["messages"][2]["id"], "c");

    // Deleted in another tab: 409 at revision 0, and nothing is created until the whole
    // conversation comes.
    let del = Request::delete(url).body(Full::default()).unwrap();
    assert_eq!(send(&s, del).await.status, 204);
    let mut kept = conv(2, json!([{"id": "d", "role": "user", "content": "4"}]));
    kept["kept"] = json!(3);
    let r = send(&s, put(url, &kept)).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["revision"], 0);
    assert_eq!(send(&s, get(url)).await.status, 404);
    // A negative or non-integer count is a 400, not a save.
    let mut bad = conv(0, json!([]));
    bad["kept"] = json!(-1);
    assert_eq!(send(&s, put(url, &bad)).await.status, 400);
}

#[tokio::test]
async fn conversations_are_scoped_to_the_principal() {
    let s = svc();
    let as_user = |mut req: Request<Full<bytes::Bytes>>, who: &str| {
        req.extensions_mut().insert(Principal::new(who));
        req
    };
    send(
        &s,
        as_user(
            put("/chat/api/conversations/c-3", &conv(0, json!([]))),
            "alice",
        ),
    )
    .await;
    assert_eq!(
        send(&s, as_user(get("/chat/api/conversations/c-3"), "bob"))
            .await
            .status,
        404
    );
    assert_eq!(
        send(&s, as_user(get("/chat/api/conversations"), "bob"))
            .await
            .text(),
        "[]"
    );
    assert_eq!(
        send(&s, get("/chat/api/conversations/c-3")).await.status,
        404
    );
    assert_eq!(
        send(&s, as_user(get("/chat/api/conversations/c-3"), "alice"))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn saves_renames_and_deletes_notify_the_same_principals_tabs() {
    let s = svc();
    let mut sub = Request::get("/chat/api/events")
        .body(Full::<bytes::Bytes>::default())
        .unwrap();
    sub.extensions_mut().insert(Principal::new("alice"));
    let mut mine = s.clone().oneshot(sub).await.unwrap().into_body();
    let mut other = s
        .clone()
        .oneshot(get("/chat/api/events"))
        .await
        .unwrap()
        .into_body();
    let mut req = put("/chat/api/conversations/c-4", &conv(0, json!([])));
    req.extensions_mut().insert(Principal::new("alice"));
    send(&s, req).await;
    let mut req = with_json("PATCH", "/chat/api/conversations/c-4", r#"{"title":"n"}"#);
    req.extensions_mut().insert(Principal::new("alice"));
    send(&s, req).await;
    let mut req = Request::delete("/chat/api/conversations/c-4")
        .body(Full::default())
        .unwrap();
    req.extensions_mut().insert(Principal::new("alice"));
    send(&s, req).await;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.contains("conversation_deleted") {
        let f = tokio::time::timeout_at(deadline, mine.frame())
            .await
            .expect("events arrive")
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(f.data_ref().unwrap()).unwrap());
    }
    assert!(
        seen.contains(r#"{"type":"conversation_saved","id":"c-4","revision":1}"#),
        "{seen}"
    );
    assert!(
        seen.contains(r#"{"type":"conversation_renamed","id":"c-4","revision":2}"#),
        "{seen}"
    );
    // The anonymous subscriber got nothing but the opening comment.
    let first = other.frame().await.unwrap().unwrap();
    assert_eq!(first.data_ref().unwrap().as_ref(), b": connected\n\n");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), other.frame())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn without_a_store_history_routes_are_404() {
    let s = service(config(FakeHost::default()));
    let r = send(&s, get("/chat/api/conversations")).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (404, "server-side history is not enabled".into())
    );
}

#[tokio::test]
async fn search_finds_the_callers_messages_only_with_plain_text_snippets() {
    let s = svc();
    let as_user = |mut req: Request<Full<bytes::Bytes>>, who: &str| {
        req.extensions_mut().insert(Principal::new(who));
        req
    };
    let alice_msgs = json!([
        {"id": "m1", "role": "user", "content": "Where is the <script>alert(1)</script> bug?"},
        {"id": "m2", "role": "assistant", "content": "The bug is in the parser."}
    ]);
    send(
        &s,
        as_user(
            put("/chat/api/conversations/c-a", &conv(0, alice_msgs)),
            "alice",
        ),
    )
    .await;
    let bob_msgs = json!([{"id": "b1", "role": "user", "content": "bob's bug report"}]);
    send(
        &s,
        as_user(
            put("/chat/api/conversations/c-b", &conv(0, bob_msgs)),
            "bob",
        ),
    )
    .await;

    let r = send(
        &s,
        as_user(get("/chat/api/search?q=BUG+scr&limit=5"), "alice"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{body}");
    let hit = &results[0];
    assert_eq!(
        (
            hit["conversation_id"].as_str(),
            hit["message_id"].as_str(),
            hit["index"].as_u64(),
            hit["title"].as_str()
        ),
        (Some("c-a"), Some("m1"), Some(0), Some("T"))
    );
    // Plain text as written: the client shows it as text.
    assert_eq!(
        hit["snippet"],
        "Where is the <script>alert(1)</script> bug?"
    );
    assert_eq!(hit["matches"], json!([[14, 17], [31, 34], [39, 42]]));
    assert!(hit["updated_at"].as_i64().unwrap() > 0);

    // Percent-encoded words; Bob sees his own only.
    let r = send(&s, as_user(get("/chat/api/search?q=%62ug"), "bob")).await;
    let found = r.json();
    let ids: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c-b"]);
    let r = send(&s, as_user(get("/chat/api/search?q=parser"), "bob")).await;
    assert_eq!(r.json()["results"], json!([]));

    // A sandboxed MCP App view (origin `null`) gets no CORS grant: its browser keeps the
    // answer from it, as for every other read of the history.
    let mut from_view = as_user(get("/chat/api/search?q=bug"), "alice");
    from_view
        .headers_mut()
        .insert(http::header::ORIGIN, http::HeaderValue::from_static("null"));
    let r = send(&s, from_view).await;
    assert!(
        r.headers
            .get(http::header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none(),
        "{:?}",
        r.headers
    );

    // Bad queries are 400s with a message, never a 500.
    for bad in [
        "/chat/api/search",
        "/chat/api/search?q=",
        "/chat/api/search?q=+%2A%22+",
        "/chat/api/search?q=bug&limit=many",
        "/chat/api/search?q=%FF",
    ] {
        let r = send(&s, as_user(get(bad), "alice")).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(!r.error().is_empty(), "{bad}");
    }
    let long = format!("/chat/api/search?q={}", "a".repeat(201));
    assert_eq!(send(&s, as_user(get(&long), "alice")).await.status, 400);
}

/// Branches over HTTP: a regenerated reply is a version (`branches` in a GET); `POST
/// {id}/branch` switches to another, `DELETE {id}/messages/{node}` deletes one; both answer the
/// new revision and tell the caller's other tabs, unknown nodes and other principals get 404,
/// and a malformed body or path a 4xx JSON error.
#[tokio::test]
async fn versions_are_listed_switched_and_deleted_over_http() {
    let s = svc();
    let mut events = s
        .clone()
        .oneshot(get("/chat/api/events"))
        .await
        .unwrap()
        .into_body();
    let u = json!({"id": "u1", "role": "user", "content": "hi"});
    let a = |id: &str| json!({"id": id, "role": "assistant", "content": format!("reply {id}")});
    let r = send(
        &s,
        put("/chat/api/conversations/c-b", &conv(0, json!([u, a("a1")]))),
    )
    .await;
    assert_eq!(r.json()["revision"], 1);
    let r = send(
        &s,
        put("/chat/api/conversations/c-b", &conv(1, json!([u, a("a2")]))),
    )
    .await;
    assert_eq!(r.json()["revision"], 2);
    let got = send(&s, get("/chat/api/conversations/c-b")).await.json();
    assert_eq!(got["messages"][1]["id"], "a2");
    let branch = &got["branches"][0];
    assert_eq!(
        (branch["index"].as_u64(), branch["current"].as_u64()),
        (Some(1), Some(1))
    );
    let first = branch["versions"][0].as_u64().unwrap();

    let r = send(
        &s,
        post(
            "/chat/api/conversations/c-b/branch",
            &json!({"node": first}),
        ),
    )
    .await;
    assert_eq!(r.json(), json!({"ok": true, "revision": 3}));
    let got = send(&s, get("/chat/api/conversations/c-b")).await.json();
    assert_eq!(
        (
            got["messages"][1]["id"].as_str(),
            got["branches"][0]["current"].as_u64()
        ),
        (Some("a1"), Some(0))
    );

    // Errors: an unknown node, another principal, a bad body, a bad path.
    let r = send(
        &s,
        post("/chat/api/conversations/c-b/branch", &json!({"node": 99})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (404, "the conversation holds no such message".into())
    );
    let mut req = post(
        "/chat/api/conversations/c-b/branch",
        &json!({"node": first}),
    );
    req.extensions_mut().insert(Principal::new("bob"));
    assert_eq!(send(&s, req).await.status, 404);
    let mut req = Request::delete(format!("/chat/api/conversations/c-b/messages/{first}"))
        .body(Full::default())
        .unwrap();
    req.extensions_mut().insert(Principal::new("bob"));
    assert_eq!(send(&s, req).await.status, 404);
    // An App view's request (a sandboxed frame: origin `null`) is refused before the store.
    let mut req = post(
        "/chat/api/conversations/c-b/branch",
        &json!({"node": first}),
    );
    req.headers_mut()
        .insert("origin", http::HeaderValue::from_static("null"));
    assert_eq!(send(&s, req).await.status, 403);
    let r = send(
        &s,
        post("/chat/api/conversations/c-b/branch", &json!({"node": "x"})),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        send(&s, post("/chat/api/conversations/c-b/merge", &json!({})))
            .await
            .status,
        404
    );
    assert_eq!(
        send(&s, post("/chat/api/conversations/c-b", &json!({})))
            .await
            .status,
        404
    );
    let del = |path: &str| Request::delete(path).body(Full::default()).unwrap();
    assert_eq!(
        send(&s, del("/chat/api/conversations/c-b/messages/x"))
            .await
            .status,
        404
    );
    assert_eq!(
        send(&s, del("/chat/api/conversations/c-b/messages/99"))
            .await
            .status,
        404
    );

    // Deleting the active version moves the path to the other one.
    let r = send(
        &s,
        del(&format!("/chat/api/conversations/c-b/messages/{first}")),
    )
    .await;
    assert_eq!(r.json(), json!({"ok": true, "revision": 4}));
    let got = send(&s, get("/chat/api/conversations/c-b")).await.json();
    assert_eq!(got["messages"][1]["id"], "a2");
    assert!(got.get("branches").is_none(), "one version left: {got}");

    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.contains(r#""revision":4"#) {
        let f = tokio::time::timeout_at(deadline, events.frame())
            .await
            .expect("events arrive")
            .unwrap()
            .unwrap();
        if let Some(d) = f.data_ref() {
            seen.push_str(std::str::from_utf8(d).unwrap());
        }
    }
    assert!(
        seen.contains(r#"{"type":"conversation_saved","id":"c-b","revision":3}"#),
        "{seen}"
    );
}

/// An export with `?tree=1` holds every branch; a PUT of it as a new conversation stores the
/// same versions with the same active path; a tree that is not one, or sent to an existing
/// conversation, is a 400 and stores nothing.
#[tokio::test]
async fn a_tree_exported_with_every_branch_imports_as_the_same_versions() {
    let s = svc();
    let u = |id: &str, text: &str| json!({"id": id, "role": "user", "content": text});
    let a = |id: &str| json!({"id": id, "role": "assistant", "content": format!("reply {id}")});
    let url = "/chat/api/conversations/c-x";
    send(&s, put(url, &conv(0, json!([u("u1", "one"), a("a1")])))).await;
    send(&s, put(url, &conv(1, json!([u("u1", "one"), a("a2")])))).await;
    send(&s, put(url, &conv(2, json!([u("u1", "two")])))).await;
    send(&s, put(url, &conv(3, json!([u("u1", "two"), a("a3")])))).await;
    let original = send(&s, get(url)).await.json();
    assert!(original.get("tree").is_none(), "only when asked");
    let exported = send(&s, get("/chat/api/conversations/c-x?tree=1"))
        .await
        .json();
    assert_eq!(exported["tree"]["nodes"].as_array().map(Vec::len), Some(5));

    let mut import = exported.clone();
    import["revision"] = json!(0);
    let r = send(&s, put("/chat/api/conversations/c-y", &import)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let copy = send(&s, get("/chat/api/conversations/c-y")).await.json();
    assert_eq!(copy["messages"], original["messages"]);
    assert_eq!(copy["branches"], original["branches"], "the same versions");
    // The other version of the first message, with its own versions of the reply.
    let other = copy["branches"][0]["versions"][0].clone();
    send(
        &s,
        post(
            "/chat/api/conversations/c-y/branch",
            &json!({"node": other}),
        ),
    )
    .await;
    let copy = send(&s, get("/chat/api/conversations/c-y")).await.json();
    assert_eq!(copy["messages"][0]["content"], "one");
    assert_eq!(copy["messages"][1]["id"], "a2");
    assert_eq!(
        copy["branches"][1]["versions"].as_array().map(Vec::len),
        Some(2)
    );

    // Refused: a tree into an existing conversation, a child before its parent.
    let r = send(&s, put("/chat/api/conversations/c-y", &exported)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let mut broken = import.clone();
    broken["tree"]["nodes"].as_array_mut().unwrap().reverse();
    let r = send(&s, put("/chat/api/conversations/c-z", &broken)).await;
    assert_eq!(
        (r.status.as_u16(), r.error().contains("invalid tree")),
        (400, true),
        "{}",
        r.text()
    );
    assert_eq!(
        send(&s, get("/chat/api/conversations/c-z")).await.status,
        404
    );
}
