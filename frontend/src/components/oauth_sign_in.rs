//! A "Sign in" button for one of the user's MCP servers that needs an OAuth sign-in
//! (`"oauth": "sign_in_required"`): it asks the service to start the sign-in
//! (`POST {prefix}/api/mcp/servers/{slug}/oauth`) and opens the authorization page it answers in
//! a new tab. The tab is opened at once, within the click (a tab opened after the answer arrives
//! is a pop-up browsers block), without an opener, and pointed at the page once the service
//! answered; it is closed again on an error, which the button shows. The authorization server
//! ends on the service's callback page ("Signed in to …"), which posts the slug and new status
//! on a `BroadcastChannel`; the Tools & servers screen, which shows this button on each server
//! that needs a sign-in, then reads that server again, and also re-reads its list when the
//! window gets focus back ([`crate::components::servers::sign_in_watch`] states how).

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ErrorBody, OAuthStart};
use wasm_bindgen::JsValue;

use crate::api::Api;

/// The button (and the last error) for the server `slug`.
#[component]
pub fn OAuthSignIn(
    /// The service's API.
    api: Api,
    /// The server's slug.
    slug: String,
) -> impl IntoView {
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let on_click = move |_| {
        let tab = web_sys::window()
            .and_then(|w| w.open_with_url_and_target("about:blank", "_blank").ok())
            .flatten();
        if let Some(t) = &tab {
            let _ = t.set_opener(&JsValue::NULL);
        }
        busy.set(true);
        error.set(None);
        let (api, slug) = (api.clone(), slug.clone());
        spawn_local(async move {
            let opened = match (start(&api, &slug).await, &tab) {
                (Ok(url), Some(t)) => t
                    .location()
                    .set_href(&url)
                    .map_err(|_| "the new tab could not open the authorization page".to_owned()),
                (Ok(_), None) => Err("the browser blocked the new tab; allow pop-ups here".into()),
                (Err(e), _) => Err(e),
            };
            if let Err(e) = opened {
                if let Some(t) = &tab {
                    let _ = t.close();
                }
                error.set(Some(e));
            }
            busy.set(false);
        });
    };
    view! {
        <span class="lmck-oauth-sign-in">
            <button class="lmck-btn lmck-oauth" type="button" disabled=move || busy.get()
                on:click=on_click>"Sign in"</button>
            {move || error.get().map(|e| view! { <span class="lmck-error" role="alert">{e}</span> })}
        </span>
    }
}

/// Starts the sign-in: the authorization page's URL (http or https only), or the error to show.
async fn start(api: &Api, slug: &str) -> Result<String, String> {
    let slug = String::from(js_sys::encode_uri_component(slug));
    let url = api.url(&format!("mcp/servers/{slug}/oauth"));
    let res = gloo_net::http::Request::post(&url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let text = res.text().await.map_err(|e| e.to_string())?;
    if !res.ok() {
        return Err(serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error)
            .unwrap_or_else(|_| res.status_text()));
    }
    let start: OAuthStart = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let url = start.authorization_url;
    match url.starts_with("https://") || url.starts_with("http://") {
        true => Ok(url),
        false => Err("the service answered an authorization page that is not a web page".into()),
    }
}
