use super::*;
use clap::Parser;

use crate::providers::ProviderKind;

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
fn the_stream_caps_come_from_the_flag_else_the_file_else_the_defaults() {
    let s = load(
        "max_streams = 500\nmax_streams_per_user = 8\n",
        Args::parse_from(["lmchatkit", "--max-streams", "300"]),
    )
    .unwrap();
    assert_eq!(
        (s.max_streams, s.max_streams_per_user),
        (Some(300), Some(8))
    );
    let s = Settings::load(Args::default()).unwrap();
    assert_eq!((s.max_streams, s.max_streams_per_user), (None, None));
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

/// Two providers as the issue writes them: a local server that needs no key, Anthropic's
/// API with its key from the environment.
const PROVIDERS: &str = r#"
[[providers]]
name = "local"
kind = "openai"
base_url = "http://127.0.0.1:11434/v1/"
api_key_env = "LMCK_PROV_LOCAL_UNSET"
key_required = false
models = ["llama3", " qwen3 "]

[[providers]]
name = "claude"
kind = "anthropic"
api_key_env = "LMCK_PROV_ANTHROPIC_KEY"
headers = { "anthropic-beta" = "b-${LMCK_PROV_ANTHROPIC_KEY}" }

[[providers]]
name = "spare"
kind = "anthropic"
api_key = "${LMCK_PROV_SPARE_UNSET}"

[[models]]
id = "local/llama3"
label = "Llama 3"
context_window = 8192
price = { input = 0.0, output = 0.0 }
"#;

#[test]
fn providers_are_read_with_their_keys_and_registered_in_the_catalog() {
    // SAFETY: only this test reads or writes this variable.
    unsafe { std::env::set_var("LMCK_PROV_ANTHROPIC_KEY", "sk-ant-k3y") };
    let s = load(PROVIDERS, Args::default()).unwrap();
    let names: Vec<&str> = s.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["local", "claude", "spare"]);
    let [local, claude, spare] = &s.providers[..] else {
        panic!("{:?}", s.providers)
    };
    // No key and none required: configured, nothing sent.
    assert_eq!(local.kind, ProviderKind::OpenAi);
    assert_eq!(local.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!((&local.api_key, &local.unavailable), (&None, &None));
    assert_eq!(
        local.models.as_deref(),
        Some(&["llama3".to_owned(), "qwen3".to_owned()][..])
    );
    // The default base URL of its kind, the key from the environment, headers expanded.
    assert_eq!(claude.base_url, lmchatkit::llm::anthropic::DEFAULT_BASE_URL);
    assert_eq!(claude.api_key.as_deref(), Some("sk-ant-k3y"));
    assert_eq!(
        claude.headers,
        [("anthropic-beta".to_owned(), "b-sk-ant-k3y".to_owned())]
    );
    // `${VAR}` in api_key unset: not configured, not a start-up error.
    assert_eq!(spare.api_key, None);
    assert_eq!(
        spare.unavailable.as_deref(),
        Some("LMCK_PROV_SPARE_UNSET is not set")
    );

    let catalog = &s.catalog;
    let status = |name: &str| {
        let p = catalog.provider(name).unwrap();
        (p.configured, p.reason.clone())
    };
    assert_eq!(status("local"), (true, None));
    assert_eq!(status("claude"), (true, None));
    assert_eq!(
        status("spare"),
        (false, Some("LMCK_PROV_SPARE_UNSET is not set".into()))
    );
    // The file's [[models]] describe the provider's models; the fixed list is on the menu.
    let llama = catalog.lookup("local/llama3").unwrap();
    assert_eq!(
        (llama.label.as_str(), llama.context_window),
        ("Llama 3", Some(8192))
    );
    assert!(catalog.lookup("local/qwen3").is_ok());
    // An anthropic-kind provider gets the built-in Claude facts under its own name.
    let sonnet = catalog.lookup("spare/claude-sonnet-4-5").unwrap();
    assert!(sonnet.reasoning && sonnet.price.is_some());
    assert!(
        catalog
            .lookup_configured("spare/claude-sonnet-4-5")
            .unwrap_err()
            .to_string()
            .contains("LMCK_PROV_SPARE_UNSET is not set")
    );
}

#[test]
fn a_missing_key_env_makes_the_provider_unconfigured_with_the_variable_named() {
    let file = "[[providers]]\nname = \"anthropic\"\nkind = \"anthropic\"\n\
                api_key_env = \"LMCK_PROV_NEVER_SET_KEY\"\n";
    let s = load(file, Args::default()).unwrap();
    assert_eq!(
        s.providers[0].unavailable.as_deref(),
        Some("LMCK_PROV_NEVER_SET_KEY is not set")
    );
    let p = s.catalog.provider("anthropic").unwrap();
    assert!(!p.configured);
    assert_eq!(
        p.reason.as_deref(),
        Some("LMCK_PROV_NEVER_SET_KEY is not set")
    );
}

#[test]
fn malformed_providers_are_start_up_errors_naming_the_entry() {
    let entry = |body: &str| format!("[[providers]]\n{body}\n");
    for (body, says) in [
        (
            "name = \"a/b\"\nkind = \"openai\"\nbase_url = \"http://x/v1\"\nkey_required = false",
            "\"a/b\" must not contain '/'",
        ),
        (
            "name = \"\"\nkind = \"openai\"\nbase_url = \"http://x/v1\"\nkey_required = false",
            "must not be empty",
        ),
        (
            "name = \"x\"\nkind = \"gemini\"\nkey_required = false",
            "unknown variant `gemini`",
        ),
        (
            "name = \"x\"\nkind = \"openai\"\nkey_required = false",
            "base_url is required for kind = \"openai\"",
        ),
        (
            "name = \"x\"\nkind = \"openai\"\nbase_url = \"llm.example/v1\"\nkey_required = false",
            "is not an http(s) URL",
        ),
        (
            "name = \"x\"\nkind = \"anthropic\"\napi_key = \"k\"\napi_key_env = \"K\"",
            "not both",
        ),
        ("name = \"x\"\nkind = \"anthropic\"", "key_required = false"),
        (
            "name = \"x\"\nkind = \"anthropic\"\napi_key_env = \"\"",
            "is not a variable name",
        ),
        (
            "name = \"x\"\nkind = \"anthropic\"\napi_key = \"k\"\nheaders = { \"bad name\" = \"v\" }",
            "invalid header name",
        ),
        (
            "name = \"x\"\nkind = \"anthropic\"\napi_key = \"k\"\nmodels = [\" \"]",
            "models is empty",
        ),
        (
            "name = \"x\"\nkind = \"anthropic\"\napi_key = \"k\"\nmodel = [\"m\"]",
            "unknown field `model`",
        ),
        (
            "name = \"x\"\nkind = \"anthropic\"\nbase_url = \"${LMCK_PROV_URL_UNSET}\"\napi_key = \"k\"",
            "LMCK_PROV_URL_UNSET",
        ),
    ] {
        let err = load(&entry(body), Args::default()).unwrap_err();
        assert!(
            err.contains("lmchatkit.toml") && err.contains(says),
            "{body}: {err}"
        );
    }
    let twice = format!(
        "{}{}",
        entry("name = \"x\"\nkind = \"anthropic\"\napi_key = \"k\""),
        entry("name = \"x\"\nkind = \"openai\"\nbase_url = \"http://x/v1\"\napi_key = \"k\"")
    );
    let err = load(&twice, Args::default()).unwrap_err();
    assert!(
        err.contains("providers[1] (\"x\")") && err.contains("used twice"),
        "{err}"
    );
}

#[test]
fn the_openai_base_url_shorthand_joins_the_providers_as_openai() {
    let file = "[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\napi_key = \"k\"\n";
    let args = Args {
        openai_base_url: Some("http://llm.example/v1".into()),
        ..Args::default()
    };
    let s = load(file, args).unwrap();
    let names: Vec<&str> = s
        .catalog
        .providers()
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["claude", "openai"]);
    assert!(s.catalog.provider("openai").unwrap().configured);
    // Without providers, nothing is registered: bare ids as before.
    let args = Args {
        openai_base_url: Some("http://llm.example/v1".into()),
        ..Args::default()
    };
    assert!(Settings::load(args).unwrap().catalog.providers().is_empty());
}

