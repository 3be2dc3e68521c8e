//! A sheep's commands: `inbox`, `tell`, `done` (and the hidden `report`). They use the
//! capability Shepherd put in the sheep's environment, so any program can be a sheep.

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use shepherd_core::envelope::Kind;
use shepherd_core::fieldnotes::split_context_block;
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::protocol::{
    AckParams, Call, DoneParams, InboxParams, ReportParams, Role, calls,
};
use shepherd_core::task::DoneStatus;

use tokio::time::Instant;

use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::connect::{SheepCapability, deadline_after, runtime, sheep};

/// Exit status of `inbox` when the wait ended with nothing delivered.
pub(crate) const EXIT_NOTHING: u8 = 75;

/// Makes one request as this sheep. It rides out a broker restart (the herd's supervisors
/// bring the broker back) until the broker timeout, resending under the same request id, so
/// the request is applied exactly once.
fn call<C: Call>(params: &C::Params) -> Result<C::Result, CliError> {
    let cap = SheepCapability::from_env()?;
    runtime()?.block_on(async {
        let deadline = deadline_after(Duration::ZERO)?;
        Ok(sheep(&cap, Role::Sheep).send::<C>(params, deadline).await?)
    })
}

/// Where this sheep's CLI remembers the last task envelope `inbox` printed (`task`: its id, so
/// a plain `shepherd done` names the task it settles and a redelivered old task changes nothing
/// instead of settling a newer one; `note`: its note's path, for `shepherd note`).
fn remembered_file(cap: &SheepCapability, what: &str) -> Option<PathBuf> {
    let dir = cap.socket.parent()?.join("sheep");
    Some(dir.join(format!("{}.{what}", cap.agent_id)))
}

fn remember_task(cap: &SheepCapability, items: &[InboxItem]) {
    let Some(task) = items.iter().rev().find_map(|item| match &item.payload {
        Payload::Envelope { envelope } if envelope.kind == Kind::Task => Some(envelope),
        _ => None,
    }) else {
        return;
    };
    let remembered = [
        (
            "task",
            task.task_id.as_ref().map(|id| id.as_str().to_owned()),
        ),
        ("note", Some(task.note.clone().unwrap_or_default())),
    ];
    for (what, value) in remembered {
        let (Some(value), Some(file)) = (value, remembered_file(cap, what)) else {
            continue;
        };
        if let Some(dir) = file.parent()
            && shepherd_client::paths::ensure_private_dir(dir).is_ok()
        {
            let _kept = shepherd_fs::write_atomic(&file, value.as_bytes(), Some(0o600));
        }
    }
}

fn remembered(cap: &SheepCapability, what: &str) -> Option<String> {
    let text = fs_err::read_to_string(remembered_file(cap, what)?).ok()?;
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

fn remembered_task(cap: &SheepCapability) -> Option<String> {
    remembered(cap, "task")
}

/// Print what was delivered and acknowledge it: a sheep's own inbox inside a sheep, otherwise
/// the parent's (messages, replies, completions, notices). Each item prints as its text — a
/// task without the fieldnotes context block (`shepherd note` prints the note's path), a
/// message as written — followed by a newline, or by a NUL with `--null`; `--json` prints one
/// document `{"items": [...]}` with every envelope whole.
#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Seconds to wait for something to arrive (default: answer at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    wait: f64,
    /// End each item with a NUL byte instead of a newline (for texts with newlines in them).
    #[arg(long, short = '0')]
    null: bool,
    #[command(flatten)]
    herd: shepherd_client::connect::HerdArgs,
}

/// What `inbox --json` lists for one item: an envelope as is, anything else with its type.
fn item_json(item: &InboxItem) -> Value {
    match &item.payload {
        Payload::Envelope { envelope } => {
            serde_json::to_value(envelope).expect("envelopes serialise")
        }
        other => serde_json::to_value(other).expect("items serialise"),
    }
}

