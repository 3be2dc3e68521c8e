//! `shepherd broker …`: the broker process itself, and its status and stop for people.
//!
//! Other commands start a broker on demand (`broker serve --notify-ready`, detached in its own
//! session); people rarely need `serve` themselves.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;
use shepherd_broker::BrokerConfig;
use shepherd_broker::client::Client;
use shepherd_broker::clock::SystemClock;
use shepherd_broker::paths::{BrokerAddress, BrokerPaths};
use shepherd_broker::serve::{ServeError, start};
use shepherd_core::protocol::{BrokerStatus, Role, method};

use super::connect::{HerdArgs, hello, runtime, target};
use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

#[derive(Debug, Subcommand)]
pub(crate) enum BrokerCommand {
    /// Show whether this herd's broker runs, and what it holds.
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
pub(crate) struct ServeArgs {
    /// The parent identity this broker serves.
    #[arg(long, value_name = "ID")]
    parent_session: String,
    /// The canonical project root.
    #[arg(long, value_name = "DIR")]
    project: PathBuf,
    /// How deeply nested the parent's herd is.
    #[arg(long, default_value_t = 0)]
    depth: u32,
    /// Detach into a session of its own and print `ready` (or `error: …`) on stdout once it
    /// accepts connections.
    #[arg(long)]
    notify_ready: bool,
}

pub(crate) fn run(
    cmd: BrokerCommand,
    ctx: &Context,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    match cmd {
        BrokerCommand::Serve(args) => serve(&args, ctx),
        BrokerCommand::Status(args) => status(&args, ctx, printer),
        BrokerCommand::Stop(args) => stop(&args, ctx, printer),
        BrokerCommand::Ensure(args) => {
            let target = target(ctx, &args)?;
            runtime()?.block_on(super::connect::parent(&target))?;
            let socket = target.paths.socket.display().to_string();
            printer.emit(
                &json!({ "socket": socket, "brokerId": target.address.key }),
                || socket.clone(),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn env_duration(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(default, Duration::from_millis)
}

fn serve(args: &ServeArgs, ctx: &Context) -> Result<ExitCode, CliError> {
    if args.notify_ready {
        // Leave the starting client's session: the broker outlives that client and its terminal.
        let _already_leader = rustix::process::setsid();
    }
    let project_root = fs_err::canonicalize(&args.project).map_err(|err| {
        CliError::new(
            "invalid_project",
            format!("project `{}`: {err}", args.project.display()),
        )
    })?;
    let address = BrokerAddress::new(&args.parent_session, &project_root);
    let paths = BrokerPaths::new(&ctx.dirs, &address);
    init_logging(&paths);
    let config = BrokerConfig {
        address,
        paths: paths.clone(),
        dirs: ctx.dirs.clone(),
        shepherd_exe: std::env::current_exe().map_err(|err| {
            CliError::new(
                "environment",
                format!("cannot find the shepherd executable: {err}"),
            )
        })?,
        depth: args.depth,
        startup_limit: env_duration("SHEPHERD_STARTUP_LIMIT_MS", Duration::from_secs(30)),
        adoption_grace: env_duration("SHEPHERD_ADOPTION_GRACE_MS", Duration::from_secs(10)),
        orphan_grace: env_duration("SHEPHERD_ORPHAN_GRACE_MS", Duration::from_secs(60)),
        pi_command: vec![
            std::env::var("SHEPHERD_PI")
                .ok()
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "pi".into()),
        ],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| {
            CliError::new("internal", format!("cannot start the async runtime: {err}"))
        })?;
    let tmux = shepherd_term::tmux::TmuxBackend::new();
    let mut backends: Vec<Arc<dyn shepherd_term::Backend>> = Vec::new();
    if tmux.available() {
        backends.push(Arc::new(tmux));
    }
    let started = rt.block_on(start(config, Arc::new(SystemClock), backends));
    match started {
        Ok(running) => {
            if args.notify_ready {
                notify(&format!("ready {}", running.socket().display()));
            }
            rt.block_on(running.wait());
            Ok(ExitCode::SUCCESS)
        }
        Err(ServeError::AlreadyRunning(socket)) => {
            if args.notify_ready {
                notify(&format!("ready {socket}"));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if args.notify_ready {
                notify(&format!("error: {err}"));
            }
            Err(CliError::new("broker", err.to_string()))
        }
    }
}

/// Tells the starting client how start-up went, then lets go of the pipe it reads.
fn notify(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _gone = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    drop(stdout);
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _kept = rustix::stdio::dup2_stdout(&null);
    }
}

fn init_logging(paths: &BrokerPaths) {
    let _created = fs_err::create_dir_all(&paths.state_dir);
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&paths.log)
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SHEPHERD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _already = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Arc::new(file))
        .try_init();
}

fn status(args: &HerdArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, args)?;
    let rt = runtime()?;
    let status: Option<BrokerStatus> = rt.block_on(async {
        let mut client = super::connect::observer(&target).await.ok()?;
        client.call(method::BROKER_STATUS, &json!({})).await.ok()
    });
    match status {
        Some(status) => printer.emit(&json!({ "running": true, "status": status }), || {
            format!(
                "running: pid {}, {} live sheep, {} open tasks, {} clients\nsocket: {}\njournal: {}",
                status.pid, status.live_sheep, status.open_tasks, status.clients, status.socket, status.journal
            )
        }),
        None => {
            let socket = target.paths.socket.display().to_string();
            printer.emit(&json!({ "running": false, "socket": socket }), || {
                format!("not running (no broker answers on {socket})")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn stop(args: &HerdArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let target = target(ctx, args)?;
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let Ok((mut client, _)) =
            Client::open(&target.paths.socket, &hello(Role::Parent, None, None)).await
        else {
            return Ok(None);
        };
        let status: BrokerStatus = client.call(method::BROKER_STATUS, &json!({})).await?;
        let stopped: serde_json::Value = client.call(method::BROKER_STOP, &json!({})).await?;
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
                    "broker",
                    format!("the broker (pid {pid}) did not stop within 15 s"),
                ));
            }
            let closed = stopped["closed"].as_u64().unwrap_or(0);
            printer.emit(
                &json!({ "stopped": true, "closed": closed, "failed": stopped["failed"] }),
                || format!("stopped (closed {closed} sheep)"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
