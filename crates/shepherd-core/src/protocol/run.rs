//! Runs over the protocol: a front end submits a whole run (`run.submit`), follows its progress
//! (pushed `run` events, or `run.attach` after reconnecting) and may cancel it (`run.cancel`);
//! the broker does the rest. The finished run's report is the document `shepherd run --json`
//! prints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CallerContext;

/// One task of a run, as submitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStepParams {
    /// The agent definition's exact name.
    pub agent: String,
    /// The task (chain steps may use `{previous}`).
    pub task: String,
    /// Its working directory, absolute (default: the project root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Run it in its own git worktree.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolate: bool,
    /// A label for its sheep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The coding agent to run it on, instead of the definition's own harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::harness::Harness>,
    /// The host its sheep runs on (a host the user defined; default: the run's, else the
    /// definition's, else this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Limits on this task (over the run's and the definition's, key by key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
}

/// `run.submit` parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSubmitParams {
    /// `single`, `parallel` or `chain`.
    pub mode: crate::fieldnotes::status::Mode,
    /// The tasks, in input order.
    pub steps: Vec<RunStepParams>,
    /// Continue (or create) the fieldnotes session with this exact name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// Minutes each task may take (default: the `timeout` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Limits on each task (over the definition's own, key by key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// Where sheep run (default: the `backend` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::settings::Backend>,
    /// The host every step's sheep runs on unless the step names its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Confine every step's sheep at least this much (a plan's or a tool's `sandbox`: it only
    /// tightens what the definition and the setting give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// The person's own `--sandbox` at the command line, which may also loosen it (the CLI
    /// alone sends it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_sandbox: Option<crate::sandbox::Sandbox>,
    /// The parent's model, inherited by pi sheep whose definition names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_model: Option<String>,
    /// The parent's thinking level, inherited likewise (a level this Shepherd does not know is
    /// dropped, so the sheep runs at its agent's default).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::agent_def::ThinkingLevel::deserialize_known"
    )]
    pub parent_thinking: Option<crate::agent_def::ThinkingLevel>,
    /// Where the caller runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
    /// The command that runs pi for pi sheep (the parent's own pi); `SHEPHERD_PI` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pi_command: Option<Vec<String>>,
    /// Keep the run going when no client follows it (otherwise it is cancelled once its
    /// client has been gone for a few seconds).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach: bool,
}

/// `run.attach` and `run.cancel` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunIdParams {
    /// The run.
    pub run_id: String,
}

/// A run as the herd view lists it: its steps and whether it is over, without its report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunLine {
    /// The run.
    pub run_id: String,
    /// `single`, `parallel` or `chain`.
    pub mode: crate::fieldnotes::status::Mode,
    /// Each task, in input order.
    pub steps: Vec<RunStepView>,
    /// Why it was cancelled, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// Whether it is over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
}

/// The runs a herd view lists beyond those under way: the latest that ended.
pub const ENDED_RUNS_LISTED: usize = 5;

/// A run as its followers see it: pushed (`run` event) whenever it changes, and the answer to
/// `run.submit` and `run.attach`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The run.
    pub run_id: String,
    /// `single`, `parallel` or `chain`.
    pub mode: crate::fieldnotes::status::Mode,
    /// Whether it goes on without a client.
    #[serde(default)]
    pub detach: bool,
    /// Its fieldnotes session, once its notes are reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// The session directory relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_relative_path: Option<String>,
    /// Each task, in input order.
    pub steps: Vec<RunStepView>,
    /// Why it was cancelled, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// The final report (the `shepherd run --json` document), once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<crate::run::RunReport>,
}

/// One task of a run as its followers see it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStepView {
    /// The agent.
    pub agent: String,
    /// `queued`, `starting`, `running`, `closing` or `done`.
    pub phase: crate::run::StepPhase,
    /// Once done: `completed`, `failed`, `blocked`, `timed_out`, `cancelled` or `skipped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<crate::run::StepStatus>,
    /// Its task, once delegated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Its sheep, once spawned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// When it started (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// When it finished (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// The provider limit its task waits out, while it does (`rate-limited until …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<crate::herd::limits::LimitView>,
    /// The fallback its task went on with after a limit, once it did: the fallback's display
    /// name and its provider, with the account when a `credential:` gave it one (`worker
    /// (fallback, claude-code, WORK_ANTHROPIC_KEY): fix-login (anthropic, account
    /// WORK_ANTHROPIC_KEY)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fell_back_to: Option<String>,
    /// The host its sheep runs on, when not this machine (its own, the run's or its
    /// definition's; a definition's once its sheep is spawned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl RunStepView {
    /// One task of a run, from its journaled state.
    pub fn of(step: &crate::run::StepState, agent: &str) -> Self {
        Self {
            agent: agent.to_owned(),
            phase: step.phase,
            status: step.outcome.as_ref().map(|o| o.status),
            task_id: step.task_id.clone(),
            agent_id: step.agent_id.clone(),
            started_at: step.started_at,
            finished_at: step.finished_at,
            rate_limit: None,
            fell_back_to: None,
            host: step.outcome.as_ref().and_then(|o| o.host.clone()),
        }
    }
}
