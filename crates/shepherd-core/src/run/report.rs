//! A finished run's report: the document `shepherd run --json` prints and every front end (the
//! CLI, the pi `subagent` tool, MCP) reads, typed once here so the schema and the generated
//! TypeScript carry its fields.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fieldnotes::status::Mode;
use crate::worktree::WorktreeReport;

/// The report of a finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// The run.
    pub run_id: String,
    /// `single`, `parallel` or `chain`.
    pub mode: Mode,
    /// The fieldnotes session (null when the run wrote no notes).
    #[serde(default)]
    pub session_name: Option<String>,
    /// Its directory.
    #[serde(default)]
    pub session_path: Option<String>,
    /// Its directory relative to the project root.
    #[serde(default)]
    pub session_relative_path: Option<String>,
    /// Whether the run continued an existing session.
    #[serde(default)]
    pub resumed: bool,
    /// Each task's result, in input order.
    pub results: Vec<RunResult>,
    /// Tasks that completed.
    pub succeeded: usize,
    /// All tasks.
    pub total: usize,
    /// For a chain that stopped: which step, and how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Whether the run was cancelled (a signal, an explicit cancel, or its client gone).
    #[serde(default)]
    pub interrupted: bool,
    /// Why it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// The exit status `shepherd run` gives it: the return code of the first task, in input
    /// order, that did not complete; 0 when all did, 130 when the run was cancelled.
    pub exit_code: u8,
    /// Branches with work to land (`shepherd merge`) or discard — a task's commits and the
    /// changes preserved when its sheep closed, a worktree kept, a remote sheep's branch brought
    /// home (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worktrees: Vec<WorktreeReport>,
    /// Problems that did not change any result (e.g. a note that could not be finalised).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One task's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The agent definition.
    pub agent: String,
    /// The host its sheep ran on (absent: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its sheep, once spawned.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Its task, once delegated.
    #[serde(default)]
    pub task_id: Option<String>,
    /// A task state (`completed`, `failed`, `blocked`, `timed_out`, `cancelled`) or `skipped`.
    pub status: super::StepStatus,
    /// Its return code.
    #[serde(default)]
    pub return_code: Option<i32>,
    /// The result text, cut at 50 KiB (`fullOutput` then names the file holding all of it).
    pub text: String,
    /// What went wrong, when something did.
    #[serde(default)]
    pub error: Option<String>,
    /// Its note.
    #[serde(default)]
    pub note: Option<String>,
    /// Its note relative to the project root.
    #[serde(default)]
    pub note_relative: Option<String>,
    /// The file holding the whole text, when it was cut.
    #[serde(default)]
    pub full_output: Option<String>,
    /// What became of its worktree, when it ran isolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeReport>,
}

impl RunResult {
    /// Whether the task completed.
    pub fn completed(&self) -> bool {
        self.status == super::StepStatus::Completed
    }
}

/// Where a chain stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stopped {
    /// 1-based step number.
    pub step: usize,
    /// Its agent definition.
    pub agent: String,
    /// How it ended.
    pub status: super::StepStatus,
    /// `failed (rc 1)`.
    pub phrase: String,
}
