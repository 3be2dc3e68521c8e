//! One task of a run, from start to close: make its worktree, spawn its sheep, delegate,
//! wait, close, and read how it ended. Each phase is journaled before the next begins, so a
//! task picked up after a broker restart goes on from the phase it was in; the requests it makes
//! carry request ids derived from the run and the task, so a spawn or delegation that was in
//! flight is followed rather than made twice.

use crate::state::store::Store;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::TaskReport;
use shepherd_core::protocol::{CloseParams, DelegateParams, SpawnParams};

use super::model::{Outcome, Run, StepPhase, StepState, StepStatus};
use crate::sheep::worktree;

/// Extra wait beyond a task's own timeout: the broker settles the task at its deadline, then
/// finalises the note and may wait for a pi sheep's final words.
const WAIT_MARGIN: Duration = Duration::from_secs(30);
/// How long a task's report may take to appear after its sheep was closed.
const REPORT_AFTER_CLOSE: Duration = Duration::from_secs(20);

/// One task from start to close, resumable from whatever phase it was journaled in.
pub(super) async fn step(run: &Arc<Run>, index: usize, text: String) -> Outcome {
    let mut state = run.state(index);
    if state.phase == StepPhase::Done {
        return state.outcome.unwrap_or_else(|| {
            Outcome::not_run(
                StepStatus::Failed,
                Some(1),
                "its outcome was lost".to_owned(),
            )
        });
    }
    if state.phase == StepPhase::Queued {
        if run.cancelled() {
            return run.not_run(index, Outcome::cancelled_before_start()).await;
        }
        state.phase = StepPhase::Starting;
        state.started_at = Some(run.broker.store.now());
        state.task_text = Some(text);
        run.save(index, &state).await;
    }
    if state.phase == StepPhase::Starting {
        start_task(run, index, &mut state).await;
        if state.phase == StepPhase::Done {
            return finish(run, index, state, true).await;
        }
    }
    let mut report = None;
    if state.phase == StepPhase::Running {
        if let Some(task_id) = state.task_id.clone() {
            report = wait_task(run, &task_id).await;
        }
        state.phase = StepPhase::Closing;
        run.save(index, &state).await;
    }
    // Closing: end the sheep whatever happened, then read how the task ended.
    let closed = match &state.agent_id {
        Some(agent_id) => close_sheep(run, agent_id).await,
        None => Ok(None),
    };
    if report.is_none()
        && let Some(task_id) = &state.task_id
    {
        report = report_after_close(run, task_id).await;
    }
    let mut outcome = match (report, state.outcome.take()) {
        (Some(report), _) => from_report(report),
        (None, Some(early)) => early,
        (None, None) => Outcome::not_run(
            StepStatus::Failed,
            Some(1),
            "its final report could not be read".to_owned(),
        ),
    };
    outcome.agent_id.clone_from(&state.agent_id);
    outcome.host = state
        .agent_id
        .as_deref()
        .and_then(shepherd_core::ids::AgentId::parse)
        .and_then(|id| crate::sheep::remote_sheep::host_of(&run.broker.store, &id));
    outcome.delegated = state.task_id.is_some();
    if let Ok(Some(branch)) = &closed
        && spec_remote_isolate(run, index)
    {
        outcome.remote_worktree = Some(branch.clone());
    }
    if let Err(err) = &closed {
        // As the original: a sheep whose end is unconfirmed fails its task, whatever it said.
        outcome.error = Some(match outcome.error.take() {
            Some(first) => format!("{first}; close: {err}"),
            None => format!("close: {err}"),
        });
        if outcome.completed() {
            outcome.status = StepStatus::Failed;
            outcome.return_code = Some(1);
        }
    }
    state.outcome = Some(outcome);
    finish(run, index, state, closed.is_ok()).await
}

