use super::*;
use crate::models::{Price, TokenUsage};

fn two_providers() -> Catalog {
    Catalog::new()
        .with_provider("openai", true, None)
        .with_provider("local", true, None)
        .with_entry(ModelEntry::new("openai", "gpt-4o"))
        .with_entry(ModelEntry::new("local", "llama3"))
        .with_entry(ModelEntry::new("openai", "llama3"))
}

fn ids(entries: &[&ModelEntry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}

#[test]
fn an_exact_provider_slash_model_id_resolves() {
    let catalog = two_providers();
    assert_eq!(catalog.lookup("local/llama3").unwrap().id, "local/llama3");
    assert_eq!(catalog.lookup("openai/llama3").unwrap().id, "openai/llama3");
}

#[test]
fn a_bare_model_name_resolves_when_one_provider_has_it() {
    let catalog = two_providers();
    assert_eq!(catalog.lookup("gpt-4o").unwrap().id, "openai/gpt-4o");
}

#[test]
fn a_bare_model_name_with_slashes_resolves_to_its_provider() {
    let mut catalog = Catalog::new();
    catalog.add_listed("openrouter", ["meta-llama/llama-3-70b"]);
    let entry = catalog.lookup("meta-llama/llama-3-70b").unwrap();
    assert_eq!(entry.id, "openrouter/meta-llama/llama-3-70b");
}

#[test]
fn a_bare_model_name_two_providers_have_is_ambiguous_and_names_both() {
    let err = two_providers().lookup("llama3").unwrap_err();
    assert_eq!(
        err,
        LookupError::Ambiguous {
            id: "llama3".into(),
            candidates: vec!["openai/llama3".into(), "local/llama3".into()],
        }
    );
    let message = err.to_string();
    assert!(message.contains("openai/llama3, local/llama3"), "{message}");
}

#[test]
fn an_unknown_id_fails_loud_and_names_the_menu() {
    let err = two_providers().lookup("gpt-7").unwrap_err();
    assert_eq!(
        err,
        LookupError::Unknown {
            id: "gpt-7".into(),
            menu: vec![
                "openai/gpt-4o".into(),
                "openai/llama3".into(),
                "local/llama3".into()
            ],
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown model \"gpt-7\"; the model menu: openai/gpt-4o, openai/llama3, local/llama3"
    );
    assert_eq!(
        Catalog::new().lookup("x").unwrap_err().to_string(),
        "unknown model \"x\"; the model menu is empty"
    );
}

#[test]
fn lookup_compares_ids_exactly() {
    let catalog = two_providers();
    assert!(catalog.lookup("OpenAI/gpt-4o").is_err());
    assert!(catalog.lookup(" gpt-4o").is_err());
    assert!(catalog.lookup("openai/").is_err());
    assert!(catalog.lookup("").is_err());
}

#[test]
fn the_builtin_table_resolves_well_known_models_with_their_facts() {
    let catalog = Catalog::builtin();
    let sonnet = catalog.lookup("claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.id, "anthropic/claude-sonnet-4-5");
    assert_eq!(sonnet.label, "Claude Sonnet 4.5");
    assert_eq!(sonnet.context_window, Some(200_000));
    assert_eq!(
        sonnet.cost(&TokenUsage::new(1_234, 567)),
        Some(0.012207),
        "$3 / $15 per million"
    );
    assert!(catalog.lookup("openai/gpt-4o-mini").is_ok());
}

#[test]
fn an_operator_entry_overrides_only_the_fields_it_gives() {
    let catalog = Catalog::builtin()
        .with_model(ModelSpec::new("openai/gpt-4o").with_label("4o (team)"))
        .unwrap();
    let entry = catalog.lookup("openai/gpt-4o").unwrap();
    assert_eq!(entry.label, "4o (team)");
    assert_eq!(entry.context_window, Some(128_000));
    assert_eq!(
        entry.price,
        Some(Price::new(2.5, 10.0).with_cached_input(1.25))
    );

    let repriced = catalog
        .with_model(
            ModelSpec::new("openai/gpt-4o")
                .with_price(Price::new(1.0, 2.0))
                .with_context_window(64_000)
                .with_reasoning(true),
        )
        .unwrap();
    let entry = repriced.lookup("openai/gpt-4o").unwrap();
    assert_eq!(entry.label, "4o (team)");
    assert_eq!(entry.price, Some(Price::new(1.0, 2.0)));
    assert_eq!(entry.context_window, Some(64_000));
    assert!(entry.reasoning);
}

#[test]
fn an_operator_entry_extends_the_catalog() {
    let spec: ModelSpec = toml::from_str(
        r#"
        id = "local/llama3"
        label = "Llama 3"
        context_window = 8192
        reasoning = false
        price = { input = 0.0, output = 0.0 }
        "#,
    )
    .unwrap();
    let catalog = Catalog::builtin()
        .with_provider("local", true, None)
        .with_model(spec)
        .unwrap();
    let entry = catalog.lookup("llama3").unwrap();
    assert_eq!(entry.id, "local/llama3");
    assert_eq!(entry.provider, "local");
    assert_eq!(entry.label, "Llama 3");
    assert_eq!(entry.context_window, Some(8_192));
    assert_eq!(entry.cost(&TokenUsage::new(5_000, 500)), Some(0.0));
}

#[test]
fn a_refused_operator_entry_is_an_error_not_a_menu_item() {
    let err = Catalog::builtin()
        .with_model(ModelSpec::new("llama3"))
        .unwrap_err();
    assert_eq!(
        err,
        SpecError::NotProviderSlashModel {
            id: "llama3".into()
        }
    );
}

#[test]
fn a_listed_model_the_catalog_knows_keeps_its_facts() {
    let mut catalog = Catalog::builtin().with_provider("openai", true, None);
    catalog.add_listed("openai", ["gpt-4o", "gpt-4o"]);
    let entry = catalog.lookup("openai/gpt-4o").unwrap();
    assert_eq!(entry.label, "GPT-4o");
    assert!(entry.price.is_some());
    let count = catalog
        .menu()
        .iter()
        .filter(|e| e.id == "openai/gpt-4o")
        .count();
    assert_eq!(count, 1, "listing a known model does not add it twice");
}

#[test]
fn a_listed_model_the_catalog_does_not_know_has_no_price_and_no_cost() {
    let mut catalog = Catalog::builtin().with_provider("local", true, None);
    catalog.add_listed("local", ["qwen3:8b"]);
    let entry = catalog.lookup("local/qwen3:8b").unwrap();
    assert_eq!(entry.label, "qwen3:8b");
    assert_eq!(entry.price, None);
    assert_eq!(entry.context_window, None);
    assert!(!entry.reasoning);
    assert_eq!(entry.cost(&TokenUsage::new(1_000, 1_000)), None);
}

#[test]
fn the_menu_groups_by_provider_registered_ones_first_in_a_stable_order() {
    let mut catalog = Catalog::new()
        .with_entry(ModelEntry::new("openai", "gpt-4o"))
        .with_entry(ModelEntry::new("anthropic", "claude-haiku-4-5"))
        .with_entry(ModelEntry::new("openai", "o3"))
        .with_provider("local", true, None)
        .with_provider("anthropic", true, None);
    catalog.add_listed("local", ["llama3", "qwen3"]);
    catalog.add_listed("openai", ["gpt-4o-mini"]);
    // An override keeps its place.
    catalog = catalog.with_entry(ModelEntry::new("openai", "gpt-4o").with_label("4o"));
    let menu = catalog.menu();
    assert_eq!(
        ids(&menu),
        [
            "local/llama3",
            "local/qwen3",
            "anthropic/claude-haiku-4-5",
            "openai/gpt-4o",
            "openai/o3",
            "openai/gpt-4o-mini",
        ]
    );
    assert_eq!(
        ids(&catalog.menu()),
        ids(&menu),
        "the same order every time"
    );
}

#[test]
fn the_builtin_menu_is_in_table_order() {
    let catalog = Catalog::builtin();
    let menu = ids(&catalog.menu());
    let table: Vec<String> = builtin().map(|e| e.id).collect();
    assert_eq!(menu, table);
    let providers: Vec<&str> = catalog.menu().iter().map(|e| e.provider.as_str()).collect();
    let mut seen = providers.clone();
    seen.dedup();
    assert_eq!(
        seen,
        ["openai", "anthropic", "google"],
        "grouped by provider"
    );
}

#[test]
fn each_entry_says_whether_its_provider_is_configured() {
    let catalog = Catalog::builtin()
        .with_provider("anthropic", true, None)
        .with_provider("openai", false, Some("OPENAI_API_KEY is not set".into()))
        .with_provider("local", false, None);
    let get = |id: &str| catalog.lookup(id).unwrap();
    assert!(catalog.is_configured(get("anthropic/claude-haiku-4-5")));
    assert!(!catalog.is_configured(get("openai/gpt-4o")));
    assert!(!catalog.is_configured(get("google/gemini-2.5-flash")));
    assert_eq!(
        catalog.unavailable_reason("openai").as_deref(),
        Some("OPENAI_API_KEY is not set")
    );
    assert_eq!(
        catalog.unavailable_reason("local").as_deref(),
        Some("provider local has no API key")
    );
    assert_eq!(
        catalog.unavailable_reason("google").as_deref(),
        Some("provider google is not set up")
    );
    assert_eq!(catalog.unavailable_reason("anthropic"), None);
    assert_eq!(catalog.provider("anthropic").unwrap().reason, None);
}

#[test]
fn an_unconfigured_model_is_on_the_menu_but_refused_for_a_turn() {
    let catalog =
        Catalog::builtin().with_provider("openai", false, Some("OPENAI_API_KEY is not set".into()));
    assert!(catalog.menu().iter().any(|e| e.id == "openai/gpt-4o"));
    assert!(catalog.lookup("openai/gpt-4o").is_ok());
    let err = catalog.lookup_configured("gpt-4o").unwrap_err();
    assert_eq!(
        err,
        LookupError::NotConfigured {
            id: "openai/gpt-4o".into(),
            provider: "openai".into(),
            reason: "OPENAI_API_KEY is not set".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "model \"openai/gpt-4o\" is not available: OPENAI_API_KEY is not set"
    );
    let configured = catalog.with_provider("openai", true, None);
    assert_eq!(
        configured.lookup_configured("gpt-4o").unwrap().id,
        "openai/gpt-4o"
    );
    assert_eq!(configured.providers().len(), 1, "re-registering replaces");
}
