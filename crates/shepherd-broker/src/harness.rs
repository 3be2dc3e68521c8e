//! What each kind of sheep program can do for the controls that depend on it: the seam where
//! other harnesses (Claude Code, Codex, …) join.
//!
//! The herd's rules are the same for every sheep; what differs is what its program tells the
//! broker and what it keeps. A budget needs a harness that reports each turn's usage; a resume
//! needs one that keeps its conversation in a session the broker can hand back to it. pi does
//! both (its sheep extension reports every turn, and its session file is the sheep's own);
//! a `command` sheep does neither, so those controls are refused for it with a clear error
//! instead of being silently ignored. A new harness adds a variant here and says what it does.

use std::path::PathBuf;

use shepherd_core::ids::AgentId;

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};

/// The program a sheep runs, as far as the controls are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Harness {
    /// pi with Shepherd's sheep extension.
    Pi,
    /// Any other program, taking part through the `shepherd` CLI.
    Command,
}

impl Harness {
    /// The harness of a sheep's recorded runtime (`pi` or `command`).
    pub(crate) fn of(runtime: &str) -> Self {
        match runtime {
            "pi" => Self::Pi,
            _ => Self::Command,
        }
    }

    /// How people read its name in errors.
    fn describe(self) -> &'static str {
        match self {
            Self::Pi => "a pi sheep",
            Self::Command => "a command sheep",
        }
    }

    /// Whether it reports what each turn used, which budgets count.
    pub(crate) fn reports_usage(self) -> bool {
        matches!(self, Self::Pi)
    }

    /// The session it keeps its conversation in, which a resume starts it on again.
    pub(crate) fn session_file(self, broker: &Broker, id: &AgentId) -> Option<PathBuf> {
        match self {
            Self::Pi => Some(crate::pi::session_file(broker, id)),
            Self::Command => None,
        }
    }

    /// Refuses a budget for a harness that does not report usage.
    pub(crate) fn check_budget(self, who: &str) -> BrokerResult<()> {
        if self.reports_usage() {
            return Ok(());
        }
        Err(BrokerError::new(
            "budget_unsupported",
            format!(
                "{who} is {}, which does not report turns, tool calls, tokens or cost; budgets \
                 apply to pi sheep",
                self.describe()
            ),
        ))
    }

    /// Refuses a resume for a harness that keeps no session.
    pub(crate) fn check_resumable(self, who: &str) -> BrokerResult<()> {
        if matches!(self, Self::Pi) {
            return Ok(());
        }
        Err(BrokerError::new(
            "resume_unsupported",
            format!(
                "{who} is {}, which keeps no session to reopen; only pi sheep can be resumed",
                self.describe()
            ),
        ))
    }
}
