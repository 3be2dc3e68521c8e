//! The arguments of `shepherd_run`: its tasks (or chain steps) and the run's own options, as
//! the host shows them to the model and as a call is read (kept apart from the other tools'
//! arguments in `args`, which this shares its words and rules with).

use serde::Deserialize;
use serde_json::Value;

use super::{BOUND_WORDS, HARNESS_WORDS, HARNESSES};
use crate::schema::{boolean, choice, number, object, objects, string};

/// One task of a parallel run or one step of a chain.
#[derive(Debug, Deserialize)]
pub(crate) struct RunStep {
    pub(crate) agent: String,
    pub(crate) task: String,
    pub(crate) cwd: Option<String>,
    pub(crate) isolate: Option<bool>,
    pub(crate) harness: Option<String>,
    pub(crate) host: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Run {
    pub(crate) agent: Option<String>,
    pub(crate) task: Option<String>,
    pub(crate) tasks: Option<Vec<RunStep>>,
    pub(crate) chain: Option<Vec<RunStep>>,
    pub(crate) cwd: Option<String>,
    pub(crate) harness: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) session_name: Option<String>,
    pub(crate) timeout: Option<f64>,
    pub(crate) run_id: Option<String>,
    pub(crate) cancel: Option<bool>,
    pub(crate) wait: Option<f64>,
    #[serde(flatten)]
    pub(crate) budget: super::BudgetArgs,
}

pub(crate) fn run_schema() -> Value {
    let task = object(
        &[
            ("agent", string("Exact agent definition name")),
            ("task", string("The task")),
            ("cwd", string("Working directory for this task")),
            ("isolate", boolean("Run in its own git worktree")),
            ("harness", choice(HARNESSES, HARNESS_WORDS)),
            (
                "host",
                string(
                    "A host to run it on: one the user defined under `hosts` in their Shepherd settings (default: this machine)",
                ),
            ),
        ],
        &["agent", "task"],
    );
    let step = object(
        &[
            ("agent", string("Exact agent definition name")),
            (
                "task",
                string("The task; {previous} is replaced by the previous step's result"),
            ),
            ("cwd", string("Working directory for this step")),
            ("harness", choice(HARNESSES, HARNESS_WORDS)),
            (
                "host",
                string(
                    "A host to run it on: one the user defined under `hosts` in their Shepherd settings (default: this machine)",
                ),
            ),
        ],
        &["agent", "task"],
    );
    let mut properties = vec![
        ("agent", string("Single mode: exact agent name")),
        ("task", string("Single mode: the task")),
        ("tasks", objects(&task, "Parallel mode: the tasks")),
        ("chain", objects(&step, "Chain mode: the steps, in order")),
        (
            "cwd",
            string("Working directory (default: the project directory)"),
        ),
        (
            "harness",
            choice(
                HARNESSES,
                "Run every task on this coding agent (a task may name its own): pi | claude-code | codex | gemini | opencode",
            ),
        ),
        (
            "host",
            string(
                "Run every task's sheep on this host, one the user defined under `hosts` in their Shepherd settings (a task may name its own; default: this machine)",
            ),
        ),
        (
            "sessionName",
            string("Create or continue the fieldnotes session with this name"),
        ),
        (
            "timeout",
            number("Minutes each task may take (default: the timeout setting, 20)"),
        ),
        (
            "runId",
            string(
                "Follow (or, with cancel, cancel) a run an earlier call started, instead of starting one",
            ),
        ),
        ("cancel", boolean("With runId: cancel that run")),
        (
            "wait",
            number(&format!(
                "Seconds to wait at most for the run in this call (default and maximum: {BOUND_WORDS})"
            )),
        ),
    ];
    properties.extend(super::budget_properties());
    object(&properties, &[])
}
