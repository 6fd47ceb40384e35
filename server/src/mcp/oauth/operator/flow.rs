//! A sign-in from the page's post to the callback: discovery, the client (metadata document or
//! registration), the authorization URL ([`OperatorOAuth::start`]), then the code exchange with
//! the `iss` check ([`OperatorOAuth::finish`]). The rules are the module's ([`super`]).

use rmcp::transport::StateStore;
use rmcp::transport::auth::{AuthError, InMemoryStateStore};

use super::{
    Grant, OPERATOR_CALLBACK_PATH, OperatorOAuth, Pending, Record, STATE_AAD, SignInError,
    StateToken, now_ms,
};
use crate::host::Principal;
use crate::mcp::oauth::{Callback, Client, cimd, describe, exchange_code, obtain_client};

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
        let upstream = |reason: String| SignInError::Upstream {
            server: server.to_owned(),
            reason,
        };
        let redirect_uri = format!("{origin}{prefix}{OPERATOR_CALLBACK_PATH}");
        let document = cimd::document_url(origin, prefix);
        let started = async {
            let mut manager = self.manager(&url).await?;
            let states = InMemoryStateStore::new();
            manager.set_state_store(states.clone());
            let resolution = manager
                .resolve_metadata()
                .await
                .map_err(|e| upstream(describe(&e, None)))?;
            if !resolution.source.is_discovered() {
                return Err(SignInError::NotOAuth(server.to_owned()));
            }
            let metadata = resolution.metadata;
            let issuer = metadata.issuer.clone();
            manager.set_metadata(metadata.clone());
            let scopes = manager.select_initial_scopes(&[]).await;
            let config = obtain_client(
                &mut manager,
                &metadata,
                &redirect_uri,
                Some(&document),
                &scopes,
            )
            .await
            .map_err(|e| upstream(describe(&e, None)))?;
            let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let at = manager
                .get_authorization_url(&refs)
                .await
                .map_err(|e| upstream(describe(&e, None)))?;
            let client = Client {
                client_id: config.client_id,
                client_secret: config.client_secret,
                redirect_uri: redirect_uri.clone(),
                scopes,
                issuer,
            };
            Ok((at, client, states))
        };
        let (at, client, states) = self.timed(server, started).await?;
        // The browser opens it: an http(s) page under the policy's URL rules (no `javascript:`
        // from a hostile authorization server's metadata).
        let mut at = self
            .inner
            .policy
            .clone()
            .with_allowed_host(
                reqwest::Url::parse(&url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default(),
            )
            .check_url(&at)
            .map_err(|e| upstream(format!("its authorization page is refused: {e}")))?;
        let rmcp_state = at
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .ok_or_else(|| upstream("the authorization URL has no state".into()))?;
        let state = states
            .load(&rmcp_state)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| {
                SignInError::Internal("the sign-in's PKCE verifier is missing".into())
            })?;
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let ttl = i64::try_from(crate::mcp::oauth::SIGN_IN_TTL.as_millis()).unwrap_or(i64::MAX);
        let expires_at = now_ms().saturating_add(ttl);
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
        let pairs: Vec<(String, String)> = at
            .query_pairs()
            .map(|(k, v)| match k.as_ref() {
                "state" => (k.into_owned(), token.clone()),
                _ => (k.into_owned(), v.into_owned()),
            })
            .collect();
        at.query_pairs_mut().clear().extend_pairs(pairs);
        let pending = Pending {
            nonce,
            expires_at,
            client,
            state,
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
        Ok(at.to_string())
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
        let upstream = |reason: String| SignInError::Upstream {
            server: server.to_owned(),
            reason,
        };
        let mut manager = self.manager(url).await?;
        let resolution = manager
            .resolve_metadata()
            .await
            .map_err(|e| upstream(describe(&e, None)))?;
        if !resolution.source.is_discovered() || resolution.metadata.issuer != pending.client.issuer
        {
            return Err(upstream(
                "the server names another authorization server than when the sign-in started"
                    .into(),
            ));
        }
        manager.set_metadata(resolution.metadata.clone());
        manager
            .configure_client(pending.client.config())
            .map_err(|e| upstream(describe(&e, None)))?;
        let credentials = match exchange_code(manager, pending.state, key, code, iss).await {
            Ok(c) => c,
            Err(
                e @ (AuthError::AuthorizationServerMismatch { .. }
                | AuthError::AuthorizationServerMissingIssuer { .. }),
            ) => {
                tracing::warn!(server, error = %describe(&e, Some(code)), "an authorization response's `iss` is not its authorization server's; refused");
                return Err(SignInError::Refused(
                    "the response does not come from the server's authorization server \
                     (its `iss` is another issuer's, or missing; RFC 9207)"
                        .into(),
                ));
            }
            Err(e) => return Err(upstream(describe(&e, Some(code)))),
        };
        Ok(Grant {
            client: pending.client,
            metadata: resolution.metadata,
            credentials,
        })
    }
}
