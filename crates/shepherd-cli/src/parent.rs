//! The parent's commands: spawn, delegate, message, watch, close, read, prune (`status` and
//! `herd` are in [`super::status`]).
//! Each is one broker request; the broker is started on demand.

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use serde_json::json;
use shepherd_core::envelope::Delivery;
use shepherd_core::herd::TaskReport;
use shepherd_core::protocol::{
    CloseParams, CloseResult, DelegateParams, DelegateResult, IdList, MessageParams, MessageResult,
    NoParams, PruneResult, ReadParams, ReadResult, SpawnParams, SpawnResult, WaitParams,
    WaitResult, calls,
};

use std::time::Duration;

use super::short_ids;
use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::{HerdArgs, call, caller_context, read_call, spawn_wait};
use shepherd_core::backend::{Placement as PlacementArg, ReadSource as SourceArg};
use shepherd_core::settings::Backend as BackendArg;

/// Exit status of `watch` when the wait ended with tasks still open.
pub(crate) const EXIT_PENDING: u8 = 75;

/// How long a close may take: the sheep's grace to end, the backend's confirmation and a pi
/// sheep's last words.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// Start an idle sheep from an agent definition.
#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// The agent definition's exact name (see `shepherd agents`).
    agent: String,
    /// A short task-specific label; the sheep is shown as `<agent>: <label>`.
    #[arg(long)]
    label: Option<String>,
    /// Where it runs (default: the `backend` setting).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Its working directory (default: the project root).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Where a visible sheep goes (default: tab).
    #[arg(long, value_enum)]
    placement: Option<PlacementArg>,
    /// A model for the sheep (pi: `provider/id`; another agent: a name it accepts).
    #[arg(long)]
    model: Option<String>,
    /// Run the definition on this coding agent instead of its own harness.
    #[arg(long, value_enum)]
    harness: Option<shepherd_core::harness::Harness>,
    /// Run it in its own git worktree on its own branch (kept on close when it holds work).
    #[arg(long)]
    isolate: bool,
    /// Run it on this host (one defined under `hosts` in the user settings; see `shepherd
    /// hosts`).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Confine it: off, workspace or strict (default: the definition's `sandbox:`, else the
    /// `sandbox` setting). Yours to choose: it may confine less than either.
    #[arg(long, value_enum)]
    sandbox: Option<shepherd_core::sandbox::Sandbox>,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn spawn(args: SpawnArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = SpawnParams {
        agent: args.agent,
        label: args.label,
        backend: args.backend,
        cwd: args.cwd,
        placement: args.placement,
        model: args.model,
        harness: args.harness,
        caller: Some(caller_context()),
        parent_model: None,
        parent_thinking: None,
        pi_command: None,
        session_name: None,
        isolate: args.isolate,
        host: args.host,
        sandbox: None,
        user_sandbox: args.sandbox,
        limits: None,
        credential: None,
    };
    usable_agent(ctx, &args.herd, &params.agent)?;
    let result: SpawnResult = call::<calls::Spawn>(ctx, &args.herd, &params, spawn_wait())?;
    printer.emit(&result, || {
        let worktree = result
            .worktree
            .as_ref()
            .map(|w| {
                format!(
                    " in worktree {}{} (branch {})",
                    w.path,
                    w.host
                        .as_ref()
                        .map(|host| format!(" on host {host}"))
                        .unwrap_or_default(),
                    w.branch
                )
            })
            .unwrap_or_default();
        let host = result
            .host
            .as_ref()
            .map(|host| format!(" on host {host}"))
            .unwrap_or_default();
        format!(
            "spawned {} ({}) on {}{host}{worktree}",
            result.display_name, result.agent_id, result.backend
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// Refuses a name the broker would refuse, unknown or its definition file skipped, before a
/// broker is started for it: the broker resolves the same definitions from the same settings.
fn usable_agent(ctx: &Context, herd: &HerdArgs, name: &str) -> Result<(), CliError> {
    let root = shepherd_client::connect::target(ctx, herd)?
        .address
        .project_root;
    let settings = shepherd_config::load_settings(&ctx.dirs, &root).settings;
    shepherd_config::discover_agents(
        &ctx.dirs,
        &root,
        settings.agent_scope,
        settings.include_bundled_agents,
    )
    .get(name)
    .map(|_| ())
    .map_err(|err| CliError::new(err.code(), err.to_string()))
}

/// Hand a sheep a tracked task; returns at once with the task id.
#[derive(Debug, Args)]
pub struct DelegateArgs {
    /// The sheep: its agent id, a unique prefix of the id's random part, or its display name.
    agent_id: String,
    /// The task.
    task: String,
    /// Minutes the task may take (fractions allowed; default: the `timeout` setting).
    #[arg(long)]
    timeout: Option<f64>,
    /// Put the note into this named fieldnotes session (created or continued).
    #[arg(long)]
    session_name: Option<String>,
    #[command(flatten)]
    budget: super::controls::BudgetArgs,
    /// The stall watchdog for this task: minutes of silence before its sheep is nudged, and
    /// again before the task settles blocked; 0 turns it off (default: `stallWatchdog`).
    #[arg(long, value_name = "MIN")]
    stall: Option<f64>,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn delegate(
    args: DelegateArgs,
    ctx: &Context,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    let named = args.session_name.is_some();
    let params = DelegateParams {
        target: short_ids::sheep_id(ctx, &args.herd, args.agent_id)?,
        task: args.task,
        timeout: args.timeout,
        session_name: args.session_name,
        turn: false,
        budget: args.budget.budget()?,
        stall: args.stall,
    };
    let result: DelegateResult = call::<calls::Delegate>(ctx, &args.herd, &params, Duration::ZERO)?;
    printer.emit(&result, || {
        let note = result
            .note_relative
            .as_deref()
            .map(|n| format!(" (note {n})"))
            .unwrap_or_default();
        let session = match (&result.session_name, named) {
            (Some(name), true) => {
                shepherd_client::session_words::named_session(name, result.resumed)
            }
            _ => String::new(),
        };
        format!(
            "delegated {} to {}{note}{session}",
            result.task_id, result.agent_id
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// Message a sheep (never creates a task).
#[derive(Debug, Args)]
pub struct MessageArgs {
    /// The sheep: its agent id, a unique prefix of the id's random part, or its display name.
    agent_id: String,
    /// The message.
    text: String,
    /// The task it concerns.
    #[arg(long = "task")]
    task_id: Option<String>,
    /// The message id this answers.
    #[arg(long)]
    reply_to: Option<String>,
    /// Wait for an answer: with --task, the task waits until it comes.
    #[arg(long)]
    expects_reply: bool,
    /// Deliver into the sheep's current turn instead of its next one.
    #[arg(long)]
    steer: bool,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn message(args: MessageArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = message_params(
        short_ids::sheep_id(ctx, &args.herd, args.agent_id)?,
        args.text,
        args.task_id,
        args.reply_to,
        args.expects_reply,
        args.steer,
    );
    let result: MessageResult = call::<calls::Message>(ctx, &args.herd, &params, Duration::ZERO)?;
    print_message(printer, &result);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn message_params(
    target: String,
    message: String,
    task_id: Option<String>,
    reply_to: Option<String>,
    expects_reply: bool,
    steer: bool,
) -> MessageParams {
    MessageParams {
        target,
        message,
        task_id,
        thread_id: None,
        reply_to,
        expects_reply,
        delivery: Some(if steer {
            Delivery::Steer
        } else {
            Delivery::FollowUp
        }),
    }
}

pub(crate) fn print_message(printer: &Printer, result: &MessageResult) {
    printer.emit(result, || {
        let state = result
            .target_task_state
            .map(|s| format!(" (task {})", s.as_str()))
            .unwrap_or_default();
        // A steer the target cannot take mid-turn goes as a follow-up; say so.
        let changed = result
            .delivery_changed
            .as_deref()
            .map(|why| format!("{why} "))
            .unwrap_or_default();
        // The id is what `status` takes to say whether it was delivered and read.
        format!(
            "queued {} to {}{state}; {changed}`shepherd status {}` shows whether it was delivered and read",
            result.message_id, result.target_id, result.message_id
        )
    });
}

/// Wait for tasks to settle and print what settled.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Task ids (from delegate), or unique prefixes of their random part.
    #[arg(required = true)]
    task_ids: Vec<String>,
    /// Seconds to wait for every task to settle (default: report at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    wait: f64,
    #[command(flatten)]
    herd: HerdArgs,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Settled<'a> {
    task_id: &'a str,
    agent_id: &'a str,
    status: &'a str,
    return_code: Option<i32>,
    summary: Option<&'a str>,
    error: Option<&'a str>,
    note: Option<&'a str>,
}

fn settled_view(report: &TaskReport) -> Settled<'_> {
    Settled {
        task_id: report.task_id.as_str(),
        agent_id: report.agent_id.as_str(),
        status: report.status.as_str(),
        return_code: report.return_code,
        summary: report.summary.as_deref(),
        error: report.error.as_deref(),
        note: report.note.as_deref(),
    }
}

pub fn watch(args: &WatchArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    if !(args.wait.is_finite() && args.wait >= 0.0) {
        return Err(CliError::new(
            ErrorCode::InvalidWait,
            format!(
                "--wait `{}` must be a non-negative number of seconds",
                args.wait
            ),
        ));
    }
    let params = WaitParams {
        wait_output: false,
        id: IdList::Many(short_ids::task_ids(ctx, &args.herd, &args.task_ids)?),
        timeout_ms: (args.wait * 1000.0).round() as u64,
    };
    let result: WaitResult =
        call::<calls::Wait>(ctx, &args.herd, &params, Duration::from_secs_f64(args.wait))?;
    let settled: Vec<Settled<'_>> = result.settled.iter().map(settled_view).collect();
    printer.emit(
        &json!({ "settled": settled, "pending": result.pending }),
        || {
            let mut lines: Vec<String> = result
                .settled
                .iter()
                .map(|r| {
                    let detail = r
                        .error
                        .as_deref()
                        .or(r.summary.as_deref())
                        .unwrap_or_default();
                    let detail = detail.lines().next().unwrap_or_default();
                    format!(
                        "{} {} {} (rc {}): {detail}",
                        r.task_id,
                        r.display_name,
                        r.status.as_str(),
                        r.return_code.unwrap_or(1)
                    )
                })
                .collect();
            lines.extend(result.pending.iter().map(|id| format!("{id} still open")));
            lines.join("\n")
        },
    );
    if !result.pending.is_empty() {
        return Ok(ExitCode::from(EXIT_PENDING));
    }
    let first_failure = args
        .task_ids
        .iter()
        .filter_map(|id| result.settled.iter().find(|r| r.task_id.as_str() == id))
        .filter_map(|r| r.return_code)
        .find(|rc| *rc != 0);
    Ok(ExitCode::from(
        first_failure.map_or(0, |rc| u8::try_from(rc).unwrap_or(1)),
    ))
}

/// Close a sheep: its open task is cancelled, its processes end before this returns.
#[derive(Debug, Args)]
pub struct CloseArgs {
    /// The sheep: its agent id, a unique prefix of the id's random part, or its display name.
    agent_id: String,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn close(args: CloseArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let result: CloseResult = call::<calls::Close>(
        ctx,
        &args.herd,
        &CloseParams {
            id: short_ids::sheep_id(ctx, &args.herd, args.agent_id)?,
            keep_pane: false,
        },
        CLOSE_WAIT,
    )?;
    printer.emit(&result, || {
        let cancelled = result
            .cancelled
            .as_ref()
            .map(|t| format!("; task {} cancelled", t.task_id))
            .unwrap_or_default();
        let worktree = result
            .worktree
            .as_ref()
            .map(super::controls::worktree_text)
            .unwrap_or_default();
        format!("closed {}{cancelled}{worktree}", result.display_name)
    });
    Ok(ExitCode::SUCCESS)
}

/// Show a sheep's recent output.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The sheep: agent id, unique id prefix, display name or pane id.
    target: String,
    /// How many lines.
    #[arg(long, default_value_t = 40)]
    lines: u32,
    /// Which output (default: recent-unwrapped).
    #[arg(long, value_enum)]
    source: Option<SourceArg>,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn read(args: ReadArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = ReadParams {
        target: short_ids::sheep_id(ctx, &args.herd, args.target)?,
        lines: Some(args.lines),
        source: args.source,
    };
    let result: ReadResult = call::<calls::Read>(ctx, &args.herd, &params, Duration::ZERO)?;
    printer.emit(&result, || result.text.clone());
    Ok(ExitCode::SUCCESS)
}

/// Forget sheep whose processes are gone.
#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn prune(args: &PruneArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let result: PruneResult =
        read_call::<calls::Prune>(ctx, &args.herd, &NoParams {})?.unwrap_or(PruneResult {
            pruned: 0,
            remaining: 0,
        });
    printer.emit(&result, || match result.pruned {
        0 => format!("nothing to prune ({} remain)", result.remaining),
        n => format!("pruned {n}; {} remain", result.remaining),
    });
    Ok(ExitCode::SUCCESS)
}
