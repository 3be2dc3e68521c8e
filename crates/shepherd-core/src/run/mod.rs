//! A run's shapes as the herd keeps them: what was asked for once checked ([`RunSpec`]),
//! where its notes went ([`RunPlan`]), where each task stands ([`StepState`]) and how it ended
//! ([`Outcome`]), and the finished run's report ([`RunReport`], the `shepherd run --json`
//! document). The broker decides everything about a run and journals each change in these
//! shapes before acting on it, so a restarted broker reads exactly where each task was.

mod report;

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fieldnotes::status::Mode;
use crate::spawn::CallerContext;
use crate::task::TaskState;
use crate::worktree::{Repo, Worktree, WorktreeReport};

pub use report::{RunReport, RunResult, Stopped};

/// Where a run's notes went: its session and one reserved note per task, in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    pub session_name: String,
    pub session_path: String,
    pub session_relative_path: String,
    pub resumed: bool,
    pub notes: Vec<String>,
    pub notes_relative: Vec<String>,
}

/// A run as checked and accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    pub mode: Mode,
    pub steps: Vec<SpecStep>,
    #[serde(default)]
    pub session_name: Option<String>,
    pub timeout_minutes: f64,
    #[serde(default)]
    pub backend: Option<crate::settings::Backend>,
    #[serde(default)]
    pub parent_model: Option<String>,
    #[serde(
        default,
        deserialize_with = "crate::agent_def::ThinkingLevel::deserialize_known"
    )]
    pub parent_thinking: Option<crate::agent_def::ThinkingLevel>,
    #[serde(default)]
    pub caller: CallerContext,
    #[serde(default)]
    pub pi_command: Option<Vec<String>>,
    pub keep_pane: bool,
    pub max_concurrency: usize,
    /// Whether the run writes notes (the herd's fieldnotes setting, or a session named).
    #[serde(default = "yes")]
    pub fieldnotes: bool,
    /// Limits on each task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// The least sandbox every step's sheep runs in, when the run asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// The person's own `--sandbox`, which may loosen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_sandbox: Option<crate::sandbox::Sandbox>,
}

fn yes() -> bool {
    true
}

/// One checked task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecStep {
    pub agent: String,
    pub task: String,
    pub cwd: PathBuf,
    #[serde(default)]
    pub label: Option<String>,
    /// The coding agent to run it on, when not the definition's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::harness::Harness>,
    /// The host its sheep runs on, when not this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Set when the task runs on a host in its own worktree there (made by its spawn).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote_isolate: bool,
    /// Set when the task runs in its own worktree of this repository.
    #[serde(default)]
    pub repo: Option<Repo>,
    /// Limits on this task (over the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepPhase {
    /// Waiting for its turn.
    #[default]
    Queued,
    /// Its sheep is being started and handed the task.
    Starting,
    /// Its sheep works on it.
    Running,
    /// Its sheep is being closed.
    Closing,
    /// Finished.
    Done,
}

impl StepPhase {
    /// Its spelling on the wire (`queued`, `starting`, `running`, `closing`, `done`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Closing => "closing",
            Self::Done => "done",
        }
    }
}

impl std::fmt::Display for StepPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a task of a run ended: its task's state, or `skipped` (a chain stopped before it).
/// Journals keep it by its wire spelling; every task state is one, so a record written while a
/// task was still open reads back too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not yet started.
    Created,
    /// Its sheep works on it.
    Running,
    /// Its sheep waits for an answer.
    Waiting,
    /// Done.
    Completed,
    /// Its sheep could not go on without help.
    Blocked,
    /// It failed.
    Failed,
    /// It was cancelled.
    Cancelled,
    /// Its deadline passed.
    TimedOut,
    /// A chain stopped before it.
    Skipped,
}

impl StepStatus {
    /// Its spelling on the wire and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skipped => "skipped",
            Self::Created => TaskState::Created.as_str(),
            Self::Running => TaskState::Running.as_str(),
            Self::Waiting => TaskState::Waiting.as_str(),
            Self::Completed => TaskState::Completed.as_str(),
            Self::Blocked => TaskState::Blocked.as_str(),
            Self::Failed => TaskState::Failed.as_str(),
            Self::Cancelled => TaskState::Cancelled.as_str(),
            Self::TimedOut => TaskState::TimedOut.as_str(),
        }
    }
}

impl From<TaskState> for StepStatus {
    fn from(state: TaskState) -> Self {
        match state {
            TaskState::Created => Self::Created,
            TaskState::Running => Self::Running,
            TaskState::Waiting => Self::Waiting,
            TaskState::Completed => Self::Completed,
            TaskState::Blocked => Self::Blocked,
            TaskState::Failed => Self::Failed,
            TaskState::Cancelled => Self::Cancelled,
            TaskState::TimedOut => Self::TimedOut,
        }
    }
}

