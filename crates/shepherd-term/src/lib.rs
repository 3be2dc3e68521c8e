//! Terminal backends: where a sheep runs and how Shepherd sees it.
//!
//! Every sheep runs under Shepherd's own supervisor (`shepherd supervise`), which starts the
//! sheep's program, reports to the broker that it runs and how it ended, and ends it on request.
//! A backend only decides *where* that supervisor runs — a detached process with its output in a
//! log (headless), a tmux window or pane, or a Herdr tab or pane — and knows how to read what the
//! sheep shows and how to make sure everything is gone on close. Backends are synchronous (they
//! run short commands or socket calls with deadlines); the broker calls them off its async
//! threads.

pub mod headless;
pub mod herdr;
pub mod platform;
pub mod process;
pub mod registry;
pub mod tmux;

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Which backend runs a sheep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// A detached process; output kept in a log.
    Headless,
    /// A tmux window or pane.
    Tmux,
    /// A Herdr tab, pane or workspace.
    Herdr,
}

impl BackendKind {
    /// The wire and setting name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Headless => "headless",
            Self::Tmux => "tmux",
            Self::Herdr => "herdr",
        }
    }

    /// Parses `headless`, `tmux` or `herdr`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "headless" => Some(Self::Headless),
            "tmux" => Some(Self::Tmux),
            "herdr" => Some(Self::Herdr),
            _ => None,
        }
    }
}

/// Where a visible sheep goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// A background tab (tmux: window). The default.
    #[default]
    Tab,
    /// Split the caller's pane to the right.
    PaneRight,
    /// Split the caller's pane downwards.
    PaneDown,
    /// A new workspace (tmux: session).
    Workspace,
}

impl Placement {
    /// Parses `tab`, `pane_right`, `pane_down` or `workspace`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "tab" => Some(Self::Tab),
            "pane_right" => Some(Self::PaneRight),
            "pane_down" => Some(Self::PaneDown),
            "workspace" => Some(Self::Workspace),
            _ => None,
        }
    }
}

/// Everything needed to start one sheep under its supervisor.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// The sheep's id.
    pub agent_id: String,
    /// `<agent>: <label>` or `<agent>`: the window or pane title.
    pub display_name: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// The sheep's program and arguments.
    pub program: Vec<String>,
    /// Environment for the sheep (capability and context variables).
    pub env: Vec<(String, String)>,
    /// The `shepherd` executable that supervises it.
    pub shepherd_exe: PathBuf,
    /// The broker socket the supervisor reports to.
    pub socket: PathBuf,
    /// Where headless output goes.
    pub log: PathBuf,
    /// Where a visible sheep goes.
    pub placement: Placement,
    /// The caller's pane, for split placements.
    pub caller_pane: Option<String>,
    /// The caller's pid: its pane is found through its ancestry when `caller_pane` is not
    /// known (a wrapper stripped the terminal's variables). Used by the Herdr backend.
    pub caller_pid: Option<u32>,
    /// The tmux server to use (the caller's); `None` means the default server.
    pub tmux_socket: Option<PathBuf>,
    /// Keep the pane open after the sheep ends (visible backends).
    pub keep_open: bool,
    /// Hold the sheep's stdin open instead of closing it (pi in RPC mode shuts down at EOF).
    pub keep_stdin: bool,
    /// How long the supervisor keeps the sheep alive without a broker, so a restarted broker
    /// can re-adopt it.
    pub orphan_grace: std::time::Duration,
    /// Further supervisor options from the broker (its state directory, the supervisor's
    /// credential file), passed through unchanged.
    pub supervisor_args: Vec<String>,
}

impl LaunchSpec {
    /// The supervisor's argument list after the executable: `supervise`, the options every
    /// backend passes, `extra` (backend-specific), then `--` and the sheep's program.
    pub fn supervisor_args(&self, extra: &[String]) -> Vec<String> {
        let mut args = vec![
            "supervise".to_owned(),
            "--grace-ms".to_owned(),
            self.orphan_grace.as_millis().to_string(),
        ];
        args.extend(self.supervisor_args.iter().cloned());
        args.extend(extra.iter().cloned());
        args.push("--".to_owned());
        args.extend(self.program.iter().cloned());
        args
    }
}

/// Facts a backend needs to find a sheep again, also after a broker restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchRecord {
    /// The supervisor's pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_pid: Option<u32>,
    /// The sheep program's pid, which leads its own process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The headless output log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// The pane (tmux `%N`, Herdr `w1:p3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// The window or tab holding the pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// The tmux server socket or Herdr socket used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// What to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadSource {
    /// The current screen.
    Visible,
    /// Scrollback, soft-wrapped.
    Recent,
    /// Scrollback with soft wraps joined (default).
    #[default]
    RecentUnwrapped,
    /// What an agent-state detector sees (Herdr only).
    Detection,
}

impl ReadSource {
    /// Parses `visible`, `recent`, `recent-unwrapped` or `detection`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "visible" => Some(Self::Visible),
            "recent" => Some(Self::Recent),
            "recent-unwrapped" | "recent_unwrapped" => Some(Self::RecentUnwrapped),
            "detection" => Some(Self::Detection),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Recent => "recent",
            Self::RecentUnwrapped => "recent-unwrapped",
            Self::Detection => "detection",
        }
    }
}

/// Whether a sheep's pane or processes still exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Still there.
    Present,
    /// Confirmed gone.
    Gone,
    /// Could not be determined (never treated as gone).
    Unknown,
}

/// A backend failure.
#[derive(Debug, thiserror::Error)]
pub enum TermError {
    /// The backend cannot be used here.
    #[error("{0}")]
    Unavailable(String),
    /// A placement that needs the caller's pane could not find it.
    #[error("{0}")]
    NoCallerPane(String),
    /// Starting the sheep failed.
    #[error("could not start the sheep: {0}")]
    Launch(String),
    /// Closing could not be confirmed before the deadline.
    #[error("{0}")]
    NotConfirmed(String),
    /// Reading failed.
    #[error("{0}")]
    Read(String),
    /// An I/O error with its context.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl TermError {
    /// The stable wire code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "backend_unavailable",
            Self::NoCallerPane(_) => "no_caller_pane",
            Self::Launch(_) => "spawn_failed",
            Self::NotConfirmed(_) => "close_unconfirmed",
            Self::Read(_) => "read_failed",
            Self::Io { .. } => "io",
        }
    }
}

/// A place sheep can run.
pub trait Backend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Starts the sheep's supervisor. Returns as soon as it is placed; the supervisor reports
    /// readiness to the broker itself.
    fn launch(&self, spec: &LaunchSpec) -> Result<LaunchRecord, TermError>;

    /// Reads what the sheep shows.
    fn read(
        &self,
        record: &LaunchRecord,
        source: ReadSource,
        lines: u32,
    ) -> Result<String, TermError>;

    /// Makes sure the sheep's processes (and pane, unless kept open) are gone, confirming it
    /// before `deadline`.
    fn close(
        &self,
        record: &LaunchRecord,
        keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError>;

    /// Whether the sheep's pane or processes still exist.
    fn presence(&self, record: &LaunchRecord) -> Presence;

    /// Whether a new sheep can be started here now (Herdr: its server still answers). A
    /// backend that is always there keeps this default.
    fn available(&self) -> Result<(), TermError> {
        Ok(())
    }
}
