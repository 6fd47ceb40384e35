//! Requests for the user's input (MCP elicitation): who may answer them, and what an answer is
//! bound to.
//!
//! A tool call may answer `input_required` (MCP 2026-07-28's multi-round-trip requests): a form
//! or a URL for the user, and an opaque `requestState` to send back with the answers when the
//! call is made again. The service hands the client a **ticket** in place of that state, and
//! takes the answers back only with it.
//!
//! Decisions:
//! - **Stateless, like MRTR itself.** The ticket carries the server's `requestState`, the
//!   question keys and the expiry, and an HMAC-SHA256 over them and over what the answer is
//!   bound to: the principal, the conversation (the AI SDK's thread; empty for a native call),
//!   the model's call id, the tool's name and the call's exact input. Nothing is stored and no
//!   instance holds anything while the user thinks: a reload finds the request in the saved
//!   conversation, and any instance given the same signing secret takes the answer
//!   ([`ConfigBuilder::signing_secret`](crate::ConfigBuilder::signing_secret)). Without one the
//!   key is random per process, as for approval ids.
//! - **Only the user answers.** A call from an MCP App view that meets `input_required` gets an
//!   error result (the view cannot show the user a form of the host's, and must not answer for
//!   the user); no ticket is made for it. Answers come only with the user's own requests (the
//!   native tool call route, the AI SDK's next request), never from a view's bridge or from the
//!   model's output.
//! - **A ticket answers only its call**: another principal, conversation, call id, tool or input
//!   is refused (403), as is a ticket that was altered. An answer for a key the request did not
//!   ask is refused (400); a question left unanswered counts as `cancel`.
//! - **Expiry** ([`DEFAULT_INPUT_TTL`], 10 minutes, configurable with
//!   [`ConfigBuilder::input_request_ttl`](crate::ConfigBuilder::input_request_ttl)): answers
//!   that arrive later are all made `cancel`, and the call is made again with them, so the
//!   server learns the request was dropped and the model gets the server's answer to that.
//! - **Tasks get tickets too** (a call that runs as a task, MCP's tasks extension): the same
//!   binding, the task id inside, good for a day (the server's own `ttlMs` usually ends the task
//!   sooner); only the user or the model's loop polls or cancels it, a view never. A request
//!   for input from inside a task gets its own ticket naming the task, so its answers go to
//!   the task (`tasks/update`); a task's ticket never answers a question, nor the other way.
//! - **The server's `requestState` reaches the browser inside the ticket**, as it reaches any
//!   MRTR client; it cannot be altered (the HMAC), and servers that keep secrets in it seal it
//!   themselves, as the spec says they must.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use lmchatkit_protocol::{InputAction, InputAnswer, InputAnswers, InputKind, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Failure;
use crate::host::{Role, Scope, ToolInput};
use crate::secrets::signing::{self, hkdf_expand};

/// How long a request for input waits for the user by default: 10 minutes.
pub const DEFAULT_INPUT_TTL: Duration = Duration::from_secs(600);

/// The label the ticket key is derived under from a shared signing secret.
const LABEL: &[u8] = b"lmchatkit/input-tickets/v1";

/// What a ticket's text starts with.
const PREFIX: &str = "it_";

/// The key tickets are signed with, and how long they last.
#[derive(Clone)]
pub(crate) struct InputTickets {
    key: [u8; 64],
    ttl: Duration,
}

impl std::fmt::Debug for InputTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputTickets")
            .field("key", &crate::secrets::Redacted)
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// What an answer is bound to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub principal: &'a str,
    /// The conversation (the AI SDK's thread id); empty when the call has none.
    pub thread: &'a str,
    /// The model's call id; empty when the caller has none.
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
}

/// What a ticket carries besides its MAC.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    /// The server's `requestState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    /// The question keys.
    k: Vec<String>,
    /// Expiry, Unix milliseconds.
    e: u64,
    /// A task ticket's task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<String>,
}

