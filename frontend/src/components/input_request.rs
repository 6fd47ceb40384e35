//! The card of a tool call that waits for the user's input (MCP elicitation): a form built from
//! the server's restricted JSON Schema, or a consent card for a URL. Submit, Decline and Cancel
//! make the call again with the answers ([`crate::turn::answer_input`]).
//!
//! Decisions:
//! - **Everything the server sent is text**: the message, titles, descriptions and enum labels
//!   are shown as text, never as markup.
//! - **Fields**: strings (`format` `email`, `uri`, `date`, `date-time` as the matching input
//!   types; `minLength`/`maxLength`), numbers and integers (`minimum`/`maximum`), booleans
//!   (a checkbox), single choice (`enum`, or `oneOf` of `const` with `title`: a select) and
//!   multiple choice (an array whose `items` carry the choices: checkboxes). Defaults fill the
//!   form; required fields are marked and checked before anything is sent. A property of
//!   another shape shows as a text field, and its value is sent as text.
//! - **A URL is never opened without the user's click**: the card shows the whole URL and, apart,
//!   its host (where it leads); "Open" opens it in a new tab with `noopener,noreferrer` and
//!   answers `accept`. Only `http(s)` URLs reach the card (the service refuses others).
//! - **Expiry**: the card says when the request expires; an answer after it reaches the tool as
//!   `cancel` (the service decides, not the tab's clock).

use std::collections::BTreeMap;

use leptos::prelude::*;
use lmchatkit_protocol::{InputAction, InputAnswer, InputKind, InputQuestion, ToolCall};
use serde_json::{Map, Value};

use crate::components::icon::mcp_icon;
use crate::components::store;
use crate::state::{Chat, UiMessage};
use crate::turn::answer_input;

/// One field of a form, read off its schema.
#[derive(Clone, Debug, PartialEq)]
struct Field {
    name: String,
    title: String,
    description: Option<String>,
    required: bool,
    kind: FieldKind,
    default: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
enum FieldKind {
    /// An `<input>` of this type (`text`, `email`, `url`, `date`, `datetime-local`).
    Text {
        input_type: &'static str,
        min_len: Option<u64>,
        max_len: Option<u64>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    /// A single choice: (value, label).
    Choice(Vec<(String, String)>),
    /// Several choices: (value, label).
    Multi(Vec<(String, String)>),
}

/// The choices of a schema: `enum` (labels from `enumNames` when given) or `oneOf`/`anyOf` of
/// `const` with `title`.
fn choices(schema: &Value) -> Option<Vec<(String, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let v = v.as_str()?.to_owned();
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| v.clone(), str::to_owned);
                    Some((v, label))
                })
                .collect(),
        );
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        options
            .iter()
            .filter_map(|o| {
                let v = o.get("const")?.as_str()?.to_owned();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| v.clone(), str::to_owned);
                Some((v, label))
            })
            .collect(),
    )
}

/// The fields of a form schema, in its order.
fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let ty = p.get("type").and_then(Value::as_str).unwrap_or("string");
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            let len = |k: &str| p.get(k).and_then(Value::as_u64);
            let kind = match ty {
                "boolean" => FieldKind::Bool,
                "number" | "integer" => FieldKind::Number {
                    integer: ty == "integer",
                    min: num("minimum"),
                    max: num("maximum"),
                },
                "array" => FieldKind::Multi(p.get("items").and_then(choices).unwrap_or_default()),
                _ => match choices(p) {
                    Some(c) => FieldKind::Choice(c),
                    None => FieldKind::Text {
                        input_type: match p.get("format").and_then(Value::as_str) {
                            Some("email") => "email",
                            Some("uri") => "url",
                            Some("date") => "date",
                            Some("date-time") => "datetime-local",
                            _ => "text",
                        },
                        min_len: len("minLength"),
                        max_len: len("maxLength"),
                    },
                },
            };
            Field {
                name: name.clone(),
                title: p
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| name.clone(), str::to_owned),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: required.contains(&name.as_str()),
                kind,
                default: p.get("default").cloned(),
            }
        })
        .collect()
}

