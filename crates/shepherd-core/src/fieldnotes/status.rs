//! Note statuses, delegation modes, and the rule that sums a session's notes into one status.
//!
//! The spellings are the original extension's (`timed-out` with a dash), because they are
//! written into `session.json`, note frontmatter and `shepherd.md`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a note is in its life: `pending` → `running` → one terminal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NoteStatus {
    /// Reserved; its sheep has not started.
    Pending,
    /// Its sheep is working.
    Running,
    /// Finished with a result.
    Completed,
    /// Finished with a failure (including a blocked task).
    Failed,
    /// Its deadline passed.
    TimedOut,
    /// Cancelled or closed before finishing.
    Cancelled,
}

impl NoteStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::Running,
        Self::Completed,
        Self::Failed,
        Self::TimedOut,
        Self::Cancelled,
    ];

    /// The spelling written to files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::TimedOut => "timed-out",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the note is finished (a finalised note never changes status again).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::TimedOut | Self::Cancelled
        )
    }
}

impl fmt::Display for NoteStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A spelling that is not a [`NoteStatus`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown status `{0}`; expected one of pending, running, completed, failed, timed-out, cancelled"
)]
pub struct UnknownStatus(pub String);

impl FromStr for NoteStatus {
    type Err = UnknownStatus;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| UnknownStatus(text.to_owned()))
    }
}

/// How a delegation runs its sheep.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One sheep.
    #[default]
    Single,
    /// Several sheep at once.
    Parallel,
    /// Sheep one after another, each seeing the previous one's result.
    Chain,
}

impl Mode {
    /// The spelling written to files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Parallel => "parallel",
            Self::Chain => "chain",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A spelling that is not a [`Mode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`; expected single, parallel or chain")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [Self::Single, Self::Parallel, Self::Chain]
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| UnknownMode(text.to_owned()))
    }
}

/// The status a session shows for its notes' statuses.
///
/// The rule: `running` while any note is pending or running, and for a session with no notes
/// yet. Once every note is finished the session takes the most serious outcome among them:
/// `failed` if any failed, else `timed-out` if any timed out, else `cancelled` if any was
/// cancelled, else `completed`. A session whose work partly failed should not read as done.
pub fn summarise(statuses: impl IntoIterator<Item = NoteStatus>) -> NoteStatus {
    let mut seen = [false; 6];
    for status in statuses {
        seen[status as usize] = true;
    }
    if seen[NoteStatus::Pending as usize] || seen[NoteStatus::Running as usize] {
        return NoteStatus::Running;
    }
    [
        NoteStatus::Failed,
        NoteStatus::TimedOut,
        NoteStatus::Cancelled,
        NoteStatus::Completed,
    ]
    .into_iter()
    .find(|status| seen[*status as usize])
    .unwrap_or(NoteStatus::Running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use NoteStatus::*;

    #[test]
    fn spellings_round_trip() {
        for status in NoteStatus::ALL {
            assert_eq!(status.as_str().parse::<NoteStatus>().unwrap(), status);
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{status}\"")
            );
        }
        assert!("timed_out".parse::<NoteStatus>().is_err());
        assert_eq!("chain".parse::<Mode>().unwrap(), Mode::Chain);
    }

    #[test]
    fn session_status_summarises_notes() {
        assert_eq!(summarise([]), Running);
        assert_eq!(summarise([Completed, Pending]), Running);
        assert_eq!(summarise([Completed, Running]), Running);
        assert_eq!(summarise([Completed, Completed]), Completed);
        assert_eq!(summarise([Completed, Cancelled]), Cancelled);
        assert_eq!(summarise([Cancelled, TimedOut]), TimedOut);
        assert_eq!(summarise([TimedOut, Failed, Completed]), Failed);
    }
}
