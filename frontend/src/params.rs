//! The six model-parameter fields of the picker and the edit modal, and how they overlay a
//! persona's params (empty = the persona's or the model's default).

use lmchatkit_protocol::Params;

/// The six parameter fields of the picker and the edit modal: (key, label, step). The step is
/// the input's attribute text as written (formatting an `f64` would link the float printer into
/// the first load for six constants).
pub const PARAM_FIELDS: [(&str, &str, &str); 6] = [
    ("temperature", "Temperature", "0.05"),
    ("top_p", "Top P", "0.05"),
    ("top_k", "Top K", "1"),
    ("repeat_penalty", "Repeat penalty", "0.05"),
    ("context_length", "Context length", "512"),
    ("max_tokens", "Output length", "256"),
];

/// The six fields as text (empty = the persona's or the model's default).
pub type ParamFields = [String; 6];

/// Fills the fields from params (e.g. a persona's).
pub fn fields_from_params(params: &Params) -> ParamFields {
    PARAM_FIELDS.map(|(k, _, _)| match params.get(k) {
        Some(serde_json::Value::Number(n)) => n.to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => String::new(),
    })
}

/// The base params overlaid with the non-empty fields, parsed as numbers (integers stay
/// integers); unparsable fields are ignored.
pub fn params_from_fields(base: &Params, fields: &ParamFields) -> Params {
    let mut out = base.clone();
    for ((k, _, _), v) in PARAM_FIELDS.iter().zip(fields) {
        let v = v.trim();
        if v.is_empty() {
            out.remove(*k);
            continue;
        }
        let num = if let Ok(i) = v.parse::<i64>() {
            Some(serde_json::Value::from(i))
        } else {
            crate::text::parse_decimal(v)
                .and_then(serde_json::Number::from_f64)
                .map(serde_json::Value::Number)
        };
        if let Some(n) = num {
            out.insert((*k).to_owned(), n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_overlay_the_persona() {
        let mut base = Params::new();
        base.insert("temperature".into(), 0.2.into());
        base.insert("reasoning_effort".into(), "low".into());
        let mut fields = fields_from_params(&base);
        assert_eq!(fields[0], "0.2");
        fields[0] = "0.9".into();
        fields[2] = "40".into();
        fields[5] = "abc".into();
        let p = params_from_fields(&base, &fields);
        assert_eq!(p["temperature"], 0.9);
        assert_eq!(p["top_k"], 40);
        assert_eq!(p["reasoning_effort"], "low");
        assert!(!p.contains_key("max_tokens"));
        fields[0].clear();
        assert!(!params_from_fields(&base, &fields).contains_key("temperature"));
    }
}
