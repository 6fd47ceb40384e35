//! The host context a view gets in `ui/initialize` and `host-context-changed`: the resolved
//! theme, the spec's CSS variables filled from the UI's own theme, locale, time zone, platform
//! and the inline height limit.

use serde_json::{Map, Value, json};
use wasm_bindgen::JsCast;

use crate::state::Theme;

/// The tallest an inline view grows (CSS px).
pub const MAX_INLINE_HEIGHT: f64 = 1_600.0;

/// Spec style variables and the UI custom property each is read from.
pub const STYLE_VARIABLES: [(&str, &str); 13] = [
    ("--color-background-primary", "--lmck-bg"),
    ("--color-background-secondary", "--lmck-surface"),
    ("--color-background-tertiary", "--lmck-surface-2"),
    ("--color-text-primary", "--lmck-fg"),
    ("--color-text-secondary", "--lmck-muted"),
    ("--color-text-info", "--lmck-accent"),
    ("--color-text-danger", "--lmck-danger"),
    ("--color-text-success", "--lmck-ok"),
    ("--color-border-primary", "--lmck-border"),
    ("--color-ring-primary", "--lmck-accent"),
    ("--font-sans", "--lmck-font"),
    ("--font-mono", "--lmck-mono"),
    ("--border-radius-md", "--lmck-radius"),
];

/// `light` or `dark`: the toggle's choice, else the system preference.
pub fn resolved_theme(theme: Theme) -> &'static str {
    match theme {
        Theme::Light => "light",
        Theme::Dark => "dark",
        Theme::System => {
            let dark = web_sys::window()
                .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
                .is_some_and(|m| m.matches());
            if dark { "dark" } else { "light" }
        }
    }
}

/// The font family of a `font` shorthand (`15px/1.5 system-ui, …` → `system-ui, …`).
pub fn font_family(shorthand: &str) -> &str {
    let s = shorthand.trim();
    match s.split_once(' ') {
        Some((size, rest)) if size.starts_with(|c: char| c.is_ascii_digit()) => rest.trim(),
        _ => s,
    }
}

/// The spec's style variables, read from the computed style of `el` (the UI's root).
pub fn style_variables(el: Option<&web_sys::Element>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(style) = el.and_then(|el| web_sys::window()?.get_computed_style(el).ok().flatten())
    else {
        return out;
    };
    for (spec, ours) in STYLE_VARIABLES {
        let v = style.get_property_value(ours).unwrap_or_default();
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        let v = if spec == "--font-sans" {
            font_family(v)
        } else {
            v
        };
        out.insert(spec.to_owned(), json!(v));
    }
    out
}

/// The initial host context of a view of tool `tool` (call `call_id`).
pub fn host_context(
    theme: Theme,
    root: Option<&web_sys::Element>,
    tool: &str,
    call_id: &str,
) -> Value {
    let nav = web_sys::window().map(|w| w.navigator());
    let locale = nav
        .as_ref()
        .and_then(|n| n.language())
        .unwrap_or_else(|| "en".into());
    let user_agent = nav
        .as_ref()
        .and_then(|n| n.user_agent().ok())
        .unwrap_or_default();
    let time_zone =
        js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new())
            .resolved_options()
            .unchecked_into::<js_sys::Object>();
    let time_zone = js_sys::Reflect::get(&time_zone, &"timeZone".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "UTC".into());
    json!({
        // Tools are server-side only: the view learns the name (the schema is left open).
        "toolInfo": {"id": call_id, "tool": {"name": tool, "inputSchema": {"type": "object"}}},
        "theme": resolved_theme(theme),
        "styles": {"variables": Value::Object(style_variables(root))},
        "containerDimensions": {"maxHeight": MAX_INLINE_HEIGHT},
        "locale": locale,
        "timeZone": time_zone,
        "userAgent": user_agent,
        "platform": "web",
    })
}

#[cfg(test)]
mod tests {
    use super::font_family;

    #[test]
    fn font_family_of_the_shorthand() {
        assert_eq!(
            font_family("15px/1.5 system-ui, -apple-system, sans-serif"),
            "system-ui, -apple-system, sans-serif"
        );
        assert_eq!(font_family("ui-monospace, Menlo"), "ui-monospace, Menlo");
    }
}
