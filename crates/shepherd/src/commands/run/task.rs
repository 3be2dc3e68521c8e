//! One task's life in a run, composed from broker requests: spawn → delegate (with the note the
//! plan reserved) → wait → close, always, whatever happened — failure, timeout or
//! cancellation — and then the task's final report.
//!
//! Requests already sent are never abandoned halfway: a spawn or delegate in flight when the
//! run is cancelled finishes (within its deadline) and the sheep is closed afterwards, so no
//! sheep is left without someone to close it. Only the wait is interrupted; the close then goes
//! out on a fresh connection, because the interrupted one may still carry the wait's answer.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use shepherd_broker::client::{ClientError, Link as Client};
use shepherd_core::herd::TaskReport;
use shepherd_core::protocol::{
    CallerContext, CloseParams, CloseResult, DelegateParams, DelegateResult, IdList, SpawnParams,
    SpawnResult, WaitParams, WaitResult, method,
};
use tokio_util::sync::CancellationToken;

use super::progress::{Phase, Progress};
use super::worktree::{self, Repo, WorktreeReport};
use crate::commands::connect::{self, Target};

/// Longest a spawn may take to answer (the broker has its own, shorter start-up limit).
const SPAWN_DEADLINE: Duration = Duration::from_secs(120);
/// Longest a delegate may take to answer.
const DELEGATE_DEADLINE: Duration = Duration::from_secs(60);
/// Extra wait beyond the task's own timeout: the broker settles the task at its deadline, then
/// finalises the note and may wait for a pi sheep's final words.
const WAIT_MARGIN: Duration = Duration::from_secs(30);
/// Longest a close may take (the broker's own budget is shorter).
const CLOSE_DEADLINE: Duration = Duration::from_secs(60);
/// How long the task's final report may take to appear after its sheep was closed.
const REPORT_AFTER_CLOSE: Duration = Duration::from_secs(20);

/// What every task of a run shares.
#[derive(Debug)]
pub(super) struct RunContext {
    pub(super) target: Target,
    /// Names the run: its flow group, worktrees and full-output files.
    pub(super) run_id: String,
    pub(super) mode: &'static str,
    pub(super) session_name: String,
    /// The session's project-relative directory, so spawns report it instead of resolving the
    /// parent's own session.
    pub(super) session_relative: String,
    pub(super) timeout_minutes: f64,
    pub(super) keep_pane: bool,
    pub(super) backend: Option<String>,
    pub(super) parent_model: Option<String>,
    pub(super) parent_thinking: Option<String>,
    pub(super) caller: CallerContext,
    pub(super) cancel: CancellationToken,
    pub(super) progress: Arc<Progress>,
}

/// One task, ready to run.
#[derive(Debug, Clone)]
pub(super) struct TaskSpec {
    pub(super) index: usize,
    pub(super) agent: String,
    /// The task text (with `{previous}` already filled in for chain steps).
    pub(super) task: String,
    pub(super) cwd: PathBuf,
    pub(super) label: Option<String>,
    /// The note `plan` reserved for it.
    pub(super) note: String,
    /// The repository to isolate it in, when it runs in its own worktree.
    pub(super) isolate: Option<Repo>,
}

/// How a task ended, as the run reports it.
#[derive(Debug, Clone)]
pub(super) struct TaskOutcome {
    pub(super) agent_id: Option<String>,
    pub(super) task_id: Option<String>,
    /// A task state (`completed`, `failed`, `cancelled`, `timed_out`, …) or `skipped`.
    pub(super) status: String,
    pub(super) return_code: Option<i32>,
    /// The full result text: the sheep's final words, else its done summary, else the error.
    pub(super) text: String,
    pub(super) error: Option<String>,
    /// Whether the broker took the task (and so finalises its note).
    pub(super) delegated: bool,
    pub(super) worktree: Option<WorktreeReport>,
}

impl TaskOutcome {
    /// A task that never reached a sheep.
    pub(super) fn not_run(status: &str, return_code: Option<i32>, why: String) -> Self {
        Self {
            agent_id: None,
            task_id: None,
            status: status.to_owned(),
            return_code,
            text: why.clone(),
            error: Some(why),
            delegated: false,
            worktree: None,
        }
    }

    /// Cancelled before it reached a sheep.
    pub(super) fn cancelled_before_start() -> Self {
        Self::not_run(
            "cancelled",
            Some(130),
            "cancelled before it started".to_owned(),
        )
    }

