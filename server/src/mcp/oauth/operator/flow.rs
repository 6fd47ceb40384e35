//! A sign-in from the page's post to the callback: discovery, the client (metadata document or
//! registration), the authorization URL ([`OperatorOAuth::start`]), then the code exchange with
//! the `iss` check ([`OperatorOAuth::finish`]). The rules are the module's ([`super`]).

use super::{
    Grant, OPERATOR_CALLBACK_PATH, OperatorOAuth, Pending, Record, STATE_AAD, SignInError,
    StateToken, now_ms,
};
use crate::host::Principal;
use crate::mcp::oauth::{Callback, cimd, steps};

impl OperatorOAuth {
    /// Starts `principal`'s sign-in to `server` from a page at `origin` under `prefix`: the
    /// authorization page's URL.
    pub(crate) async fn start(
        &self,
        principal: &Principal,
        server: &str,
        origin: &str,
        prefix: &str,
    ) -> Result<String, SignInError> {
        let url = self.configured(server)?;
        let redirect_uri = format!("{origin}{prefix}{OPERATOR_CALLBACK_PATH}");
        let document = cimd::document_url(origin, prefix);
        let manager = self.manager(&url).await?;
        let begun = self
            .timed(server, async {
                steps::begin(manager, &redirect_uri, Some(&document))
                    .await
                    .map_err(|e| self.step_error(server, e))
            })
            .await?;
        // The browser opens it: an http(s) page under the policy's URL rules (no `javascript:`
        // from a hostile authorization server's metadata).
        let at =
            self.policy_for(&url)
                .check_url(&begun.url)
                .map_err(|e| SignInError::Upstream {
                    server: server.to_owned(),
                    reason: format!("its authorization page is refused: {e}"),
                })?;
        let (nonce, expires_at) = steps::nonce_and_expiry();
        let token = self.seal_json(
            &StateToken {
                principal: principal.id().to_owned(),
                server: server.to_owned(),
                nonce: nonce.clone(),
                expires_at,
            },
            STATE_AAD,
        )?;
        // Our state in place of rmcp's: the callback finds the sign-in from it.
        let at = steps::with_state(at, &token);
        let pending = Pending {
            nonce,
            expires_at,
            client: begun.client,
            state: begun.state,
        };
        {
            let _serialised = self.inner.lock.lock().await;
            let record = match self.load(server).await? {
                Some(mut r) if r.url == url => {
                    r.pending = Some(pending);
                    r
                }
                _ => Record {
                    url,
                    grant: None,
                    pending: Some(pending),
                },
            };
            self.save(server, &record).await?;
        }
        tracing::info!(
            principal = principal.id(),
            server,
            "the operator's sign-in to an MCP server started"
        );
        Ok(at)
    }

    /// Ends a sign-in: checks the state (`principal`'s, not expired, the server's pending
    /// one), consumes it, exchanges the code (checking `iss`) and stores the grant. The
    /// server's name.
    pub(crate) async fn finish(
        &self,
        principal: &Principal,
        callback: Callback,
    ) -> Result<String, SignInError> {
        let sealed = callback
            .state
            .as_deref()
            .ok_or_else(|| SignInError::BadCallback("the callback carries no state".into()))?;
        let token: StateToken = self
            .open_json(sealed, STATE_AAD)
            .map_err(|_| SignInError::UnknownState)?;
        if principal.id() != token.principal {
            tracing::warn!(
                principal = principal.id(),
                server = %token.server,
                "an operator's sign-in callback carried someone else's state; refused"
            );
            return Err(SignInError::OtherPrincipal);
        }
        if token.expires_at < now_ms() {
            return Err(SignInError::Expired);
        }
        let server = token.server.as_str();
        let url = self.configured(server)?;
        // Good once: the pending sign-in is cleared before the code is exchanged.
        let pending = {
            let _serialised = self.inner.lock.lock().await;
            let mut record = self
                .load(server)
                .await?
                .filter(|r| r.url == url)
                .ok_or(SignInError::UnknownState)?;
            let pending = record
                .pending
                .take()
                .filter(|p| p.nonce == token.nonce)
                .ok_or(SignInError::UnknownState)?;
            self.save(server, &record).await?;
            pending
        };
        if pending.expires_at < now_ms() {
            return Err(SignInError::Expired);
        }
        if let Some(refusal) = callback.refusal() {
            return Err(SignInError::Refused(refusal));
        }
        let code = callback
            .code
            .as_deref()
            .ok_or_else(|| SignInError::BadCallback("the callback carries no code".into()))?;
        let grant = self
            .timed(
                server,
                self.exchange(
                    server,
                    &url,
                    pending,
                    &token.nonce,
                    code,
                    callback.iss.as_deref(),
                ),
            )
            .await?;
        {
            let _serialised = self.inner.lock.lock().await;
            let mut record = match self.load(server).await? {
                Some(r) if r.url == url => r,
                Some(_) => return Err(SignInError::Changed(server.to_owned())),
                None => Record {
                    url: url.clone(),
                    grant: None,
                    pending: None,
                },
            };
            record.grant = Some(grant);
            self.save(server, &record).await?;
        }
        self.inner
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tracing::info!(
            principal = principal.id(),
            server,
            "the operator signed the service in to an MCP server"
        );
        Ok(server.to_owned())
    }

    async fn exchange(
        &self,
        server: &str,
        url: &str,
        pending: Pending,
        key: &str,
        code: &str,
        iss: Option<&str>,
    ) -> Result<Grant, SignInError> {
        let manager = self.manager(url).await?;
        let (metadata, credentials) =
            steps::finish(manager, &pending.client, pending.state, key, code, iss)
                .await
                .map_err(|e| self.step_error(server, e))?;
        Ok(Grant {
            client: pending.client,
            metadata,
            credentials,
        })
    }
}
