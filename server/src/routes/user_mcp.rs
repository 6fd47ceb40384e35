//! `{prefix}/api/mcp/servers` (GET list, POST create) and `{prefix}/api/mcp/servers/{slug}`
//! (GET, PATCH, DELETE; POST `{slug}/refresh`, `{slug}/accept` and `{slug}/oauth`): each
//! signed-in user's own MCP servers. The rules are [`crate::user_mcp`]'s (and OAuth's,
//! [`crate::user_mcp::oauth`]); this file maps them to requests.

use http::StatusCode;
use lmchatkit_protocol::{
    AcceptTools, OAuthStart, OAuthStatus, UserMcpServer, UserMcpServerCreate, UserMcpServerPatch,
};

use crate::api::{ApiError, Response, empty, json};
use crate::host::Principal;
use crate::routes::Endpoint;
use crate::routes::Req;
use crate::state::State;
use crate::user_mcp::oauth::{self, OAuthError};
use crate::user_mcp::{
    MAX_SERVERS, UpstreamError, UserMcp, UserMcpRecord, check_headers, check_name, check_slug,
    check_url, now_ms, snapshot,
};

/// Answers one of the user MCP endpoints.
pub(crate) async fn dispatch(
    state: &State,
    endpoint: Endpoint,
    req: Req,
    param: &str,
) -> Result<Response, ApiError> {
    let Some(um) = state.user_mcp.as_ref() else {
        return Err(ApiError::NotFound("not found".into()));
    };
    if !req.cx.has_principal() {
        return Err(ApiError::Unauthorized(
            "your own MCP servers need a signed-in user".into(),
        ));
    }
    let principal = req.cx.principal();
    um.seed_presets(&principal).await?;
    match endpoint {
        Endpoint::UserMcpList => list(um, &principal).await,
        Endpoint::UserMcpCreate => create(um, &principal, req).await,
        Endpoint::UserMcpGet => Ok(json(
            StatusCode::OK,
            &wire(um, &find(um, &principal, param).await?),
        )),
        Endpoint::UserMcpPatch => patch(um, &principal, req, param).await,
        Endpoint::UserMcpDelete => delete(um, &principal, param).await,
        Endpoint::UserMcpAction => match param.split_once('/') {
            Some((slug, "refresh")) => refresh(um, &principal, slug).await,
            Some((slug, "accept")) => accept(um, &principal, req, slug).await,
            Some((slug, "oauth")) => {
                sign_in(um, &principal, &req.parts, slug, &state.settings.prefix).await
            }
            _ => Err(ApiError::NotFound(
                "POST .../api/mcp/servers/{slug}/refresh, .../{slug}/accept or .../{slug}/oauth"
                    .into(),
            )),
        },
        _ => Err(ApiError::NotFound("not found".into())),
    }
}

fn wire(um: &UserMcp, r: &UserMcpRecord) -> UserMcpServer {
    let mut w = r.to_wire();
    w.preset = um.is_preset(r);
    w
}

/// The principal's server `slug`; 404 for any other (including another principal's).
async fn find(um: &UserMcp, principal: &Principal, slug: &str) -> Result<UserMcpRecord, ApiError> {
    let missing = || ApiError::NotFound(format!("no MCP server {slug:?}"));
    if check_slug(slug).is_err() {
        return Err(missing());
    }
    um.store.get(principal, slug).await?.ok_or_else(missing)
}

async fn list(um: &UserMcp, principal: &Principal) -> Result<Response, ApiError> {
    let list: Vec<UserMcpServer> = um
        .store
        .list(principal)
        .await?
        .iter()
        .map(|r| wire(um, r))
        .collect();
    Ok(json(StatusCode::OK, &list))
}

async fn create(um: &UserMcp, principal: &Principal, mut req: Req) -> Result<Response, ApiError> {
    let body: UserMcpServerCreate = req.json().await?;
    let slug = body.slug.trim();
    check_slug(slug)?;
    let name = match body.name.trim() {
        "" => slug.to_owned(),
        n => check_name(n)?,
    };
    let url = check_url(&um.policy, &body.url)?;
    check_headers(&body.headers)?;
    if um.store.list(principal).await?.len() >= MAX_SERVERS {
        return Err(ApiError::Conflict(format!(
            "you have {MAX_SERVERS} MCP servers, the most allowed; delete one first"
        )));
    }
    let mut record = UserMcpRecord::new(slug, name, url, now_ms());
    record.transport = body.transport;
    record.enabled = body.enabled;
    record.credentials = um.seal_headers(principal, slug, &body.headers)?;
    um.store.create(principal, record.clone()).await?;
    tracing::info!(principal = principal.id(), slug, "user MCP server added");
    Ok(json(StatusCode::CREATED, &wire(um, &record)))
}

