//! The caller's model menu and the model a turn runs on: the host's models described by the
//! catalog, plus the catalog's models of providers registered as not configured (see
//! [`crate::models::pick`] for how a turn's model is picked off it). `GET {prefix}/api/models`
//! answers the same menu, so a turn only runs on a model its caller was offered.

use lmchatkit_protocol::Model;

use super::Inputs;
use crate::error::Failure;
use crate::host::{HostError, RequestContext};

/// The caller's model menu: the host's models described by the catalog (provider,
/// reasoning, context window), then the catalog's models of each provider registered as
/// not configured, disabled with the reason.
pub(crate) async fn models(
    inputs: &Inputs<'_>,
    cx: &RequestContext,
) -> Result<Vec<Model>, HostError> {
    let mut menu = undescribed(inputs, cx).await?;
    for m in menu.iter_mut() {
        *m = inputs.catalog.describe(std::mem::take(m));
    }
    Ok(menu)
}

/// The menu with the host's models as it lists them (the catalog's facts not added yet:
/// they change no id and no `configured`, so a turn describes only the model it picked).
async fn undescribed(inputs: &Inputs<'_>, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
    let mut menu = inputs.host.models(cx).await?;
    for p in inputs.catalog.providers().iter().filter(|p| !p.configured) {
        for entry in inputs.catalog.menu() {
            if entry.provider == p.name && !menu.iter().any(|m| m.id == entry.id) {
                let mut m = entry.to_wire();
                m.configured = false;
                m.unavailable_reason = p.reason.clone();
                menu.push(m);
            }
        }
    }
    Ok(menu)
}

/// The model a turn asked for, off the caller's menu ([`crate::models::pick`]: an exact id
/// or an unambiguous bare name, configured; the first configured one when `None`); a 400
/// naming the menu otherwise. When the host cannot list its models, a named model goes
/// through unchecked (logged), and the upstream answers for it.
pub(crate) async fn resolve(
    inputs: &Inputs<'_>,
    cx: &RequestContext,
    asked: Option<&str>,
) -> Result<Model, Failure> {
    let asked = asked.map(str::trim).filter(|m| !m.is_empty());
    let menu = match (undescribed(inputs, cx).await, asked) {
        (Ok(menu), _) => menu,
        (Err(e), Some(id)) => {
            tracing::warn!(error = %e, model = id, "listing the models failed; the model is not checked");
            return Ok(inputs.catalog.describe(Model::new(id)));
        }
        (Err(e), None) => return Err(e.into()),
    };
    match crate::models::pick(&menu, asked) {
        Ok(m) => Ok(inputs.catalog.describe(m.clone())),
        Err(e) => Err(Failure::Invalid(e.to_string())),
    }
}
