//! Which coding agent runs a sheep: its harness, and what a sheep's program is.
//!
//! A sheep is pi by default; an agent definition (or `--harness` on a spawn, a run plan step or
//! a parent tool) may pick Claude Code, Codex, Gemini CLI or opencode instead, and `command`
//! runs any other program. The set of harnesses is closed: everything that differs between
//! them lives behind one adapter per harness elsewhere, and here only the names, the tool
//! vocabulary they share and the model rules that decide what a spawn asks for.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A coding agent Shepherd knows how to run as a sheep.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Harness {
    /// pi, through its sheep extension (the default).
    #[default]
    Pi,
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
    /// opencode.
    Opencode,
}

impl Harness {
    /// Every harness, pi first.
    pub const ALL: [Self; 5] = [
        Self::Pi,
        Self::ClaudeCode,
        Self::Codex,
        Self::Gemini,
        Self::Opencode,
    ];

    /// Every harness's name, in [`Harness::ALL`]'s order: the lists the front ends offer.
    pub const NAMES: [&'static str; 5] = {
        let mut names = [""; 5];
        let mut at = 0;
        while at < Self::ALL.len() {
            names[at] = Self::ALL[at].as_str();
            at += 1;
        }
        names
    };

    /// The name used in definitions, on the command line and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Opencode => "opencode",
        }
    }

    /// The name people know the agent by.
    pub fn title(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::Gemini => "Gemini CLI",
            Self::Opencode => "opencode",
        }
    }

    /// The accepted names, for messages: `pi, claude-code, codex, gemini, opencode`.
    pub fn accepted() -> String {
        Self::NAMES.join(", ")
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A harness name that is not one of [`Harness::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown harness `{0}`; expected one of {accepted}", accepted = Harness::accepted())]
pub struct UnknownHarness(pub String);

impl FromStr for Harness {
    type Err = UnknownHarness;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let wanted = raw.trim();
        Self::ALL
            .into_iter()
            .find(|h| h.as_str() == wanted)
            .ok_or_else(|| UnknownHarness(raw.to_owned()))
    }
}

/// What runs a sheep: one of the harnesses, or a `command` of the definition's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// A program that takes part through the `shepherd` CLI.
    #[default]
    Command,
    /// A coding agent run through its harness adapter.
    Agent(Harness),
}

impl Runtime {
    /// The wire name: `command`, or the harness's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Agent(harness) => harness.as_str(),
        }
    }

    /// Whether the sheep is pi.
    pub fn is_pi(self) -> bool {
        self == Self::Agent(Harness::Pi)
    }

    /// Whether the sheep reports its own readiness and runs (`report ready`, `agent_start`,
    /// `run_settled`): every coding agent does, a plain command does not.
    pub fn reports_runs(self) -> bool {
        matches!(self, Self::Agent(_))
    }

    /// The harness, when a coding agent runs the sheep.
    pub fn harness(self) -> Option<Harness> {
        match self {
            Self::Command => None,
            Self::Agent(harness) => Some(harness),
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Runtime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// On the wire a runtime is `command` or a harness's name.
impl schemars::JsonSchema for Runtime {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Runtime".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut names = vec!["command"];
        names.extend(Harness::ALL.iter().map(|harness| harness.as_str()));
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "What runs a sheep: `command`, or the coding agent's harness."
        })
    }
}

impl<'de> Deserialize<'de> for Runtime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        if raw == "command" {
            return Ok(Self::Command);
        }
        raw.parse()
            .map(Self::Agent)
            .map_err(serde::de::Error::custom)
    }
}

/// What a definition's `tools` allow, in terms every harness can map: the tool names of pi
/// and of Claude Code, in any case, sorted into what they let a sheep do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSet {
    /// Reading files (`read`, `Read`, `NotebookRead`).
    pub read: bool,
    /// Searching and listing (`grep`, `find`, `ls`, `Grep`, `Glob`, `LS`).
    pub search: bool,
    /// Running shell commands (`bash`, `Bash`, `BashOutput`, `KillShell`).
    pub shell: bool,
    /// Changing files (`edit`, `write`, `Edit`, `Write`, `MultiEdit`, `NotebookEdit`).
    pub edit: bool,
    /// The web (`WebFetch`, `WebSearch`).
    pub web: bool,
    /// Names that are none of these (another harness's own tools), as written.
    pub other: Vec<String>,
}

impl ToolSet {
    /// Sorts a definition's tool allowlist.
    pub fn classify(tools: &[String]) -> Self {
        let mut set = Self::default();
        for tool in tools {
            match tool.to_ascii_lowercase().as_str() {
                "read" | "notebookread" => set.read = true,
                "grep" | "find" | "ls" | "glob" => set.search = true,
                "bash" | "bashoutput" | "killshell" | "killbash" => set.shell = true,
                "edit" | "write" | "multiedit" | "notebookedit" => set.edit = true,
                "webfetch" | "websearch" => set.web = true,
                _ => set.other.push(tool.clone()),
            }
        }
        set
    }

    /// Whether the set lets a sheep change nothing: no shell, no edits.
    pub fn is_read_only(&self) -> bool {
        !self.shell && !self.edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_bad_one_lists_the_accepted() {
        for harness in Harness::ALL {
            assert_eq!(harness.as_str().parse::<Harness>().unwrap(), harness);
            let json = serde_json::to_string(&harness).unwrap();
            assert_eq!(json, format!("\"{}\"", harness.as_str()));
        }
        let err = "claude".parse::<Harness>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown harness `claude`; expected one of pi, claude-code, codex, gemini, opencode"
        );
    }

    #[test]
    fn runtimes_keep_their_journal_names() {
        for (runtime, name) in [
            (Runtime::Command, "command"),
            (Runtime::Agent(Harness::Pi), "pi"),
            (Runtime::Agent(Harness::Codex), "codex"),
        ] {
            let json = serde_json::to_string(&runtime).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Runtime>(&json).unwrap(), runtime);
        }
        assert!(serde_json::from_str::<Runtime>("\"emacs\"").is_err());
        assert!(Runtime::Agent(Harness::Gemini).reports_runs());
        assert!(!Runtime::Command.reports_runs());
    }

    #[test]
    fn tools_sort_into_what_they_allow() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let scout = ToolSet::classify(&names(&["read", "grep", "find", "ls"]));
        assert!(scout.is_read_only() && scout.read && scout.search);
        let claude = ToolSet::classify(&names(&["Read", "Grep", "Glob", "Bash"]));
        assert!(claude.shell && !claude.is_read_only());
        let odd = ToolSet::classify(&names(&["Edit", "TodoWrite"]));
        assert!(odd.edit && odd.other == ["TodoWrite"]);
    }
}