/// The form's values as the answer's content: empty optional fields are left out; numbers are
/// numbers (integers whole). `Err` names the first required field left empty or a number that
/// is not one.
fn content(
    fields: &[Field],
    values: &BTreeMap<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for f in fields {
        let v = values.get(&f.name).cloned().unwrap_or(Value::Null);
        let v = match (&f.kind, v) {
            (FieldKind::Number { integer, .. }, Value::String(s)) if !s.trim().is_empty() => {
                let n = crate::text::parse_decimal(s.trim())
                    .ok_or_else(|| format!("{} must be a number", f.title))?;
                if *integer {
                    if n.fract() != 0.0 {
                        return Err(format!("{} must be a whole number", f.title));
                    }
                    Value::from(n as i64)
                } else {
                    Value::from(n)
                }
            }
            (_, Value::String(s)) if s.is_empty() => Value::Null,
            (FieldKind::Multi(_), Value::Array(a)) if a.is_empty() => Value::Null,
            (_, v) => v,
        };
        if v.is_null() {
            if f.required && !matches!(f.kind, FieldKind::Bool) {
                return Err(format!("{} is required", f.title));
            }
            if matches!(f.kind, FieldKind::Bool) {
                out.insert(f.name.clone(), Value::Bool(false));
            }
            continue;
        }
        out.insert(f.name.clone(), v);
    }
    Ok(out)
}

/// The values a form starts with: its defaults.
fn defaults(fields: &[Field]) -> BTreeMap<String, Value> {
    fields
        .iter()
        .filter_map(|f| {
            let d = f.default.clone()?;
            let d = match (&f.kind, d) {
                (FieldKind::Number { .. }, Value::Number(n)) => Value::String(n.to_string()),
                (_, d) => d,
            };
            Some((f.name.clone(), d))
        })
        .collect()
}

/// Asks the user what the tool needs.
#[component]
pub fn InputCard(call: ToolCall, chat: Chat, ui: UiMessage) -> impl IntoView {
    let store = store();
    let Some(request) = call.input_request.clone() else {
        return ().into_any();
    };
    let forms: Vec<(InputQuestion, Vec<Field>)> = request
        .questions
        .iter()
        .map(|q| match &q.kind {
            InputKind::Form { schema } => (q.clone(), fields(schema)),
            InputKind::Url { .. } => (q.clone(), Vec::new()),
        })
        .collect();
    let values: RwSignal<BTreeMap<String, BTreeMap<String, Value>>> = RwSignal::new(
        forms
            .iter()
            .map(|(q, f)| (q.key.clone(), defaults(f)))
            .collect(),
    );
    let opened: RwSignal<Vec<String>> = RwSignal::new(Vec::new());
    let problem: RwSignal<Option<String>> = RwSignal::new(None);
    let sent = RwSignal::new(false);
    let send = {
        let (chat, ui, id, forms) = (chat.clone(), ui.clone(), call.id.clone(), forms.clone());
        move |action: InputAction| {
            if sent.get_untracked() {
                return;
            }
            let mut answers = BTreeMap::new();
            for (q, f) in &forms {
                let answer = match (&q.kind, action) {
                    (InputKind::Form { .. }, InputAction::Accept) => {
                        let v =
                            values.with_untracked(|v| v.get(&q.key).cloned().unwrap_or_default());
                        match content(f, &v) {
                            Ok(c) => InputAnswer::accept(c),
                            Err(e) => {
                                problem.set(Some(e));
                                return;
                            }
                        }
                    }
                    (InputKind::Url { .. }, InputAction::Accept) => {
                        if !opened.with_untracked(|o| o.contains(&q.key)) {
                            continue; // not opened: the tool gets `cancel` for it
                        }
                        InputAnswer::new(InputAction::Accept)
                    }
                    (_, a) => InputAnswer::new(a),
                };
                answers.insert(q.key.clone(), answer);
            }
            sent.set(true);
            answer_input(store, chat.clone(), ui.clone(), id.clone(), answers);
        }
    };
    let only_urls = forms
        .iter()
        .all(|(q, _)| matches!(q.kind, InputKind::Url { .. }));
    let sections = forms
        .into_iter()
        .map(|(q, f)| question_view(q, f, values, opened, send.clone()))
        .collect_view();
    let (s1, s2, s3) = (send.clone(), send.clone(), send);
    let expires = request.expires_at_ms.map(|ms| {
        let d = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
        format!("Expires at {:02}:{:02}", d.get_hours(), d.get_minutes())
    });
    view! {
        <div class="lmck-input-request" role="group"
            aria-label=format!("The tool {} asks for your input", call.name)
            data-call-id=call.id.clone()>
            <p class="lmck-input-from">{mcp_icon("tool", &call.name)}<code>{call.name.clone()}</code> " asks for your input"</p>
            {sections}
            {move || problem.get().map(|p| view! { <p class="lmck-input-problem" role="alert">{p}</p> })}
            <div class="lmck-approval-actions">
                {(!only_urls).then(|| view! {
                    <button class="lmck-btn lmck-primary lmck-input-submit" disabled=move || sent.get()
                        on:click=move |_| s1(InputAction::Accept)>"Submit"</button>
                })}
                <button class="lmck-btn lmck-input-decline" disabled=move || sent.get()
                    on:click=move |_| s2(InputAction::Decline)>"Decline"</button>
                <button class="lmck-btn lmck-input-cancel" disabled=move || sent.get()
                    on:click=move |_| s3(InputAction::Cancel)>"Cancel"</button>
                {expires.map(|e| view! { <span class="lmck-input-expires">{e}</span> })}
            </div>
        </div>
    }
    .into_any()
}

