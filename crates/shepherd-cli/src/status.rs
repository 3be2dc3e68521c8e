//! What the CLI shows of a herd: `status` (a sheep, a message's receipt, every sheep) and
//! `herd` (the list, `--follow`, and inside a sheep its herd-mates). Split from the parent's
//! other commands because these read and print rather than change the herd.

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Deserialize;
use shepherd_client::wire::Push;
use shepherd_core::herd::{MessageReceipt, SheepStatus};
use shepherd_core::ids::MessageId;
use shepherd_core::protocol::{HerdResult, NoParams, StatusParams, StatusResult, calls, event};

use super::short_ids;
use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::{HerdArgs, ViewArgs, deadline_after, parent, runtime, target};
use shepherd_client::connect::{call, read_call};

/// Show a sheep's state, task and the latest messages sent to it with their receipts, a
/// message's receipt, or every sheep's state.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The sheep (agent id, unique id prefix or display name), or a message id
    /// (`shepherd-message-…`, as message and tell print it) for where that message is (default:
    /// every sheep).
    agent_id: Option<String>,
    #[command(flatten)]
    herd: HerdArgs,
}

/// `HH:MM:SS` in local time.
fn clock(ms: i64) -> Option<String> {
    jiff::Timestamp::from_millisecond(ms).ok().map(|t| {
        t.to_zoned(jiff::tz::TimeZone::system())
            .strftime("%H:%M:%S")
            .to_string()
    })
}

fn status_line(status: &SheepStatus) -> String {
    // A sheep whose host cannot be reached is not known to be in the state it was last seen in.
    let state = match status.link_down_since.and_then(clock) {
        Some(since) => format!("link down since {since}"),
        None => status.state.clone(),
    };
    let host = status
        .host
        .as_ref()
        .map(|host| format!(" on host {host}"))
        .unwrap_or_default();
    let sandbox = status
        .sandbox
        .map(|sandbox| format!(" in sandbox {sandbox}"))
        .unwrap_or_default();
    let limits = status
        .limits
        .map(|limits| match &status.limits_by {
            Some(by) => format!("; limits {limits} ({by})"),
            None => format!("; limits {limits}"),
        })
        .unwrap_or_default();
    let mut line = format!(
        "{} {}{host}{sandbox} [{state}]",
        status.agent_id, status.display_name
    );
    if let Some(task) = &status.task {
        line.push_str(&format!("; task {} {}", task.id, task.state.as_str()));
        if let Some(on) = &task.waiting_on {
            line.push_str(&format!(
                " (waiting on {on}{})",
                if task.stale { ", stale" } else { "" }
            ));
        }
        if let Some(limit) = &task.rate_limit {
            line.push_str(&format!(" ({})", limit.describe()));
        }
    }
    if let Some(error) = &status.error {
        line.push_str(&format!("; {error}"));
    }
    line.push_str(&limits);
    line
}

/// A sheep's line followed by one line per message sent to it, newest first.
fn sheep_lines(status: &SheepStatus) -> String {
    let mut text = status_line(status);
    for receipt in &status.messages {
        text.push_str("\n  ");
        text.push_str(&receipt_line(receipt));
    }
    text
}

/// `<id> from <sender> to <target>: read 18:30:02 (sent 18:30:00, delivered 18:30:01) "<line>"`.
fn receipt_line(receipt: &MessageReceipt) -> String {
    let at = |ms: Option<i64>| {
        ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|t| {
                t.to_zoned(jiff::tz::TimeZone::system())
                    .strftime("%H:%M:%S")
                    .to_string()
            })
    };
    let mut times = vec![format!(
        "sent {}",
        at(Some(receipt.sent_at)).unwrap_or_default()
    )];
    if let Some(delivered) = at(receipt.delivered_at) {
        times.push(format!("delivered {delivered}"));
    }
    if let Some(read) = at(receipt.read_at) {
        times.push(format!("read {read}"));
    }
    format!(
        "{} from {} to {}: {} ({}) \"{}\"",
        receipt.message_id,
        receipt.sender_name,
        receipt.target_name,
        receipt.state.as_str(),
        times.join(", "),
        receipt.preview
    )
}

/// Prints what `status` answered: one sheep, a message's receipt or the herd.
fn print_status(printer: &Printer, result: &StatusResult) {
    printer.emit(result, || match result {
        StatusResult::One(status) => sheep_lines(status),
        StatusResult::All(herd) => herd_lines(herd),
        StatusResult::Message(receipt) => receipt_line(receipt),
    });
}

