use super::*;
use crate::presets::watch::test_support::capture_warnings;
use std::fs;

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

fn load(files: &[(&str, &str)]) -> Vec<SlashCommand> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    CommandDir::open(dir.path(), None).commands()
}

fn names(list: &[SlashCommand]) -> Vec<&str> {
    list.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn frontmatter_keys_and_body() {
    let list = load(&[(
        "review.md",
        "\n---\ndescription: Review code\nargument-hint: \"[focus]\"\nallowed-tools:\n  - search\n  - Bash(git:*)\nother: ignored\n---\n\n  Review $ARGUMENTS  \n\n",
    )]);
    let c = &list[0];
    assert_eq!(c.id, stable_id("review"));
    assert_eq!(c.name, "review");
    assert_eq!(c.description.as_deref(), Some("Review code"));
    assert_eq!(c.argument_hint.as_deref(), Some("[focus]"));
    assert_eq!(c.allowed_tools, ["search", "Bash"]);
    assert_eq!(c.body, "Review $ARGUMENTS");
    assert_eq!(c.source, "review.md");
}

#[test]
fn allowed_tools_as_comma_string() {
    let c = CommandDir::parse(
        "x.md",
        "---\nallowed-tools: search , execute_tool, Bash(git add:*, git rm:*), Bash(git:*),\n---\nb",
    )
    .unwrap();
    assert_eq!(c.allowed_tools, ["search", "execute_tool", "Bash"]);
}

#[test]
fn scalars_of_any_type_are_text_and_claude_hints_survive() {
    let c = CommandDir::parse(
        "x.md",
        "---\ndescription: 3.10\nargument-hint: [file] \n---\nb",
    )
    .unwrap();
    assert_eq!(c.description.as_deref(), Some("3.10"));
    assert_eq!(c.argument_hint.as_deref(), Some("[file]"));
    let c = CommandDir::parse("x.md", "---\nargument-hint: (none)\n---\nb").unwrap();
    assert_eq!(c.argument_hint.as_deref(), Some("(none)"));
    let c = CommandDir::parse("x.md", "\u{feff}---\r\ndescription: d\r\n---\r\nbody\r\n").unwrap();
    assert_eq!(c.description.as_deref(), Some("d"));
    assert_eq!(c.body, "body");
}

#[test]
fn without_frontmatter_the_whole_file_is_the_body() {
    let list = load(&[
        ("plain.md", "\n\nJust say hi.\n---\nnot meta\n"),
        ("unclosed.md", "---\ndescription: x\nbody\n"),
        ("empty.md", "---\n---\nonly body"),
    ]);
    assert_eq!(names(&list), ["empty", "plain", "unclosed"]);
    assert_eq!(list[0].body, "only body");
    assert_eq!(list[0].description, None);
    assert_eq!(list[1].body, "Just say hi.\n---\nnot meta");
    assert_eq!(list[1].description, None);
    assert_eq!(list[2].body, "---\ndescription: x\nbody");
}

#[test]
fn names_are_lowercased_and_validated_drafts_skipped() {
    let list = load(&[
        ("Help.md", "help"),
        ("bad name.md", "x"),
        ("bad.name.md", "x"),
        ("_draft.md", "x"),
        ("ünï-cödé_2.md", "x"),
        ("notes.txt", "x"),
    ]);
    assert_eq!(names(&list), ["help", "ünï-cödé_2"]);
    assert_eq!(list[0].source, "Help.md");
    assert_eq!(list[0].id, stable_id("Help"));
}

#[test]
fn duplicate_names_keep_one_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "HELP.md", "upper");
    write(dir.path(), "Help.md", "title");
    let probe = dir.path().join("help.md");
    if probe.exists() {
        return; // case-insensitive file system: the files cannot coexist
    }
    let list = CommandDir::open(dir.path(), None).commands();
    assert_eq!(names(&list), ["help"]);
    assert_eq!(list[0].source, "HELP.md", "smaller file name wins");

    write(dir.path(), "help.md", "lower");
    let list = CommandDir::open(dir.path(), None).commands();
    assert_eq!(names(&list), ["help"]);
    assert_eq!(list[0].body, "lower", "the lowercase file wins");
}