    /// Whether the task completed.
    pub(super) fn completed(&self) -> bool {
        self.status == "completed"
    }

    fn from_report(report: TaskReport, agent_id: String) -> Self {
        let text = report
            .text
            .clone()
            .or_else(|| report.summary.clone())
            .or_else(|| report.error.clone())
            .unwrap_or_default();
        Self {
            agent_id: Some(agent_id),
            task_id: Some(report.task_id.to_string()),
            status: report.status.as_str().to_owned(),
            return_code: Some(report.return_code.unwrap_or(1)),
            text,
            error: report.error,
            delegated: true,
            worktree: None,
        }
    }
}

async fn within<T>(
    limit: Duration,
    what: &str,
    call: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(format!("{what}: {err}")),
        Err(_) => Err(format!(
            "{what}: no answer from the broker within {} s",
            limit.as_secs()
        )),
    }
}

async fn connect(ctx: &RunContext) -> Result<Client, String> {
    let deadline = connect::deadline_after(Duration::ZERO).map_err(|err| err.message)?;
    connect::parent(&ctx.target, deadline)
        .await
        .map_err(|err| format!("cannot reach the broker: {}", err.message))
}

/// Runs one task from start to close, and releases its worktree.
pub(super) async fn run(ctx: Arc<RunContext>, spec: TaskSpec) -> TaskOutcome {
    if ctx.cancel.is_cancelled() {
        return TaskOutcome::cancelled_before_start();
    }
    ctx.progress.set(spec.index, Phase::Starting);
    let worktree = match &spec.isolate {
        Some(repo) => {
            let name = format!(
                "{}-t{}-{}",
                ctx.run_id,
                spec.index + 1,
                shepherd_core::slug::agent_slug(&spec.agent)
            );
            let repo = repo.clone();
            let made = tokio::task::spawn_blocking(move || worktree::create(&repo, &name))
                .await
                .map_err(|err| err.to_string())
                .and_then(|made| made);
            match made {
                Ok(made) => Some(made),
                Err(err) => {
                    return TaskOutcome::not_run(
                        "failed",
                        Some(1),
                        format!("its worktree could not be made: {err}"),
                    );
                }
            }
        }
        None => None,
    };
    let cwd = worktree
        .as_ref()
        .map_or_else(|| spec.cwd.clone(), worktree::Worktree::cwd);
    let (mut outcome, close_confirmed) = launch(&ctx, &spec, cwd).await;
    if let Some(made) = worktree {
        let report = tokio::task::spawn_blocking(move || worktree::release(&made, close_confirmed))
            .await
            .ok();
        outcome.worktree = report;
    }
    outcome
}

