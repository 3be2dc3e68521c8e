//! Carrying a run out: reserve its notes, then drive its tasks — side by side within the
//! concurrency limit, or one after another for a chain — each through spawn → delegate →
//! wait → close, and finish with a report.
//!
//! Every step of every task is journaled before the driver moves on, and the requests it makes
//! carry request ids derived from the run (`<run>/<task>/spawn`, `…/delegate`), so after a
//! broker restart [`start`] picks each task up where it was: a spawn or delegation that was in
//! flight is followed rather than repeated, a task that was running is waited for, a sheep that
//! was being closed is closed. A cancelled run starts nothing new and closes what runs (its
//! open tasks end cancelled, rc 130); notes of tasks that never reached a sheep are finalised,
//! so no note of the run is left pending.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_notes::{Mode, NoteStatus, PlannedNote};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::model::{Outcome, Plan as PlanResult, Run, RunSpec, StepPhase, StepState, StepStatus};
use super::step::step;
use crate::error::{BrokerError, BrokerResult};
use crate::fieldnotes::{PlanRequest, ReleaseRequest, SessionChoice};
use crate::state::broker::Broker;

/// Starts (or, after a restart, resumes) the driver of run `run_id`, unless one is running.
pub(crate) fn start(broker: &Arc<Broker>, run_id: &str) {
    let fresh = broker
        .work
        .lock()
        .expect("work lock")
        .run_drivers
        .insert(run_id.to_owned());
    if !fresh {
        return;
    }
    let broker = broker.clone();
    let run_id = run_id.to_owned();
    tokio::spawn(async move {
        drive(&broker, &run_id).await;
        broker
            .work
            .lock()
            .expect("work lock")
            .run_drivers
            .remove(&run_id);
    });
}

async fn drive(broker: &Arc<Broker>, run_id: &str) {
    let Some(record) = broker.store.read(|herd| herd.runs.get(run_id).cloned()) else {
        return;
    };
    if record.is_finished() {
        return;
    }
    let spec = record.spec;
    let plan = match record.planned {
        Some(plan) => plan,
        None => match plan_notes(broker, run_id, &spec).await {
            Ok(plan) => plan,
            Err(err) => {
                tracing::error!("run {run_id}: its notes could not be reserved: {err}");
                return;
            }
        },
    };
    let run = Arc::new(Run {
        broker: broker.clone(),
        id: run_id.to_owned(),
        spec,
        plan,
    });
    let outcomes = match run.spec.mode {
        Mode::Chain => chain(&run).await,
        Mode::Single | Mode::Parallel => parallel(&run).await,
    };
    let warnings = release_unlaunched(&run, &outcomes).await;
    let cancelled = run.cancel_reason();
    let results_dir = broker.config.paths.runtime_dir.join("results");
    let report = super::report::build(&super::report::Finished {
        run_id: &run.id,
        spec: &run.spec,
        plan: &run.plan,
        outcomes: &outcomes,
        cancelled: cancelled.as_deref(),
        warnings: &warnings,
        results_dir: &results_dir,
    });
    let finished = broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::finish_run(tx, run_id, report);
            Ok(())
        })
        .await;
    if let Err(err) = finished {
        tracing::error!("run {run_id}: recording its end failed: {err}");
    }
}

/// Reserves every note of the run, in input order, in one commit — or finds the ones an
/// interrupted earlier attempt reserved — and records them.
pub(crate) async fn plan_notes(
    broker: &Arc<Broker>,
    run_id: &str,
    spec: &RunSpec,
) -> BrokerResult<PlanResult> {
    if !spec.fieldnotes {
        let plan = PlanResult::default();
        broker
            .store
            .commit_durable(|tx| {
                shepherd_core::herd::plan_run(tx, run_id, plan.clone());
                Ok(())
            })
            .await?;
        return Ok(plan);
    }
    let fieldnotes = broker.fieldnotes();
    let group = run_id.to_owned();
    let found = tokio::task::spawn_blocking(move || fieldnotes.find_plan(&group))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))??;
    let reply = match found {
        Some(reply) if reply.notes.len() == spec.steps.len() => reply,
        _ => {
            let session = match &spec.session_name {
                Some(name) => SessionChoice::Named(name.clone()),
                None => SessionChoice::NewForTask(spec.steps.first().map(|s| s.task.clone())),
            };
            let notes = spec
                .steps
                .iter()
                .map(|step| {
                    let mut note = PlannedNote::new(step.agent.clone());
                    note.mode = spec.mode;
                    note.task = Some(step.task.clone());
                    note.group = Some(run_id.to_owned());
                    note
                })
                .collect();
            let fieldnotes = broker.fieldnotes();
            tokio::task::spawn_blocking(move || fieldnotes.plan(PlanRequest { session, notes }))
                .await
                .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))??
        }
    };
    let plan = PlanResult {
        session_name: reply.session_name,
        session_path: reply.session_path,
        session_relative_path: reply.session_relative,
        resumed: reply.resumed,
        notes: reply.notes.iter().map(|n| n.note.clone()).collect(),
        notes_relative: reply
            .notes
            .iter()
            .map(|n| n.note_relative.clone())
            .collect(),
    };
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::plan_run(tx, run_id, plan.clone());
            Ok(())
        })
        .await?;
    Ok(plan)
}