async fn patch(
    um: &UserMcp,
    principal: &Principal,
    mut req: Req,
    slug: &str,
) -> Result<Response, ApiError> {
    let mut record = find(um, principal, slug).await?;
    let body: UserMcpServerPatch = req.json().await?;
    if let Some(name) = &body.name {
        record.name = check_name(name)?;
    }
    if let Some(url) = &body.url {
        let url = check_url(&um.policy, url)?;
        if url != record.url && um.is_preset(&record) {
            return Err(ApiError::BadRequest(format!(
                "{slug:?} is the operator's preset: its URL cannot change"
            )));
        }
        if url != record.url {
            // The last review came from the old endpoint, and its tokens are for it only.
            record.pending.clear();
            record.url = url;
            record.oauth = None;
            record.oauth_pending = None;
            record.oauth_status = OAuthStatus::NotUsed;
        }
    }
    if let Some(headers) = &body.headers {
        check_headers(headers)?;
        record.credentials = um.seal_headers(principal, slug, headers)?;
    }
    if let Some(on) = body.enabled {
        record.enabled = on;
    }
    record.updated_at = now_ms();
    save(um, principal, &record).await?;
    Ok(json(StatusCode::OK, &wire(um, &record)))
}

async fn delete(um: &UserMcp, principal: &Principal, slug: &str) -> Result<Response, ApiError> {
    let record = find(um, principal, slug).await?;
    if um.is_preset(&record) {
        return Err(ApiError::Conflict(format!(
            "{slug:?} is the operator's preset and would come back; disable it instead"
        )));
    }
    if !um.store.delete(principal, slug).await? {
        return Err(ApiError::NotFound(format!("no MCP server {slug:?}")));
    }
    tracing::info!(principal = principal.id(), slug, "user MCP server deleted");
    let mut res = http::Response::new(empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    Ok(res)
}

/// Connects, lists, disconnects; keeps the listing as the pending review and answers the diff
/// against the accepted tools. A server that asks for a sign-in is a 403 saying so.
async fn refresh(um: &UserMcp, principal: &Principal, slug: &str) -> Result<Response, ApiError> {
    let record = find(um, principal, slug).await?;
    // The operator's policy may have changed since the URL was stored.
    check_url(&um.policy, &record.url)?;
    let listed = match um.list_upstream(principal, &record).await {
        Ok(listed) => listed,
        Err(UpstreamError::SignInRequired) => {
            return Err(OAuthError::SignInRequired(slug.to_owned()).into());
        }
        Err(UpstreamError::Failed(e)) => {
            return Err(ApiError::BadGateway(format!("MCP server {slug:?}: {e}")));
        }
    };
    // Read again: the connection may have stored a refreshed token.
    let mut now = find(um, principal, slug).await?;
    if now.url != record.url {
        return Err(ApiError::Conflict(format!(
            "the MCP server {slug:?} was changed meanwhile; refresh again"
        )));
    }
    let review = snapshot::review(&now.tools, &listed);
    now.pending = listed;
    save(um, principal, &now).await?;
    Ok(json(StatusCode::OK, &review))
}

/// Starts an OAuth sign-in: answers the authorization page to open.
async fn sign_in(
    um: &UserMcp,
    principal: &Principal,
    parts: &http::request::Parts,
    slug: &str,
    prefix: &str,
) -> Result<Response, ApiError> {
    let record = find(um, principal, slug).await?;
    check_url(&um.policy, &record.url)?;
    let redirect_uri = oauth::redirect_uri(parts, prefix)?;
    let document = oauth::document_url(parts, prefix)?;
    let url = um
        .start_sign_in(principal, &record, &redirect_uri, Some(&document))
        .await?;
    Ok(json(StatusCode::OK, &OAuthStart::new(url)))
}

async fn accept(
    um: &UserMcp,
    principal: &Principal,
    mut req: Req,
    slug: &str,
) -> Result<Response, ApiError> {
    let mut record = find(um, principal, slug).await?;
    let body: AcceptTools = req.json().await?;
    snapshot::accept(&mut record, body)?;
    record.updated_at = now_ms();
    save(um, principal, &record).await?;
    Ok(json(StatusCode::OK, &wire(um, &record)))
}

/// Writes `record` back; 404 when it was deleted meanwhile, 409 when it changed.
async fn save(um: &UserMcp, principal: &Principal, record: &UserMcpRecord) -> Result<(), ApiError> {
    match um.store.update(principal, record.clone()).await? {
        true => Ok(()),
        false => Err(ApiError::NotFound(format!(
            "no MCP server {:?}",
            record.slug
        ))),
    }
}
