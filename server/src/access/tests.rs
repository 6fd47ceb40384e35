use lmchatkit_protocol::{Resource, Tool, Visibility};

use super::{Role, check_visibility, offers};

fn template(uri: &str) -> Resource {
    Resource {
        template: true,
        ..Resource::new(uri)
    }
}

#[test]
fn a_uri_is_offered_when_listed_or_matching_a_listed_template() {
    let listed = [Resource::new("file:///a.txt"), template("notes://{id}")];
    assert!(offers(&listed, "file:///a.txt"));
    assert!(offers(&listed, "notes://7"));
    assert!(!offers(&listed, "file:///b.txt"));
    assert!(!offers(&listed, "notes://7/../../etc"));
    // A template is not itself a readable URI.
    assert!(!offers(&[Resource::new("x://1")], "notes://{id}"));
}

#[test]
fn each_role_calls_only_the_tools_visible_to_it() {
    let tools = [
        Tool::new("both"),
        Tool::new("model_only").with_visibility(vec![Visibility::Model]),
        Tool::new("app_only").with_visibility(vec![Visibility::App]),
    ];
    let ok = |name, role| check_visibility(&tools, name, role).is_ok();
    assert!(ok("both", Role::Model) && ok("both", Role::App));
    assert!(ok("model_only", Role::Model) && !ok("model_only", Role::App));
    assert!(ok("app_only", Role::App) && !ok("app_only", Role::Model));
    // The user role acts through the model's tool calls: model visibility applies.
    assert!(!ok("app_only", Role::User));
    assert!(!ok("unknown", Role::Model), "an unlisted tool fails closed");
}