/// What plain `inbox` prints for one item: what a script wants to act on.
fn item_text(item: &InboxItem) -> String {
    match &item.payload {
        Payload::Envelope { envelope } => {
            let content = envelope.content.as_deref().unwrap_or_default();
            if envelope.kind == Kind::Task {
                split_context_block(content).0.to_owned()
            } else {
                content.to_owned()
            }
        }
        Payload::Completion { completions, .. } => completions
            .iter()
            .map(|c| {
                let code = c
                    .return_code
                    .map_or(String::new(), |rc| format!(" (rc {rc})"));
                let words = c.summary.as_deref().or(c.error.as_deref()).unwrap_or("");
                format!("{} {}{code}: {words}", c.display_name, c.status.as_str())
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Payload::StaleWait(wait) => format!(
            "{} has waited {} s for a reply to: {}",
            wait.display_name,
            wait.elapsed_ms / 1000,
            wait.question
        ),
        Payload::Notice(notice) => notice.text.clone(),
    }
}

pub fn inbox(args: &InboxArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    if !(args.wait.is_finite() && args.wait >= 0.0) {
        return Err(CliError::new(
            ErrorCode::InvalidWait,
            format!(
                "--wait `{}` must be a non-negative number of seconds",
                args.wait
            ),
        ));
    }
    let cap = SheepCapability::from_env().ok();
    let wait = Duration::from_secs_f64(args.wait);
    let rt = runtime()?;
    let fetched = rt.block_on(async {
        let deadline = deadline_after(wait)?;
        let mut link = match &cap {
            Some(cap) => sheep(cap, Role::Sheep),
            None => {
                let ctx = shepherd_client::Context::from_env()?;
                let target = shepherd_client::connect::target(&ctx, &args.herd)?;
                let reach_by = deadline_after(Duration::ZERO)?;
                match shepherd_client::connect::parent_if_alive(&target, reach_by).await? {
                    Some(link) => link,
                    None => return Ok::<_, CliError>(None),
                }
            }
        };
        let items = fetch(&mut link, Instant::now() + wait, deadline).await?;
        Ok(Some((link, items)))
    })?;
    let Some((mut link, items)) = fetched else {
        return Ok(ExitCode::from(EXIT_NOTHING));
    };
    // Printed first, acknowledged after: a lost acknowledgement means a redelivery (which the
    // envelope ids make recognisable), never a loss.
    if printer.is_json() {
        let values: Vec<Value> = items.iter().map(item_json).collect();
        printer.emit(&json!({ "items": values }), String::new);
    } else {
        let end = if args.null { '\0' } else { '\n' };
        let mut out = String::new();
        for item in &items {
            // A message may come from a sheep: only what a terminal shows gets through.
            out.push_str(&shepherd_core::printable::printable(&item_text(item)));
            out.push(end);
        }
        printer.raw(&out);
    }
    if let Some(cap) = &cap {
        remember_task(cap, &items);
    }
    if let Some(last) = items.last() {
        let acked = rt.block_on(async {
            let deadline = deadline_after(Duration::ZERO)?;
            link.send::<calls::Ack>(&AckParams { seq: last.seq }, deadline)
                .await?;
            Ok::<_, CliError>(())
        });
        if let Err(err) = acked {
            eprintln!("shepherd inbox: printed, but not acknowledged ({err}); it may come again");
        }
    }
    Ok(if items.is_empty() {
        ExitCode::from(EXIT_NOTHING)
    } else {
        ExitCode::SUCCESS
    })
}

/// Waits for inbox items until `until`, across broker restarts: a lost connection is
/// reconnected and the wait goes on for what is left of it.
async fn fetch(
    link: &mut shepherd_client::wire::Link,
    until: Instant,
    deadline: Instant,
) -> Result<Vec<InboxItem>, CliError> {
    loop {
        let wait_ms = u64::try_from(until.saturating_duration_since(Instant::now()).as_millis())
            .unwrap_or(u64::MAX);
        let params = InboxParams { wait_ms };
        // Reaching the broker (again, after a restart) gets the broker timeout, never more
        // than what is left of the whole wait.
        let reach_by = deadline_after(Duration::ZERO)?.min(deadline);
        let client = link.reach(reach_by).await?;
        match tokio::time::timeout_at(deadline, client.send::<calls::Inbox>(&params)).await {
            Ok(Ok(result)) => return Ok(result.items),
            Ok(Err(err)) if err.is_lost() => link.disconnect(),
            Ok(Err(err)) => return Err(err.into()),
            Err(_) => {
                link.disconnect();
                return Err(shepherd_client::wire::ClientError::Timeout {
                    method: calls::Inbox::METHOD.name().to_owned(),
                    after: Duration::ZERO,
                }
                .into());
            }
        }
    }
}

/// Inside a sheep: print the path of the note of its task (the last task `inbox` printed, or
/// `--task`), where it writes its findings.
#[derive(Debug, Args)]
pub struct NoteArgs {
    /// Print the path relative to the project root instead of the absolute one.
    #[arg(long)]
    relative: bool,
}

pub fn note(args: &NoteArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let cap = SheepCapability::from_env()?;
    let task = remembered_task(&cap);
    let note = remembered(&cap, "note").ok_or_else(|| {
        let why = match &task {
            Some(task) => format!("task {task} has no note (fieldnotes are off for this herd)"),
            None => "this sheep has not printed a task with `shepherd inbox` yet".to_owned(),
        };
        CliError::new(ErrorCode::NoNote, format!("No note to show: {why}."))
    })?;
    let shown = if args.relative {
        let project = std::env::var("SHEPHERD_PROJECT").unwrap_or_default();
        std::path::Path::new(&note)
            .strip_prefix(&project)
            .map_or_else(|_| note.clone(), |p| p.display().to_string())
    } else {
        note.clone()
    };
    printer.emit(&json!({ "taskId": task, "note": note }), || shown.clone());
    Ok(ExitCode::SUCCESS)
}

/// Message the parent (`shepherd`) or a herd-mate (its agent id or display name; `shepherd
/// herd` lists them).
#[derive(Debug, Args)]
pub struct TellArgs {
    /// `shepherd` (or `parent`), or a herd-mate's agent id, display name or unique label.
    target: String,
    /// The message.
    text: String,
    /// The task it concerns (default: this sheep's open task).
    #[arg(long = "task")]
    task_id: Option<String>,
    /// The message id this answers.
    #[arg(long)]
    reply_to: Option<String>,
    /// Ask a question: this sheep's task waits until the answer comes.
    #[arg(long)]
    expects_reply: bool,
    /// Deliver into the recipient's current turn.
    #[arg(long)]
    steer: bool,
}

pub fn tell(args: TellArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = super::parent::message_params(
        args.target,
        args.text,
        args.task_id,
        args.reply_to,
        args.expects_reply,
        args.steer,
    );
    let result = call::<calls::Tell>(&params)?;
    super::parent::print_message(printer, &result);
    Ok(ExitCode::SUCCESS)
}

/// Finish this sheep's task: the only signal that a task is done.
#[derive(Debug, Args)]
pub struct DoneArgs {
    /// How the task ended.
    #[arg(long, value_enum)]
    status: DoneStatus,
    /// What was done, or why not.
    #[arg(long)]
    summary: Option<String>,
    /// The task (default: this sheep's open task).
    #[arg(long = "task")]
    task_id: Option<String>,
}

pub fn done(args: DoneArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let status = args.status;
    // Name the task being settled: the one given, else the last task `inbox` printed here.
    let task_id = args.task_id.or_else(|| {
        SheepCapability::from_env()
            .ok()
            .and_then(|cap| remembered_task(&cap))
    });
    let params = DoneParams {
        status,
        summary: args.summary,
        task_id,
    };
    let result = call::<calls::Done>(&params)?;
    printer.emit(&result, || {
        let duplicate = if result.duplicate {
            " (already settled; the first result stands)"
        } else {
            ""
        };
        format!(
            "task {} {}{duplicate}",
            result.task_id,
            result.status.as_str()
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// Report this sheep's run lifecycle (for integrations; `run_settled` after a turn ends).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// What happened (`agent_start`, `run_settled`, …).
    event: shepherd_core::protocol::ReportEvent,
    /// The run's stop reason (`stop`, `error`, `aborted`).
    #[arg(long)]
    stop_reason: Option<String>,
    /// The error that ended the run.
    #[arg(long)]
    error: Option<String>,
}

pub fn report(args: ReportArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = ReportParams {
        event: args.event,
        stop_reason: args.stop_reason,
        error: args.error,
        text: None,
        session_file: None,
        telemetry: None,
        usage: None,
        retry_after_ms: None,
        ridden_out: None,
    };
    let result = call::<calls::Report>(&params)?;
    printer.emit(&result, || "reported".to_owned());
    Ok(ExitCode::SUCCESS)
}
