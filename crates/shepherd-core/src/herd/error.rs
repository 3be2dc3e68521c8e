//! Why a herd refused a command. Every refusal has a stable wire code and one line that names
//! the bad value and what would be accepted; a refused command changes nothing.

use crate::error_code::ErrorCode;

/// A refused command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HerdError {
    /// The stable wire code.
    pub code: ErrorCode,
    /// The explanation.
    pub message: String,
}

impl HerdError {
    /// A refusal with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn unknown_agent_id(id: &str) -> Self {
        Self::new(
            ErrorCode::InvalidTarget,
            format!(
                "`{id}` is not an agent id of this herd. Pass the exact id returned by spawn \
                 (shepherd-agent-…); agent names, labels and pane ids are not accepted."
            ),
        )
    }

    pub(crate) fn closed(display: &str, id: &str, what: &str) -> Self {
        Self::new(
            ErrorCode::ClosedHandle,
            format!("{display} ({id}) {what}; it cannot take work or messages."),
        )
    }

    pub(crate) fn unknown_task(id: &str) -> Self {
        Self::new(
            ErrorCode::UnknownTask,
            format!(
                "`{id}` is not a task id of this herd. Pass a task id returned by delegate \
                 (shepherd-task-…); agent ids and pane ids are not task ids."
            ),
        )
    }
}
