//! What every task of one run shares while its driver runs. A run's journaled shapes — its
//! spec, plan, steps and outcomes — are core's ([`shepherd_core::run`]); they are re-exported
//! here under the names the run engine uses.

use std::sync::Arc;

pub(crate) use shepherd_core::run::{
    Outcome, RunPlan as Plan, RunSpec, SpecStep, StepPhase, StepState, StepStatus,
};

use crate::state::broker::Broker;

/// What every task of one run shares while its driver runs.
pub(crate) struct Run {
    pub(crate) broker: Arc<Broker>,
    pub(crate) id: String,
    pub(crate) spec: RunSpec,
    pub(crate) plan: Plan,
}
