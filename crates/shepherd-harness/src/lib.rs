//! What Shepherd knows about each coding agent it runs as a sheep, behind one seam.
//!
//! pi sheep are the broker's own business (its sheep extension speaks the protocol); every
//! other harness — Claude Code, Codex, Gemini CLI, opencode — is one module here implementing
//! [`Adapter`]: which restrictions it can honour, how a sheep's own configuration directory is
//! composed from the user's (the user's files are read, never changed), the command line of one
//! headless turn and of the interactive program, and how its machine-readable output reads as
//! a [`Turn`]. The broker composes a [`Plan`] at spawn and writes it beside the sheep's state;
//! the sheep's driver (`shepherd harness`) reads it back and runs the agent. Each harness's
//! module also declares its [`Profile`] — its program and install line, its provider's
//! variables and hosts, its logins — which the front ends, the sandbox and the environment
//! checks read through [`profile`] (pi's module holds only that). Adding a harness is one more
//! module and one line in [`adapter`] and in [`profile`].

mod claude;
mod codex;
mod compose;
mod gemini;
#[cfg(test)]
mod hand_lists;
mod limits;
pub mod needs;
mod opencode;
mod pi;
mod profile;
mod turn;

pub use limits::{key_var, provider_key, provider_name};
pub use profile::{Profile, Program, Provider};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shepherd_core::agent_def::ThinkingLevel;
use shepherd_core::harness::{Harness, ToolSet};

pub use claude::content_text;
pub use turn::{AgentRetry, Ridden, Telemetry, Turn};

/// A restriction of a definition that a harness cannot honour. Spawn refuses rather than run
/// the sheep with more than the definition allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} cannot honour {restriction}; pick another harness or widen the definition", harness.title())]
pub struct Unsupported {
    /// The harness.
    pub harness: Harness,
    /// What it cannot honour, in words.
    pub restriction: String,
}

/// Composing a sheep's configuration failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The definition asks for something the harness cannot do.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl HarnessError {
    /// The stable wire code.
    pub fn code(&self) -> shepherd_core::error_code::ErrorCode {
        use shepherd_core::error_code::ErrorCode;
        match self {
            Self::Unsupported(_) => ErrorCode::HarnessUnsupported,
            Self::Io { .. } => ErrorCode::Io,
        }
    }

    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

/// Everything the driver needs to run one sheep's agent, composed by the broker at spawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Which agent.
    pub harness: Harness,
    /// The agent's program and any arguments before Shepherd's own.
    pub program: Vec<String>,
    /// The sheep's own directory under the herd's state: the agent's configuration home.
    pub dir: PathBuf,
    /// Where the agent works.
    pub cwd: PathBuf,
    /// The model it asks for; `None` keeps the agent's own configured default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The thinking level (pi's names), `None` for the agent's default.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "ThinkingLevel::deserialize_known"
    )]
    pub thinking: Option<ThinkingLevel>,
    /// The definition's tool allowlist; `None` for the agent's full set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The definition's body: the sheep's instructions.
    pub instructions: String,
    /// Replace the agent's own system prompt with the instructions instead of adding them.
    #[serde(default)]
    pub replace_system_prompt: bool,
    /// The sheep's MCP server (`shepherd mcp --sheep`): program and arguments.
    pub mcp: Vec<String>,
    /// Variables the agent runs with on top of the sheep's own (its configuration homes).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The agent's session id, when Shepherd chooses it (Claude Code, Gemini CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The model the agent's configuration names when the plan names none, for notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_model: Option<String>,
    /// The sheep runs in a pane (tmux, Herdr): the driver runs the agent's own TUI there and
    /// types its tasks and messages into it, instead of headless turns.
    #[serde(default)]
    pub visible: bool,
    /// The agent session a resumed sheep continues from its first turn; `None` for a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
}

/// The file in a sheep's directory that names the agent session its turns continue, written
/// by the driver once the agent has one, so that a resume can hand it back.
const SESSION_FILE: &str = "agent-session";

