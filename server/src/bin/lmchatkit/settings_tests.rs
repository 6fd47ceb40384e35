use super::*;
use clap::Parser;

const FILE: &str = r#"
listen = "127.0.0.1:9999"
prefix = "/from-file"
db = "data/history.db"
personas_dir = "personas"
upload = false
log = "debug"
log_format = "json"

[upstream]
base_url = "http://llm.example/v1"
api_key = "${LMCK_TEST_KEY}"
models = ["a", " b "]
headers = { "X-Team" = "blue", "X-Env" = "${LMCK_TEST_KEY}-env" }

[demo]
model = false
mcp = true

[[mcp.servers]]
name = "remote"
url = "http://127.0.0.1:1/mcp"
"#;

fn load(text: &str, args: Args) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lmchatkit.toml");
    std::fs::write(&path, text).unwrap();
    let s = Settings::load(Args {
        config: Some(path),
        ..args
    });
    s.map(|mut s| {
        // Paths are relative to the (now removed) directory; keep only what follows it.
        for p in [&mut s.personas_dir, &mut s.commands_dir]
            .into_iter()
            .flatten()
        {
            *p = p.strip_prefix(dir.path()).unwrap().to_owned();
        }
        s.db =
            s.db.map(|d| d.replace(&*dir.path().to_string_lossy(), "<dir>"));
        s
    })
}

#[test]
fn defaults_without_a_file() {
    let s = Settings::load(Args::default()).unwrap();
    assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(s.prefix, "/chat");
    assert_eq!(s.upstream, Upstream::default());
    assert!(s.upload && s.demo_model && s.demo_mcp_on());
    assert_eq!((s.log.as_str(), s.log_format), ("info", LogFormat::Text));
    assert_eq!(s.db_synchronous, Synchronous::Full);
}

#[test]
fn db_synchronous_comes_from_the_flag_else_the_file_else_full() {
    let file = "db_synchronous = \"normal\"\n";
    assert_eq!(
        load(file, Args::default()).unwrap().db_synchronous,
        Synchronous::Normal
    );
    let flag = Args::try_parse_from(["lmchatkit", "--db-synchronous", "full"]).unwrap();
    assert_eq!(load(file, flag).unwrap().db_synchronous, Synchronous::Full);
    let flag = Args::try_parse_from(["lmchatkit", "--db-synchronous=normal"]).unwrap();
    assert_eq!(
        Settings::load(flag).unwrap().db_synchronous,
        Synchronous::Normal
    );
    assert!(Args::try_parse_from(["lmchatkit", "--db-synchronous", "off"]).is_err());
}

#[test]
fn the_file_sets_everything() {
    // SAFETY: only this test reads or writes this variable.
    unsafe { std::env::set_var("LMCK_TEST_KEY", "k3y") };
    let s = load(FILE, Args::default()).unwrap();
    assert_eq!(s.listen.to_string(), "127.0.0.1:9999");
    assert_eq!(s.prefix, "/from-file");
    assert_eq!(s.db.as_deref(), Some("<dir>/data/history.db"));
    assert_eq!(s.personas_dir, Some(PathBuf::from("personas")));
    assert!(!s.upload && !s.demo_model);
    assert_eq!((s.log.as_str(), s.log_format), ("debug", LogFormat::Json));
    assert_eq!(
        s.upstream,
        Upstream {
            base_url: Some("http://llm.example/v1".into()),
            completions_url: None,
            api_key: Some("k3y".into()),
            headers: vec![
                ("X-Env".into(), "k3y-env".into()),
                ("X-Team".into(), "blue".into())
            ],
            models: vec!["a".into(), "b".into()],
        }
    );
    assert_eq!(s.mcp_servers.len(), 1);
    // Said explicitly, so on beside the configured server.
    assert!(s.demo_mcp_on());

    let flags = Args {
        prefix: Some("/from-flag".into()),
        headers: vec![("x-team".into(), "red".into())],
        models: vec!["c".into()],
        upload: Some(true),
        no_demo_mcp: Some(true),
        db: Some("memory:".into()),
        ..Args::default()
    };
    let s = load(FILE, flags).unwrap();
    assert_eq!(s.prefix, "/from-flag");
    assert_eq!(
        s.upstream.headers,
        [
            ("X-Env".to_owned(), "k3y-env".to_owned()),
            ("x-team".to_owned(), "red".to_owned())
        ]
    );
    assert_eq!(s.upstream.models, ["c"]);
    assert_eq!(s.db.as_deref(), Some("memory:"));
    assert!(s.upload && !s.demo_mcp_on());
}

#[test]
fn configured_servers_replace_the_demo_server_unless_asked() {
    let only_servers = "[[mcp.servers]]\nname = \"x\"\ncommand = \"x\"\n";
    assert!(!load(only_servers, Args::default()).unwrap().demo_mcp_on());
    let forced = Args {
        no_demo_mcp: Some(false),
        ..Args::default()
    };
    assert!(load(only_servers, forced).unwrap().demo_mcp_on());
}

