//! A sheep's commands: `inbox`, `tell`, `done` (and the hidden `report`). They use the
//! capability Shepherd put in the sheep's environment, so any program can be a sheep.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use shepherd_core::envelope::Kind;
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::protocol::{
    AckParams, DoneParams, DoneResult, InboxParams, InboxResult, MessageResult, ReportParams, Role,
    method,
};
use shepherd_core::task::DoneStatus;

use tokio::time::Instant;

use super::connect::{SheepCapability, deadline_after, runtime, sheep};
use crate::error::CliError;
use crate::output::Printer;

/// Exit status of `inbox` when the wait ended with nothing delivered.
pub(crate) const EXIT_NOTHING: u8 = 75;

/// Makes one request as this sheep. It rides out a broker restart (the herd's supervisors
/// bring the broker back) until the broker timeout, resending under the same request id, so
/// the request is applied exactly once.
fn call<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    name: &str,
    params: &P,
) -> Result<R, CliError> {
    let cap = SheepCapability::from_env()?;
    let params =
        serde_json::to_value(params).map_err(|e| CliError::new("internal", e.to_string()))?;
    runtime()?.block_on(async {
        let deadline = deadline_after(Duration::ZERO)?;
        let value = sheep(&cap, Role::Sheep)
            .request(name, params, deadline)
            .await?;
        serde_json::from_value(value).map_err(|e| CliError::new("protocol", format!("{name}: {e}")))
    })
}

/// Where this sheep's CLI remembers the task of the last task envelope `inbox` printed, so a
/// plain `shepherd done` names the task it settles (a redelivered old task then changes nothing
/// instead of settling a newer one).
fn last_task_file(cap: &SheepCapability) -> Option<PathBuf> {
    let dir = cap.socket.parent()?.join("sheep");
    Some(dir.join(format!("{}.task", cap.agent_id)))
}

fn remember_task(cap: &SheepCapability, items: &[InboxItem]) {
    let task = items.iter().rev().find_map(|item| match &item.payload {
        Payload::Envelope { envelope } if envelope.kind == Kind::Task => envelope.task_id.clone(),
        _ => None,
    });
    let (Some(task), Some(file)) = (task, last_task_file(cap)) else {
        return;
    };
    if let Some(dir) = file.parent()
        && shepherd_broker::paths::ensure_private_dir(dir).is_ok()
    {
        let _kept = shepherd_fs::write_atomic(&file, task.as_str().as_bytes(), Some(0o600));
    }
}

