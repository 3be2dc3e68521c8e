//! `shepherd run`: a delegation's whole job in one command — spawn the sheep, hand over the
//! task, wait, collect the result, close — for one task, several side by side, or a chain,
//! every task with its note in a named, continuable fieldnotes session.
//!
//! The run itself belongs to the broker: this command reads the arguments into a plan
//! (`plan`), submits it (`run.submit`), shows the progress the broker pushes
//! (`progress`) and prints the report it ends with (`output`). Ctrl-C, SIGTERM and SIGHUP
//! cancel the run in the broker, which closes its sheep and finalises its notes; a lost
//! connection (a broker restart) is reconnected and the run followed again; a client killed
//! outright leaves a run the broker cancels a few seconds later, unless it was submitted with
//! `--detach` (then `--attach RUN` follows it again). `docs/run.md` documents the interface.

mod output;
mod plan;
mod progress;

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use shepherd_client::wire::{Link, Push};
use shepherd_core::protocol::{Call, RunIdParams, RunStepParams, RunSubmitParams, RunView, calls};
use shepherd_core::run::RunReport;
use tokio::signal::unix::{SignalKind, signal};

use self::plan::PlanInput;
use self::progress::{Progress, ProgressMode};
use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::caller_context;
use shepherd_client::connect::{HerdArgs, deadline_after, parent, runtime, target};

/// How often live progress redraws its elapsed times.
const REDRAW_EVERY: Duration = Duration::from_secs(1);

/// Delegate in one call: spawn → task → wait → result → close, for one task (`AGENT TASK`),
/// several at once (`--parallel`), a chain (`--chain`) or a plan file (`--plan`).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    shepherd run worker \"fix the login bug\" --session-name fix-login\n  \
    shepherd run --parallel scout=\"map src/auth\" scout=\"map src/db\"\n  \
    shepherd run --chain scout=\"list the files\" planner=\"plan from: {previous}\"\n  \
    shepherd run --plan plan.yaml --json\n\n\
    Exit status: 0 when every task completed; else the return code of the first task (in input \
    order) that did not (failed 1, blocked 2, timed out 124, cancelled 130); 130 when \
    interrupted. Before anything runs: 2 for a malformed command line or plan, 1 for a refused \
    run (unknown agent, too many tasks, write conflict, depth, no git repository).")]
pub struct RunArgs {
    /// Single mode: the agent definition's exact name (see `shepherd agents`).
    #[arg(value_name = "AGENT")]
    agent: Option<String>,
    /// Single mode: the task.
    #[arg(value_name = "TASK")]
    task: Option<String>,
    /// Parallel mode: tasks that run side by side (at most maxParallelTasks, maxConcurrency at
    /// a time); results come back in input order.
    #[arg(long, value_name = "AGENT=TASK", num_args = 1..)]
    parallel: Vec<String>,
    /// Chain mode: steps run in order; `{previous}` in a step is replaced by the previous
    /// step's full result; the chain stops at the first step that does not complete.
    #[arg(long, value_name = "AGENT=TASK", num_args = 1..)]
    chain: Vec<String>,
    /// A YAML or JSON plan file (`-` reads stdin); see docs/run.md.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Continue (or create) the fieldnotes session with this exact name (default: a new
    /// session named after the first task).
    #[arg(long, value_name = "NAME")]
    session_name: Option<String>,
    /// The tasks' working directory (default: the project root).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Run each task in its own git worktree on branch `shepherd/<name>` (single and
    /// parallel).
    #[arg(long)]
    isolate: bool,
    /// Minutes each task may take (fractions allowed; default: the `timeout` setting).
    #[arg(long, value_name = "MINUTES")]
    timeout: Option<f64>,
    /// Where sheep run (default: the `backend` setting).
    #[arg(long, value_enum)]
    backend: Option<shepherd_core::settings::Backend>,
    /// A label for the sheep (shown as `<agent>: <label>`).
    #[arg(long)]
    label: Option<String>,
    /// Run every task's definition on this coding agent (a plan's task may name its own).
    #[arg(long, value_enum)]
    harness: Option<shepherd_core::harness::Harness>,
    /// Run every task's sheep on this host (one defined under `hosts` in the user settings; a
    /// plan's task may name its own).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Confine every task's sheep: off, workspace or strict (default: each definition's
    /// `sandbox:`, else the `sandbox` setting). Yours to choose: it may confine less than
    /// either, where a plan's `sandbox` only confines more.
    #[arg(long, value_enum)]
    sandbox: Option<shepherd_core::sandbox::Sandbox>,
    /// How progress shows on stderr.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    progress: ProgressMode,
    /// For integrations: the parent's model (`provider/id`), inherited by pi sheep whose
    /// definition names none.
    #[arg(long, value_name = "PROVIDER/ID")]
    parent_model: Option<String>,
    /// For integrations: the parent's thinking level, inherited likewise (one this Shepherd
    /// does not know, a newer pi's, is dropped: the sheep runs at its default).
    #[arg(long, value_name = "LEVEL")]
    parent_thinking: Option<String>,
    /// Once the run is over, land its isolated tasks' branches into the branch the project had
    /// checked out (as `shepherd merge RUN` does; a plan says `merge: true`).
    #[arg(long)]
    merge: bool,
    /// With --merge: a shell command that must pass after each branch lands (a plan's
    /// `mergeCheck`).
    #[arg(long, value_name = "CMD", requires = "merge")]
    check: Option<String>,
    /// With --merge: hand a conflict to a sheep of this agent definition.
    #[arg(long, value_name = "AGENT", requires = "merge")]
    resolve: Option<String>,
    /// Submit the run and return at once with its id; it goes on without this command (follow
    /// it again with --attach).
    #[arg(long)]
    detach: bool,
    /// Follow a run already submitted (its id), until it finishes.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["agent", "parallel", "chain", "plan", "detach"])]
    attach: Option<String>,
    #[command(flatten)]
    budget: crate::controls::BudgetArgs,
    #[command(flatten)]
    herd: HerdArgs,
}

