//! MCP Apps metadata (`_meta.ui`) as the hub reads it: a tool's `resourceUri` (or the
//! deprecated flat `ui/resourceUri` key) and `visibility`, and a `ui://` resource's CSP,
//! permissions, domain and `prefersBorder` — on the listing entry and on the read content,
//! where the content wins field by field.

use lmchatkit_protocol::{UiResourceMeta, UiToolMeta};
use serde_json::Value;

/// A tool's `_meta.ui`: `_meta.ui` (`resourceUri`, `visibility`), else the legacy flat
/// `_meta["ui/resourceUri"]`. A resource URI that is not `ui://…` is ignored.
pub(crate) fn ui_tool_meta(meta: Option<&Value>) -> Option<UiToolMeta> {
    let meta = meta?.as_object()?;
    let mut ui: UiToolMeta = meta
        .get("ui")
        .and_then(|u| serde_json::from_value(u.clone()).ok())
        .unwrap_or_default();
    if ui.resource_uri.is_none() {
        ui.resource_uri = meta
            .get("ui/resourceUri")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    if ui
        .resource_uri
        .as_deref()
        .is_some_and(|u| !u.starts_with("ui://"))
    {
        tracing::warn!(uri = ?ui.resource_uri, "ignoring a tool's _meta.ui.resourceUri that is not ui://");
        ui.resource_uri = None;
    }
    (ui.resource_uri.is_some() || !ui.visibility.is_empty()).then_some(ui)
}

/// A resource's `_meta.ui` (CSP, permissions, domain, prefersBorder).
pub(crate) fn ui_resource_meta(meta: Option<&Value>) -> Option<UiResourceMeta> {
    let ui = meta?.get("ui")?;
    serde_json::from_value(ui.clone()).ok()
}

/// Field-wise merge: the content-level meta wins over the listing-level one.
pub(crate) fn merge_ui(
    listing: Option<UiResourceMeta>,
    content: Option<UiResourceMeta>,
) -> Option<UiResourceMeta> {
    match (listing, content) {
        (None, c) => c,
        (l, None) => l,
        (Some(l), Some(c)) => Some(UiResourceMeta {
            csp: c.csp.or(l.csp),
            permissions: c.permissions.or(l.permissions),
            domain: c.domain.or(l.domain),
            prefers_border: c.prefers_border.or(l.prefers_border),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_ui_meta_both_forms() {
        let nested = json!({"ui": {"resourceUri": "ui://a/b.html", "visibility": ["app"]}});
        let ui = ui_tool_meta(Some(&nested)).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/b.html"));
        assert_eq!(ui.visibility, vec![lmchatkit_protocol::Visibility::App]);
        let flat = json!({"ui/resourceUri": "ui://flat"});
        assert_eq!(
            ui_tool_meta(Some(&flat)).unwrap().resource_uri.as_deref(),
            Some("ui://flat")
        );
        assert!(ui_tool_meta(Some(&json!({"ui": {"resourceUri": "https://x"}}))).is_none());
        assert!(ui_tool_meta(Some(&json!({"other": 1}))).is_none());
    }

    #[test]
    fn content_meta_wins_field_wise() {
        let l = ui_resource_meta(Some(&json!({"ui": {"prefersBorder": true, "domain": "a"}})));
        let c = ui_resource_meta(Some(&json!({"ui": {"prefersBorder": false}})));
        let m = merge_ui(l, c).unwrap();
        assert_eq!(m.prefers_border, Some(false));
        assert_eq!(m.domain.as_deref(), Some("a"));
    }
}