#[test]
fn malformed_yaml_is_skipped() {
    let list = load(&[
        ("bad.md", "---\ndescription: [unclosed\n---\nbody"),
        ("list.md", "---\n- a\n- b\n---\nbody"),
        ("nested.md", "---\ndescription:\n  a: b\n---\nbody"),
        ("good.md", "---\ndescription: ok\n---\nbody"),
    ]);
    assert_eq!(names(&list), ["good"]);
}

#[test]
fn skipped_files_are_named_in_warnings() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad name.md", "x");
    write(dir.path(), "broken.md", "---\ndescription: [x\n---\nb");
    write(dir.path(), "Dup.md", "x");
    write(dir.path(), "dup.md", "x");
    let log = capture_warnings(|| {
        let list = CommandDir::open(dir.path(), None).commands();
        assert_eq!(names(&list), ["dup"]);
    });
    assert!(log.contains("bad name.md"), "{log}");
    assert!(log.contains("broken.md"), "{log}");
    if !dir.path().join("DUP.md").exists() {
        assert!(log.contains("Dup.md"), "{log}");
    }
}

#[test]
fn the_shipped_examples_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/defaults/commands");
    let log = capture_warnings(|| {
        let list = CommandDir::open(&dir, None).commands();
        assert_eq!(names(&list), ["eli5", "help", "review"]);
        assert!(list.iter().all(|c| c.description.is_some()));
        assert!(list[0].body.contains("$ARGUMENTS"));
        assert_eq!(list[1].argument_hint.as_deref(), Some("(none)"));
        assert_eq!(list[2].allowed_tools, ["search", "execute_tool", "Bash"]);
    });
    assert!(log.is_empty(), "{log}");
}

#[test]
fn sorted_by_name_and_missing_dir_is_empty() {
    let list = load(&[("b.md", "b"), ("A.md", "a"), ("c.md", "c")]);
    assert_eq!(names(&list), ["a", "b", "c"]);
    let dir = tempfile::tempdir().unwrap();
    assert!(
        CommandDir::open(dir.path().join("missing"), None)
            .commands()
            .is_empty()
    );
}

#[tokio::test]
async fn implements_command_source() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "a");
    let source: std::sync::Arc<dyn CommandSource> =
        std::sync::Arc::new(CommandDir::open(dir.path(), None));
    let list = source.commands(&RequestContext::default()).await.unwrap();
    assert_eq!(names(&list), ["a"]);
}

#[cfg(feature = "watch")]
mod watching {
    use super::*;
    use crate::presets::watch::test_support::Counter;

    #[test]
    fn a_burst_reloads_once_and_a_later_change_again() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Counter::default();
        let store = CommandDir::open(dir.path(), Some(counter.callback()));
        for i in 0..20 {
            write(dir.path(), &format!("c{i:02}.md"), "body");
        }
        counter.wait_for(1);
        assert_eq!(store.commands().len(), 20);
        counter.assert_stays(1);

        // Unrelated files and drafts do not count; an edit does.
        write(dir.path(), "notes.txt", "x");
        write(dir.path(), "c00.md", "---\ndescription: edited\n---\nbody");
        counter.wait_for(2);
        assert_eq!(store.commands()[0].description.as_deref(), Some("edited"));
        counter.assert_stays(2);

        fs::remove_file(dir.path().join("c01.md")).unwrap();
        counter.wait_for(3);
        assert_eq!(store.commands().len(), 19);
    }

    #[test]
    fn a_deleted_and_recreated_directory_is_watched_again() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("commands");
        fs::create_dir(&dir).unwrap();
        write(&dir, "a.md", "a");
        let counter = Counter::default();
        let store = CommandDir::open(&dir, Some(counter.callback()));
        assert_eq!(store.commands().len(), 1);

        fs::remove_dir_all(&dir).unwrap();
        counter.wait_for(1);
        assert!(store.commands().is_empty());

        fs::create_dir(&dir).unwrap();
        write(&dir, "b.md", "b");
        counter.wait_for(2);
        // The directory may have been seen before or after `b.md` was written.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while store.commands().is_empty() {
            assert!(std::time::Instant::now() < deadline, "b.md never appeared");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(names(&store.commands()), ["b"]);
    }
}