/// Records the agent session of the sheep whose directory is `dir`.
///
/// # Errors
/// When the file cannot be written.
pub fn record_session(dir: &Path, session: &str) -> Result<(), HarnessError> {
    let path = dir.join(SESSION_FILE);
    shepherd_fs::write_atomic(&path, session.as_bytes(), Some(0o600))
        .map_err(HarnessError::io(format!("writing {}", path.display())))
}

/// The agent session recorded for the sheep whose directory is `dir`, when it has one.
pub fn recorded_session(dir: &Path) -> Option<String> {
    // The sheep's directory is its own to write: its record is read, never a link's target.
    shepherd_fs::read_to_string_nofollow(&dir.join(SESSION_FILE))
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|session| !session.is_empty())
}

impl Plan {
    /// The tool allowlist sorted by what it allows, when there is one.
    pub fn tool_set(&self) -> Option<ToolSet> {
        self.tools.as_deref().map(ToolSet::classify)
    }

    /// The model for notes: the one asked for, else the one configured.
    pub fn model_name(&self) -> Option<&str> {
        self.model.as_deref().or(self.configured_model.as_deref())
    }

    /// Reads a plan file.
    ///
    /// # Errors
    /// When the file cannot be read or is not a plan.
    pub fn read(path: &Path) -> Result<Self, HarnessError> {
        let text = fs_err::read_to_string(path).map_err(HarnessError::io("reading the plan"))?;
        serde_json::from_str(&text).map_err(|err| HarnessError::Io {
            context: format!("reading the plan {}", path.display()),
            source: std::io::Error::other(err),
        })
    }

    /// Writes the plan file (private: it names the sheep's configuration).
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), HarnessError> {
        let text = serde_json::to_vec_pretty(self).expect("plans serialise");
        shepherd_fs::write_atomic(path, &text, Some(0o600))
            .map_err(HarnessError::io(format!("writing {}", path.display())))
    }
}

/// The user's environment, as far as composing a sheep reads it: where their own agent
/// settings live, and the keys they configured.
pub trait UserEnv {
    /// A variable of the user's environment.
    fn var(&self, name: &str) -> Option<OsString>;

    /// `$HOME`.
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// A directory from a variable, else `$HOME/<fallback>`.
    fn dir(&self, var: &str, fallback: &str) -> Option<PathBuf> {
        self.var(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| self.home().map(|home| home.join(fallback)))
    }
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl UserEnv for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
}

/// What differs between coding agents.
pub trait Adapter: Sync {
    /// What Shepherd knows about the agent besides how its turns run (its module's
    /// [`Profile`]).
    fn profile(&self) -> &'static Profile;

    /// Which harness this is.
    fn harness(&self) -> Harness {
        self.profile().harness
    }

    /// Refuses a tool allowlist the agent cannot enforce.
    ///
    /// # Errors
    /// [`Unsupported`] naming the restriction.
    fn check_tools(&self, tools: &ToolSet) -> Result<(), Unsupported> {
        let _ = tools;
        Ok(())
    }

    /// Writes the sheep's configuration under `plan.dir` from the user's own (read, never
    /// changed) and what Shepherd needs (the sheep tools, no first-run dialogs or update checks,
    /// permissions), and fills in `plan.env`, `plan.session` and `plan.configured_model`.
    ///
    /// # Errors
    /// When a file cannot be read or written.
    fn prepare(&self, plan: &mut Plan, user: &dyn UserEnv) -> Result<(), HarnessError>;

    /// The arguments of one headless turn with `prompt`, continuing `session` when given.
    fn headless_args(&self, plan: &Plan, prompt: &str, session: Option<&str>) -> Vec<String>;

    /// The arguments of the agent's interactive program (its TUI) for a sheep in a pane: the
    /// same configuration as a headless turn, no prompt, continuing the plan's session where
    /// Shepherd picks it.
    fn interactive_args(&self, plan: &Plan) -> Vec<String>;

    /// A text the TUI shows once it takes input (its prompt's placeholder or hint line).
    fn ready_text(&self) -> &'static str;

    /// Whether the TUI's screen (its text) shows a turn running: its interrupt hint or its
    /// working line.
    fn busy(&self, screen: &str) -> bool;

    /// Reads one event of a headless turn's machine-readable output into `turn`.
    fn read_event(&self, event: &Value, turn: &mut Turn);

