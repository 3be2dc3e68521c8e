//! What the CLI shows of a herd: `status` (a sheep, a message's receipt, every sheep) and
//! `herd` (the list, `--follow`, and inside a sheep its herd-mates). Split from the parent's
//! other commands because these read and print rather than change the herd.

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use shepherd_core::herd::SheepStatus;
use shepherd_core::protocol::{HerdResult, StatusParams, event, method};

use super::connect::{HerdArgs, deadline_after, parent, runtime, target};
use super::parent::{call, read_call};
use super::short_ids;
use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

/// Show a sheep's state and task, or every sheep's.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The sheep: agent id, unique id prefix or display name (default: every sheep).
    agent_id: Option<String>,
    #[command(flatten)]
    herd: HerdArgs,
}

fn status_line(status: &SheepStatus) -> String {
    let mut line = format!(
        "{} {} [{}]",
        status.agent_id, status.display_name, status.state
    );
    if let Some(task) = &status.task {
        line.push_str(&format!("; task {} {}", task.id, task.state.as_str()));
        if let Some(on) = &task.waiting_on {
            line.push_str(&format!(
                " (waiting on {on}{})",
                if task.stale { ", stale" } else { "" }
            ));
        }
    }
    if let Some(error) = &status.error {
        line.push_str(&format!("; {error}"));
    }
    line
}

pub(crate) fn status(
    args: &StatusArgs,
    ctx: &Context,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    let params = StatusParams {
        id: args.agent_id.clone(),
    };
    // Inside a sheep, plain `status` is the sheep's own, asked of its herd's broker as the
    // sheep: it starts no herd of its own and rides out a broker restart like every
    // sheep-side command.
    if args.herd.parent_session.is_none()
        && args.herd.project.is_none()
        && let Ok(cap) = super::connect::SheepCapability::from_env()
    {
        let params = json!(params);
        let value = runtime()?.block_on(async {
            let deadline = deadline_after(Duration::ZERO)?;
            Ok::<_, CliError>(
                super::connect::sheep(&cap, shepherd_core::protocol::Role::Sheep)
                    .request(method::STATUS, params, deadline)
                    .await?,
            )
        })?;
        let status: SheepStatus = serde_json::from_value(value.clone())
            .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
        printer.emit(&value, || status_line(&status));
        return Ok(ExitCode::SUCCESS);
    }
    let value: Value = if let Some(id) = &args.agent_id {
        let params = StatusParams {
            id: Some(short_ids::sheep_id(ctx, &args.herd, id.clone())?),
        };
        call(ctx, &args.herd, method::STATUS, &params, Duration::ZERO)?
    } else {
        read_call(ctx, &args.herd, method::STATUS, json!(params))?
            .unwrap_or_else(|| json!(HerdResult::default()))
    };
    if args.agent_id.is_some() {
        let status: SheepStatus = serde_json::from_value(value.clone())
            .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
        printer.emit(&value, || status_line(&status));
    } else {
        let herd: HerdResult = serde_json::from_value(value.clone())
            .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
        printer.emit(&value, || herd_lines(&herd));
    }
    Ok(ExitCode::SUCCESS)
}

fn herd_lines(herd: &HerdResult) -> String {
    if herd.sheep.is_empty() {
        return "no sheep".to_owned();
    }
    herd.sheep
        .iter()
        .map(status_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// List the herd.
#[derive(Debug, Args)]
pub(crate) struct HerdListArgs {
    /// Keep listening: print the herd again each time it changes (pushed by the broker; with
    /// --json one document per line) until interrupted or the broker stops.
    #[arg(long, conflicts_with = "tui")]
    follow: bool,
    /// Show the herd live in a terminal dashboard, with keys to open, read, message, delegate
    /// to and close its sheep (`shepherd dash` for short).
    #[arg(long)]
    tui: bool,
    #[command(flatten)]
    view: super::dash::ViewArgs,
    #[command(flatten)]
    herd: HerdArgs,
}

pub(crate) fn herd(
    args: &HerdListArgs,
    ctx: &Context,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    if args.tui || args.view.all {
        return super::dash::run(&args.view, &args.herd, ctx, printer);
    }
    if args.follow {
        return follow_herd(args, ctx, *printer);
    }
    let herd: HerdResult = read_call(ctx, &args.herd, method::HERD, json!({}))?.unwrap_or_default();
    printer.emit(&herd, || herd_lines(&herd));
    Ok(ExitCode::SUCCESS)
}

/// `herd --follow`: the herd now, then every pushed change, each human block headed by the
/// local time it was seen.
fn follow_herd(args: &HerdListArgs, ctx: &Context, printer: Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, &args.herd)?;
    let show = |herd: &HerdResult| {
        printer.emit(herd, || {
            let at = jiff::Zoned::now().strftime("%H:%M:%S");
            format!("[{at}] {} sheep\n{}", herd.sheep.len(), herd_lines(herd))
        });
    };
    runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        let mut subscribed = 0;
        loop {
            if link.generation() != subscribed || !link.is_connected() {
                // A new connection (the broker restarted): follow the herd again from now.
                let deadline = deadline_after(Duration::ZERO)?;
                let now: HerdResult = match link
                    .request(method::HERD_SUBSCRIBE, json!({}), deadline)
                    .await
                {
                    Ok(value) => serde_json::from_value(value)
                        .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?,
                    Err(err) => return Err(err.into()),
                };
                subscribed = link.generation();
                show(&now);
            }
            let push = tokio::select! {
                push = link.next_push() => push,
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            };
            match push {
                Ok((name, data)) if name == event::HERD => {
                    let herd: HerdResult = serde_json::from_value(data)
                        .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
                    show(&herd);
                }
                Ok((name, _)) if name == event::SHUTDOWN => return Ok(ExitCode::SUCCESS),
                Ok(_) => {}
                Err(err) if err.is_lost() => {}
                Err(err) => return Err(err.into()),
            }
        }
    })
}