impl std::fmt::Display for StepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task's state, journaled at every change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepState {
    pub phase: StepPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The task text as handed over (`{previous}` filled in for chain steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

/// How a task ended, as the run reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub task_id: Option<String>,
    /// A task state (`completed`, `failed`, `cancelled`, `timed_out`, …) or `skipped`.
    pub status: StepStatus,
    #[serde(default)]
    pub return_code: Option<i32>,
    /// The full result text ([`result_text`]).
    pub text: String,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the task reached its sheep (and so the herd finalises its note).
    pub delegated: bool,
    #[serde(default)]
    pub worktree: Option<WorktreeReport>,
    /// The host its sheep ran on (absent: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A task on a host that asked for isolate: what became of its branch there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_worktree: Option<WorktreeReport>,
}

impl Outcome {
    /// A task that never reached a sheep.
    pub fn not_run(status: StepStatus, return_code: Option<i32>, why: String) -> Self {
        Self {
            agent_id: None,
            task_id: None,
            status,
            return_code,
            text: why.clone(),
            error: Some(why),
            delegated: false,
            worktree: None,
            host: None,
            remote_worktree: None,
        }
    }

    /// Cancelled before it reached a sheep.
    pub fn cancelled_before_start() -> Self {
        Self::not_run(
            StepStatus::Cancelled,
            Some(130),
            "cancelled before it started".to_owned(),
        )
    }

    /// Whether the task completed.
    pub fn completed(&self) -> bool {
        self.status == StepStatus::Completed
    }

    /// `failed (rc 1)`.
    pub fn phrase(&self) -> String {
        match self.return_code {
            Some(rc) => format!("{} (rc {rc})", self.status),
            None => self.status.as_str().to_owned(),
        }
    }
}

/// A task's result text — what `{previous}` becomes in a chain and what a run reports — the
/// same for every kind of sheep: its final words, followed by its `shepherd_done` summary,
/// labelled, when the words do not already hold it (a sheep that ends with "Done." still hands
/// on what it did); the summary alone when it said nothing after; else the error.
pub fn result_text(
    final_words: Option<&str>,
    summary: Option<&str>,
    error: Option<&str>,
) -> String {
    fn said(text: Option<&str>) -> Option<&str> {
        text.map(str::trim).filter(|t| !t.is_empty())
    }
    match (said(final_words), said(summary)) {
        (Some(words), Some(summary)) if !words.contains(summary) => {
            format!("{words}\n\nSummary: {summary}")
        }
        (Some(words), _) => words.to_owned(),
        (None, Some(summary)) => summary.to_owned(),
        (None, None) => said(error).unwrap_or_default().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{StepPhase, StepStatus, result_text};
    use crate::task::TaskState;

    #[test]
    fn a_step_status_is_spelled_as_its_task_state_and_reads_back() {
        let states = [
            TaskState::Created,
            TaskState::Running,
            TaskState::Waiting,
            TaskState::Completed,
            TaskState::Blocked,
            TaskState::Failed,
            TaskState::Cancelled,
            TaskState::TimedOut,
        ];
        for state in states {
            let status = StepStatus::from(state);
            assert_eq!(status.as_str(), state.as_str());
            let wire = serde_json::to_value(status).unwrap();
            assert_eq!(wire, serde_json::to_value(state).unwrap());
            assert_eq!(serde_json::from_value::<StepStatus>(wire).unwrap(), status);
        }
        // Journals written before the closed set kept these spellings.
        let skipped: StepStatus = serde_json::from_str("\"skipped\"").unwrap();
        assert_eq!(skipped, StepStatus::Skipped);
        assert_eq!(skipped.to_string(), "skipped");
        assert!(serde_json::from_str::<StepStatus>("\"done\"").is_err());
        assert_eq!(StepPhase::Closing.to_string(), "closing");
    }

    #[test]
    fn the_result_is_the_final_words_with_the_summary_they_lack() {
        assert_eq!(
            result_text(Some("Done."), Some("listed a, b and c"), None),
            "Done.\n\nSummary: listed a, b and c"
        );
        assert_eq!(
            result_text(
                Some("I listed a, b and c."),
                Some("listed a, b and c"),
                None
            ),
            "I listed a, b and c."
        );
        assert_eq!(result_text(Some("  "), Some("listed"), None), "listed");
        assert_eq!(result_text(None, None, Some("it crashed")), "it crashed");
        assert_eq!(
            result_text(Some("words"), None, Some("late error")),
            "words"
        );
        assert_eq!(result_text(None, None, None), "");
    }
}
