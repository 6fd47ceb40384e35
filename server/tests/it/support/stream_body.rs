//! A streamed response read as it comes, and the SSE helpers the run tests share (one
//! service or two sharing a Redis).

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use lmchatkit::protocol::RUN_ID_HEADER;
use lmchatkit::{ChatService, Principal};
use serde_json::Value;
use tower::ServiceExt;

/// An open response body, read frame by frame.
pub struct Open {
    pub status: http::StatusCode,
    pub headers: http::HeaderMap,
    body: lmchatkit::api::ResponseBody,
    /// What was read so far.
    pub seen: String,
}

pub async fn open(svc: &ChatService, req: Request<Full<Bytes>>) -> Open {
    let res = svc.clone().oneshot(req).await.unwrap();
    let (parts, body) = res.into_parts();
    Open {
        status: parts.status,
        headers: parts.headers,
        body,
        seen: String::new(),
    }
}

impl Open {
    /// Reads until what was read contains `needle`.
    pub async fn until(&mut self, needle: &str) {
        while !self.seen.contains(needle) {
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .unwrap_or_else(|_| panic!("no {needle:?} within 10 s; read {:?}", self.seen))
                .unwrap_or_else(|| panic!("the body ended before {needle:?}: {:?}", self.seen))
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.seen.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }

    /// Reads to the end.
    pub async fn rest(mut self) -> String {
        let rest = tokio::time::timeout(Duration::from_secs(15), self.body.collect())
            .await
            .expect("the body ends within 15 s")
            .unwrap()
            .to_bytes();
        self.seen.push_str(&String::from_utf8_lossy(&rest));
        self.seen
    }

    pub fn run_id(&self) -> String {
        self.headers[RUN_ID_HEADER].to_str().unwrap().to_owned()
    }
}

/// The `(id, data)` of each event of an SSE body, comments left out.
pub fn events(body: &str) -> Vec<(u64, String)> {
    body.split("\n\n")
        .filter_map(|frame| {
            let id = frame.lines().find_map(|l| l.strip_prefix("id: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((id.parse().unwrap(), data.to_owned()))
        })
        .collect()
}

/// The text the chunks of a UI Message Stream body add up to.
pub fn text_of(body: &str) -> String {
    events(body)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["delta"].as_str().unwrap().to_owned())
        .collect()
}

/// `req` as asked by principal `who`.
pub fn as_user(mut req: Request<Full<Bytes>>, who: &str) -> Request<Full<Bytes>> {
    req.extensions_mut().insert(Principal::new(who));
    req
}
