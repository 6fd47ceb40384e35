//! Tests of the MCP configuration file and `${ENV}` expansion.

use super::*;

#[test]
fn env_expansion() {
    // SAFETY: the variable name is unique to this test.
    unsafe { std::env::set_var("LMCK_TEST_EXPAND", "v") };
    assert_eq!(expand_env("a${LMCK_TEST_EXPAND}b$$c$d").unwrap(), "avb$c$d");
    assert!(matches!(
        expand_env("${LMCK_TEST_NOT_SET_EVER}"),
        Err(McpConfigError::MissingEnv(v)) if v == "LMCK_TEST_NOT_SET_EVER"
    ));
}

#[test]
fn file_errors() {
    let both = "[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://h\"\n";
    assert!(matches!(
        McpConfigFile::from_toml_str(both),
        Err(McpConfigError::Server { .. })
    ));
    let dup = "[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\n[[mcp.servers]]\nname = \"x\"\ncommand = \"b\"\n";
    assert!(McpConfigFile::from_toml_str(dup).is_err());
    let bad_name = "[[mcp.servers]]\nname = \"a__b\"\ncommand = \"a\"\n";
    assert!(McpConfigFile::from_toml_str(bad_name).is_err());
    let unknown = "[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\ncolour = 1\n";
    assert!(McpConfigFile::from_toml_str(unknown).is_err());
    assert!(McpConfigFile::from_toml_str("").unwrap().servers.is_empty());
}

#[test]
fn stdio_fields() {
    let f = McpConfigFile::from_toml_str(
        "[[mcp.servers]]\nname = \"fs\"\ncommand = \"srv\"\nargs = [\"/tmp\"]\ncwd = \"/\"\nenv = { A = \"1\" }\ninherit_env = [\"HTTPS_PROXY\"]\n",
    )
    .unwrap();
    match &f.servers[0].transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            inherit_env,
            cwd,
        } => {
            assert_eq!(command, "srv");
            assert_eq!(args, &["/tmp"]);
            assert_eq!(env["A"], "1");
            assert_eq!(inherit_env, &["HTTPS_PROXY"]);
            assert_eq!(cwd.as_deref(), Some(Path::new("/")));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn inherit_env_names_must_be_variable_names() {
    for name in ["", "A=B"] {
        let text =
            format!("[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\ninherit_env = [{name:?}]\n");
        assert!(
            matches!(
                McpConfigFile::from_toml_str(&text),
                Err(McpConfigError::Server { .. })
            ),
            "{name:?}"
        );
    }
}