/// Makes the worktree, spawns the sheep and delegates, journaling each; a failure or a
/// cancellation records the task's early outcome (and leaves the sheep, if any, to be closed).
async fn start_task(run: &Arc<Run>, index: usize, state: &mut StepState) {
    let spec = &run.spec.steps[index];
    if let Some(repo) = &spec.repo
        && state.worktree.is_none()
    {
        let name = format!(
            "{}-t{}-{}",
            run.id,
            index + 1,
            shepherd_core::slug::agent_slug(&spec.agent)
        );
        let repo = repo.clone();
        let path = worktree::path_for(&run.broker.config.dirs.state_dir, &repo, &name);
        let made = match tokio::task::spawn_blocking(move || worktree::create(&repo, path)).await {
            Ok(made) => made.map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        };
        match made {
            Ok(made) => {
                state.worktree = Some(made);
                run.save(index, state).await;
            }
            Err(err) => {
                state.outcome = Some(Outcome::not_run(
                    StepStatus::Failed,
                    Some(1),
                    format!("its worktree could not be made: {err}"),
                ));
                state.phase = StepPhase::Done;
                return;
            }
        }
    }
    let cwd = state
        .worktree
        .as_ref()
        .map_or_else(|| spec.cwd.clone(), worktree::Worktree::cwd);
    let params = SpawnParams {
        agent: spec.agent.clone(),
        label: spec.label.clone(),
        backend: run.spec.backend,
        cwd: Some(cwd.display().to_string()),
        placement: None,
        model: None,
        harness: spec.harness,
        caller: Some(run.spec.caller.clone()),
        parent_model: run.spec.parent_model.clone(),
        parent_thinking: run.spec.parent_thinking,
        pi_command: run.spec.pi_command.clone(),
        session_name: Some(run.plan.session_name.clone())
            .filter(|name| !name.is_empty() && run.spec.fieldnotes),
        // A run's worktree here is the step's own (made above), not the sheep's; on a host the
        // sheep's spawn makes it there.
        isolate: spec.remote_isolate,
        host: spec.host.clone(),
        sandbox: run.spec.sandbox,
        user_sandbox: run.spec.user_sandbox,
        limits: None,
        credential: None,
    };
    let rid = format!("{}/{}/spawn", run.id, index + 1);
    match crate::handlers::spawn::spawn(&run.broker, params, Some(&rid)).await {
        Ok(spawned) => {
            state.agent_id = Some(spawned.agent_id.to_string());
            run.save(index, state).await;
        }
        Err(err) => {
            state.outcome = Some(Outcome::not_run(
                StepStatus::Failed,
                Some(1),
                format!("its sheep could not be started: {}", err.message),
            ));
            state.phase = StepPhase::Done;
            return;
        }
    }
    if run.cancelled() {
        state.outcome = Some(Outcome::cancelled_before_start());
        state.phase = StepPhase::Closing;
        run.save(index, state).await;
        return;
    }
    let params = DelegateParams {
        target: state.agent_id.clone().unwrap_or_default(),
        task: state.task_text.clone().unwrap_or_else(|| spec.task.clone()),
        timeout: Some(run.spec.timeout_minutes),
        session_name: Some(run.plan.session_name.clone()).filter(|_| run.spec.fieldnotes),
        turn: false,
        budget: step_budget(run.spec.budget, spec.budget),
        stall: None,
    };
    let rid = format!("{}/{}/delegate", run.id, index + 1);
    let placed = crate::handlers::parent::RunNote {
        mode: run.spec.mode,
        group: Some(run.id.clone()).filter(|_| run.spec.fieldnotes),
        note: run.plan.notes.get(index).cloned(),
        session_dir: None,
    };
    match crate::handlers::parent::delegate(&run.broker, params, placed, Some(&rid)).await {
        Ok(delegated) => {
            state.task_id = Some(delegated.task_id.to_string());
            state.phase = StepPhase::Running;
        }
        Err(err) => {
            state.outcome = Some(Outcome::not_run(
                StepStatus::Failed,
                Some(1),
                format!("the task could not be handed over: {}", err.message),
            ));
            state.phase = StepPhase::Closing;
        }
    }
    run.save(index, state).await;
}

