//! Agent definitions: parsing a Markdown file with YAML frontmatter into what a sheep is.
//!
//! An agent definition says which program a sheep runs (pi by default, any argv with
//! `command`), which model and thinking level it asks for, which tools it may use, and what its
//! system prompt is (the Markdown body). The format is pi's and VS Code's custom-agent format,
//! which Claude Code's agent files also follow closely, so the same file works in several
//! harnesses. Parsing is pure: the caller reads the bytes and says where they came from; this
//! module decides whether they make a valid definition. An invalid file is refused with one
//! reason ([`AgentDefError`]) so discovery can skip that file alone; a value the original
//! extension silently ignored is ignored here too, but reported ([`IgnoredValue`]).
//!
//! A definition's `extra` keys stay open JSON: frontmatter keys Shepherd does not know, kept so
//! a definition read and written back loses nothing.

mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use parse::{AgentDefError, IgnoredValue, ParsedAgentDef, parse_agent_def};

use crate::harness::Harness;

/// Where a definition was found. Project definitions are repository-controlled and need the
/// user's approval before they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentSource {
    /// `<pi agent dir>/agents` or `~/.agents/agents`.
    User,
    /// The nearest ancestor `.pi/agents` or `.agents/agents` of the project.
    Project,
    /// Shipped inside the `shepherd` binary.
    Bundled,
}

impl AgentSource {
    /// The lowercase name used in listings: `user`, `project`, `bundled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Bundled => "bundled",
        }
    }
}

impl fmt::Display for AgentSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which definition directories are searched. Bundled definitions are part of every scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentScope {
    /// The user's own directories (the default: nothing repository-controlled runs unasked).
    #[default]
    User,
    /// The project's directories.
    Project,
    /// Both; user definitions win a name collision.
    Both,
}

impl AgentScope {
    /// Every scope, in the order they are listed to people.
    pub const ALL: [Self; 3] = [Self::User, Self::Project, Self::Both];

    /// The lowercase name: `user`, `project`, `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Both => "both",
        }
    }

    /// Whether the user's definition directories are searched.
    pub fn includes_user(self) -> bool {
        matches!(self, Self::User | Self::Both)
    }

    /// Whether the project's definition directories are searched.
    pub fn includes_project(self) -> bool {
        matches!(self, Self::Project | Self::Both)
    }
}

impl fmt::Display for AgentScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent scope name that is not `user`, `project` or `both`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent scope {0:?}; expected user, project or both")]
pub struct UnknownScope(pub String);

impl FromStr for AgentScope {
    type Err = UnknownScope;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str() == raw)
            .ok_or_else(|| UnknownScope(raw.to_owned()))
    }
}

/// The model a sheep asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelChoice {
    /// Use the shepherd's own `provider/id` (frontmatter absent, null, empty, `default` or
    /// Claude Code's `inherit`).
    Inherit,
    /// A model as pi's `--model` takes it: `provider/id`, a bare id, or an alias pattern such
    /// as Claude Code's `sonnet`, which pi resolves.
    Explicit(String),
}

impl ModelChoice {
    /// The word shown for [`ModelChoice::Inherit`].
    pub const INHERIT: &'static str = "inherit";

    /// `inherit`, or the explicit model.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Inherit => Self::INHERIT,
            Self::Explicit(model) => model,
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ModelChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ModelChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<String>::deserialize(deserializer)?;
        let value = raw.map_or(serde_yaml_ng::Value::Null, serde_yaml_ng::Value::String);
        parse::model_choice(Some(&value)).map_err(serde::de::Error::custom)
    }
}

/// A reasoning level pi understands. pi clamps it to what the chosen model supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    Off,
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
    /// The most the model offers.
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest first.
    pub const ALL: [Self; 7] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// The name pi's `--thinking` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    /// The level named `text` (any case, spaces around it ignored), if Shepherd knows it.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        Self::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(text))
    }

    /// Reads an optional level that comes from elsewhere (a parent pi's own level, a record
    /// an older Shepherd wrote): a level this Shepherd does not know is no level, so the sheep
    /// runs at its agent's default instead of failing to start.
    pub fn deserialize_known<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Self>, D::Error> {
        Ok(Option::<String>::deserialize(deserializer)?
            .as_deref()
            .and_then(Self::parse))
    }
}

/// The thinking level a sheep asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThinkingChoice {
    /// Use the shepherd's current level (absent, null, empty or `default`).
    Inherit,
    /// This level.
    Level(ThinkingLevel),
}

impl ThinkingChoice {
    /// `inherit`, or the level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inherit => ModelChoice::INHERIT,
            Self::Level(level) => level.as_str(),
        }
    }
}

impl fmt::Display for ThinkingChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ThinkingChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ThinkingChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<String>::deserialize(deserializer)?;
        match raw.as_deref().map(str::trim) {
            Some(ModelChoice::INHERIT) => Ok(Self::Inherit),
            other => {
                let value = other.map_or(serde_yaml_ng::Value::Null, |text| {
                    serde_yaml_ng::Value::String(text.to_owned())
                });
                parse::thinking_choice(Some(&value)).map_err(serde::de::Error::custom)
            }
        }
    }
}

