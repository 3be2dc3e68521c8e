//! Runs: a whole `shepherd run` (single, parallel or chain) kept as herd state, so it survives
//! a broker restart and continues where it was.
//!
//! The broker decides everything about a run — scheduling, `{previous}`, worktrees, closing —
//! and records each step of it here; this module only keeps the record and the events that
//! change it, in the typed shapes of [`crate::run`]. Finished runs are kept (the
//! newest [`MAX_FINISHED_RUNS`]) so a client that reattaches still gets the result.

use crate::run::{RunPlan, RunReport, StepState};
use indexmap::IndexMap;

use super::Tx;
use super::model::{Event, Run};

/// Finished runs kept for clients that come back for their result.
pub const MAX_FINISHED_RUNS: usize = 50;

/// Applies a run event to the herd's runs.
pub(super) fn apply(runs: &mut IndexMap<String, Run>, event: &Event) {
    match event {
        Event::RunSubmitted { run } => {
            runs.insert(run.id.clone(), (**run).clone());
        }
        Event::RunPlanned { run_id, plan } => {
            if let Some(run) = runs.get_mut(run_id) {
                run.planned = Some(plan.clone());
            }
        }
        Event::RunStepChanged {
            run_id,
            index,
            step,
        } => {
            if let Some(slot) = runs
                .get_mut(run_id)
                .and_then(|run| run.steps.get_mut(*index))
            {
                slot.clone_from(&**step);
            }
        }
        Event::RunCancelled { run_id, reason } => {
            if let Some(run) = runs.get_mut(run_id)
                && run.cancelled.is_none()
                && !run.is_finished()
            {
                run.cancelled = Some(reason.clone());
            }
        }
        Event::RunFinished { run_id, report } => {
            if let Some(run) = runs.get_mut(run_id) {
                run.finished = Some((**report).clone());
            }
            let finished: Vec<String> = runs
                .values()
                .filter(|run| run.is_finished())
                .map(|run| run.id.clone())
                .collect();
            for old in finished
                .iter()
                .take(finished.len().saturating_sub(MAX_FINISHED_RUNS))
            {
                runs.shift_remove(old);
            }
        }
        _ => {}
    }
}

/// Accepts a run.
pub fn submit_run(tx: &mut Tx<'_>, run: Run) {
    tx.emit(Event::RunSubmitted { run: Box::new(run) });
}

/// Records a run's plan (its session and reserved notes).
pub fn plan_run(tx: &mut Tx<'_>, run_id: &str, plan: RunPlan) {
    if tx.herd().runs.get(run_id).is_some_and(|r| !r.is_finished()) {
        tx.emit(Event::RunPlanned {
            run_id: run_id.to_owned(),
            plan,
        });
    }
}

/// Records a step's new state.
pub fn run_step(tx: &mut Tx<'_>, run_id: &str, index: usize, step: StepState) {
    let changed = tx
        .herd()
        .runs
        .get(run_id)
        .and_then(|r| r.steps.get(index))
        .is_some_and(|old| *old != step);
    if changed {
        tx.emit(Event::RunStepChanged {
            run_id: run_id.to_owned(),
            index,
            step: Box::new(step),
        });
    }
}

/// Cancels a run (the first reason stands). Returns whether the run is one that can be
/// cancelled (known and not finished).
pub fn cancel_run(tx: &mut Tx<'_>, run_id: &str, reason: &str) -> bool {
    let Some(run) = tx.herd().runs.get(run_id) else {
        return false;
    };
    if run.is_finished() {
        return false;
    }
    if run.cancelled.is_none() {
        tx.emit(Event::RunCancelled {
            run_id: run_id.to_owned(),
            reason: reason.to_owned(),
        });
    }
    true
}

/// Records a run's final report.
pub fn finish_run(tx: &mut Tx<'_>, run_id: &str, report: RunReport) {
    if tx.herd().runs.get(run_id).is_some_and(|r| !r.is_finished()) {
        tx.emit(Event::RunFinished {
            run_id: run_id.to_owned(),
            report: Box::new(report),
        });
    }
}