/// Records the task done, after releasing its worktree.
async fn finish(run: &Arc<Run>, index: usize, mut state: StepState, closed: bool) -> Outcome {
    let mut outcome = state.outcome.take().unwrap_or_else(|| {
        Outcome::not_run(
            StepStatus::Failed,
            Some(1),
            "its outcome was lost".to_owned(),
        )
    });
    if let Some(made) = state.worktree.clone()
        && outcome.worktree.is_none()
    {
        // Its preserved changes are named after its sheep, else after the worktree.
        let owner = state.agent_id.clone().unwrap_or_else(|| {
            made.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let report = tokio::task::spawn_blocking(move || worktree::release(&made, closed, &owner))
            .await
            .ok();
        outcome.worktree = report.map(shepherd_core::worktree::WorktreeReport::Local);
    }
    // A branch with work on it is the session's to land: its Branches section lists it.
    let left = outcome
        .worktree
        .as_ref()
        .or(outcome.remote_worktree.as_ref())
        .filter(|w| w.needs_integrating());
    if let (Some(left), Some(note)) = (left, run.plan.notes.get(index)) {
        crate::sheep::notes::record_branch(
            &run.broker,
            std::path::Path::new(note),
            left.branch(),
            shepherd_core::land::BranchState::Open,
            None,
            None,
        )
        .await;
    }
    state.phase = StepPhase::Done;
    state.finished_at = Some(run.broker.store.now());
    state.outcome = Some(outcome.clone());
    run.save(index, &state).await;
    outcome
}

/// Waits for the task to settle with its note final (and a pi sheep's last words), within its
/// timeout and a margin, unless the run is cancelled first.
async fn wait_task(run: &Arc<Run>, task_id: &str) -> Option<TaskReport> {
    let budget = Duration::from_secs_f64(run.spec.timeout_minutes * 60.0) + WAIT_MARGIN;
    tokio::select! {
        report = settled(&run.broker.store, task_id, budget) => report,
        () = run.until_cancelled() => None,
    }
}

/// The task's report once it is settled and its note final, within `budget`.
pub(crate) async fn settled(store: &Store, task_id: &str, budget: Duration) -> Option<TaskReport> {
    let id = shepherd_core::ids::TaskId::parse(task_id)?;
    let deadline = tokio::time::Instant::now() + budget;
    let mut generation = store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let reportable = store.read(|herd| {
            herd.tasks
                .get(&id)
                .is_some_and(shepherd_core::herd::Task::is_reportable)
        });
        if reportable {
            let grace = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .min(crate::sheep::pi::OUTPUT_GRACE);
            crate::sheep::pi::await_output(store, &id, grace).await;
            return store.read(|herd| herd.task_report(&id));
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return None },
            () = tokio::time::sleep_until(deadline) => return None,
        }
    }
}

async fn report_after_close(run: &Arc<Run>, task_id: &str) -> Option<TaskReport> {
    settled(&run.broker.store, task_id, REPORT_AFTER_CLOSE).await
}

/// Closes the sheep (its open task ends cancelled, rc 130); closing a closed sheep is a no-op.
/// Closes the step's sheep; returns what became of a remote sheep's branch, when it had one.
async fn close_sheep(
    run: &Arc<Run>,
    agent_id: &str,
) -> crate::error::BrokerResult<Option<shepherd_core::worktree::WorktreeReport>> {
    let params = CloseParams {
        id: agent_id.to_owned(),
        keep_pane: run.spec.keep_pane,
    };
    crate::handlers::close::close(&run.broker, params)
        .await
        .map(|closed| closed.worktree)
}

/// A step's budget: the run's, overridden key by key by the step's own.
fn step_budget(
    run: Option<shepherd_core::budget::Budget>,
    step: Option<shepherd_core::budget::Budget>,
) -> Option<shepherd_core::budget::Budget> {
    match (run, step) {
        (Some(run), Some(step)) => Some(run.overlay(step)),
        (run, step) => step.or(run),
    }
}

fn from_report(report: TaskReport) -> Outcome {
    let text = shepherd_core::run::result_text(
        report.text.as_deref(),
        report.summary.as_deref(),
        report.error.as_deref(),
    );
    Outcome {
        agent_id: Some(report.agent_id.to_string()),
        task_id: Some(report.task_id.to_string()),
        status: report.status.into(),
        return_code: Some(report.return_code.unwrap_or(1)),
        text,
        error: report.error,
        delegated: true,
        worktree: None,
        host: None,
        remote_worktree: None,
    }
}

/// Whether step `index` runs on a host in its own worktree there.
fn spec_remote_isolate(run: &Run, index: usize) -> bool {
    run.spec
        .steps
        .get(index)
        .is_some_and(|step| step.remote_isolate)
}
