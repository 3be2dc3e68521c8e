//! `shepherd run`: a delegation's whole job in one command — spawn the sheep, hand over the
//! task, wait, collect the result, close — for one task, several side by side, or a chain,
//! every task with its note in a named, continuable fieldnotes session.
//!
//! The command composes broker requests (`plan`, `spawn`, `delegate`, `wait`, `close`); the
//! broker keeps every rule about sheep, tasks and notes. This module reads the arguments
//! ([`plan`]), refuses what cannot run before anything happens ([`checks`], [`conflict`],
//! [`worktree`]), drives the tasks ([`orchestrate`], [`task`]) while showing progress
//! ([`progress`]), and prints the outcome ([`output`]). The pi `subagent` tool runs
//! `shepherd run --plan - --json`; `docs/run.md` documents the interface.

mod checks;
mod conflict;
mod orchestrate;
mod output;
mod plan;
mod progress;
mod task;
mod unlaunched;
mod worktree;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;

use self::plan::PlanInput;
use self::progress::{Progress, ProgressMode};
use self::task::RunContext;
use super::connect::{HerdArgs, runtime, target};
use super::parent::caller_context;
use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

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
pub(crate) struct RunArgs {
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
    /// Where sheep run: auto, headless, tmux or herdr (default: the `backend` setting).
    #[arg(long)]
    backend: Option<String>,
    /// A label for the sheep (shown as `<agent>: <label>`).
    #[arg(long)]
    label: Option<String>,
    /// How progress shows on stderr.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    progress: ProgressMode,
    /// For integrations: the parent's model (`provider/id`), inherited by pi sheep whose
    /// definition names none.
    #[arg(long, value_name = "PROVIDER/ID")]
    parent_model: Option<String>,
    /// For integrations: the parent's thinking level, inherited likewise.
    #[arg(long, value_name = "LEVEL")]
    parent_thinking: Option<String>,
    #[command(flatten)]
    herd: HerdArgs,
}

/// Runs `shepherd run`.
pub(crate) fn run(args: RunArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, &args.herd)?;
    let root = target.address.project_root.clone();
    let settings = shepherd_config::load_settings(&ctx.dirs, &root).settings;
    checks::depth(target.depth, settings.max_depth)?;
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
        backend: args.backend.as_deref(),
        label: args.label.as_deref(),
    };
    let plan = plan::build(&input, &ctx.cwd, &root)?;
    let session_name = plan.session_name.clone();
    let backend = plan.backend.clone();
    let checked = checks::check(&plan, &settings, &ctx.dirs.home, |name| {
        shepherd_config::resolve_agent(&ctx.dirs, &root, &settings, name)
            .map_err(|err| CliError::new(err.code(), err.to_string()))
    })?;

    let agents: Vec<String> = checked.steps.iter().map(|s| s.agent.clone()).collect();
    let run_id = format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let run_ctx = RunContext {
        target,
        run_id: run_id.clone(),
        mode: checked.mode.as_str(),
        session_name: String::new(),
        session_relative: String::new(),
        timeout_minutes: checked.timeout_minutes,
        keep_pane: settings.keep_open,
        backend,
        parent_model: args.parent_model,
        parent_thinking: args.parent_thinking,
        caller: caller_context(),
        cancel: CancellationToken::new(),
        progress: Arc::new(Progress::new(args.progress, &agents)),
    };
    let outcome = runtime()?.block_on(orchestrate::run(&checked, run_ctx, session_name))?;
    let results_dir = ctx.dirs.runtime_dir.join("results");
    Ok(output::emit(
        &outcome,
        checked.mode,
        &agents,
        &results_dir,
        &run_id,
        printer,
    ))
}
