//! The broker's own shapes for a run, stored in the herd as JSON: what was asked for once
//! checked ([`RunSpec`]), where its notes went ([`PlanResult`]), and where each task stands
//! ([`StepState`]). Every change to a step is journaled before the driver acts on it, so a
//! restarted broker reads exactly where each task was.

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shepherd_core::protocol::{CallerContext, RunStepView};
use shepherd_notes::Mode;

use crate::sheep::worktree::{Repo, Worktree, WorktreeReport};
use crate::state::broker::Broker;

/// Where a run's notes went: its session and one reserved note per task, in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Plan {
    pub(crate) session_name: String,
    pub(crate) session_path: String,
    pub(crate) session_relative_path: String,
    pub(crate) resumed: bool,
    pub(crate) notes: Vec<String>,
    pub(crate) notes_relative: Vec<String>,
}

/// What every task of one run shares while its driver runs.
pub(crate) struct Run {
    pub(crate) broker: Arc<Broker>,
    pub(crate) id: String,
    pub(crate) spec: RunSpec,
    pub(crate) plan: Plan,
}

/// A run as checked and accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunSpec {
    pub(crate) mode: Mode,
    pub(crate) steps: Vec<SpecStep>,
    #[serde(default)]
    pub(crate) session_name: Option<String>,
    pub(crate) timeout_minutes: f64,
    #[serde(default)]
    pub(crate) backend: Option<shepherd_core::settings::Backend>,
    #[serde(default)]
    pub(crate) parent_model: Option<String>,
    #[serde(default)]
    pub(crate) parent_thinking: Option<String>,
    #[serde(default)]
    pub(crate) caller: CallerContext,
    #[serde(default)]
    pub(crate) pi_command: Option<Vec<String>>,
    pub(crate) keep_pane: bool,
    pub(crate) max_concurrency: usize,
    /// Whether the run writes notes (the herd's fieldnotes setting, or a session named).
    #[serde(default = "yes")]
    pub(crate) fieldnotes: bool,
    /// Limits on each task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<shepherd_core::budget::Budget>,
}

fn yes() -> bool {
    true
}

/// One checked task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpecStep {
    pub(crate) agent: String,
    pub(crate) task: String,
    pub(crate) cwd: PathBuf,
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// The coding agent to run it on, when not the definition's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) harness: Option<shepherd_core::harness::Harness>,
    /// The host its sheep runs on, when not this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    /// Set when the task runs on a host in its own worktree there (made by its spawn).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) remote_isolate: bool,
    /// Set when the task runs in its own worktree of this repository.
    #[serde(default)]
    pub(crate) repo: Option<Repo>,
    /// Limits on this task (over the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<shepherd_core::budget::Budget>,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepPhase {
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
    fn word(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Closing => "closing",
            Self::Done => "done",
        }
    }
}

/// One task's state, journaled at every change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepState {
    pub(crate) phase: StepPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_id: Option<String>,
    /// The task text as handed over (`{previous}` filled in for chain steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worktree: Option<Worktree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) started_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) finished_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) outcome: Option<Outcome>,
}

impl StepState {
    pub(crate) fn view(&self, agent: &str) -> RunStepView {
        RunStepView {
            agent: agent.to_owned(),
            phase: self.phase.word().to_owned(),
            status: self.outcome.as_ref().map(|o| o.status.clone()),
            task_id: self.task_id.clone(),
            agent_id: self.agent_id.clone(),
            started_at: self.started_at,
            finished_at: self.finished_at,
        }
    }
}

/// How a task ended, as the run reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Outcome {
    #[serde(default)]
    pub(crate) agent_id: Option<String>,
    #[serde(default)]
    pub(crate) task_id: Option<String>,
    /// A task state (`completed`, `failed`, `cancelled`, `timed_out`, …) or `skipped`.
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) return_code: Option<i32>,
    /// The full result text: the sheep's final words, else its done summary, else the error.
    pub(crate) text: String,
    #[serde(default)]
    pub(crate) error: Option<String>,
    /// Whether the task reached its sheep (and so the herd finalises its note).
    pub(crate) delegated: bool,
    #[serde(default)]
    pub(crate) worktree: Option<WorktreeReport>,
    /// A task on a host that asked for isolate: what became of its branch there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) remote_worktree: Option<Value>,
}

impl Outcome {
    /// A task that never reached a sheep.
    pub(crate) fn not_run(status: &str, return_code: Option<i32>, why: String) -> Self {
        Self {
            agent_id: None,
            task_id: None,
            status: status.to_owned(),
            return_code,
            text: why.clone(),
            error: Some(why),
            delegated: false,
            worktree: None,
            remote_worktree: None,
        }
    }

    /// Cancelled before it reached a sheep.
    pub(crate) fn cancelled_before_start() -> Self {
        Self::not_run(
            "cancelled",
            Some(130),
            "cancelled before it started".to_owned(),
        )
    }

    /// Whether the task completed.
    pub(crate) fn completed(&self) -> bool {
        self.status == "completed"
    }

    /// `failed (rc 1)`.
    pub(crate) fn phrase(&self) -> String {
        match self.return_code {
            Some(rc) => format!("{} (rc {rc})", self.status),
            None => self.status.clone(),
        }
    }
}

/// A stored value as the broker's shape.
pub(crate) fn from_value<T: DeserializeOwned + Default>(value: &Value) -> T {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

/// The broker's shape as a stored value.
pub(crate) fn to_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("run state serialises")
}