pub fn status(args: &StatusArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = StatusParams {
        id: args.agent_id.clone(),
    };
    // Inside a sheep, plain `status` is the sheep's own (or a message it sent or received),
    // asked of its herd's broker as the sheep: it starts no herd of its own and rides out a
    // broker restart like every sheep-side command.
    if args.herd.parent_session.is_none()
        && args.herd.project.is_none()
        && let Ok(cap) = shepherd_client::connect::SheepCapability::from_env()
    {
        let result = runtime()?.block_on(async {
            let deadline = deadline_after(Duration::ZERO)?;
            Ok::<_, CliError>(
                shepherd_client::connect::sheep(&cap, shepherd_core::protocol::Role::Sheep)
                    .send::<calls::Status>(&params, deadline)
                    .await?,
            )
        })?;
        print_status(printer, &result);
        return Ok(ExitCode::SUCCESS);
    }
    let result = if let Some(id) = &args.agent_id {
        // A message id is exact (messages have no short names); anything else names a sheep.
        let id = if MessageId::parse(id.trim()).is_some() {
            id.trim().to_owned()
        } else {
            short_ids::sheep_id(ctx, &args.herd, id.clone())?
        };
        let params = StatusParams { id: Some(id) };
        call::<calls::Status>(ctx, &args.herd, &params, Duration::ZERO)?
    } else {
        read_call::<calls::Status>(ctx, &args.herd, &params)?
            .unwrap_or_else(|| StatusResult::All(HerdResult::default()))
    };
    print_status(printer, &result);
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

/// List the herd (inside a sheep: its herd-mates, to message the right one).
#[derive(Debug, Args)]
pub struct HerdListArgs {
    /// Keep listening: print the herd again each time it changes (pushed by the broker; with
    /// --json one document per line) until interrupted or the broker stops.
    #[arg(long, conflicts_with = "tui")]
    follow: bool,
    /// Show the herd live in a terminal dashboard, with keys to open, read, message, delegate
    /// to and close its sheep (`shepherd dash` for short).
    #[arg(long)]
    tui: bool,
    #[command(flatten)]
    view: ViewArgs,
    #[command(flatten)]
    herd: HerdArgs,
}

/// Runs the live dashboard on this terminal (the dashboard's `run`, with `--json` given or
/// not). The binary hands it in: front ends do not depend on one another.
pub type Dashboard = fn(&ViewArgs, &HerdArgs, &Context, bool) -> Result<ExitCode, CliError>;

/// Runs `shepherd herd`: the list, `--follow`'s stream, or with `--tui` (or `--all`) the
/// `dashboard`.
pub fn herd(
    args: &HerdListArgs,
    ctx: &Context,
    printer: &Printer,
    dashboard: Dashboard,
) -> Result<ExitCode, CliError> {
    if args.tui || args.view.all {
        return dashboard(&args.view, &args.herd, ctx, printer.is_json());
    }
    if args.follow {
        return follow_herd(args, ctx, *printer);
    }
    // Inside a sheep, the herd is its herd-mates, asked of its herd's broker as the sheep.
    if args.herd.parent_session.is_none()
        && args.herd.project.is_none()
        && let Ok(cap) = shepherd_client::connect::SheepCapability::from_env()
    {
        return herd_mates(&cap, printer);
    }
    let herd: HerdResult =
        read_call::<calls::Herd>(ctx, &args.herd, &NoParams {})?.unwrap_or_default();
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
                let now = link
                    .send::<calls::HerdSubscribe>(&NoParams {}, deadline)
                    .await?;
                subscribed = link.generation();
                show(&now);
            }
            let push = tokio::select! {
                push = link.next_event() => push,
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            };
            match push {
                Ok(Push::Herd(herd)) => show(&herd),
                // A pushed herd this build cannot read is the broker's error, not a gap.
                Ok(Push::Other { event, data }) if event == event::HERD => {
                    let err = HerdResult::deserialize(&data).err().map(|e| e.to_string());
                    return Err(CliError::new(ErrorCode::Protocol, err.unwrap_or_default()));
                }
                Ok(Push::Shutdown) => return Ok(ExitCode::SUCCESS),
                Ok(_) => {}
                Err(err) if err.is_lost() => {}
                Err(err) => return Err(err.into()),
            }
        }
    })
}

/// `shepherd herd` inside a sheep: every open sheep of its herd (itself marked) with what a
/// herd-mate may see — id, display name, agent, what runs it, state.
fn herd_mates(
    cap: &shepherd_client::connect::SheepCapability,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    let result = runtime()?.block_on(async {
        let deadline = deadline_after(Duration::ZERO)?;
        Ok::<_, CliError>(
            shepherd_client::connect::sheep(cap, shepherd_core::protocol::Role::Sheep)
                .send::<calls::HerdMates>(&NoParams {}, deadline)
                .await?,
        )
    })?;
    printer.emit(&result, || {
        result
            .mates
            .iter()
            .map(|mate| {
                format!(
                    "{} {} [{}] {}{}",
                    mate.agent_id,
                    mate.display_name,
                    mate.state,
                    mate.runtime,
                    if mate.is_self { " (you)" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
