//! The TLS features, read from Cargo's own resolution (`cargo tree`, the lock file as CI
//! tests it): `rustls-ring` builds the library and the app without aws-lc (no `aws-lc-sys`, no
//! `aws-lc-rs`) and with ring, while the default `rustls` has aws-lc-rs. That the ring build
//! speaks TLS is the library's own test (`tls::tests`, run by `scripts/test.sh` with
//! `rustls-ring` alone).

use std::process::Command;

/// The normal dependencies of `package` with `args` (features), one crate per line.
fn tree(package: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args([
            "tree", "--locked", "-e", "normal", "--prefix", "none", "-p", package,
        ])
        .args(args)
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn has(tree: &str, krate: &str) -> bool {
    tree.lines().any(|l| l.starts_with(&format!("{krate} v")))
}

#[test]
fn the_default_tls_is_rustls_with_aws_lc() {
    let t = tree("lmchatkit", &[]);
    assert!(has(&t, "rustls") && has(&t, "aws-lc-rs"), "{t}");
}

#[test]
fn rustls_ring_builds_the_library_and_the_app_without_aws_lc() {
    let library = tree(
        "lmchatkit",
        &[
            "--no-default-features",
            "--features",
            "sqlite,openai,anthropic,watch,mcp,rustls-ring",
        ],
    );
    let app = tree(
        "lmchatkit-app",
        &["--no-default-features", "--features", "rustls-ring"],
    );
    for (what, t) in [("library", &library), ("app", &app)] {
        assert!(has(t, "rustls") && has(t, "ring"), "{what}: {t}");
        for c in ["aws-lc-sys", "aws-lc-rs"] {
            assert!(!has(t, c), "{what} with rustls-ring builds {c}: {t}");
        }
    }
}

#[test]
fn without_a_tls_feature_the_http_clients_have_no_tls() {
    let t = tree(
        "lmchatkit",
        &["--no-default-features", "--features", "openai,mcp"],
    );
    assert!(has(&t, "reqwest") && !has(&t, "rustls"), "{t}");
}
