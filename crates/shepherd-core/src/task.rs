//! Task states, settlement statuses and return codes.
//!
//! A task is settled only by an explicit `shepherd_done`, a failure, a close or a deadline; an
//! idle sheep or an ended turn never settles anything. These types carry that vocabulary and
//! the fixed mapping from outcome to return code (completed 0, failed 1, blocked 2, timed out
//! 124, cancelled 130) and to note status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Accepted, not yet handed to the sheep.
    Created,
    /// Handed to the sheep; no question outstanding.
    Running,
    /// The task's sheep waits for a reply to a tracked request.
    Waiting,
    /// The sheep called done with `completed`.
    Completed,
    /// The sheep called done with `blocked`, or a reply deadline passed.
    Blocked,
    /// The sheep called done with `failed`, or its process died.
    Failed,
    /// The sheep was closed while the task was open.
    Cancelled,
    /// The task's deadline passed.
    TimedOut,
}

impl TaskState {
    /// Whether the task is settled (no further transition is possible).
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Created | Self::Running | Self::Waiting)
    }

    /// The return code of a settled task; `None` while it is open.
    pub fn return_code(self) -> Option<i32> {
        match self {
            Self::Created | Self::Running | Self::Waiting => None,
            Self::Completed => Some(0),
            Self::Failed => Some(1),
            Self::Blocked => Some(2),
            Self::TimedOut => Some(124),
            Self::Cancelled => Some(130),
        }
    }

    /// The wire name (`timed_out`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Completed => "completed",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed_out",
        }
    }

    /// The status the task's note records: blocked tasks are `failed` notes, as in the
    /// original; timed-out tasks are `timed-out`.
    pub fn note_status(self) -> &'static str {
        match self {
            Self::Created => "pending",
            Self::Running | Self::Waiting => "running",
            Self::Completed => "completed",
            Self::Blocked | Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed-out",
        }
    }
}

/// What a sheep may report with `shepherd_done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum DoneStatus {
    /// The task is finished.
    Completed,
    /// The sheep cannot go on without help.
    Blocked,
    /// The task failed.
    Failed,
}

impl DoneStatus {
    /// The task state this status settles to.
    pub fn task_state(self) -> TaskState {
        match self {
            Self::Completed => TaskState::Completed,
            Self::Blocked => TaskState::Blocked,
            Self::Failed => TaskState::Failed,
        }
    }

    /// Every status, in the order a sheep is offered them.
    pub const ALL: [Self; 3] = [Self::Completed, Self::Blocked, Self::Failed];

    /// The word a sheep reports it with.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
        }
    }

    /// Parses `completed`, `blocked` or `failed`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }
}

impl std::str::FromStr for DoneStatus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text).ok_or_else(|| {
            let accepted: Vec<&str> = Self::ALL.iter().map(|status| status.as_str()).collect();
            format!("`{text}` is not one of {}", accepted.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_codes_and_note_statuses() {
        let table = [
            (TaskState::Completed, 0, "completed"),
            (TaskState::Failed, 1, "failed"),
            (TaskState::Blocked, 2, "failed"),
            (TaskState::TimedOut, 124, "timed-out"),
            (TaskState::Cancelled, 130, "cancelled"),
        ];
        for (state, code, note) in table {
            assert!(state.is_terminal());
            assert_eq!(state.return_code(), Some(code));
            assert_eq!(state.note_status(), note);
        }
        for open in [TaskState::Created, TaskState::Running, TaskState::Waiting] {
            assert!(!open.is_terminal());
            assert_eq!(open.return_code(), None);
        }
        assert_eq!(
            serde_json::to_string(&TaskState::TimedOut).unwrap(),
            "\"timed_out\""
        );
    }
}