/// One question: its message, then the form's fields or the URL's consent.
fn question_view(
    q: InputQuestion,
    fields: Vec<Field>,
    values: RwSignal<BTreeMap<String, BTreeMap<String, Value>>>,
    opened: RwSignal<Vec<String>>,
    send: impl Fn(InputAction) + Clone + Send + Sync + 'static,
) -> AnyView {
    let key = q.key.clone();
    match q.kind {
        InputKind::Url { url, host } => {
            let open = {
                let (url, key) = (url.clone(), key.clone());
                move |_| {
                    if let Some(w) = web_sys::window() {
                        let _ = w.open_with_url_and_target_and_features(
                            &url,
                            "_blank",
                            "noopener,noreferrer",
                        );
                    }
                    opened.update(|o| o.push(key.clone()));
                    send(InputAction::Accept);
                }
            };
            view! {
                <section class="lmck-input-question lmck-input-url" data-key=key>
                    <p class="lmck-input-message">{q.message}</p>
                    <p>"It asks you to open:"</p>
                    <pre class="lmck-input-full-url">{url}</pre>
                    <p>"on the site " <strong class="lmck-input-host">{host.clone()}</strong></p>
                    <button class="lmck-btn lmck-primary lmck-input-open" on:click=open>
                        {format!("Open {host}")}
                    </button>
                </section>
            }
            .into_any()
        }
        InputKind::Form { .. } => {
            let rows = fields
                .into_iter()
                .map(|f| field_view(&key, f, values))
                .collect_view();
            view! {
                <section class="lmck-input-question lmck-input-form" data-key=key>
                    <p class="lmck-input-message">{q.message}</p>
                    <div class="lmck-input-fields">{rows}</div>
                </section>
            }
            .into_any()
        }
    }
}

