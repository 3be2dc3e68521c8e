//! `shepherd broker …`: the broker process itself, and its status and stop for people.
//!
//! Other commands start a broker on demand (`broker serve --notify-ready`, detached in its own
//! session); people rarely need `serve` themselves.

// This module is the broker's process: `--detach` starts it again, detached.
#![allow(clippy::disallowed_types)]

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;
use shepherd_broker::BrokerConfig;
use shepherd_broker::client::{Link, LinkSpec, StartSpec};
use shepherd_broker::clock::SystemClock;
use shepherd_broker::paths::{BrokerAddress, BrokerPaths};
use shepherd_broker::serve::{ServeError, start};
use shepherd_core::protocol::{BrokerStatus, Role, method};

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
    /// Run the broker as a new process that is nobody's child (this one exits at once), so
    /// whoever started it — possibly a sheep's supervisor — never holds it in its tree.
    #[arg(long)]
    detach: bool,
}

pub fn run(cmd: BrokerCommand, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
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

fn env_duration(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(default, Duration::from_millis)
}

/// `--detach`: starts the broker again without it, handing over stdout (where it says it is
/// ready), and exits, so the broker is reparented away from whoever started this.
fn detach(args: &ServeArgs, printer: Printer) -> Result<ExitCode, CliError> {
    let exe = std::env::current_exe().map_err(|err| {
        CliError::new(
            ErrorCode::Environment,
            format!("cannot find the shepherd executable: {err}"),
        )
    })?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["broker", "serve", "--parent-session"])
        .arg(&args.parent_session)
        .arg("--project")
        .arg(&args.project)
        .arg("--depth")
        .arg(args.depth.to_string())
        .args(args.notify_ready.then_some("--notify-ready"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(_broker) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            notify(printer, &format!("error: cannot start the broker: {err}"));
            Ok(ExitCode::from(1))
        }
    }
}

fn serve(args: &ServeArgs, ctx: &Context, printer: Printer) -> Result<ExitCode, CliError> {
    if args.detach {
        return detach(args, printer);
    }
    if args.notify_ready {
        // Leave the starting client's session: the broker outlives that client and its terminal.
        let _already_leader = rustix::process::setsid();
    }
    let project_root = fs_err::canonicalize(&args.project).map_err(|err| {
        CliError::new(
            ErrorCode::InvalidProject,
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
                ErrorCode::Environment,
                format!("cannot find the shepherd executable: {err}"),
            )
        })?,
        depth: args.depth,
        startup_limit: env_duration("SHEPHERD_STARTUP_LIMIT_MS", Duration::from_secs(30)),
        adoption_grace: env_duration("SHEPHERD_ADOPTION_GRACE_MS", Duration::from_secs(10)),
        orphan_grace: env_duration("SHEPHERD_ORPHAN_GRACE_MS", Duration::from_secs(60)),
        hello_deadline: env_duration("SHEPHERD_HELLO_DEADLINE_MS", Duration::from_secs(10)),
        pi_command: std::env::var(
            shepherd_harness::profile(shepherd_core::harness::Harness::Pi)
                .program
                .var,
        )
        .ok()
        .filter(|p| !p.is_empty())
        .map(|p| vec![p]),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot start the async runtime: {err}"),
            )
        })?;
    let tmux = shepherd_term::tmux::TmuxBackend::new();
    let mut backends: Vec<Arc<dyn shepherd_term::Backend>> = Vec::new();
    if tmux.available() {
        backends.push(Arc::new(tmux));
    }
    let start_spec = StartSpec {
        exe: config.shepherd_exe.clone(),
        identity: args.parent_session.clone(),
        project_root: project_root.clone(),
        depth: args.depth,
        state_dir: paths.state_dir.clone(),
        env: Vec::new(),
    };
    let started = rt.block_on(start(config, Arc::new(SystemClock), backends));
    match started {
        Ok(running) => {
            record_herd(&start_spec);
            // SIGTERM ends the herd in order (every sheep closed), as `broker stop` does: it is
            // how a supervisor cleaning up after a sheep ends the herd that sheep started.
            let handle = running.handle();
            rt.spawn(async move {
                if let Ok(mut term) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                {
                    term.recv().await;
                    handle.stop_herd().await;
                }
            });
            if args.notify_ready {
                notify(printer, &format!("ready {}", running.socket().display()));
            }
            rt.block_on(running.wait());
            Ok(ExitCode::SUCCESS)
        }
        Err(ServeError::AlreadyRunning(socket)) => {
            if args.notify_ready {
                notify(printer, &format!("ready {socket}"));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if args.notify_ready {
                notify(printer, &format!("error: {err}"));
            }
            Err(CliError::new(ErrorCode::Broker, err.to_string()))
        }
    }
}

/// Records what this herd's brokers must share whoever starts them: the environment (kept from
/// the herd's first broker) and how to start one.
fn record_herd(spec: &StartSpec) {
    use shepherd_broker::client::start;
    if let Err(err) = start::record_env(&spec.state_dir, std::env::vars()) {
        tracing::warn!("could not record the herd's environment: {err}");
    }
    let written = serde_json::to_vec_pretty(spec)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            shepherd_fs::write_atomic(&start::spec_file(&spec.state_dir), &bytes, Some(0o600))
        });
    if let Err(err) = written {
        tracing::warn!("could not record how to start this broker: {err}");
    }
}

/// Tells the starting client how start-up went, then lets go of the pipe it reads.
fn notify(printer: Printer, line: &str) {
    printer.line(line);
    if let Ok(null) = fs_err::OpenOptions::new().write(true).open("/dev/null") {
        let _kept = rustix::stdio::dup2_stdout(&null);
    }
}

fn init_logging(paths: &BrokerPaths) {
    let _created = fs_err::create_dir_all(&paths.state_dir);
    let Ok(file) = fs_err::OpenOptions::new()
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
        let value = link
            .request(method::BROKER_STATUS, json!({}), deadline)
            .await?;
        serde_json::from_value::<BrokerStatus>(value)
            .map(|status| (Some(status), herds))
            .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))
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
        let status: BrokerStatus = link
            .call(method::BROKER_STATUS, &json!({}), broker_timeout()?)
            .await?;
        // Closing a herd of many sheep takes a while; each close has its own deadline.
        let stopped: serde_json::Value = link
            .call(
                method::BROKER_STOP,
                &json!({}),
                broker_timeout()? + STOP_WAIT,
            )
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
            let closed = stopped["closed"].as_u64().unwrap_or(0);
            printer.emit(
                &json!({ "stopped": true, "closed": closed, "failed": stopped["failed"] }),
                || format!("stopped (closed {closed} sheep)"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
