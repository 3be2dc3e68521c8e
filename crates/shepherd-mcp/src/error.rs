//! Why a tool call did not do what was asked, as the model reads it.
//!
//! Every failure — the broker's refusals with their stable codes, an unreachable broker, bad
//! arguments — becomes a [`ToolError`]: a code, one line naming the bad value and what is
//! accepted, a return code, and a hint saying what to call instead. The server returns it as a
//! tool result marked as an error ([`super::text::failure`]); protocol errors are kept for what
//! is not a tool call at all (an unknown tool name).

use shepherd_client::wire::ClientError;
use shepherd_core::error_code::ErrorCode;

use shepherd_client::CliError;

/// A failed tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ToolError {
    /// The stable code (the broker's own, or `invalid_arguments`, `broker_unavailable`, …).
    pub(crate) code: ErrorCode,
    /// One line, naming the bad value and what is accepted.
    pub(crate) message: String,
    /// What `return code` the result reports (1 unless the failure has its own).
    pub(crate) return_code: i32,
}

impl ToolError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            return_code: 1,
        }
    }

    /// Arguments the tool cannot use.
    pub(crate) fn arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArguments, message)
    }

    /// What to do about it, when there is something to say: in the tools' own words where
    /// they differ from the command line's, else the catalogue's hint.
    pub(crate) fn hint(&self) -> Option<String> {
        let hint = match self.code {
            ErrorCode::UnknownAgent => {
                "Agent names are case-sensitive: copy one exactly as shepherd {\"action\": \"agents\"} lists it."
            }
            ErrorCode::InvalidTarget | ErrorCode::NotFound => {
                "Pass the exact agent id that shepherd_spawn returned; shepherd {\"action\": \"herd\"} lists your sheep with their ids."
            }
            ErrorCode::UnknownTask | ErrorCode::InvalidHandle => {
                "Pass task ids from shepherd_delegate (or shepherd_prompt); agent ids are not task ids."
            }
            ErrorCode::UnknownRun => {
                "Pass the runId a shepherd_run call returned; finished runs are kept only for a while."
            }
            ErrorCode::ActiveTask => {
                "A sheep holds one task at a time: watch it (shepherd_watch) until it settles, or close the sheep."
            }
            ErrorCode::DuplicateLabel => {
                "Display names must be unique in the herd: choose another label, or reuse the sheep that has it."
            }
            ErrorCode::InvalidLabel => {
                "A label is letters, digits, spaces, _ - . (at most 64 characters, no colon)."
            }
            ErrorCode::ApprovalRequired | ErrorCode::DefinitionChanged => {
                "A project agent runs only after a person approves it: ask the user to run `shepherd agents approve <name>` in the project."
            }
            ErrorCode::DepthExceeded => {
                "Sheep may start herds of their own only up to the maxDepth setting; do the work yourself or ask your parent."
            }
            ErrorCode::BrokerUnavailable
            | ErrorCode::BrokerUnresponsive
            | ErrorCode::BrokerDisconnected => {
                "The herd's broker did not answer in time; call the tool again (the broker is restarted on demand)."
            }
            ErrorCode::InvalidArguments | ErrorCode::InvalidTimeout | ErrorCode::InvalidRun => {
                "Check the tool's argument descriptions and call it again."
            }
            ErrorCode::MaxSheep => {
                "The herd runs as many sheep as maxSheep allows: close one you no longer need (shepherd_close), then spawn."
            }
            ErrorCode::BudgetUnsupported | ErrorCode::ResumeUnsupported => {
                "Budgets and resume need a sheep that reports its usage and keeps a session (a pi agent); spawn one of those, or go without."
            }
            ErrorCode::InvalidBudget | ErrorCode::InvalidStall => {
                "Budgets are whole numbers of 1 or more (maxCost a positive number); stall is minutes, 0 or more."
            }
            ErrorCode::AgentRunning => {
                "Only a closed or exited sheep can be resumed; a running one takes its next task with shepherd_delegate."
            }
            ErrorCode::NoSession => {
                "The sheep never wrote a session, so there is nothing to resume: spawn a new one."
            }
            ErrorCode::NotAGitRepository => {
                "isolate needs the sheep's directory to be in a git repository with a commit; spawn without isolate, or in a repository."
            }
            ErrorCode::Forbidden => "This identity may not do that in this herd.",
            ErrorCode::NotASheep => {
                "These tools work inside a sheep started by Shepherd, which puts SHEPHERD_SOCKET, SHEPHERD_AGENT_ID and SHEPHERD_TOKEN in its environment."
            }
            other => return other.hint().map(str::to_owned),
        };
        Some(hint.to_owned())
    }
}

impl From<ClientError> for ToolError {
    fn from(err: ClientError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<CliError> for ToolError {
    fn from(err: CliError) -> Self {
        Self::new(err.code, err.message)
    }
}

impl From<ToolError> for CliError {
    fn from(err: ToolError) -> Self {
        Self::new(err.code, err.message)
    }
}
