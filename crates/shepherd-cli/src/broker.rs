//! `shepherd broker …`: a herd's broker's status and stop for people, and the arguments of
//! the broker process itself.
//!
//! Other commands start a broker on demand (`broker serve --notify-ready`, detached in its own
//! session); people rarely need `serve` themselves. The process is the broker crate's, so the
//! binary hands it in ([`Serve`]): this crate does not link the broker.

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;
use shepherd_client::wire::{Link, LinkSpec};
use shepherd_core::protocol::{NoParams, Role, calls};

use shepherd_client::connect::{HerdArgs, broker_timeout, hello, runtime, target};

/// How long `broker stop` may take to close the herd (each close has its own deadline; they
/// run side by side).
const STOP_WAIT: Duration = Duration::from_secs(60);
use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;

#[derive(Debug, Subcommand)]
pub enum BrokerCommand {
    /// Show whether this herd's broker runs, and what it holds (exit status 3 when none runs).
    Status(HerdArgs),
    /// Close every sheep of this herd and stop its broker.
    Stop(HerdArgs),
    /// Start this herd's broker if it is not running, and print its socket.
    Ensure(HerdArgs),
    /// Run a broker in the foreground (other commands start one on demand).
    #[command(hide = true)]
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The parent identity this broker serves.
    #[arg(long, value_name = "ID")]
    pub parent_session: String,
    /// The canonical project root.
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// How deeply nested the parent's herd is.
    #[arg(long, default_value_t = 0)]
    pub depth: u32,
    /// Detach into a session of its own and print `ready` (or `error: …`) on stdout once it
    /// accepts connections.
    #[arg(long)]
    pub notify_ready: bool,
    /// Run the broker as a new process that is nobody's child (this one exits at once), so
    /// whoever started it — possibly a sheep's supervisor — never holds it in its tree.
    #[arg(long)]
    pub detach: bool,
}

/// Runs a broker in this process until it stops (`broker serve`). The binary hands it in.
pub type Serve = fn(&ServeArgs, &Context, Printer) -> Result<ExitCode, CliError>;

