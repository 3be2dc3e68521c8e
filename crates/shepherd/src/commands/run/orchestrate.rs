//! A whole run: reserve every note with one `plan`, then drive the tasks — side by side within
//! the concurrency limit, or one after another for a chain — and stop cleanly on SIGINT,
//! SIGTERM or SIGHUP.
//!
//! The signal handlers are installed before the first request, so an interrupt at any moment
//! cancels the run: queued tasks never start, running ones are closed (their tasks end
//! cancelled, rc 130), and the run still waits for every close before it returns. Each task
//! owns its broker connection, so one slow sheep never holds up another's requests. Notes of
//! tasks that never reached a sheep are finalised here (`unlaunched`), so no note of the run is
//! left pending.

use std::sync::Arc;
use std::time::Duration;

use shepherd_core::protocol::{PlanParams, PlanResult, PlannedNoteParams, method};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::checks::CheckedRun;
use super::plan::Mode;
use super::progress::Phase;
use super::task::{self, RunContext, TaskOutcome, TaskSpec};
use super::unlaunched;
use crate::commands::connect;
use crate::error::CliError;

/// Longest the `plan` request may take.
const PLAN_DEADLINE: Duration = Duration::from_secs(60);
/// How often live progress redraws its elapsed times.
const REDRAW_EVERY: Duration = Duration::from_secs(1);

/// What a run did, before it is rendered.
#[derive(Debug)]
pub(super) struct RunOutcome {
    pub(super) plan: PlanResult,
    pub(super) outcomes: Vec<TaskOutcome>,
    /// For a chain that stopped: the index of the step that did not complete.
    pub(super) stopped_at: Option<usize>,
    /// Whether a signal cancelled the run.
    pub(super) interrupted: bool,
    /// Notes that could not be finalised (one line each).
    pub(super) warnings: Vec<String>,
}

/// Runs `run` (already checked) under `ctx` (whose `session_name` is filled in from the plan).
pub(super) async fn run(
    run: &CheckedRun,
    mut ctx: RunContext,
    session_name: Option<String>,
) -> Result<RunOutcome, CliError> {
    let cancel = ctx.cancel.clone();
    watch_signals(&cancel)?;
    let plan = reserve_notes(run, &ctx, session_name).await?;
    if plan.notes.len() != run.steps.len() {
        return Err(CliError::new(
            "protocol",
            format!(
                "the broker reserved {} notes for {} tasks",
                plan.notes.len(),
                run.steps.len()
            ),
        ));
    }
    ctx.session_name.clone_from(&plan.session_name);
    ctx.session_relative.clone_from(&plan.session_relative_path);
    let ctx = Arc::new(ctx);
    ctx.progress.start();
    let ticker = ctx.progress.is_live().then(|| {
        let ctx = Arc::clone(&ctx);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REDRAW_EVERY);
            loop {
                every.tick().await;
                ctx.progress.redraw();
            }
        })
    });
    let specs: Vec<TaskSpec> = run
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| TaskSpec {
            index,
            agent: step.agent.clone(),
            task: step.task.clone(),
            cwd: step.cwd.clone(),
            label: step.label.clone(),
            note: plan.notes[index].clone(),
            isolate: step.repo.clone(),
        })
        .collect();
    let (outcomes, stopped_at) = match run.mode {
        Mode::Chain => chain(&ctx, specs).await,
        Mode::Single | Mode::Parallel => (parallel(&ctx, specs, run.max_concurrency).await, None),
    };
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    ctx.progress.redraw();
    let unlaunched = plan
        .notes
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| !outcome.delegated)
        .map(|(note, outcome)| unlaunched::Unlaunched {
            note: note.clone(),
            status: outcome.status.clone(),
            reason: outcome.error.clone().unwrap_or_default(),
        })
        .collect();
    let warnings = unlaunched::release_all(&ctx.target, unlaunched).await;
    Ok(RunOutcome {
        plan,
        outcomes,
        stopped_at,
        interrupted: cancel.is_cancelled(),
        warnings,
    })
}

/// Cancels the run on the first SIGINT, SIGTERM or SIGHUP. The handlers stay installed, so
/// later signals are absorbed while the closes finish (each within its deadline).
fn watch_signals(cancel: &CancellationToken) -> Result<(), CliError> {
    let install = |kind: SignalKind| {
        signal(kind).map_err(|err| {
            CliError::new(
                "internal",
                format!("cannot install a signal handler: {err}"),
            )
        })
    };
    let mut interrupt = install(SignalKind::interrupt())?;
    let mut terminate = install(SignalKind::terminate())?;
    let mut hangup = install(SignalKind::hangup())?;
    let cancel = cancel.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
                _ = hangup.recv() => {}
            }
            cancel.cancel();
        }
    });
    Ok(())
}