/// One field, bound to `values[question][field]`.
fn field_view(
    question: &str,
    f: Field,
    values: RwSignal<BTreeMap<String, BTreeMap<String, Value>>>,
) -> AnyView {
    let (q, name) = (question.to_owned(), f.name.clone());
    let current = {
        let (q, name) = (q.clone(), name.clone());
        move || values.with(|v| v.get(&q).and_then(|m| m.get(&name)).cloned())
    };
    let set = {
        let (q, name) = (q.clone(), name.clone());
        move |v: Value| {
            values.update(|all| {
                all.entry(q.clone()).or_default().insert(name.clone(), v);
            })
        }
    };
    let id = format!("lmck-in-{q}-{name}");
    let input: AnyView = match f.kind.clone() {
        FieldKind::Bool => {
            let checked = {
                let c = current.clone();
                move || c() == Some(Value::Bool(true))
            };
            view! {
                <input type="checkbox" id=id.clone() name=name.clone() prop:checked=checked
                    on:change=move |ev| set(Value::Bool(event_target_checked(&ev))) />
            }
            .into_any()
        }
        FieldKind::Choice(options) => {
            let selected = {
                let c = current.clone();
                move || {
                    c().and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                }
            };
            let options = options
                .into_iter()
                .map(|(v, label)| {
                    let s = selected.clone();
                    let v2 = v.clone();
                    view! { <option value=v selected=move || s() == v2>{label}</option> }
                })
                .collect_view();
            view! {
                <select class="lmck-select" id=id.clone() name=name.clone() required=f.required
                    on:change=move |ev| set(Value::String(event_target_value(&ev)))>
                    <option value="">"—"</option>
                    {options}
                </select>
            }
            .into_any()
        }
        FieldKind::Multi(options) => {
            let boxes = options
                .into_iter()
                .map(|(v, label)| {
                    let (c, set) = (current.clone(), set.clone());
                    let (v1, v2) = (v.clone(), v.clone());
                    let checked = move || {
                        c().and_then(|a| a.as_array().cloned())
                            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(v1.as_str())))
                    };
                    let c2 = current.clone();
                    view! {
                        <label class="lmck-input-multi">
                            <input type="checkbox" value=v prop:checked=checked
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    let mut list: Vec<Value> = c2()
                                        .and_then(|a| a.as_array().cloned())
                                        .unwrap_or_default();
                                    list.retain(|x| x.as_str() != Some(v2.as_str()));
                                    if on {
                                        list.push(Value::String(v2.clone()));
                                    }
                                    set(Value::Array(list));
                                } />
                            {label}
                        </label>
                    }
                })
                .collect_view();
            view! { <div class="lmck-input-choices" id=id.clone()>{boxes}</div> }.into_any()
        }
        FieldKind::Number { integer, min, max } => {
            let value = {
                let c = current.clone();
                move || match c() {
                    Some(Value::String(s)) => s,
                    Some(v @ Value::Number(_)) => v.to_string(),
                    _ => String::new(),
                }
            };
            view! {
                <input type="number" class="lmck-input" id=id.clone() name=name.clone()
                    required=f.required step=if integer { "1" } else { "any" }
                    min=min.map(|m| m.to_string()) max=max.map(|m| m.to_string())
                    prop:value=value
                    on:input=move |ev| set(Value::String(event_target_value(&ev))) />
            }
            .into_any()
        }
        FieldKind::Text {
            input_type,
            min_len,
            max_len,
        } => {
            let value = {
                let c = current.clone();
                move || {
                    c().and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                }
            };
            view! {
                <input type=input_type class="lmck-input" id=id.clone() name=name.clone()
                    required=f.required
                    minlength=min_len.map(|m| m.to_string()) maxlength=max_len.map(|m| m.to_string())
                    prop:value=value
                    on:input=move |ev| set(Value::String(event_target_value(&ev))) />
            }
            .into_any()
        }
    };
    view! {
        <div class="lmck-input-field">
            <label for=id>
                {f.title.clone()}
                {f.required.then(|| view! { <span class="lmck-arg-required" title="required">" *"</span> })}
            </label>
            {input}
            {f.description.map(|d| view! { <p class="lmck-arg-hint">{d}</p> })}
        </div>
    }
    .into_any()
}