    /// Reads what a turn added to the agent's transcript (whole JSON lines) into `turn`, for a
    /// visible sheep whose turns print nothing machine-readable. Agents whose transcript is not
    /// read this way leave `turn` as it is.
    fn read_transcript(&self, lines: &str, turn: &mut Turn) {
        let _ = (lines, turn);
    }

    /// What the error that ended one of this agent's turns means (a rate or usage limit, a
    /// server error, or fatal), and when its limit resets, from the agent's own words for it.
    /// The shared rules read every provider's bodies; an agent with words of its own adds them.
    fn classify_error(
        &self,
        error: &str,
        now: jiff::Timestamp,
    ) -> shepherd_core::limit::Classified {
        let _ = now;
        shepherd_core::limit::classify(error)
    }

    /// What an error that ended a turn lacks from the sheep's environment, in words that name
    /// the variables to pass (`user` is the environment the sheep was started with); `None`
    /// when the error is not one of a missing login.
    fn missing_login(&self, error: &str, user: &dyn UserEnv) -> Option<String> {
        let _ = (error, user);
        None
    }

    /// The last provider error the TUI's screen (its text) shows, for agents that record it
    /// nowhere else a visible sheep can read; `None` when it shows none.
    fn screen_error(&self, screen: &str) -> Option<String> {
        let _ = screen;
        None
    }

    /// The session a visible sheep's TUI started, when the agent picks its ids itself and the
    /// sheep's own configuration home shows it (it holds that one session only).
    fn interactive_session(&self, plan: &Plan) -> Option<String> {
        let _ = plan;
        None
    }

    /// Where the agent keeps the transcript of `session`, once it exists.
    fn transcript(&self, plan: &Plan, session: &str) -> Option<PathBuf>;

    /// Whether `session` can be resumed after a turn that failed: Gemini CLI keeps no session
    /// whose only request the provider refused, so the next turn starts it again (with the
    /// refused prompt).
    fn session_saved(&self, plan: &Plan, session: &str) -> bool {
        let _ = (plan, session);
        true
    }

    /// Picks a new session for the next turn when the last one was not saved (an agent that
    /// takes its session id from Shepherd refuses to start one whose id it has seen).
    fn new_session(&self, plan: &mut Plan) {
        let _ = plan;
    }

    /// The agent's own commands that print its sessions as JSON, for an agent that keeps them
    /// in a store of its own rather than in a transcript file a visible sheep's driver can
    /// read as it grows (opencode's database); `None` for the others.
    fn export(&self) -> Option<Export> {
        None
    }

    /// The session a visible sheep's TUI started, from what [`Export::sessions`] printed (the
    /// sheep's own configuration home holds that one session only).
    fn read_sessions(&self, listing: &str) -> Option<String> {
        let _ = listing;
        None
    }

    /// Reads what a turn added to a session's export ([`Export::session`]): the messages after
    /// the first `read_to`, moving `read_to` past those that are complete.
    fn read_export(&self, export: &str, read_to: &mut u64, turn: &mut Turn) {
        let _ = (export, read_to, turn);
    }
}

/// The arguments of an agent's own commands that print its sessions as JSON (run as the
/// sheep's agent program, with its configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Lists the sessions.
    pub sessions: Vec<String>,
    /// Prints one session (its id follows these arguments): its messages, each with its
    /// parts, tokens, cost and error.
    pub session: Vec<String>,
}

/// The adapter of a harness; pi has none here (the broker runs it with its own extension).
pub fn adapter(harness: Harness) -> Option<&'static dyn Adapter> {
    match harness {
        Harness::Pi => None,
        Harness::ClaudeCode => Some(&claude::ClaudeCode),
        Harness::Codex => Some(&codex::Codex),
        Harness::Gemini => Some(&gemini::Gemini),
        Harness::Opencode => Some(&opencode::Opencode),
    }
}

/// The profile of `harness`.
pub fn profile(harness: Harness) -> &'static Profile {
    match harness {
        Harness::Pi => &pi::PROFILE,
        Harness::ClaudeCode => &claude::PROFILE,
        Harness::Codex => &codex::PROFILE,
        Harness::Gemini => &gemini::PROFILE,
        Harness::Opencode => &opencode::PROFILE,
    }
}

