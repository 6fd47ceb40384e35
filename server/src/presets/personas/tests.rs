use super::*;
use crate::presets::watch::test_support::capture_warnings;
use serde_json::json;
use std::fs;

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

#[test]
fn loads_keys_and_param_types() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "coder.toml",
        r#"
name = "Coder"
description = "Terse"
system_prompt = "You write Rust."
default_model = "gpt-4o-mini"
unknown_key = true

[params]
temperature = 0.2
max_tokens = 2048
top_p = 1.0
reasoning_effort = "low"
stop = ["\n\n"]
"#,
    );
    let list = PersonaDir::open(dir.path(), None).personas();
    assert_eq!(list.len(), 2);
    let p = &list[1];
    assert_eq!(p.id, stable_id("coder"));
    assert_eq!(p.name, "Coder");
    assert_eq!(p.description.as_deref(), Some("Terse"));
    assert_eq!(p.system_prompt.as_deref(), Some("You write Rust."));
    assert_eq!(p.default_model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(p.params["temperature"], json!(0.2));
    assert!(p.params["max_tokens"].is_i64());
    assert_eq!(p.params["max_tokens"], json!(2048));
    assert!(p.params["top_p"].is_f64(), "1.0 stays a float");
    assert_eq!(p.params["reasoning_effort"], json!("low"));
    assert_eq!(p.params["stop"], json!(["\n\n"]));
}

#[test]
fn name_falls_back_to_stem_and_id_is_stable() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plain.toml", "");
    let store = PersonaDir::open(dir.path(), None);
    let first = store.personas()[1].clone();
    assert_eq!(first.name, "plain");
    assert_eq!(first.id, stable_id("plain"));
    assert_eq!(first.id.len(), 8);
    assert!(first.params.is_empty());

    write(dir.path(), "plain.toml", "name = \"Renamed\"");
    assert!(store.reload());
    let renamed = store.personas()[1].clone();
    assert_eq!(renamed.name, "Renamed");
    assert_eq!(
        renamed.id, first.id,
        "the id follows the file, not the name"
    );
    assert!(!store.reload(), "nothing changed");
}

#[test]
fn default_first_then_sorted_case_insensitively() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "z.toml", "name = \"alpha\"");
    write(dir.path(), "y.toml", "name = \"Beta\"");
    write(dir.path(), "x.toml", "name = \"Aardvark\"");
    write(dir.path(), "w.toml", "name = \"Beta\"");
    let list = PersonaDir::open(dir.path(), None).personas();
    let names: Vec<_> = list.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Default", "Aardvark", "alpha", "Beta", "Beta"]);
    assert_eq!(list[0], Persona::default_persona());
    assert!(list[3].id < list[4].id, "ties are broken by id");
}

#[test]
fn skips_drafts_malformed_other_files_and_subdirectories() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "_draft.toml", "name = \"Draft\"");
    write(dir.path(), "broken.toml", "name = \"unterminated");
    write(dir.path(), "wrongtype.toml", "name = 42");
    write(dir.path(), "notes.txt", "name = \"Notes\"");
    write(dir.path(), "good.toml", "name = \"Good\"");
    fs::create_dir(dir.path().join("sub.toml")).unwrap();
    fs::create_dir(dir.path().join("nested")).unwrap();
    write(&dir.path().join("nested"), "deep.toml", "name = \"Deep\"");
    let names: Vec<_> = PersonaDir::open(dir.path(), None)
        .personas()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["Default", "Good"]);
}

#[test]
fn a_malformed_file_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "broken.toml", "name = ");
    let log = capture_warnings(|| {
        assert_eq!(PersonaDir::open(dir.path(), None).personas().len(), 1);
    });
    assert!(log.contains("broken.toml"), "{log}");
    let log = capture_warnings(|| {
        PersonaDir::open(dir.path().join("missing"), None);
    });
    assert!(log.contains("missing"), "{log}");
}

#[test]
fn the_shipped_examples_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/defaults/personas");
    let log = capture_warnings(|| {
        let list = PersonaDir::open(&dir, None).personas();
        let names: Vec<_> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["Default", "Coder", "Writer"]);
        assert_eq!(list[2].params["top_k"], json!(40));
        assert!(list[2].params["temperature"].is_f64());
    });
    assert!(log.is_empty(), "{log}");
}

#[test]
fn non_finite_floats_are_dropped() {
    let p = PersonaDir::parse("x", "[params]\na = nan\nb = 1\n").unwrap();
    assert!(!p.params.contains_key("a"));
    assert_eq!(p.params["b"], json!(1));
}

#[test]
fn missing_directory_is_default_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = PersonaDir::open(dir.path().join("nope"), None);
    assert_eq!(store.personas(), vec![Persona::default_persona()]);
    assert!(store.dir().is_absolute());
}

#[tokio::test]
async fn implements_persona_source() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.toml", "");
    let source: std::sync::Arc<dyn PersonaSource> =
        std::sync::Arc::new(PersonaDir::open(dir.path(), None));
    let list = source.personas(&RequestContext::default()).await.unwrap();
    assert_eq!(list.len(), 2);
}

#[cfg(feature = "watch")]
mod watching {
    use super::*;
    use crate::presets::watch::test_support::Counter;

    #[test]
    fn a_burst_reloads_once_and_a_later_change_again() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Counter::default();
        let store = PersonaDir::open(dir.path(), Some(counter.callback()));
        assert!(store.is_watching());
        for i in 0..20 {
            write(
                dir.path(),
                &format!("p{i:02}.toml"),
                &format!("name = \"P{i:02}\""),
            );
        }
        counter.wait_for(1);
        assert_eq!(store.personas().len(), 21, "all 20 files are visible");
        counter.assert_stays(1);

        write(dir.path(), "later.toml", "name = \"Later\"");
        counter.wait_for(2);
        assert!(store.personas().iter().any(|p| p.name == "Later"));
        counter.assert_stays(2);
    }

    #[test]
    fn a_directory_created_later_is_picked_up() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("personas");
        let counter = Counter::default();
        let store = PersonaDir::open(&dir, Some(counter.callback()));
        assert_eq!(store.personas().len(), 1);
        // Build it next door and rename it into place: a single, complete appearance.
        let staging = root.path().join("staging");
        fs::create_dir(&staging).unwrap();
        write(&staging, "late.toml", "name = \"Late\"");
        fs::rename(&staging, &dir).unwrap();
        counter.wait_for(1);
        assert!(store.personas().iter().any(|p| p.name == "Late"));

        // Once there, it is watched like any other.
        write(&dir, "later.toml", "name = \"Later\"");
        counter.wait_for(2);
        assert!(store.personas().iter().any(|p| p.name == "Later"));
    }

    #[test]
    fn watches_without_a_callback_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = PersonaDir::open(dir.path(), None);
        assert!(store.is_watching());
        write(dir.path(), "a.toml", "name = \"A\"");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while store.personas().len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "a.toml never appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(store.personas()[1].name, "A");
    }

    #[test]
    fn dropping_stops_the_watcher() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Counter::default();
        let store = PersonaDir::open(dir.path(), Some(counter.callback()));
        drop(store);
        write(dir.path(), "a.toml", "");
        counter.assert_stays(0);
    }
}
