//! Who operates the service: the principal named by
//! [`ConfigBuilder::operator`](crate::ConfigBuilder::operator). Only they see the MCP servers'
//! states and set-up problems in `/api/config`, and only they sign the service in to the
//! operator's OAuth MCP servers (`{prefix}/mcp/operator`).
//!
//! Decisions:
//! - **Without a named operator**, everyone sees the states (a single-user app), but signing
//!   the service in is for the anonymous user only, that is a service without an auth layer:
//!   with principals and no operator, any user could otherwise put their own account behind a
//!   server every user's model calls.
//! - **Anyone else** gets a 404 from the operator's routes: their existence is not revealed.

use crate::host::RequestContext;

/// Whether `cx`'s principal sees what only the operator should (servers' states, set-up
/// problems): the named operator, or everyone when none is named.
pub(crate) fn sees_setup(operator: Option<&str>, cx: &RequestContext) -> bool {
    operator.is_none_or(|op| op == cx.principal().id())
}

/// Whether `cx`'s principal may sign the service in to the operator's MCP servers (see the
/// module docs); a 404 or 403 when not.
#[cfg(feature = "mcp")]
pub(crate) fn may_operate(
    operator: Option<&str>,
    cx: &RequestContext,
) -> Result<(), crate::error::Failure> {
    use crate::error::Failure;
    match operator {
        Some(op) if cx.has_principal() && op == cx.principal().id() => Ok(()),
        Some(_) => Err(Failure::NotFound("not found".into())),
        None if !cx.has_principal() => Ok(()),
        None => Err(Failure::Denied(
            "only the operator signs the service in to its MCP servers, and none is named \
             (ConfigBuilder::operator, the app's --operator)"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "mcp")]
    use crate::error::Failure;
    use crate::host::Principal;

    #[test]
    #[cfg(feature = "mcp")]
    fn only_the_named_operator_operates_and_others_get_a_404() {
        let root = RequestContext::new(Principal::new("root"));
        let bob = RequestContext::new(Principal::new("bob"));
        let nobody = RequestContext::default();
        assert!(may_operate(Some("root"), &root).is_ok());
        assert!(matches!(
            may_operate(Some("root"), &bob),
            Err(Failure::NotFound(_))
        ));
        assert!(matches!(
            may_operate(Some("root"), &nobody),
            Err(Failure::NotFound(_))
        ));
        assert!(sees_setup(Some("root"), &root) && !sees_setup(Some("root"), &bob));
    }

    #[test]
    #[cfg(feature = "mcp")]
    fn without_an_operator_only_a_service_without_principals_operates() {
        let bob = RequestContext::new(Principal::new("bob"));
        assert!(may_operate(None, &RequestContext::default()).is_ok());
        assert!(matches!(may_operate(None, &bob), Err(Failure::Denied(_))));
        assert!(sees_setup(None, &bob));
    }
}