#[test]
fn debug_output_of_providers_never_shows_keys_or_header_values() {
    let file = "[[providers]]\nname = \"x\"\nkind = \"anthropic\"\n\
                base_url = \"https://user:url-pass@proxy.example/v1?key=url-key\"\n\
                api_key = \"sk-file-secret\"\nheaders = { \"x-extra\" = \"header-secret\" }\n";
    let s = load(file, Args::default()).unwrap();
    let shown = format!("{s:?}");
    for secret in ["sk-file-secret", "header-secret", "url-pass", "url-key"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(
        shown.contains("proxy.example") && shown.contains("x-extra"),
        "{shown}"
    );
}

#[test]
fn a_postgres_url_in_the_file_is_kept_as_a_url_with_its_pool_size() {
    let text = "db = \"postgres://app:pw-in-file@db.internal/chat\"\ndb_max_connections = 4\n";
    let s = load(text, Args::default()).unwrap();
    assert_eq!(s.db, None);
    let pg = s.postgres.as_ref().unwrap();
    assert_eq!(pg.url, "postgres://app:pw-in-file@db.internal/chat");
    assert_eq!(pg.max_connections, 4);
    assert!(!format!("{s:?}").contains("pw-in-file"));
    // The flag wins, and a SQLite path stays a path.
    let flag = Args::try_parse_from(["lmchatkit", "--db-max-connections", "7"]).unwrap();
    let s = load(text, flag).unwrap();
    assert_eq!(s.postgres.unwrap().max_connections, 7);
    let s = load("db = \"h.db\"\n", Args::default()).unwrap();
    assert!(s.postgres.is_none());
    assert_eq!(s.db.as_deref(), Some("<dir>/h.db"));
}

#[test]
fn the_redis_url_comes_from_the_flag_or_the_file_and_debug_hides_its_password() {
    let s = Settings::load(Args::default()).unwrap();
    assert!(s.redis.is_none(), "in-process unless a Redis is given");

    let s = load(
        "redis = \"redis://:file-pass@10.0.0.5:6379/0\"\n",
        Args::parse_from(["lmchatkit"]),
    )
    .unwrap();
    let r = s.redis.as_ref().unwrap();
    assert_eq!(r.url, "redis://:file-pass@10.0.0.5:6379/0");
    assert_eq!(r.prefix, "lmchatkit:");

    let s = load(
        "redis = \"redis://:file-pass@10.0.0.5:6379/0\"\nredis_prefix = \"file:\"\n",
        Args::parse_from([
            "lmchatkit",
            "--redis",
            "redis://:flag-pass@10.0.0.6:6379",
            "--redis-prefix",
            "team-a:",
        ]),
    )
    .unwrap();
    let r = s.redis.as_ref().unwrap();
    assert_eq!(r.url, "redis://:flag-pass@10.0.0.6:6379");
    assert_eq!(r.prefix, "team-a:");
    let shown = format!("{s:?}");
    assert!(!shown.contains("flag-pass"), "{shown}");
    assert!(shown.contains("10.0.0.6:6379"), "{shown}");
}

#[test]
fn the_engine_is_redis_with_a_redis_url_else_in_process_unless_said_and_needs_what_it_names() {
    use crate::cli::EngineKind;
    let pg = "db = \"postgres://app@db.internal/chat\"\n[user_mcp]\nkey_file = \"/k.key\"\n";
    assert_eq!(
        Settings::load(Args::default()).unwrap().engine,
        EngineKind::InProcess
    );
    let s = load("redis = \"redis://cache:6379\"\n", Args::default()).unwrap();
    assert_eq!(s.engine, EngineKind::Redis);
    let s = load(pg, Args::default()).unwrap();
    assert_eq!(
        s.engine,
        EngineKind::InProcess,
        "PostgreSQL alone shares nothing"
    );
    let s = load(pg, Args::parse_from(["lmchatkit", "--engine", "postgres"])).unwrap();
    assert_eq!(s.engine, EngineKind::Postgres);
    let s = load(&format!("engine = \"postgres\"\n{pg}"), Args::default()).unwrap();
    assert_eq!(s.engine, EngineKind::Postgres, "from the file too");
    // What an engine needs is there, and two engines are never named at once.
    let err = load("", Args::parse_from(["lmchatkit", "--engine", "postgres"])).unwrap_err();
    assert!(err.contains("PostgreSQL db"), "{err}");
    let err = load("", Args::parse_from(["lmchatkit", "--engine", "redis"])).unwrap_err();
    assert!(err.contains("--redis"), "{err}");
    let both = format!("redis = \"redis://cache:6379\"\n{pg}");
    let err = load(
        &both,
        Args::parse_from(["lmchatkit", "--engine", "postgres"]),
    )
    .unwrap_err();
    assert!(err.contains("drop one"), "{err}");
    // Several instances on PostgreSQL sign with one key, whichever engine they share.
    let err = load(
        "db = \"postgres://app@db.internal/chat\"\n",
        Args::parse_from(["lmchatkit", "--engine", "postgres"]),
    )
    .unwrap_err();
    assert!(err.contains("key_file"), "{err}");
}

#[test]
fn several_instances_on_postgres_and_redis_must_name_the_key_file_they_share() {
    let shared = "db = \"postgres://app@db.internal/chat\"\nredis = \"redis://cache:6379\"\n";
    let err = load(shared, Args::default()).unwrap_err();
    assert!(err.contains("key_file"), "{err}");
    let s = load(
        &format!("{shared}[user_mcp]\nkey_file = \"/etc/lmchatkit/k.key\"\n"),
        Args::default(),
    )
    .unwrap();
    assert_eq!(
        s.key_file.as_deref(),
        Some(std::path::Path::new("/etc/lmchatkit/k.key"))
    );
    // One instance on PostgreSQL alone keeps its own key, as before.
    assert!(
        load(
            "db = \"postgres://app@db.internal/chat\"\n",
            Args::default()
        )
        .is_ok()
    );
}