#[test]
fn mistakes_in_the_file_are_errors_naming_it() {
    for (text, says) in [
        ("prefx = \"/x\"", "unknown field `prefx`"),
        ("[upstream]\nbase = \"x\"", "unknown field `base`"),
        ("listen = \"nowhere\"", "listen"),
        (
            "log = \"${LMCK_SURELY_UNSET_VAR}\"",
            "LMCK_SURELY_UNSET_VAR",
        ),
        (
            "[upstream.headers]\n\"bad name\" = \"x\"",
            "invalid header name",
        ),
        ("[[mcp.servers]]\nname = \"x\"", "exactly one of"),
        ("db_synchronous = \"off\"", "db_synchronous"),
    ] {
        let err = load(text, Args::default()).unwrap_err();
        assert!(
            err.contains("lmchatkit.toml") && err.contains(says),
            "{text}: {err}"
        );
    }
}

#[test]
fn the_sandbox_origin_defaults_to_localhost_on_its_port() {
    let s = Settings::load(
        Args::try_parse_from(["lmchatkit", "--sandbox-listen", "127.0.0.1:8181"]).unwrap(),
    )
    .unwrap();
    assert_eq!(
        s.sandbox,
        Some((
            "127.0.0.1:8181".parse().unwrap(),
            "http://localhost:8181".into()
        ))
    );
    let s = load(
        "sandbox_listen = \"0.0.0.0:9\"\nsandbox_origin = \"https://sandbox.example/\"\n",
        Args::default(),
    )
    .unwrap();
    assert_eq!(
        s.sandbox,
        Some((
            "0.0.0.0:9".parse().unwrap(),
            "https://sandbox.example".into()
        ))
    );
    assert_eq!(Settings::load(Args::default()).unwrap().sandbox, None);
}

#[test]
fn allowed_hosts_come_from_the_file_and_the_flags() {
    let s = load(
        "allowed_hosts = [\"chat.example.com\", \" \"]\n",
        Args::parse_from(["lmchatkit", "--allowed-host", "intranet:8443,lan.example"]),
    )
    .unwrap();
    assert_eq!(
        s.allowed_hosts,
        ["chat.example.com", "intranet:8443", "lan.example"]
    );
}

#[test]
fn frame_ancestors_come_from_the_file_and_the_flags() {
    let s = load(
        "frame_ancestors = [\"https://portal.example\", \" \"]\n",
        Args::parse_from([
            "lmchatkit",
            "--frame-ancestor",
            "https://a.example,https://*.b.example",
            "--frame-ancestor",
            "http://intranet:8443",
        ]),
    )
    .unwrap();
    assert_eq!(
        s.frame_ancestors,
        [
            "https://portal.example",
            "https://a.example",
            "https://*.b.example",
            "http://intranet:8443"
        ]
    );
    assert!(
        Settings::load(Args::default())
            .unwrap()
            .frame_ancestors
            .is_empty()
    );
}

