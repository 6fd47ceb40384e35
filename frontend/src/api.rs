//! Typed client for the service's HTTP API. For now only the two reads the placeholder UI needs;
//! the UI issue adds the rest (chat SSE reader, tools, history…).

use std::fmt;

use gloo_net::http::Request;
use lmchatkit_protocol::{ConfigResponse, ErrorBody, Model};
use serde::de::DeserializeOwned;

/// The service's API, addressed through its public prefix (`/chat`, or `""` at the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api {
    prefix: String,
}

impl Api {
    /// A client for the service mounted at `prefix`; a trailing `/` is ignored.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The prefix without a trailing slash.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL of an API route, e.g. `url("models")` → `/chat/api/models`.
    pub fn url(&self, route: &str) -> String {
        format!("{}/api/{}", self.prefix, route.trim_start_matches('/'))
    }

    /// `GET {prefix}/api/config`.
    pub async fn config(&self) -> Result<ConfigResponse, ApiError> {
        self.get_json("config").await
    }

    /// `GET {prefix}/api/models`.
    pub async fn models(&self) -> Result<Vec<Model>, ApiError> {
        self.get_json("models").await
    }

    async fn get_json<T: DeserializeOwned>(&self, route: &str) -> Result<T, ApiError> {
        let response = Request::get(&self.url(route))
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| ApiError::Network(e.to_string()))?;
        if !response.ok() {
            let status = response.status();
            // The service answers errors as `{"error": "..."}`; anything else keeps the status text.
            let message = match response.json::<ErrorBody>().await {
                Ok(body) => body.error,
                Err(_) => response.status_text(),
            };
            return Err(ApiError::Status { status, message });
        }
        response
            .json::<T>()
            .await
            .map_err(|e| ApiError::Decode(e.to_string()))
    }
}

/// Why an API call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The request did not complete (network error, CORS, server down).
    Network(String),
    /// The service answered with a non-2xx status.
    Status {
        /// HTTP status code.
        status: u16,
        /// The `error` field of the body, or the status text.
        message: String,
    },
    /// The body was not the expected JSON.
    Decode(String),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Network(e) => write!(f, "network error: {e}"),
            Self::Status { status, message } if message.is_empty() => write!(f, "HTTP {status}"),
            Self::Status { status, message } => write!(f, "HTTP {status}: {message}"),
            Self::Decode(e) => write!(f, "unexpected response: {e}"),
        }
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_prefix() {
        assert_eq!(Api::new("/chat").url("models"), "/chat/api/models");
        assert_eq!(Api::new("/chat/").url("/config"), "/chat/api/config");
        assert_eq!(Api::new("").url("models"), "/api/models");
        assert_eq!(Api::new("/").prefix(), "");
    }

    #[test]
    fn errors_read_well() {
        let e = ApiError::Status {
            status: 500,
            message: "upstream down".into(),
        };
        assert_eq!(e.to_string(), "HTTP 500: upstream down");
        let e = ApiError::Status {
            status: 404,
            message: String::new(),
        };
        assert_eq!(e.to_string(), "HTTP 404");
    }
}