/// Runs every task, at most `maxConcurrency` at a time, starting them in input order;
/// outcomes come back in input order.
async fn parallel(run: &Arc<Run>) -> Vec<Outcome> {
    let slots = Arc::new(Semaphore::new(run.spec.max_concurrency.max(1)));
    let count = run.spec.steps.len();
    let mut running = JoinSet::new();
    for index in 0..count {
        // A task resumed after a restart that already holds a sheep needs no new slot.
        let holds_sheep = run.state(index).phase != StepPhase::Queued;
        let slot = if holds_sheep {
            None
        } else {
            tokio::select! {
                slot = Arc::clone(&slots).acquire_owned() => slot.ok(),
                () = run.until_cancelled() => None,
            }
        };
        let run = Arc::clone(run);
        running.spawn(async move {
            let outcome = if holds_sheep || slot.is_some() {
                let text = run.spec.steps[index].task.clone();
                step(&run, index, text).await
            } else {
                run.not_run(index, Outcome::cancelled_before_start()).await
            };
            drop(slot);
            (index, outcome)
        });
    }
    let mut outcomes: Vec<Option<Outcome>> = vec![None; count];
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((index, outcome)) => outcomes[index] = Some(outcome),
            Err(err) => tracing::error!("a run task panicked: {err}"),
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| {
                Outcome::not_run(StepStatus::Failed, Some(1), "its driver failed".to_owned())
            })
        })
        .collect()
}

/// Runs the steps one after another, each seeing the previous result as `{previous}`; stops at
/// the first step that does not complete.
async fn chain(run: &Arc<Run>) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(run.spec.steps.len());
    let mut stop: Option<(usize, String)> = None;
    for index in 0..run.spec.steps.len() {
        let agent = run.spec.steps[index].agent.clone();
        let outcome = if let Some((at, why)) = &stop {
            let skipped = Outcome::not_run(
                StepStatus::Skipped,
                None,
                format!("not run: the chain stopped at step {}, {why}", at + 1),
            );
            run.not_run(index, skipped).await
        } else {
            let mut text = run.spec.steps[index].task.clone();
            if let Some(previous) = outcomes.last() {
                text = text.replace("{previous}", &previous.text);
            }
            step(run, index, text).await
        };
        if stop.is_none() && !outcome.completed() {
            stop = Some((index, format!("where {agent} ended {}", outcome.phrase())));
        }
        outcomes.push(outcome);
    }
    outcomes
}

impl Run {
    pub(super) fn state(&self, index: usize) -> StepState {
        self.broker.store.read(|herd| {
            herd.runs
                .get(&self.id)
                .and_then(|run| run.steps.get(index))
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Journals a task's new state (which pushes the run to its followers).
    pub(super) async fn save(&self, index: usize, state: &StepState) {
        let saved = self
            .broker
            .store
            .commit_durable(|tx| {
                shepherd_core::herd::run_step(tx, &self.id, index, state.clone());
                Ok(())
            })
            .await;
        if let Err(err) = saved {
            tracing::error!(
                "run {}: recording task {} failed: {err}",
                self.id,
                index + 1
            );
        }
    }

    fn cancel_reason(&self) -> Option<String> {
        self.broker.store.read(|herd| {
            herd.runs
                .get(&self.id)
                .and_then(|run| run.cancelled.clone())
        })
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel_reason().is_some()
    }

    /// Resolves once the run is cancelled (or the broker stops).
    pub(super) async fn until_cancelled(&self) {
        let mut generation = self.broker.store.generation.subscribe();
        loop {
            generation.borrow_and_update();
            if self.cancelled() {
                return;
            }
            tokio::select! {
                changed = generation.changed() => if changed.is_err() { return },
                () = self.broker.shutdown.cancelled() => std::future::pending::<()>().await,
            }
        }
    }

    /// Records a task that never reached a sheep as done.
    pub(super) async fn not_run(&self, index: usize, outcome: Outcome) -> Outcome {
        let mut state = self.state(index);
        if let Some(done) = state
            .outcome
            .clone()
            .filter(|_| state.phase == StepPhase::Done)
        {
            return done;
        }
        state.phase = StepPhase::Done;
        state.finished_at = Some(self.broker.store.now());
        state.outcome = Some(outcome.clone());
        self.save(index, &state).await;
        outcome
    }
}

/// Finalises the notes of tasks that never reached a sheep — a chain step after the chain
/// stopped, a task cancelled before its turn, a sheep that failed to start — as `failed` or
/// `cancelled` with the reason. Returns one warning per note that could not be finalised.
async fn release_unlaunched(run: &Arc<Run>, outcomes: &[Outcome]) -> Vec<String> {
    let mut warnings = Vec::new();
    for (index, outcome) in outcomes.iter().enumerate() {
        if outcome.delegated {
            continue;
        }
        let Some(note) = run.plan.notes.get(index) else {
            continue;
        };
        let request = ReleaseRequest {
            note: note.into(),
            status: if outcome.status == StepStatus::Failed {
                NoteStatus::Failed
            } else {
                NoteStatus::Cancelled
            },
            reason: outcome.error.clone().unwrap_or_default(),
            group: run.id.clone(),
        };
        let fieldnotes = run.broker.fieldnotes();
        let released = tokio::task::spawn_blocking(move || fieldnotes.release(request))
            .await
            .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))
            .and_then(|result| result);
        if let Err(err) = released {
            warnings.push(format!("the note {note} could not be finalised: {err}"));
        }
    }
    warnings
}