/// Reserves every note of the run, in input order, in one commit, before anything launches.
async fn reserve_notes(
    run: &CheckedRun,
    ctx: &RunContext,
    session_name: Option<String>,
) -> Result<PlanResult, CliError> {
    let mut client = connect::parent(&ctx.target, connect::deadline_after(PLAN_DEADLINE)?).await?;
    let params = PlanParams {
        session_name,
        mode: run.mode.as_str().to_owned(),
        group: Some(ctx.run_id.clone()),
        notes: run
            .steps
            .iter()
            .map(|step| PlannedNoteParams {
                agent: step.agent.clone(),
                task: step.task.clone(),
            })
            .collect(),
    };
    let planned = tokio::time::timeout(
        PLAN_DEADLINE,
        client.call(method::PLAN, &params, PLAN_DEADLINE),
    )
    .await
    .map_err(|_| {
        CliError::new(
            "broker_unavailable",
            "the broker did not reserve the run's notes within 60 s",
        )
    })??;
    Ok(planned)
}

/// Runs every task, at most `limit` at a time; outcomes come back in input order.
async fn parallel(ctx: &Arc<RunContext>, specs: Vec<TaskSpec>, limit: usize) -> Vec<TaskOutcome> {
    let slots = Arc::new(Semaphore::new(limit.max(1)));
    let count = specs.len();
    let mut running = JoinSet::new();
    for spec in specs {
        let ctx = Arc::clone(ctx);
        let slots = Arc::clone(&slots);
        running.spawn(async move {
            let index = spec.index;
            let slot = tokio::select! {
                slot = slots.acquire_owned() => slot.ok(),
                () = ctx.cancel.cancelled() => None,
            };
            let outcome = match slot {
                Some(_slot) => task::run(Arc::clone(&ctx), spec).await,
                None => TaskOutcome::cancelled_before_start(),
            };
            ctx.progress.set(index, Phase::Done(outcome.status.clone()));
            (index, outcome)
        });
    }
    let mut outcomes: Vec<Option<TaskOutcome>> = vec![None; count];
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((index, outcome)) => outcomes[index] = Some(outcome),
            Err(err) => {
                tracing::error!("a run task panicked: {err}");
            }
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| {
                TaskOutcome::not_run("failed", Some(1), "its driver failed".to_owned())
            })
        })
        .collect()
}

/// Runs the steps one after another, each seeing the previous result as `{previous}`; stops at
/// the first step that does not complete.
async fn chain(ctx: &Arc<RunContext>, specs: Vec<TaskSpec>) -> (Vec<TaskOutcome>, Option<usize>) {
    let mut outcomes = Vec::with_capacity(specs.len());
    let mut previous: Option<String> = None;
    let mut stopped_at: Option<usize> = None;
    let mut stop_reason = String::new();
    for mut spec in specs {
        let index = spec.index;
        let agent = spec.agent.clone();
        let outcome = if let Some(stop) = stopped_at {
            TaskOutcome::not_run(
                "skipped",
                None,
                format!(
                    "not run: the chain stopped at step {}, {stop_reason}",
                    stop + 1
                ),
            )
        } else if ctx.cancel.is_cancelled() {
            TaskOutcome::cancelled_before_start()
        } else {
            if let Some(previous) = &previous {
                spec.task = spec.task.replace("{previous}", previous);
            }
            task::run(Arc::clone(ctx), spec).await
        };
        ctx.progress.set(index, Phase::Done(outcome.status.clone()));
        if stopped_at.is_none() && !outcome.completed() {
            stopped_at = Some(index);
            stop_reason = format!("where {agent} ended {}", status_phrase(&outcome));
        }
        previous = Some(outcome.text.clone());
        outcomes.push(outcome);
    }
    (outcomes, stopped_at)
}

/// `failed (rc 1)`.
pub(super) fn status_phrase(outcome: &TaskOutcome) -> String {
    match outcome.return_code {
        Some(rc) => format!("{} (rc {rc})", outcome.status),
        None => outcome.status.clone(),
    }
}
