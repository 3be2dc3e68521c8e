//! Terminal backends: where a sheep runs and how Shepherd sees it.
//!
//! Every sheep runs under Shepherd's own supervisor (`shepherd supervise`), which starts the
//! sheep's program, reports to the broker that it runs and how it ended, and ends it on request.
//! A backend only decides *where* that supervisor runs — a detached process with its output in a
//! log (headless), a tmux window or pane, or a Herdr tab or pane — and knows how to read what the
//! sheep shows and how to make sure everything is gone on close. Backends are synchronous (they
//! run short commands or socket calls with deadlines); the broker calls them off its async
//! threads.

// Unit tests set up files and processes directly; the code they test keeps clippy.toml's rules.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod headless;
pub mod herdr;
pub mod platform;
pub mod process;
pub mod registry;
pub mod sandbox_probe;
pub mod tmux;

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;
use std::time::Instant;

pub use shepherd_core::backend::{BackendKind, LaunchRecord, Placement, ReadSource};

/// Everything needed to start one sheep under its supervisor. It crosses to a remote host as
/// JSON, where that host's `shepherd` places the supervisor with its own backend.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// The host a remote sheep runs on cannot be reached now (its link is down).
    #[error("{0}")]
    HostUnreachable(String),
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
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unavailable(_) => ErrorCode::BackendUnavailable,
            Self::HostUnreachable(_) => ErrorCode::HostUnreachable,
            Self::NoCallerPane(_) => ErrorCode::NoCallerPane,
            Self::Launch(_) => ErrorCode::SpawnFailed,
            Self::NotConfirmed(_) => ErrorCode::CloseUnconfirmed,
            Self::Read(_) => ErrorCode::ReadFailed,
            Self::Io { .. } => ErrorCode::Io,
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

    /// Brings the sheep's pane to the front: its window or tab becomes the current one, and
    /// the terminal client showing `viewer_pane` (the caller's own pane on the same server,
    /// when known) switches to it. A backend with nothing to show keeps this default.
    fn focus(&self, record: &LaunchRecord, viewer_pane: Option<&str>) -> Result<(), TermError> {
        let _unused = (record, viewer_pane);
        Err(TermError::Unavailable(format!(
            "a {} sheep has no window to show; read its output instead",
            self.kind().as_str()
        )))
    }
}