/// The card of a call that runs as a task on its server: its state and the server's message,
/// and Cancel. Mounting it makes sure this tab polls the task (after a reload too).
#[component]
pub fn TaskCard(call: ToolCall, chat: Chat, ui: UiMessage) -> impl IntoView {
    let store = store();
    let Some(task) = call.task.clone() else {
        return ().into_any();
    };
    crate::turn::follow_task(store, chat, ui.clone(), call.id.clone());
    let cancelled = RwSignal::new(false);
    let cancel = {
        let (ui, id) = (ui, call.id.clone());
        move |_| {
            cancelled.set(true);
            crate::turn::cancel_task(&ui, &id);
        }
    };
    let state = match task.status {
        lmchatkit_protocol::TaskState::Working => "running",
        lmchatkit_protocol::TaskState::InputRequired => "waiting for input",
        lmchatkit_protocol::TaskState::Completed => "done",
        lmchatkit_protocol::TaskState::Failed => "failed",
        lmchatkit_protocol::TaskState::Cancelled => "cancelled",
    };
    view! {
        <div class="lmck-task" role="status"
            aria-label=format!("The tool {} runs as a task", call.name)
            data-call-id=call.id.clone()>
            <p>{mcp_icon("tool", &call.name)}<code>{call.name.clone()}</code> " runs as a task: "
                <strong class="lmck-task-state">{state}</strong></p>
            {task.status_message.map(|m| view! { <p class="lmck-task-message">{m}</p> })}
            <progress class="lmck-task-progress" aria-label="The task is running"></progress>
            <div class="lmck-approval-actions">
                <button class="lmck-btn lmck-task-cancel" disabled=move || cancelled.get()
                    on:click=cancel>"Cancel task"</button>
            </div>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "Who books"},
                "email": {"type": "string", "format": "email"},
                "seats": {"type": "integer", "minimum": 1, "maximum": 12, "default": 2},
                "vip": {"type": "boolean", "default": false},
                "size": {"type": "string", "enum": ["small", "large"], "enumNames": ["Small", "Large"]},
                "extras": {"type": "array", "items": {"anyOf": [{"const": "cake", "title": "Cake"}]}}
            },
            "required": ["name", "seats"]
        })
    }

    #[test]
    fn a_schemas_properties_become_fields_in_its_order_with_their_kinds() {
        let f = fields(&schema());
        let names: Vec<_> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["name", "email", "seats", "vip", "size", "extras"]);
        assert_eq!(f[0].title, "Name");
        assert!(f[0].required && !f[1].required && f[2].required);
        assert!(matches!(
            f[1].kind,
            FieldKind::Text {
                input_type: "email",
                ..
            }
        ));
        assert_eq!(
            f[2].kind,
            FieldKind::Number {
                integer: true,
                min: Some(1.0),
                max: Some(12.0)
            }
        );
        assert_eq!(f[3].kind, FieldKind::Bool);
        assert_eq!(
            f[4].kind,
            FieldKind::Choice(vec![
                ("small".into(), "Small".into()),
                ("large".into(), "Large".into())
            ])
        );
        assert_eq!(
            f[5].kind,
            FieldKind::Multi(vec![("cake".into(), "Cake".into())])
        );
    }

    #[test]
    fn the_forms_values_become_typed_content_and_a_missing_required_value_is_named() {
        let f = fields(&schema());
        let mut v = defaults(&f);
        assert_eq!(
            v["seats"],
            json!("2"),
            "a number's default fills its field as text"
        );
        assert_eq!(
            content(&f, &v),
            Err("Name is required".to_owned()),
            "nothing is sent without a required value"
        );
        v.insert("name".into(), json!("Ada"));
        v.insert("email".into(), json!(""));
        v.insert("extras".into(), json!(["cake"]));
        let c = content(&f, &v).expect("complete");
        assert_eq!(
            Value::Object(c),
            json!({"name": "Ada", "seats": 2, "vip": false, "extras": ["cake"]}),
            "an empty optional field is left out; a number is a number"
        );
        v.insert("seats".into(), json!("2.5"));
        assert_eq!(
            content(&f, &v),
            Err("seats must be a whole number".to_owned())
        );
        for not_a_number in ["two", "NaN", "inf", "0x2"] {
            v.insert("seats".into(), json!(not_a_number));
            assert_eq!(
                content(&f, &v),
                Err("seats must be a number".to_owned()),
                "{not_a_number}"
            );
        }
    }
}
