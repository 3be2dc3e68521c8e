//! A sheep's commands: `inbox`, `tell`, `done` (and the hidden `report`). They use the
//! capability Shepherd put in the sheep's environment, so any program can be a sheep.

use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::protocol::{
    AckParams, DoneParams, DoneResult, InboxParams, InboxResult, MessageResult, ReportParams, Role,
    method,
};
use shepherd_core::task::DoneStatus;

use super::connect::{SheepCapability, runtime, sheep};
use crate::error::CliError;
use crate::output::Printer;

/// Exit status of `inbox` when the wait ended with nothing delivered.
pub(crate) const EXIT_NOTHING: u8 = 75;

fn call<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    name: &str,
    params: &P,
) -> Result<R, CliError> {
    let cap = SheepCapability::from_env()?;
    runtime()?.block_on(async {
        let mut client = sheep(&cap, Role::Sheep).await?;
        Ok(client.call(name, params).await?)
    })
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
    let wait_ms = (args.wait * 1000.0).round() as u64;
    let items = runtime()?.block_on(async {
        let mut client = match &cap {
            Some(cap) => sheep(cap, Role::Sheep).await?,
            None => {
                let ctx = crate::context::Context::from_env()?;
                super::connect::parent(&super::connect::target(&ctx, &args.herd)?).await?
            }
        };
        let result: InboxResult = client.call(method::INBOX, &InboxParams { wait_ms }).await?;
        if let Some(last) = result.items.last() {
            let _acked: Value = client
                .call(method::ACK, &AckParams { seq: last.seq })
                .await?;
        }
        Ok::<_, CliError>(result.items)
    })?;
    let values: Vec<Value> = items.iter().map(item_json).collect();
    if printer.is_json() {
        printer.emit(&json!({ "items": values }), String::new);
    } else {
        for value in &values {
            printer.emit(value, || value.to_string());
        }
    }
    Ok(if items.is_empty() {
        ExitCode::from(EXIT_NOTHING)
    } else {
        ExitCode::SUCCESS
    })
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
    let params = DoneParams {
        status,
        summary: args.summary,
        task_id: args.task_id,
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
    };
    let result: Value = call(method::REPORT, &params)?;
    printer.emit(&result, || "reported".to_owned());
    Ok(ExitCode::SUCCESS)
}