fn remembered_task(cap: &SheepCapability) -> Option<String> {
    let text = fs_err::read_to_string(last_task_file(cap)?).ok()?;
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

/// Print what was delivered (one JSON object per line) and acknowledge it: a sheep's own inbox
/// inside a sheep, otherwise the parent's (messages, replies, completions, notices).
#[derive(Debug, Args)]
pub(crate) struct InboxArgs {
    /// Seconds to wait for something to arrive (default: answer at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    wait: f64,
    #[command(flatten)]
    herd: super::connect::HerdArgs,
}

/// What `inbox` prints for one item: an envelope as is, anything else with its type.
fn item_json(item: &InboxItem) -> Value {
    match &item.payload {
        Payload::Envelope { envelope } => {
            serde_json::to_value(envelope).expect("envelopes serialise")
        }
        other => serde_json::to_value(other).expect("items serialise"),
    }
}

pub(crate) fn inbox(args: &InboxArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    if !(args.wait.is_finite() && args.wait >= 0.0) {
        return Err(CliError::new(
            "invalid_wait",
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
                let ctx = crate::context::Context::from_env()?;
                let target = super::connect::target(&ctx, &args.herd)?;
                let reach_by = deadline_after(Duration::ZERO)?;
                match super::connect::parent_if_alive(&target, reach_by).await? {
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
    let values: Vec<Value> = items.iter().map(item_json).collect();
    if printer.is_json() {
        printer.emit(&json!({ "items": values }), String::new);
    } else {
        for value in &values {
            printer.emit(value, || value.to_string());
        }
    }
    if let Some(cap) = &cap {
        remember_task(cap, &items);
    }
    if let Some(last) = items.last() {
        let acked = rt.block_on(async {
            let deadline = deadline_after(Duration::ZERO)?;
            let params = serde_json::to_value(AckParams { seq: last.seq })
                .map_err(|e| CliError::new("internal", e.to_string()))?;
            link.request(method::ACK, params, deadline).await?;
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
    link: &mut shepherd_broker::client::Link,
    until: Instant,
    deadline: Instant,
) -> Result<Vec<InboxItem>, CliError> {
    loop {
        let wait_ms = u64::try_from(until.saturating_duration_since(Instant::now()).as_millis())
            .unwrap_or(u64::MAX);
        let params = serde_json::to_value(InboxParams { wait_ms })
            .map_err(|e| CliError::new("internal", e.to_string()))?;
        // Reaching the broker (again, after a restart) gets the broker timeout, never more
        // than what is left of the whole wait.
        let reach_by = deadline_after(Duration::ZERO)?.min(deadline);
        let client = link.reach(reach_by).await?;
        match tokio::time::timeout_at(deadline, client.request(method::INBOX, params, None)).await {
            Ok(Ok(value)) => {
                let result: InboxResult = serde_json::from_value(value)
                    .map_err(|e| CliError::new("protocol", format!("inbox: {e}")))?;
                return Ok(result.items);
            }
            Ok(Err(err)) if err.is_lost() => link.disconnect(),
            Ok(Err(err)) => return Err(err.into()),
            Err(_) => {
                link.disconnect();
                return Err(shepherd_broker::client::ClientError::Timeout {
                    method: method::INBOX.to_owned(),
                    after: Duration::ZERO,
                }
                .into());
            }
        }
    }
}

/// Message the parent (`shepherd`) or a herd-mate (its agent id).
#[derive(Debug, Args)]
pub(crate) struct TellArgs {
    /// `shepherd` (or `parent`), or a herd-mate's agent id.
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

pub(crate) fn tell(args: TellArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = super::parent::message_params(
        args.target,
        args.text,
        args.task_id,
        args.reply_to,
        args.expects_reply,
        args.steer,
    );
    let result: MessageResult = call(method::TELL, &params)?;
    super::parent::print_message(printer, &result);
    Ok(ExitCode::SUCCESS)
}

/// Finish this sheep's task: the only signal that a task is done.
#[derive(Debug, Args)]
pub(crate) struct DoneArgs {
    /// completed, blocked or failed.
    #[arg(long)]
    status: String,
    /// What was done, or why not.
    #[arg(long)]
    summary: Option<String>,
    /// The task (default: this sheep's open task).
    #[arg(long = "task")]
    task_id: Option<String>,
}

pub(crate) fn done(args: DoneArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let status = DoneStatus::parse(&args.status).ok_or_else(|| {
        CliError::new(
            "invalid_status",
            format!(
                "--status `{}` is not one of completed, blocked, failed",
                args.status
            ),
        )
    })?;
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
    let result: DoneResult = call(method::DONE, &params)?;
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
pub(crate) struct ReportArgs {
    /// `agent_start` or `run_settled`.
    event: String,
    /// The run's stop reason (`stop`, `error`, `aborted`).
    #[arg(long)]
    stop_reason: Option<String>,
    /// The error that ended the run.
    #[arg(long)]
    error: Option<String>,
}

pub(crate) fn report(args: ReportArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = ReportParams {
        event: args.event,
        stop_reason: args.stop_reason,
        error: args.error,
        text: None,
        session_file: None,
        usage: None,
    };
    let result: Value = call(method::REPORT, &params)?;
    printer.emit(&result, || "reported".to_owned());
    Ok(ExitCode::SUCCESS)
}