/// What the error that ended a turn of `harness` means (a rate or usage limit, a server error,
/// or fatal), and when its limit resets: its adapter's reading, and for pi the shared rules.
pub fn classify_error(
    harness: Harness,
    error: &str,
    now: jiff::Timestamp,
) -> shepherd_core::limit::Classified {
    match adapter(harness) {
        Some(adapter) => adapter.classify_error(error, now),
        None => pi::classify_error(error),
    }
}

/// The program a harness runs: `$SHEPHERD_<AGENT>` when set (a path or a name), else its usual
/// name, found on `path`.
pub fn locate_program(adapter: &dyn Adapter, user: &dyn UserEnv) -> Result<PathBuf, String> {
    let program = &adapter.profile().program;
    let named = user
        .var(program.var)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| program.name.into());
    let named = PathBuf::from(named);
    if named.components().count() > 1 {
        return if named.is_file() {
            Ok(named)
        } else {
            Err(format!(
                "{} is not installed at {} ({} names it)",
                adapter.harness().title(),
                named.display(),
                program.var
            ))
        };
    }
    let path = user.var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(&named))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!(
                "{} is not installed: `{}` is not on PATH (install it, or set {} to its program)",
                adapter.harness().title(),
                named.display(),
                program.var
            )
        })
}

/// The text of the block a TUI draws from the last line starting with `marker` (wrapped lines
/// joined, up to a blank line or one that starts with any of `stops`).
pub(crate) fn screen_block(screen: &str, marker: &str, stops: &[&str]) -> Option<String> {
    let lines: Vec<&str> = screen.lines().map(str::trim).collect();
    let start = lines.iter().rposition(|line| line.starts_with(marker))?;
    let mut text = lines[start][marker.len()..].trim().to_owned();
    for line in &lines[start + 1..] {
        if line.is_empty() || stops.iter().any(|stop| line.starts_with(stop)) {
            break;
        }
        text.push(' ');
        text.push_str(line);
    }
    Some(text)
}

/// The message of a provider's JSON error body (`{"error": {"message": …}}`), else `text`.
pub(crate) fn provider_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|body| body["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.to_owned())
}

/// Finds a file under `dir` (a few levels deep) whose name contains `needle` and ends with
/// `suffix`: where an agent put a session's transcript.
pub(crate) fn find_file(dir: &Path, needle: &str, suffix: &str, depth: u32) -> Option<PathBuf> {
    let entries = fs_err::read_dir(dir).ok()?;
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            dirs.push(path);
        } else if name.contains(needle) && name.ends_with(suffix) {
            return Some(path);
        }
    }
    if depth == 0 {
        return None;
    }
    dirs.into_iter()
        .find_map(|dir| find_file(&dir, needle, suffix, depth - 1))
}

#[cfg(test)]
mod screen_tests {
    use super::*;

    const CODEX: &str = "› [Shepherd delegated task from Shepherd] Message ID: x\n\
■ {\"error\":{\"message\":\"the fake model refuses this\n\
request\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}\n\
› Ask Codex to do anything\n";

    const GEMINI: &str = "> [Shepherd delegated task from Shepherd]\n\
✕ [API Error: {\"error\":{\"code\":400,\"message\":\"the fake model refuses this\n\
  request\",\"status\":\"INVALID_ARGUMENT\"}}]\n\
ℹ This request failed. Press F12 for diagnostics.\n";

    #[test]
    fn a_provider_error_on_the_screen_is_read_with_its_message() {
        let codex = adapter(Harness::Codex).unwrap();
        assert_eq!(
            codex.screen_error(CODEX).as_deref(),
            Some("the fake model refuses this request")
        );
        let gemini = adapter(Harness::Gemini).unwrap();
        assert_eq!(
            gemini.screen_error(GEMINI).as_deref(),
            Some("the fake model refuses this request")
        );
        assert_eq!(codex.screen_error("› Ask Codex to do anything\n"), None);
        assert_eq!(gemini.screen_error("> hello\n"), None);
    }
}