/// Spawns, delegates, waits and closes. Returns the outcome and whether the close was
/// confirmed (a sheep that was never spawned needs none).
async fn launch(ctx: &RunContext, spec: &TaskSpec, cwd: PathBuf) -> (TaskOutcome, bool) {
    let failed = |why: String| (TaskOutcome::not_run("failed", Some(1), why), true);
    let mut client = match connect(ctx).await {
        Ok(client) => client,
        Err(err) => return failed(err),
    };
    let params = SpawnParams {
        agent: spec.agent.clone(),
        label: spec.label.clone(),
        backend: ctx.backend.clone(),
        cwd: Some(cwd.display().to_string()),
        placement: None,
        model: None,
        caller: Some(ctx.caller.clone()),
        parent_model: ctx.parent_model.clone(),
        parent_thinking: ctx.parent_thinking.clone(),
        fieldnotes_session: Some(ctx.session_relative.clone()).filter(|s| !s.is_empty()),
    };
    let spawned: SpawnResult = match within(
        SPAWN_DEADLINE,
        "spawn",
        client.call(method::SPAWN, &params, SPAWN_DEADLINE),
    )
    .await
    {
        Ok(spawned) => spawned,
        Err(err) => return failed(format!("its sheep could not be started: {err}")),
    };
    let agent_id = spawned.agent_id.to_string();

    let mut task_id = None;
    let mut report = None;
    let mut early_end = None;
    if ctx.cancel.is_cancelled() {
        early_end = Some(TaskOutcome::cancelled_before_start());
    } else {
        let params = DelegateParams {
            target: agent_id.clone(),
            task: spec.task.clone(),
            timeout: Some(ctx.timeout_minutes),
            session_name: Some(ctx.session_name.clone()),
            mode: Some(ctx.mode.to_owned()),
            group: Some(ctx.run_id.clone()),
            note: Some(spec.note.clone()),
            turn: false,
        };
        let delegated: Result<DelegateResult, String> = within(
            DELEGATE_DEADLINE,
            "delegate",
            client.call(method::DELEGATE, &params, DELEGATE_DEADLINE),
        )
        .await;
        match delegated {
            Ok(delegated) => {
                let id = delegated.task_id.to_string();
                ctx.progress.task_id(spec.index, &id);
                ctx.progress.set(spec.index, Phase::Running);
                report = wait_unless_cancelled(ctx, &mut client, &id).await;
                task_id = Some(id);
            }
            Err(err) => {
                early_end = Some(TaskOutcome::not_run(
                    "failed",
                    Some(1),
                    format!("the task could not be handed over: {err}"),
                ));
            }
        }
    }
    drop(client);

    ctx.progress.set(spec.index, Phase::Closing);
    let close = close(ctx, &agent_id).await;
    let report = match (report, &task_id) {
        (Some(report), _) => Some(report),
        (None, Some(id)) => report_after_close(ctx, id).await,
        (None, None) => None,
    };
    let mut outcome = match (report, early_end) {
        (Some(report), _) => TaskOutcome::from_report(report, agent_id.clone()),
        (None, Some(early)) => early,
        (None, None) => TaskOutcome::not_run(
            "failed",
            Some(1),
            "its final report could not be read from the broker".to_owned(),
        ),
    };
    outcome.agent_id = Some(agent_id);
    outcome.delegated = task_id.is_some();
    if let Err(err) = &close {
        // As the original: a sheep whose end is unconfirmed fails its task, whatever it said.
        outcome.error = Some(match outcome.error.take() {
            Some(first) => format!("{first}; {err}"),
            None => err.clone(),
        });
        if outcome.completed() {
            outcome.status = "failed".to_owned();
            outcome.return_code = Some(1);
        }
    }
    (outcome, close.is_ok())
}

/// Waits for the task to settle (within its timeout and a margin), unless the run is
/// cancelled first. `None` when it did not settle.
async fn wait_unless_cancelled(
    ctx: &RunContext,
    client: &mut Client,
    task_id: &str,
) -> Option<TaskReport> {
    let budget = Duration::from_secs_f64(ctx.timeout_minutes * 60.0) + WAIT_MARGIN;
    let params = WaitParams {
        id: IdList::One(task_id.to_owned()),
        timeout_ms: u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
        wait_output: true,
    };
    let wait = within(
        budget + Duration::from_secs(10),
        "wait",
        client.call::<_, WaitResult>(method::WAIT, &params, budget + Duration::from_secs(10)),
    );
    tokio::select! {
        waited = wait => waited.ok().and_then(|result| result.settled.into_iter().next()),
        () = ctx.cancel.cancelled() => None,
    }
}

/// Closes the sheep (ending its open task as cancelled, rc 130). `keepPane` follows the
/// `keepOpen` setting; the sheep's process ends either way.
async fn close(ctx: &RunContext, agent_id: &str) -> Result<CloseResult, String> {
    let mut client = connect(ctx).await?;
    let params = CloseParams {
        id: agent_id.to_owned(),
        keep_pane: ctx.keep_pane,
    };
    within(
        CLOSE_DEADLINE,
        "close",
        client.call(method::CLOSE, &params, CLOSE_DEADLINE),
    )
    .await
}

/// The task's report once it is settled and its note final (after a close cancelled it).
async fn report_after_close(ctx: &RunContext, task_id: &str) -> Option<TaskReport> {
    let mut client = connect(ctx).await.ok()?;
    let params = WaitParams {
        id: IdList::One(task_id.to_owned()),
        timeout_ms: u64::try_from(REPORT_AFTER_CLOSE.as_millis()).unwrap_or(u64::MAX),
        wait_output: false,
    };
    let waited: WaitResult = within(
        REPORT_AFTER_CLOSE + Duration::from_secs(5),
        "wait",
        client.call(
            method::WAIT,
            &params,
            REPORT_AFTER_CLOSE + Duration::from_secs(5),
        ),
    )
    .await
    .ok()?;
    waited.settled.into_iter().next()
}
