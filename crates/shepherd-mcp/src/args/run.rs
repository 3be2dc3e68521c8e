//! The arguments of `shepherd_run`: its tasks (or chain steps) and the run's own options, as
//! the host shows them to the model and as a call is read (kept apart from the other tools'
//! arguments in `args`, which this shares its words and rules with).

use serde::Deserialize;

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
    pub(crate) sandbox: Option<String>,
    pub(crate) session_name: Option<String>,
    pub(crate) timeout: Option<f64>,
    pub(crate) run_id: Option<String>,
    pub(crate) cancel: Option<bool>,
    pub(crate) wait: Option<f64>,
    #[serde(flatten)]
    pub(crate) budget: super::BudgetArgs,
}