/// One parsed agent definition: everything needed to launch a sheep from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDef {
    /// The name a sheep is spawned by (case-sensitive).
    pub name: String,
    /// One line saying what the agent is for.
    pub description: String,
    /// Where the definition was found.
    pub source: AgentSource,
    /// The absolute path of the file, or `bundled:<file>` for a bundled definition.
    #[serde(serialize_with = "serialize_path_lossy")]
    pub file_path: PathBuf,
    /// sha256 of the file's bytes, hex: what a project-agent approval is bound to.
    pub content_hash: String,
    /// The model to run.
    pub model: ModelChoice,
    /// The thinking level to run at.
    pub thinking: ThinkingChoice,
    /// The tool allowlist; `None` means pi's default tools.
    pub tools: Option<Vec<String>>,
    /// A program to run as the sheep instead of pi (argv, first element the program). Such a
    /// sheep takes part through the `shepherd` CLI.
    pub command: Option<Vec<String>>,
    /// The coding agent that runs the sheep (pi unless the definition says otherwise).
    #[serde(default)]
    pub harness: Harness,
    /// Models per harness (`models: {codex: gpt-5-codex, …}`), used whichever harness a spawn
    /// picks; `model` is the definition's own harness's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<Harness, String>,
    /// Limits on each task of a sheep of this agent (`budget:`, or Claude Code's `maxTurns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// Where a task goes when this agent's provider is limited for longer than
    /// `fallbackAfterMinutes` (`fallback:`), in order: the first whose provider is not limited
    /// too takes the task over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<Fallback>,
    /// The host its sheep run on unless a spawn names another (`host:`); `None` runs them here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Environment variables its sheep need from the herd's environment (`needs-env:`), on top
    /// of what its runtime needs anyway (a harness's or pi provider's key): a `command`
    /// sheep's credentials, say. Front ends check them before a herd starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_env: Vec<String>,
    /// How its sheep are confined (`sandbox:`); `None` leaves it to the spawn and the settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// What its sheep may reach over the network when confined (`network:`, default `all`).
    #[serde(default, skip_serializing_if = "crate::sandbox::Network::is_all")]
    pub network: crate::sandbox::Network,
    /// The resources its sheep may use (`limits:`): over the user's settings when the
    /// definition is the user's own or bundled, only lower when it is a project's.
    #[serde(
        default,
        skip_serializing_if = "crate::resources::LimitsLayer::is_empty"
    )]
    pub limits: crate::resources::LimitsLayer,
    /// Replace pi's built-in system prompt with the body.
    pub omit_system_prompt: bool,
    /// Remove pi's own documentation section from the system prompt.
    pub omit_pi_documentation: bool,
    /// Do not load `AGENTS.md` / `CLAUDE.md` context files.
    pub omit_context_files: bool,
    /// Whether a person is meant to spawn this agent directly (informational).
    pub user_invocable: bool,
    /// Frontmatter keys Shepherd does not interpret (Claude Code's `color`, `permissionMode`, …),
    /// in file order.
    pub extra: IndexMap<String, serde_json::Value>,
    /// The Markdown body: the sheep's system prompt.
    pub system_prompt: String,
}

/// One `fallback:` entry: a harness, the model it runs (its `models:` entry or the harness's
/// own default when none is named) and, for another account of the same provider, the
/// credential it spends instead of its usual one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// The coding agent that takes the task over.
    pub harness: Harness,
    /// The model it runs, when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The credential it spends, when not its harness's usual one (`credential:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<Credential>,
}

/// A credential a sheep spends instead of its agent's usual one, named by the variables that
/// hold and take it, never by its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    /// The herd's environment variable that holds the key (`WORK_ANTHROPIC_KEY`): the name of
    /// the account, as notes and status show it.
    pub var: String,
    /// The variable the agent reads its key from, when not its usual one (a Codex provider's
    /// `env_key`); by default the one of the harness's key variables the herd has set, else
    /// its first (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, pi's provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
}

impl AgentDef {
    /// Whether running this definition needs the user's approval first (it comes from the
    /// repository, not from the user).
    pub fn is_repository_controlled(&self) -> bool {
        self.source == AgentSource::Project
    }

    /// The path as text, for messages.
    pub fn file_display(&self) -> String {
        self.file_path.display().to_string()
    }

    /// The model a sheep of this definition asks for on `harness`: the spawn's own choice,
    /// else the definition's model for that harness, else (pi only) the parent's. `None`
    /// leaves the choice to the harness's own configured default: only pi shares the parent's
    /// model names, so no other harness inherits them.
    pub fn model_for(
        &self,
        harness: Harness,
        requested: Option<&str>,
        parent_model: Option<&str>,
    ) -> Option<String> {
        if let Some(model) = requested.filter(|m| !m.trim().is_empty()) {
            return Some(model.to_owned());
        }
        if let Some(model) = self.models.get(&harness) {
            return Some(model.clone());
        }
        match &self.model {
            ModelChoice::Explicit(model) if self.harness == harness => Some(model.clone()),
            _ if harness == Harness::Pi => parent_model.map(str::to_owned),
            _ => None,
        }
    }

    /// The resource limits a sheep of this definition runs with, given the user's `limits`
    /// setting: the built-in defaults, the setting over them, then the definition's block —
    /// over them when the definition is the user's own or bundled, only where it is lower when
    /// it comes from a project (the user's setting is a floor a repository cannot go below).
    pub fn limits(&self, settings: &crate::resources::LimitsLayer) -> crate::resources::Limits {
        let base = crate::resources::Limits::DEFAULT.over(settings);
        match self.source {
            AgentSource::User | AgentSource::Bundled => base.over(&self.limits),
            AgentSource::Project => base.lowered_by(&self.limits),
        }
    }

    /// The thinking level a sheep of this definition asks for on `harness`: the definition's,
    /// else (pi only) the parent's; `None` leaves it to the harness.
    pub fn thinking_for(
        &self,
        harness: Harness,
        parent: Option<ThinkingLevel>,
    ) -> Option<ThinkingLevel> {
        match self.thinking {
            ThinkingChoice::Level(level) => Some(level),
            ThinkingChoice::Inherit if harness == Harness::Pi => parent,
            ThinkingChoice::Inherit => None,
        }
    }
}

fn serialize_path_lossy<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

#[cfg(test)]
mod tests;
