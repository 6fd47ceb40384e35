//! Models, personas and slash commands: the lists the UI shows on the start screen and in menus.

use serde::{Deserialize, Serialize};

/// Model parameters (`temperature`, `top_p`, `max_tokens`, `reasoning_effort`, …), forwarded to
/// the provider at the top level of the completion request.
pub type Params = serde_json::Map<String, serde_json::Value>;

/// The request parameter that carries a [`ReasoningEffort`] (`params.reasoning_effort` on the
/// native protocol, a persona's default in its params).
pub const REASONING_EFFORT_PARAM: &str = "reasoning_effort";

/// How hard a reasoning model should think; non-reasoning models ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`.
    High,
}

impl ReasoningEffort {
    /// Every level, lowest first (the order of the UI's selector).
    pub const ALL: [ReasoningEffort; 3] = [Self::Low, Self::Medium, Self::High];

    /// The wire spelling (`low`, `medium`, `high`), also the OpenAI `reasoning_effort` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// The level a wire spelling names; `None` for anything else.
    ///
    /// ```
    /// use lmchatkit_protocol::ReasoningEffort;
    /// assert_eq!(ReasoningEffort::parse("high"), Some(ReasoningEffort::High));
    /// assert_eq!(ReasoningEffort::parse("max"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// A model the user may pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Identifier sent upstream as `model`.
    pub id: String,
    /// Display name, when it differs from the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Who serves it (shown as a subtitle in the picker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model honours a reasoning effort (`reasoning_effort`); omitted when `false` (the
    /// effort is then not sent).
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub reasoning: bool,
    /// Its context window in tokens, when known (the denominator of a usage gauge); omitted when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// A turn on it can run now: its provider has what it needs (a key). Models of a provider
    /// that is not configured stay on the menu, disabled, with [`unavailable_reason`](Self::unavailable_reason);
    /// `true` when absent.
    #[serde(default = "crate::is_true_default")]
    pub configured: bool,
    /// Why it cannot be used (for display), when not configured; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
}

impl Default for Model {
    fn default() -> Self {
        Self {
            id: String::new(),
            label: None,
            provider: None,
            reasoning: false,
            context_window: None,
            configured: true,
            unavailable_reason: None,
        }
    }
}

impl Model {
    /// A model with only an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }
}

/// A persona: a named system prompt with default model and parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Persona {
    /// Stable id (for file personas, derived from the file name).
    pub id: String,
    /// Display name.
    pub name: String,
    /// One-line summary shown in the persona picker; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The system prompt sent first in every turn; omitted when unset or hidden by the host.
    /// A blank prompt falls back to a generic assistant prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Model id to select when the persona is chosen; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Default model parameters; request params override them key by key. Omitted when empty.
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub params: Params,
}

impl Persona {
    /// The built-in persona offered when no other exists.
    pub fn default_persona() -> Self {
        Self {
            id: "default".into(),
            name: "Default".into(),
            ..Self::default()
        }
    }
}

/// A file-based slash command (`/name args`), expanded in the browser (`$ARGUMENTS`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SlashCommand {
    /// Stable id (for file commands, derived from the file name).
    pub id: String,
    /// Lowercase command name, without the slash.
    pub name: String,
    /// One-line summary shown in the command menu (frontmatter `description`); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What to type after the name, shown in the menu (frontmatter `argument-hint`); omitted when
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// Tool names allowed without asking once the command is used, for the rest of the browser
    /// session (`Bash(git:*)` is kept as `Bash`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// The template; `$ARGUMENTS` is replaced by what the user typed after the name.
    pub body: String,
    /// Where it came from (a file name, or a host-chosen label).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}
