//! The client ID metadata document (SEP-991): what `GET {prefix}`[`CIMD_PATH`] answers. The
//! rules are the module's ([`super`]).

use serde_json::{Value, json};

use super::CLIENT_NAME;

/// Where the service serves its client ID metadata document, below the prefix.
pub const CIMD_PATH: &str = "/oauth/client-metadata.json";

/// The document for a service reached at `origin` (e.g. `https://chat.example.com`) under
/// `prefix`, whose sign-ins end at `callbacks` (paths below the prefix).
pub(crate) fn client_metadata(origin: &str, prefix: &str, callbacks: &[&str]) -> Value {
    let web = origin.starts_with("https://");
    let redirect_uris: Vec<String> = callbacks
        .iter()
        .map(|path| format!("{origin}{prefix}{path}"))
        .collect();
    json!({
        "client_id": format!("{origin}{prefix}{CIMD_PATH}"),
        "client_name": CLIENT_NAME,
        "client_uri": format!("{origin}{prefix}"),
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": if web { "web" } else { "native" },
    })
}

/// The document's URL for a service reached at `origin` under `prefix`.
pub(crate) fn document_url(origin: &str, prefix: &str) -> String {
    format!("{origin}{prefix}{CIMD_PATH}")
}