/// How long a task's ticket may poll it: a day (the server's own `ttlMs` usually ends it
/// sooner).
const TASK_TICKET_TTL: Duration = Duration::from_secs(24 * 3600);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl InputTickets {
    /// Tickets under a random key (they verify only in this process).
    pub(crate) fn random(ttl: Duration) -> Self {
        Self {
            key: rand::random(),
            ttl,
        }
    }

    /// Tickets under the key derived from `secret` (every instance given it agrees).
    pub(crate) fn derive(secret: &[u8], ttl: Duration) -> Self {
        Self {
            key: hkdf_expand(secret, LABEL),
            ttl,
        }
    }

    fn mac(&self, s: &Subject<'_>, payload: &str) -> hmac::Hmac<sha2::Sha256> {
        signing::mac(
            &self.key,
            &[s.principal, s.thread, s.call_id, s.tool, payload],
            s.input,
        )
    }

    /// Gives a tool's result that asks for input its ticket and expiry, in place of the
    /// server's `requestState`. A result for an MCP App view (or any role but the user's and the
    /// model's) becomes an error result: only the user answers. Other results pass unchanged.
    pub(crate) fn issue(
        &self,
        scope: &Scope,
        s: &Subject<'_>,
        mut result: ToolResult,
    ) -> ToolResult {
        if let Some(mut task) = result.task.take() {
            if scope.role() == Role::App {
                return ToolResult::error(format!(
                    "tool {} runs as a task, which a view cannot follow",
                    s.tool
                ));
            }
            let task_id = std::mem::take(&mut task.task_id);
            let payload = Payload {
                s: None,
                k: Vec::new(),
                e: now_ms().saturating_add(TASK_TICKET_TTL.as_millis() as u64),
                t: Some(task_id.clone()),
            };
            task.ticket = Some(self.sign(s, &payload));
            result.task = Some(task);
            // A request for input from inside the task: its own ticket, naming the task.
            if let Some(mut req) = result.input_required.take() {
                let expires = now_ms().saturating_add(self.ttl.as_millis() as u64);
                let payload = Payload {
                    s: None,
                    k: req.questions.iter().map(|q| q.key.clone()).collect(),
                    e: expires,
                    t: Some(task_id),
                };
                req.ticket = Some(self.sign(s, &payload));
                req.expires_at_ms = Some(expires);
                result.input_required = Some(req);
            }
            return result;
        }
        let Some(mut req) = result.input_required.take() else {
            return result;
        };
        if scope.role() == Role::App {
            return ToolResult::error(format!(
                "tool {} needs the user's input, which only the chat can ask for; \
                 a view cannot answer for the user",
                s.tool
            ));
        }
        let expires = now_ms().saturating_add(self.ttl.as_millis() as u64);
        let payload = Payload {
            s: req.request_state.take(),
            k: req.questions.iter().map(|q| q.key.clone()).collect(),
            e: expires,
            t: None,
        };
        req.ticket = Some(self.sign(s, &payload));
        req.expires_at_ms = Some(expires);
        for q in &mut req.questions {
            if let InputKind::Url { url, host } = &mut q.kind {
                match url_host(url) {
                    Some(h) => *host = h,
                    None => {
                        return ToolResult::error(format!(
                            "tool {} asked the user to open a URL that is not http(s) \
                             with a host; it was not shown",
                            s.tool
                        ));
                    }
                }
            }
        }
        result.input_required = Some(req);
        result
    }

    /// Checks `answers` against `s` and gives what the call is made again with: the server's
    /// `requestState` and an answer for every key it asked (unanswered keys, and every key of
    /// an expired request, as `cancel`).
    pub(crate) fn open(
        &self,
        scope: &Scope,
        s: &Subject<'_>,
        answers: &InputAnswers,
    ) -> Result<ToolInput, Failure> {
        if scope.role() == Role::App {
            return Err(Failure::Denied(
                "only the user answers a tool's request for input, not a view".into(),
            ));
        }
        let payload = self.verified(s, &answers.ticket)?;
        if payload.t.is_some() && payload.k.is_empty() {
            return Err(Failure::Invalid(
                "that ticket is a task's, not a request for input's".into(),
            ));
        }
        if let Some(k) = answers.answers.keys().find(|k| !payload.k.contains(k)) {
            return Err(Failure::Invalid(format!(
                "an answer for {k:?}, which the tool did not ask"
            )));
        }
        let expired = now_ms() > payload.e;
        let mut out = BTreeMap::new();
        for k in payload.k {
            let answer = match answers.answers.get(&k) {
                Some(a) if !expired => checked(a)?,
                _ => InputAnswer::new(InputAction::Cancel),
            };
            out.insert(k, answer);
        }
        Ok(ToolInput {
            answers: out,
            request_state: payload.s,
            expired,
            task_id: payload.t,
        })
    }
}