#[test]
fn debug_output_never_shows_the_key_or_header_values() {
    let args = Args {
        openai_base_url: Some("https://user:url-pass@llm.example/v1?key=url-key".into()),
        openai_api_key: Some("sk-arg-secret".into()),
        headers: vec![("api-key".into(), "header-secret".into())],
        ..Args::default()
    };
    let s = Settings::load(args).unwrap();
    let shown = format!("{s:?} {:?}", s.upstream);
    for secret in ["sk-arg-secret", "header-secret", "url-pass", "url-key"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(
        shown.contains("llm.example") && shown.contains("api-key") && shown.contains("<redacted>"),
        "{shown}"
    );
}

#[test]
fn who_may_use_the_app_comes_from_the_token_or_the_trusted_header() {
    let s = Settings::load(Args::default()).unwrap();
    assert_eq!(s.access, Access::Token(None));
    let s = load(
        "auth_token = \"from-file\"\noperator = \"ops\"\n",
        Args::parse_from(["lmchatkit"]),
    )
    .unwrap();
    assert_eq!(s.access, Access::Token(Some("from-file".into())));
    assert_eq!(s.operator.as_deref(), Some("ops"));
    assert!(
        !format!("{s:?}").contains("from-file"),
        "Debug shows no token"
    );

    let s = load(
        "trusted_user_header = \"X-User\"\n",
        Args::parse_from(["lmchatkit"]),
    )
    .unwrap();
    let Access::TrustedHeader { header, proxies } = &s.access else {
        panic!("{:?}", s.access)
    };
    assert_eq!(header.as_str(), "x-user");
    assert_eq!(proxies.len(), 2, "loopback by default: {proxies:?}");
    let s = Settings::load(Args::parse_from([
        "lmchatkit",
        "--trusted-user-header",
        "X-User",
        "--trusted-proxy",
        "10.0.0.0/8,192.168.1.5",
    ]))
    .unwrap();
    assert!(matches!(&s.access, Access::TrustedHeader { proxies, .. } if proxies.len() == 2));
}

#[test]
fn mistakes_in_who_may_use_the_app_are_errors() {
    let both = Args::parse_from([
        "lmchatkit",
        "--auth-token",
        "t",
        "--trusted-user-header",
        "X-User",
    ]);
    assert!(
        Settings::load(both)
            .unwrap_err()
            .contains("exclude each other")
    );
    let bad = Args::parse_from([
        "lmchatkit",
        "--trusted-user-header",
        "X-User",
        "--trusted-proxy",
        "proxy.example",
    ]);
    assert!(Settings::load(bad).unwrap_err().contains("proxy.example"));
    let lonely = Args::parse_from(["lmchatkit", "--trusted-proxy", "10.0.0.1"]);
    assert!(
        Settings::load(lonely)
            .unwrap_err()
            .contains("--trusted-user-header")
    );
    let bad_name = Args::parse_from(["lmchatkit", "--trusted-user-header", "X User"]);
    assert!(Settings::load(bad_name).is_err());
}

#[test]
fn allowed_origins_come_from_the_file_and_the_flags() {
    let s = load(
        "allowed_origins = [\"https://a.example/\"]\n",
        Args::parse_from(["lmchatkit", "--allowed-origin", "http://127.0.0.1:8081"]),
    )
    .unwrap();
    assert_eq!(
        s.allowed_origins,
        ["https://a.example", "http://127.0.0.1:8081"]
    );
}

#[test]
fn the_approval_table_maps_to_the_policy() {
    use lmchatkit::Scope;
    use lmchatkit::protocol::ToolDecision::{Allow, Ask, Deny};
    let text = r#"
[tools.approval]
default = "deny"
allow = ["demo__*", " docs__read "]
ask = ["demo__send_*"]
deny = ["*__rm"]
"#;
    let p = load(text, Args::default()).unwrap().approval;
    let decide = |t: &str| p.decide(&Scope::default(), t, &serde_json::Value::Null);
    assert_eq!(decide("demo__echo"), Allow);
    assert_eq!(decide("docs__read"), Allow);
    assert_eq!(decide("demo__send_mail"), Ask);
    assert_eq!(decide("demo__rm"), Deny);
    assert_eq!(decide("web__fetch"), Deny);
    // Without the table every call asks, as the UI did before the policy.
    let p = Settings::load(Args::default()).unwrap().approval;
    assert_eq!(
        p.decide(&Scope::default(), "x", &serde_json::Value::Null),
        Ask
    );
    assert_eq!(p.rules().count(), 0);
}

#[test]
fn mistakes_in_the_approval_table_are_errors_naming_the_key() {
    for (text, says) in [
        ("[tools.approval]\ndefault = \"maybe\"", "default"),
        ("[tools.approval]\nalow = [\"x\"]", "unknown field `alow`"),
        ("[tools]\napprovals = {}", "unknown field `approvals`"),
        ("[tools.approval]\ndeny = \"x\"", "deny"),
        (
            "[tools.approval]\nallow = [\"a\", \" \"]",
            "tools.approval.allow",
        ),
    ] {
        let err = load(text, Args::default()).err().unwrap_or_default();
        assert!(
            err.contains("lmchatkit.toml") && err.contains(says),
            "{text}: {err}"
        );
    }
}

#[test]
fn the_system_prompt_and_step_cap_come_from_the_flag_else_the_file() {
    let s = load(
        "system_prompt = \"You are terse.\"\nmax_steps = 4\n",
        Args::parse_from(["lmchatkit"]),
    )
    .unwrap();
    assert_eq!(s.system_prompt.as_deref(), Some("You are terse."));
    assert_eq!(s.max_steps, Some(4));
    let s = load(
        "system_prompt = \"You are terse.\"\n",
        Args::parse_from([
            "lmchatkit",
            "--system-prompt",
            "Be kind.",
            "--max-steps",
            "2",
        ]),
    )
    .unwrap();
    assert_eq!(s.system_prompt.as_deref(), Some("Be kind."));
    assert_eq!(s.max_steps, Some(2));
    let s = Settings::load(Args::default()).unwrap();
    assert_eq!((s.system_prompt, s.max_steps), (None, None));
}

#[test]
fn a_models_entry_that_is_not_provider_slash_model_is_a_start_up_error() {
    let err = load(
        "[[models]]\nid = \"llama3\"\n",
        Args::parse_from(["lmchatkit"]),
    )
    .expect_err("refused");
    assert!(
        err.contains("models: \"llama3\": ") && err.contains("provider/model"),
        "{err}"
    );
    let err = load(
        "[[models]]\nid = \"local/llama3\"\ncolour = \"red\"\n",
        Args::parse_from(["lmchatkit"]),
    )
    .expect_err("refused");
    assert!(err.contains("colour"), "{err}");
    let ok = load(
        "[[models]]\nid = \"local/llama3\"\nreasoning = true\n",
        Args::parse_from(["lmchatkit"]),
    )
    .unwrap();
    assert!(ok.catalog.lookup("llama3").unwrap().reasoning);
}