/// Runs `shepherd run`.
pub fn run(args: &RunArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, &args.herd)?;
    if let Some(run_id) = &args.attach {
        let report = runtime()?.block_on(async {
            let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
            let params = RunIdParams {
                run_id: run_id.clone(),
            };
            let view = send::<calls::RunAttach>(&mut link, &params).await?;
            let agents: Vec<String> = view.steps.iter().map(|s| s.agent.clone()).collect();
            follow(&mut link, view, &Progress::new(args.progress, &agents)).await
        })?;
        return Ok(output::emit(&report, printer));
    }
    let root = target.address.project_root.clone();
    // This process's own nesting, refused before anything is asked of the broker (which checks
    // its herd's depth again).
    let max_depth = shepherd_config::load_settings(&ctx.dirs, &root)
        .settings
        .max_depth;
    if target.depth.saturating_add(1) > max_depth {
        let depth = target.depth;
        return Err(CliError::new(
            ErrorCode::DepthExceeded,
            format!(
                "shepherd run is nested {depth} deep (SHEPHERD_DEPTH={depth}) and maxDepth is {max_depth}; \
                 a sheep at this depth may not start sheep of its own"
            ),
        ));
    }
    let input = PlanInput {
        agent: args.agent.as_deref(),
        task: args.task.as_deref(),
        parallel: &args.parallel,
        chain: &args.chain,
        plan_file: args.plan.as_deref(),
        session_name: args.session_name.as_deref(),
        cwd: args.cwd.as_deref(),
        isolate: args.isolate,
        timeout: args.timeout,
        backend: args.backend,
        label: args.label.as_deref(),
        harness: args.harness,
        host: args.host.as_deref(),
        budget: args.budget.budget()?,
    };
    let plan = plan::build(&input, &ctx.cwd, &root)?;
    let landing = args.merge || plan.merge;
    if !landing
        && let Some(key) = [
            ("mergeCheck", plan.merge_check.is_some()),
            ("mergeStrategy", plan.merge_strategy.is_some()),
        ]
        .iter()
        .find_map(|(key, given)| given.then_some(*key))
    {
        return Err(CliError::new(
            ErrorCode::InvalidRun,
            format!(
                "the plan's {key} applies only when its branches land: add `merge: true` to the plan, or pass --merge"
            ),
        )
        .with_exit(2));
    }
    let (merge_check, merge_strategy) = (plan.merge_check.clone(), plan.merge_strategy);
    let agents: Vec<String> = plan.steps.iter().map(|s| s.agent.clone()).collect();
    let params = RunSubmitParams {
        mode: plan.mode,
        steps: plan
            .steps
            .iter()
            .map(|step| RunStepParams {
                agent: step.agent.clone(),
                task: step.task.clone(),
                cwd: Some(step.cwd.display().to_string()),
                isolate: step.isolate,
                label: step.label.clone(),
                harness: step.harness,
                host: step.host.clone(),
                budget: step.budget,
            })
            .collect(),
        session_name: plan.session_name.clone(),
        timeout: plan.timeout_minutes,
        budget: plan.budget,
        backend: plan.backend,
        host: None,
        sandbox: plan.sandbox,
        user_sandbox: args.sandbox,
        parent_model: args.parent_model.clone(),
        parent_thinking: args
            .parent_thinking
            .as_deref()
            .and_then(shepherd_core::agent_def::ThinkingLevel::parse),
        caller: Some(caller_context()),
        pi_command: None,
        detach: args.detach,
    };
    let progress = Progress::new(args.progress, &agents);
    let followed = runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        let view = send::<calls::RunSubmit>(&mut link, &params).await?;
        if args.detach {
            return Ok(Err(view.run_id));
        }
        follow(&mut link, view, &progress).await.map(Ok)
    })?;
    match followed {
        // A run whose tasks left no branch with work on it has nothing to land.
        Ok(report) if landing && !report.worktrees.is_empty() => {
            // Only the branches of tasks that completed land; a run with none has nothing to
            // land, and its report says why (its tasks' states).
            let merged = crate::merge::land_run(
                ctx,
                &args.herd,
                &report.run_id,
                args.check.clone().or(merge_check),
                args.resolve.clone(),
                merge_strategy,
                !printer.is_json(),
            );
            match merged {
                Ok(merged) => Ok(output::emit_with_merge(&report, &merged, printer)),
                Err(err) if err.code == ErrorCode::NothingToLand => {
                    Ok(output::emit(&report, printer))
                }
                Err(err) => Err(err),
            }
        }
        Ok(report) => Ok(output::emit(&report, printer)),
        Err(run_id) => {
            let detached = json!({ "runId": run_id, "detached": true });
            printer.emit(&detached, || {
                format!("submitted {run_id}; follow it with `shepherd run --attach {run_id}`")
            });
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Sends `C` on `link` within the broker timeout.
async fn send<C: Call>(link: &mut Link, params: &C::Params) -> Result<C::Result, CliError> {
    Ok(link
        .send::<C>(params, deadline_after(Duration::ZERO)?)
        .await?)
}

/// Follows the run until it finishes and returns its report. The first SIGINT, SIGTERM or
/// SIGHUP cancels it in the broker (later ones are absorbed while its sheep close); a lost
/// connection is reconnected and the run followed again.
async fn follow(
    link: &mut Link,
    mut view: RunView,
    progress: &Progress,
) -> Result<RunReport, CliError> {
    let install = |kind: SignalKind| {
        signal(kind).map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot install a signal handler: {err}"),
            )
        })
    };
    let mut interrupt = install(SignalKind::interrupt())?;
    let mut terminate = install(SignalKind::terminate())?;
    let mut hangup = install(SignalKind::hangup())?;
    let run_id = view.run_id.clone();
    let mut following = link.generation();
    let mut cancel_asked = false;
    let mut redraw = tokio::time::interval(REDRAW_EVERY);
    progress.start(&run_id);
    loop {
        progress.update(&view);
        if let Some(report) = view.report.take() {
            progress.redraw();
            return Ok(report);
        }
        if link.generation() != following || !link.is_connected() {
            // A new connection (the broker restarted): follow the run again from now.
            let params = RunIdParams {
                run_id: run_id.clone(),
            };
            view = send::<calls::RunAttach>(link, &params).await?;
            following = link.generation();
            continue;
        }
        let signalled = tokio::select! {
            push = link.next_event() => {
                match push {
                    Ok(Push::Run(pushed)) => {
                        if pushed.run_id == run_id {
                            view = *pushed;
                        }
                    }
                    Ok(_) => {}
                    Err(err) if err.is_lost() => {}
                    Err(err) => return Err(err.into()),
                }
                false
            }
            _ = interrupt.recv() => true,
            _ = terminate.recv() => true,
            _ = hangup.recv() => true,
            _ = redraw.tick(), if progress.is_live() => {
                progress.redraw();
                false
            }
        };
        if signalled && !cancel_asked {
            cancel_asked = true;
            let params = RunIdParams {
                run_id: run_id.clone(),
            };
            view = send::<calls::RunCancel>(link, &params).await?;
        }
    }
}
