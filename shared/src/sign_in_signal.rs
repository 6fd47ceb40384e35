//! How the OAuth callback page tells the chat UI that a sign-in to a user's MCP server ended:
//! the page (`GET {prefix}/api/mcp/oauth/callback`, opened in another tab) posts a
//! [`SignInSignal`], serialized as a JSON string, on the `BroadcastChannel` named
//! [`SIGN_IN_CHANNEL`]; the "Tools & servers" screen listens on it and reads that server again.
//!
//! The signal carries the server's slug and its new status, never a token or anything from the
//! callback's query string. It is only a hint: the screen believes what it reads from the
//! service, not the message (any page of the origin can post on the channel).

use serde::{Deserialize, Serialize};

use crate::OAuthStatus;

/// The `BroadcastChannel` name the callback page posts on and the screen listens to.
pub const SIGN_IN_CHANNEL: &str = "lmchatkit-mcp-sign-in";

/// What the callback page posts: which server, and its status after the sign-in.
///
/// ```
/// use lmchatkit_protocol::{OAuthStatus, SignInSignal};
/// let s = SignInSignal::new("docs", OAuthStatus::SignedIn);
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"slug":"docs","oauth":"signed_in"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SignInSignal {
    /// The server's slug.
    pub slug: String,
    /// Its OAuth status after the sign-in.
    pub oauth: OAuthStatus,
}

impl SignInSignal {
    /// The signal for the server `slug`, now `oauth`.
    pub fn new(slug: impl Into<String>, oauth: OAuthStatus) -> Self {
        Self {
            slug: slug.into(),
            oauth,
        }
    }
}