/// Runs `shepherd broker …`; `serve` runs the broker itself.
pub fn run(
    cmd: BrokerCommand,
    ctx: &Context,
    printer: &Printer,
    serve: Serve,
) -> Result<ExitCode, CliError> {
    match cmd {
        BrokerCommand::Serve(args) => serve(&args, ctx, *printer),
        BrokerCommand::Status(args) => status(&args, ctx, printer),
        BrokerCommand::Stop(args) => stop(&args, ctx, printer),
        BrokerCommand::Ensure(args) => {
            let target = target(ctx, &args)?;
            runtime()?.block_on(async {
                shepherd_client::connect::parent(
                    &target,
                    shepherd_client::connect::deadline_after(Duration::ZERO)?,
                )
                .await
            })?;
            let socket = target.paths.socket.display().to_string();
            printer.emit(
                &json!({ "socket": socket, "brokerId": target.address.key }),
                || socket.clone(),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn status(args: &HerdArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, args)?;
    let rt = runtime()?;
    let (status, herds) = rt.block_on(async {
        let herds =
            shepherd_client::herds::of_project(&ctx.dirs.runtime_dir, &target.address.project_root)
                .await;
        if tokio::net::UnixStream::connect(&target.paths.socket)
            .await
            .is_err()
        {
            return Ok((None, herds));
        }
        // Something listens: it must answer in time, or that is an error, not "not running".
        let deadline = shepherd_client::connect::deadline_after(Duration::ZERO)?;
        let mut link = shepherd_client::connect::observer(&target, deadline).await?;
        let status = link
            .send::<calls::BrokerStatus>(&NoParams {}, deadline)
            .await?;
        Ok::<_, CliError>((Some(status), herds))
    })?;
    // The project's other herds (an MCP host's, a pi session's) are listed too: they are the
    // brokers this project has, whichever herd this command speaks for.
    let others: Vec<&shepherd_client::herds::HerdEntry> = herds
        .iter()
        .filter(|herd| herd.identity != target.address.identity)
        .collect();
    let now = jiff::Timestamp::now().as_millisecond();
    let others_text = || {
        if others.is_empty() {
            return String::new();
        }
        let listed: Vec<String> = others
            .iter()
            .map(|herd| crate::herds::lines(herd, now, false))
            .collect();
        format!(
            "\nother herds of this project ({}):\n{}",
            others.len(),
            listed.join("\n")
        )
    };
    match status {
        Some(status) => printer.emit(
            &json!({ "running": true, "status": status, "herds": herds }),
            || {
                format!(
                    "running: pid {}, {} live sheep, {} open tasks, {} clients\nsocket: {}\njournal: {}{}",
                    status.pid,
                    status.live_sheep,
                    status.open_tasks,
                    status.clients,
                    status.socket,
                    status.journal,
                    others_text()
                )
            },
        ),
        // Asked in a project whose herd is another front end's (an MCP host's, a pi
        // session's) and for no herd in particular: that herd is what a person wants to see,
        // and a broker of this project answers.
        None if args.parent_session.is_none() && !others.is_empty() => {
            let socket = target.paths.socket.display().to_string();
            printer.emit(
                &json!({ "running": false, "socket": socket, "herds": herds }),
                || {
                    let listed: Vec<String> = others
                        .iter()
                        .map(|herd| crate::herds::lines(herd, now, false))
                        .collect();
                    let count = match others.len() {
                        1 => "1 herd of this project runs".to_owned(),
                        n => format!("{n} herds of this project run"),
                    };
                    format!(
                        "{count}:\n{}\nthis CLI's own herd is not running (its first `shepherd spawn`, `delegate` or `run` starts it; `--parent-session ID` speaks for another herd)",
                        listed.join("\n")
                    )
                },
            );
        }
        None => {
            let socket = target.paths.socket.display().to_string();
            printer.emit(
                &json!({ "running": false, "socket": socket, "herds": herds }),
                || format!("not running (no broker answers on {socket}){}", others_text()),
            );
            // As `systemctl status` and `gh auth status` do: scripts can test for a broker.
            return Ok(ExitCode::from(EXIT_NOT_RUNNING));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The moment `within` from now, as the link's deadlines are given.
fn after(within: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now() + within
}

/// `broker status`'s exit status when no broker runs for the herd.
pub(crate) const EXIT_NOT_RUNNING: u8 = 3;

fn stop(args: &HerdArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, args)?;
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        if tokio::net::UnixStream::connect(&target.paths.socket)
            .await
            .is_err()
        {
            return Ok(None);
        }
        let mut link = Link::new(LinkSpec {
            socket: target.paths.socket.clone(),
            hello: hello(Role::Parent, None, None),
            start: None,
        });
        let status = link
            .send::<calls::BrokerStatus>(&NoParams {}, after(broker_timeout()?))
            .await?;
        // Closing a herd of many sheep takes a while; each close has its own deadline.
        let stopped = link
            .send::<calls::BrokerStop>(&NoParams {}, after(broker_timeout()? + STOP_WAIT))
            .await?;
        Ok::<_, CliError>(Some((status.pid, stopped)))
    })?;
    match outcome {
        None => printer.emit(&json!({ "stopped": false, "running": false }), || {
            "not running".to_owned()
        }),
        Some((pid, stopped)) => {
            let gone =
                shepherd_term::process::wait_gone(pid, Instant::now() + Duration::from_secs(15));
            if !gone {
                return Err(CliError::new(
                    ErrorCode::Broker,
                    format!("the broker (pid {pid}) did not stop within 15 s"),
                ));
            }
            let closed = stopped.closed;
            printer.emit(
                &json!({ "stopped": true, "closed": closed, "failed": stopped.failed }),
                || format!("stopped (closed {closed} sheep)"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
