//! A run as the herd keeps it ([`Run`]): what was asked, its plan, each step's state and its
//! report. The events that change it are recorded by `herd::run`.

use serde::{Deserialize, Serialize};

use crate::run::{RunPlan, RunReport, RunSpec, StepState};

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// `run-xxxxxxxx`.
    pub id: String,
    /// The client request id of the submission, so a resent submission finds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When it was accepted (ms).
    pub created_at: i64,
    /// Whether it goes on without a client following it.
    #[serde(default)]
    pub detach: bool,
    /// What was asked for, checked.
    pub spec: RunSpec,
    /// Its session and reserved notes, once planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<RunPlan>,
    /// Each task's state, in input order.
    pub steps: Vec<StepState>,
    /// Why it was cancelled, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// Its final report, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<RunReport>,
}

impl Run {
    /// Whether it has finished.
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }
}
