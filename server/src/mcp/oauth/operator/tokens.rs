//! Tokens in use: [`OperatorOAuth::token`] opens the grant for one connection of the hub,
//! refreshing it first when it falls due or the server rejected it. The rules are the
//! module's ([`super`]).

use super::{Grant, OperatorOAuth, Record, SignInError, Token};
use crate::mcp::oauth::steps::{self, Step};
use crate::mcp::oauth::{access_token, due, now_secs, renewable};

impl OperatorOAuth {
    /// The access token for a connection to `server`: `None` when the service is not signed in
    /// to it. A token about to expire is refreshed first, and so is one the server rejected
    /// (`rejected`: the token it rejected); [`SignInError::SignInRequired`] when it cannot be.
    pub(crate) async fn token(
        &self,
        server: &str,
        rejected: Option<&str>,
    ) -> Result<Option<Token>, SignInError> {
        let url = self.configured(server)?;
        let Some(grant) = self
            .load(server)
            .await?
            .filter(|r| r.url == url)
            .and_then(|r| r.grant)
        else {
            return Ok(None);
        };
        let stale =
            rejected.is_some_and(|t| access_token(&grant.credentials).as_deref() == Some(t));
        if !stale && !due(&grant.credentials, now_secs()) {
            return Ok(Token::of(&grant));
        }
        self.timed(server, self.refresh(server, &url, rejected))
            .await
            .map(Some)
    }

    /// Refreshes the grant of `server` (once at a time: a refresh that waited finds the token
    /// another one stored).
    async fn refresh(
        &self,
        server: &str,
        url: &str,
        rejected: Option<&str>,
    ) -> Result<Token, SignInError> {
        let _serialised = self.inner.lock.lock().await;
        let Some(mut record) = self.load(server).await?.filter(|r| r.url == url) else {
            return Err(SignInError::SignInRequired(server.to_owned()));
        };
        let Some(grant) = record.grant.take() else {
            return Err(SignInError::SignInRequired(server.to_owned()));
        };
        let sent = access_token(&grant.credentials);
        let stale = rejected.is_some_and(|t| sent.as_deref() == Some(t));
        if !stale && !due(&grant.credentials, now_secs()) {
            return Token::of(&grant).ok_or_else(|| SignInError::SignInRequired(server.to_owned()));
        }
        if !renewable(&grant.credentials) {
            return Err(self.ended(server, record).await);
        }
        let manager = self.manager(url).await?;
        let (metadata, credentials) =
            match steps::renew(manager, &grant.client, grant.credentials).await {
                Ok(renewed) => renewed,
                Err(Step::Ended) => return Err(self.ended(server, record).await),
                Err(e) => return Err(self.step_error(server, e)),
            };
        let grant = Grant {
            client: grant.client,
            metadata,
            credentials,
        };
        let token = Token::of(&grant);
        record.grant = Some(grant);
        self.save(server, &record).await?;
        tracing::info!(server, "the operator's MCP token was refreshed");
        token.ok_or_else(|| SignInError::SignInRequired(server.to_owned()))
    }

    /// Drops the grant of `server` (kept in `record`, its grant taken): the operator must sign
    /// in again.
    async fn ended(&self, server: &str, mut record: Record) -> SignInError {
        record.grant = None;
        if let Err(e) = self.save(server, &record).await {
            return e;
        }
        tracing::warn!(
            server,
            "the operator's MCP sign-in ended; the operator must sign in again"
        );
        SignInError::SignInRequired(server.to_owned())
    }
}