impl InputTickets {
    /// The ticket of `payload` for `s`.
    fn sign(&self, s: &Subject<'_>, payload: &Payload) -> String {
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(payload).unwrap_or_default());
        let tag = hex::encode(self.mac(s, &payload).finalize().into_bytes());
        format!("{PREFIX}{payload}.{tag}")
    }

    /// The payload of `ticket` when it was made for `s` and not altered.
    fn verified(&self, s: &Subject<'_>, ticket: &str) -> Result<Payload, Failure> {
        let refused = || {
            Failure::Denied("the ticket does not belong to this call, user and conversation".into())
        };
        let rest = ticket.strip_prefix(PREFIX).ok_or_else(refused)?;
        let (payload, tag) = rest.split_once('.').ok_or_else(refused)?;
        let tag = hex::decode(tag).map_err(|_| refused())?;
        self.mac(s, payload)
            .verify_slice(&tag)
            .map_err(|_| refused())?;
        URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(refused)
    }

    /// The task id of a task's `ticket` made for `s`: only the user (or the model's loop)
    /// polls or cancels a task, only its own, and not after the ticket expired.
    pub(crate) fn open_task(
        &self,
        scope: &Scope,
        s: &Subject<'_>,
        ticket: &str,
    ) -> Result<String, Failure> {
        if scope.role() == Role::App {
            return Err(Failure::Denied("a view does not poll tasks".into()));
        }
        let payload = self.verified(s, ticket)?;
        if !payload.k.is_empty() {
            return Err(Failure::Invalid(
                "that ticket is a request for input's, not a task's".into(),
            ));
        }
        if now_ms() > payload.e {
            return Err(Failure::Invalid("the task's ticket has expired".into()));
        }
        payload
            .t
            .ok_or_else(|| Failure::Invalid("that ticket is not a task's".into()))
    }
}

/// An answer as it goes to the server: content only with `accept`, and a flat object of
/// primitives (strings, numbers, booleans, or a list of strings for a multiple choice).
fn checked(a: &InputAnswer) -> Result<InputAnswer, Failure> {
    if a.action != InputAction::Accept {
        return Ok(InputAnswer::new(a.action));
    }
    if let Some(c) = &a.content {
        for (k, v) in c {
            let ok = match v {
                Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
                Value::Array(items) => items.iter().all(Value::is_string),
                _ => false,
            };
            if !ok {
                return Err(Failure::Invalid(format!(
                    "the answer's field {k:?} must be a string, number, boolean or list of strings"
                )));
            }
        }
    }
    Ok(a.clone())
}

/// The host of a URL a server asks the user to open, as the consent card shows it; `None`
/// unless it is `https` or `http` with a host (a `javascript:` or `data:` URL is never shown).
fn url_host(url: &str) -> Option<String> {
    let u: http::Uri = url.parse().ok()?;
    if !matches!(u.scheme_str(), Some("https" | "http")) {
        return None;
    }
    u.host().filter(|h| !h.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests;
